"""Credentials toward an HTTP upstream (issue 26): an MCP server behind
OAuth (tests/sdk/resource_server.mjs, the official SDK's server) that
accepts only tokens for its own audience, signed by a real authorization
server run by the test (oauth2-mock-server with token exchange added,
tests/sdk/authserver.mjs). mcpd gets its own token by client credentials
and fetches the next one before it expires, and another when the upstream
refuses one (401); a caller's token is exchanged
(RFC 8693) for one on the caller's behalf, kept per principal and never
past the caller's own token; a refused exchange is a JSON-RPC error for
that call; a static header comes from a file read again on reload. The
caller's token never reaches the upstream. The same credentials in an
openapi block (issue 28): the same server as a REST API, its document
fetched with mcpd's own token, a call carrying mcpd's token or the
caller's exchanged one, a refused exchange the same -32024 error.

They need node and tests/sdk/node_modules (`make deps`); without them
they skip saying so (a failure under MCPD_TEST_NO_SKIP=1, as in CI).
"""

import hashlib
import json
import signal
import time

from mcpd_harness import (DAEMON_CONF, conf_text, expect, result_text, rpc,
                          tmo, tool_call)
from oauth_peer import AuthServer, ResourceServer, auth_lines, jwt_parts

# mcpd's own resource, for the callers' tokens.
RESOURCE = "https://mcpd.test/mcp"
MCPD_CLIENT = ("mcpd", "mcpd-secret")


def _bearer(token):
    return {"Authorization": f"Bearer {token}"} if token else None


def _upstream(url, *credentials):
    return ["upstream rs {", f"    url {url}", "    credentials {",
            *[f"        {c}" for c in credentials], "    }", "}"]


def _grant_lines(h, asrv, rs, grant):
    secret = h.write("client.secret", MCPD_CLIENT[1] + "\n")
    return [f"grant {grant}", f"token_endpoint {asrv.token_endpoint}",
            f"client_id {MCPD_CLIENT[0]}", f"client_secret_file {secret}",
            f"resource {rs.url}"]


def _grant(h, asrv, rs, grant):
    return _upstream(rs.url, *_grant_lines(h, asrv, rs, grant))


def _openapi(h, asrv, rs, grant):
    """openapi api { }: rs as a REST API (its whoami at /api/whoami), its
    document at a URL that wants a token too."""
    spec = rs.url[:-len("/mcp")] + "/api/openapi.json"
    return ["openapi api {", f"    spec {spec}", "    credentials {",
            *[f"        {c}" for c in _grant_lines(h, asrv, rs, grant)],
            "    }", "}"]


def _rest_whoami(d, sid, token=None):
    msg = _call(d, sid, token)
    res = msg.get("result") or {}
    expect(not res.get("isError") and
           isinstance(res.get("structuredContent"), dict),
           f"the openapi tool whoami -> {msg!r}")
    return res["structuredContent"]


def _session(d, token=None):
    sid = d.initialize(initialized=False, headers=_bearer(token))
    r = d.post(sid, rpc("notifications/initialized"), _bearer(token))
    expect(r.status == 202, f"notifications/initialized -> HTTP {r.status}")
    return sid


def _await_whoami(d, sid, token=None):
    """The upstream's catalog came (the handshake and tools/list went
    through with mcpd's credentials)."""
    deadline = time.monotonic() + tmo(20)
    while True:
        id = d.new_id()
        r = d.post(sid, rpc("tools/list", {}, id), _bearer(token))
        names = [t["name"] for t in r.rpc(id)["result"]["tools"]]
        if "whoami" in names:
            return
        expect(time.monotonic() < deadline, "the upstream's whoami is not "
               f"listed within {tmo(20):.0f}s:\n{d.stderr_tail(20)}")
        time.sleep(0.05)


def _call(d, sid, token=None):
    id = d.new_id()
    r = d.post(sid, tool_call("whoami", {}, id), _bearer(token))
    expect(r.status == 200, f"whoami -> HTTP {r.status} {r.body[:300]!r}")
    return r.rpc(id)


def _whoami(d, sid, token=None):
    msg = _call(d, sid, token)
    expect("result" in msg, f"whoami -> {msg!r}")
    return json.loads(result_text(msg))


def _sha16(token):
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def test_client_credentials_token_refreshed_before_expiry(h):
    with AuthServer(h.workdir, dict([MCPD_CLIENT])) as asrv, \
            ResourceServer(h.workdir, issuer=asrv.issuer) as rs:
        # Tokens of 4 s: mcpd fetches the next at 80% of that.
        asrv.configure(cc_expires_in=4)
        # At debug, so that no line of any level shows the secret.
        d = h.start(extra_lines=_grant(h, asrv, rs, "client_credentials"),
                    log_level="debug")
        sid = _session(d)
        _await_whoami(d, sid)
        first = _whoami(d, sid)
        expect(first["sub"] == MCPD_CLIENT[0] and first["aud"] == rs.url and
               first["act"] is None, f"mcpd's own token: {first!r}")
        n = asrv.grants()["client_credentials"]
        # The refresh comes from mcpd's timer: no call asks for it.
        asrv.wait_grants("client_credentials", lambda k: k > n, timeout=15,
                         what="mcpd fetched its next token by itself")
        second = _whoami(d, sid)
        expect(second["token"] != first["token"], "the call after the "
               f"refresh still carried the old token: {second!r}")
        expect(rs.stats()["refused"] == 0, "the upstream refused a request "
               f"of mcpd's: {rs.stats()!r}")
        # A token the upstream refuses (401) is dropped, and the request
        # goes again once with a new one.
        n = asrv.grants()["client_credentials"]
        rs.revoke(second["token"])
        third = _whoami(d, sid)
        expect(third["token"] != second["token"] and
               rs.stats()["refused"] == 1 and
               asrv.grants()["client_credentials"] == n + 1,
               f"after a 401: {third!r}, {rs.stats()!r}, {asrv.grants()!r}")
        expect(d.metric("credential_tokens") >= 2,
               "the credential_tokens metric counts the tokens")
        expect("a client_credentials token for" in d.stderr_text(),
               "the debug lines of the token's fetch")
        expect(MCPD_CLIENT[1] not in d.stderr_text() and
               MCPD_CLIENT[1].encode() not in
               d.request("GET", path="/metrics").body,
               "the client secret in the log or /metrics")


def test_token_exchange_per_principal_and_refused(h):
    with AuthServer(h.workdir, dict([MCPD_CLIENT])) as asrv, \
            ResourceServer(h.workdir, issuer=asrv.issuer) as rs:
        asrv.configure(exchange_expires_in=3600, refuse_subjects=["mallory"])
        lines = auth_lines(RESOURCE, asrv, scopes=None) + \
            _grant(h, asrv, rs, "token_exchange")
        d = h.start(extra_lines=lines)
        # A caller's token lives 4 s: the exchanged one must not outlive it.
        alice = asrv.sign({"sub": "alice", "aud": RESOURCE,
                           "client_id": "app"}, expires_in=4)
        sid = _session(d, alice)
        _await_whoami(d, sid, alice)
        who = _whoami(d, sid, alice)
        expect(who["sub"] == "alice" and who["aud"] == rs.url and
               who["act"] == {"sub": MCPD_CLIENT[0]},
               f"the upstream saw {who!r}, not alice's exchanged token")
        expect(who["token"] != _sha16(alice), "the caller's own token "
               "reached the upstream")
        expect(asrv.grants()["exchange"] == 1, f"exchanges: {asrv.grants()}")
        again = _whoami(d, sid, alice)
        expect(again["token"] == who["token"] and
               asrv.grants()["exchange"] == 1, "the second call did not "
               f"reuse the exchanged token: {asrv.grants()}")

        # Once alice's token has expired, its exchanged token is not used.
        exp = jwt_parts(alice)[1]["exp"]
        while time.time() <= exp:
            time.sleep(0.1)
        alice2 = asrv.sign({"sub": "alice", "aud": RESOURCE,
                            "client_id": "app"}, expires_in=600)
        later = _whoami(d, sid, alice2)
        expect(later["sub"] == "alice" and later["token"] != who["token"] and
               asrv.grants()["exchange"] == 2, "after the caller's token "
               f"expired the old exchange was reused: {asrv.grants()}")

        # A refused exchange: that call's error, the upstream never asked.
        mallory = asrv.sign({"sub": "mallory", "aud": RESOURCE},
                            expires_in=600)
        msid = _session(d, mallory)
        msg = _call(d, msid, mallory)
        err = msg.get("error") or {}
        expect(err.get("code") == -32024 and
               err.get("data", {}).get("error") == "invalid_target" and
               err.get("data", {}).get("upstream") == "rs",
               f"a refused exchange -> {msg!r}")
        expect("mallory" not in rs.stats()["subjects"],
               f"a call reached the upstream for mallory: {rs.stats()!r}")
        expect(_whoami(d, sid, alice2)["sub"] == "alice",
               "alice's calls go on after mallory's refusal")
        for tok in (alice, alice2, mallory):
            expect(tok not in d.stderr_text(), "a caller's token in the log")
        expect(d.metric("credential_failures") >= 1,
               "the credential_failures metric counts the refusal")


def _reload(d, lines):
    before = d.stderr_text().count("reload: ")
    with open(d.conf_path, "w") as f:
        f.write(conf_text(dict(DAEMON_CONF), lines))
    d.signal(signal.SIGHUP)
    deadline = time.monotonic() + tmo(10)
    while time.monotonic() < deadline:
        done = [ln for ln in d.stderr_text().splitlines()
                if "reload: " in ln][before:]
        done = [ln for ln in done if " applied" in ln or "stays" in ln]
        if done:
            expect(" applied" in done[0], f"reload: {done[0]}")
            return
        time.sleep(0.02)
    raise AssertionError(f"no reload outcome:\n{d.stderr_tail(10)}")


def test_static_header_from_file_read_again_on_reload(h):
    with ResourceServer(h.workdir, header="X-Api-Key") as rs:
        key = h.write("api.key", "key-one\n")
        lines = _upstream(rs.url, f"header X-Api-Key {key}")
        d = h.start(extra_lines=lines)
        sid = _session(d)
        _await_whoami(d, sid)
        expect(_whoami(d, sid)["header"] == "key-one", "the header's value")
        starts = rs.stats()["initialize"]
        h.write("api.key", "key-two\n")
        _reload(d, lines)
        expect(_whoami(d, sid)["header"] == "key-two", "after the reload "
               "the header still carries the old value")
        expect(rs.stats()["initialize"] == starts, "the reload restarted "
               "the upstream to change a header")
        expect("key-one" not in d.stderr_text() and
               "key-two" not in d.stderr_text(), "a header value in the log")


def test_openapi_client_credentials_and_401(h):
    with AuthServer(h.workdir, dict([MCPD_CLIENT])) as asrv, \
            ResourceServer(h.workdir, issuer=asrv.issuer) as rs:
        d = h.start(extra_lines=_openapi(h, asrv, rs, "client_credentials"),
                    log_level="debug")
        sid = _session(d)
        # The document itself needs a token: its tools mean it had one.
        _await_whoami(d, sid)
        first = _rest_whoami(d, sid)
        expect(first["sub"] == MCPD_CLIENT[0] and first["aud"] == rs.url and
               first["act"] is None, f"mcpd's own token: {first!r}")
        expect(rs.stats()["refused"] == 0 and
               rs.stats()["subjects"].get(MCPD_CLIENT[0]) == 1,
               f"the API's view: {rs.stats()!r}")
        # A token the API refuses (401): another, and the call once more.
        n = asrv.grants()["client_credentials"]
        rs.revoke(first["token"])
        second = _rest_whoami(d, sid)
        expect(second["token"] != first["token"] and
               rs.stats()["refused"] == 1 and
               asrv.grants()["client_credentials"] == n + 1,
               f"after a 401: {second!r}, {rs.stats()!r}, {asrv.grants()!r}")
        expect(MCPD_CLIENT[1] not in d.stderr_text(),
               "the client secret in the log")
        # mcpd -t fetches the document with a token of its own too.
        path = h.write("check.conf", conf_text(
            dict(DAEMON_CONF), _openapi(h, asrv, rs, "client_credentials")))
        n = asrv.grants()["client_credentials"]
        rc, out = h.run_mcpd("-t", "-c", path)
        expect(rc == 0 and "openapi api: 1 tools from" in out and
               asrv.grants()["client_credentials"] == n + 1,
               f"mcpd -t -> {rc}: {out}")
        expect(MCPD_CLIENT[1] not in out, "the client secret in -t output")


def test_openapi_token_exchange_and_refused(h):
    with AuthServer(h.workdir, dict([MCPD_CLIENT])) as asrv, \
            ResourceServer(h.workdir, issuer=asrv.issuer) as rs:
        asrv.configure(exchange_expires_in=3600, refuse_subjects=["mallory"])
        lines = auth_lines(RESOURCE, asrv, scopes=None) + \
            _openapi(h, asrv, rs, "token_exchange")
        d = h.start(extra_lines=lines)
        alice = asrv.sign({"sub": "alice", "aud": RESOURCE,
                           "client_id": "app"}, expires_in=600)
        sid = _session(d, alice)
        # The document's fetch is on nobody's behalf: mcpd's own token.
        _await_whoami(d, sid, alice)
        who = _rest_whoami(d, sid, alice)
        expect(who["sub"] == "alice" and who["aud"] == rs.url and
               who["act"] == {"sub": MCPD_CLIENT[0]},
               f"the API saw {who!r}, not alice's exchanged token")
        expect(who["token"] != _sha16(alice), "the caller's own token "
               "reached the API")
        expect(asrv.grants()["exchange"] == 1, f"exchanges: {asrv.grants()}")

        # A refused exchange: that call's -32024, the API never called.
        mallory = asrv.sign({"sub": "mallory", "aud": RESOURCE},
                            expires_in=600)
        msid = _session(d, mallory)
        msg = _call(d, msid, mallory)
        err = msg.get("error") or {}
        data = err.get("data") or {}
        expect(err.get("code") == -32024 and
               data.get("error") == "invalid_target" and
               data.get("openapi") == "api" and
               "no credentials" in err.get("message", ""),
               f"a refused exchange -> {msg!r}")
        expect("mallory" not in rs.stats()["subjects"],
               f"a call reached the API for mallory: {rs.stats()!r}")
        expect(_rest_whoami(d, sid, alice)["sub"] == "alice",
               "alice's calls go on after mallory's refusal")
        for tok in (alice, mallory):
            expect(tok not in d.stderr_text(), "a caller's token in the log")


def test_openapi_header_from_file_and_reload(h):
    with ResourceServer(h.workdir, header="X-Api-Key") as rs:
        key = h.write("api.key", "key-one\n")
        spec = rs.url[:-len("/mcp")] + "/api/openapi.json"
        lines = ["openapi api {", f"    spec {spec}", "    header X-Team blue",
                 "    credentials {", f"        header X-Api-Key {key}",
                 "    }", "}"]
        d = h.start(extra_lines=lines)
        sid = _session(d)
        _await_whoami(d, sid)
        expect(_rest_whoami(d, sid)["header"] == "key-one",
               "the credentials header's value")
        # A rotated file is taken up by a reload, the block's tools kept.
        h.write("api.key", "key-two\n")
        _reload(d, lines)
        expect(_rest_whoami(d, sid)["header"] == "key-two", "after the "
               "reload the header still carries the old value")
        expect("key-one" not in d.stderr_text() and
               "key-two" not in d.stderr_text(), "a header value in the log")
