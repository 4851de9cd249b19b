"""Authorization (conf `auth { }`, docs/authorization.md): mcpd as an OAuth
2.1 resource server. Protected resource metadata, 401 and 403 with their
WWW-Authenticate, JWT access tokens verified with keys the test makes with
openssl (RS256, PS256, ES256, EdDSA) and every bad token refused, scopes
per request and per tool, sessions bound to their principal (POST, GET,
resume, DELETE; on Redis across a restart too), the principal in an exec
tool's environment, static tokens, RFC 7662 introspection and jwks_uri
served by the test over HTTP on 127.0.0.1."""

import json
import math
import os
import signal
import subprocess
import tempfile
import time

import authkit
import test_metrics
from mcpd_harness import (LATEST, Reply, expect, need_shared_redis,
                          random_session_id, rpc, result_text, tmo, tool_call)

ISSUER = "https://as.example.test"
RESOURCE = "https://mcp.example.test/mcp"
METADATA_URL = \
    "https://mcp.example.test/.well-known/oauth-protected-resource/mcp"

_KEYS = {}
_KEYDIR = tempfile.mkdtemp(prefix="mcpd-auth-keys-")


def key(name, kind="rsa"):
    """A key made once per run (RSA generation is slow)."""
    if name not in _KEYS:
        _KEYS[name] = authkit.Key(_KEYDIR, kind, name)
    return _KEYS[name]


def bearer(token):
    return {"Authorization": "Bearer " + token}


def token(k=None, alg=None, header=None, kid=True, **claims):
    k = k or key("rsa1")
    return authkit.jwt(k, authkit.claims(ISSUER, RESOURCE, **claims), alg,
                       header, kid)


def auth_lines(**kv):
    kv = {"resource": RESOURCE, "authorization_server": ISSUER, **kv}
    return ["auth {"] + [f"    {k} {v}" for k, v in kv.items()
                         if v is not None] + ["}"]


def write(h, name, data):
    path = os.path.join(h.workdir, name)
    with open(path, "w") as f:
        f.write(data if isinstance(data, str) else json.dumps(data))
    return path


def start(h, keyset=None, extra=(), **auth):
    """mcpd with an auth block; keyset: the jwks_file (rsa1 by default)."""
    if keyset is None and "jwks_file" not in auth and \
            "jwks_uri" not in auth:
        keyset = authkit.jwks(key("rsa1").jwk())
    if keyset is not None:
        auth.setdefault("jwks_file", write(h, "jwks.json", keyset))
    return h.start(extra_lines=auth_lines(**auth) + list(extra))


def www(r):
    return r.header("WWW-Authenticate") or ""


def assert_401(r, invalid, what):
    expect(r.status == 401, f"{what}: HTTP {r.status} {r.body[:200]!r}")
    w = www(r)
    expect(w.startswith("Bearer "), f"{what}: WWW-Authenticate {w!r}")
    expect(f'resource_metadata="{METADATA_URL}"' in w,
           f"{what}: no resource_metadata in {w!r}")
    expect(('error="invalid_token"' in w) == invalid,
           f"{what}: invalid_token {'missing' if invalid else 'given'} in "
           f"{w!r}")
    body = r.json
    expect(body.get("id", 0) is None and "error" in body,
           f"{what}: body {body!r}")


def assert_403(r, scope, what):
    expect(r.status == 403, f"{what}: HTTP {r.status} {r.body[:200]!r}")
    w = www(r)
    expect('error="insufficient_scope"' in w, f"{what}: {w!r}")
    expect(f'scope="{scope}"' in w, f"{what}: scope {scope!r} not in {w!r}")
    expect(f'resource_metadata="{METADATA_URL}"' in w, f"{what}: {w!r}")


def session(d, tok):
    """A session created with tok (and notified initialized with it)."""
    sid = d.initialize(headers=bearer(tok), initialized=False)
    n = d.post(sid, rpc("notifications/initialized"), bearer(tok))
    expect(n.status == 202, f"notifications/initialized -> HTTP {n.status}")
    return sid


def ping_status(d, sid, tok):
    return d.post(sid, rpc("ping", None, d.new_id()), bearer(tok)).status


# --------------------------------------------------------------------------
# Metadata and the 401


def test_auth_metadata_documents(h):
    """RFC 9728: the metadata at the base well-known path and at the path
    suffixed with the resource's, naming resource, authorization server and
    every scope (required and per tool); public, no token needed."""
    d = start(h, scopes="mcp", extra=[
        "tool deploy {", "    exec /bin/true", "    scope deploy", "}"])
    for path in ("/.well-known/oauth-protected-resource",
                 "/.well-known/oauth-protected-resource/mcp"):
        r = d.request("GET", path=path)
        expect(r.status == 200, f"{path}: HTTP {r.status}")
        md = r.json
        expect(md["resource"] == RESOURCE, f"{path}: {md!r}")
        expect(md["authorization_servers"] == [ISSUER], f"{path}: {md!r}")
        expect(md["scopes_supported"] == ["mcp", "deploy"], f"{md!r}")
        expect(md["bearer_methods_supported"] == ["header"], f"{md!r}")
    r = d.request("POST", path="/.well-known/oauth-protected-resource",
                  body="{}")
    expect(r.status == 405, f"POST metadata: HTTP {r.status}")
    expect(d.healthz()["status"] == "ok", "healthz needs no token")


def test_auth_no_token_is_401_on_every_method(h):
    """No Authorization (or another scheme): 401 with the challenge naming
    the metadata and the required scopes, before anything else is looked
    at; the daemon goes on serving."""
    d = start(h, scopes="mcp")
    r = d.initialize_reply()
    assert_401(r, False, "initialize without a token")
    expect('scope="mcp"' in www(r), f"scope in {www(r)!r}")
    expect(r.session_id is None, "a session id without a token")
    assert_401(d.post(random_session_id(), rpc("ping", None, 1)), False,
               "POST without a token")
    assert_401(d.get_sse(random_session_id()), False, "GET without a token")
    assert_401(d.get_sse(random_session_id(), "1-1"), False,
               "resume without a token")
    assert_401(d.delete(random_session_id()), False, "DELETE without a token")
    assert_401(d.initialize_reply(headers={"Authorization": "Basic eDp5"}),
               False, "Basic credentials")
    sid = session(d, token())
    expect(ping_status(d, sid, token()) == 200, "ping with a token")


def test_auth_no_auth_block_no_metadata(h):
    """Without an auth block nothing changes: no metadata, no token."""
    d = h.start()
    r = d.request("GET", path="/.well-known/oauth-protected-resource")
    expect(r.status == 404, f"metadata without auth: HTTP {r.status}")
    sid = d.initialize()
    d.assert_alive(sid, "without auth")


# --------------------------------------------------------------------------
# JWT access tokens


def test_auth_jwt_each_algorithm_accepted(h):
    """RS256, PS256, ES256 and EdDSA tokens from jwks_file: a session, a
    tool call; aud as an array containing the resource too."""
    rsa, ec, ed = key("rsa1"), key("ec1", "ec"), key("ed1", "ed25519")
    d = start(h, authkit.jwks(rsa.jwk(), ec.jwk("ES256"), ed.jwk()))
    for k, alg in ((rsa, "RS256"), (rsa, "PS256"), (ec, "ES256"),
                   (ed, "EdDSA")):
        tok = token(k, alg)
        sid = session(d, tok)
        msg, _ = d.call(sid, "echo", {"text": alg}) if False else \
            (None, None)
        id = d.new_id()
        r = d.post(sid, tool_call("echo", {"text": alg}, id), bearer(tok))
        expect(r.status == 200, f"{alg}: tools/call HTTP {r.status}")
        expect(result_text(r.rpc(id)) == alg, f"{alg}: {r.rpc(id)!r}")
    tok = token(aud=["https://other.example.test", RESOURCE])
    expect(ping_status(d, session(d, tok), tok) == 200, "aud array")
    # Client credentials: no sub, the client is the subject.
    tok = token(sub=None, client_id="svc")
    expect(ping_status(d, session(d, tok), tok) == 200, "client_id alone")


def test_auth_bad_tokens_are_401_and_mcpd_keeps_serving(h):
    """Every token that must not pass: expired, not yet valid, wrong iss,
    wrong aud, bad signature, alg none, HS256 keyed with the public key,
    oversized, unknown kid, no sub, no exp, garbage; each a 401 with
    error="invalid_token". No token reaches the log."""
    rsa = key("rsa1")
    other = key("rsa2")
    d = start(h, max_token="4k")
    now = int(time.time())
    bad = {
        "expired": token(exp=now - 3600, iat=now - 7200),
        "not yet valid": token(nbf=now + 3600),
        "wrong iss": token(iss="https://evil.example.test"),
        "wrong aud": token(aud="https://other.example.test/mcp"),
        "aud array without the resource": token(
            aud=["https://a.example.test", "https://b.example.test"]),
        "bad signature": authkit.jwt(
            other, authkit.claims(ISSUER, RESOURCE),
            header={"kid": rsa.kid}),
        "alg none": authkit.unsigned(authkit.claims(ISSUER, RESOURCE)),
        "alg none with a kid": authkit.unsigned(
            authkit.claims(ISSUER, RESOURCE)) + "AAAA",
        "HS256 with the public key": authkit.hs256(
            rsa.public_pem, authkit.claims(ISSUER, RESOURCE), rsa.kid),
        "oversized": token(pad="x" * 5000),
        "unknown kid": token(header={"kid": "nobody"}),
        "no sub": token(sub=None),
        "no exp": token(exp=None),
        "garbage": "not-a-token",
        "three dots of junk": "a.b.c",
        "truncated signature": token()[:-10],
    }
    for what, tok in bad.items():
        r = d.initialize_reply(headers=bearer(tok))
        assert_401(r, True, what)
        expect(r.session_id is None, f"{what}: a session id")
    good = token()
    sid = session(d, good)
    for what, tok in bad.items():
        r = d.post(sid, rpc("ping", None, d.new_id()), bearer(tok))
        assert_401(r, True, f"{what} on a session")
    expect(ping_status(d, sid, good) == 200, "the good token still works")
    log = d.stderr_text()
    for what, tok in list(bad.items()) + [("good", good)]:
        sig = tok.split(".")[-1]
        expect(tok not in log and (len(sig) < 16 or sig not in log),
               f"the {what} token is in the log")


def test_auth_remembered_token_still_expires(h):
    """A JWT verified once is remembered, but not past its exp: the same
    token is refused once it has expired (well before jwks_cache)."""
    d = start(h, leeway=0)
    tok = token(lifetime=2)
    sid = session(d, tok)
    expect(ping_status(d, sid, tok) == 200, "the token, remembered")
    deadline = time.monotonic() + tmo(15)
    while True:
        status = ping_status(d, sid, tok)
        if status == 401:
            break
        expect(status == 200, f"HTTP {status}")
        expect(time.monotonic() < deadline, "an expired token still passes "
               "(remembered past its exp)")
        time.sleep(0.1)
    expect(ping_status(d, sid, token()) == 200, "a fresh token")


def test_auth_scopes_required_403(h):
    """scopes: a valid token without one of them is 403 with
    error="insufficient_scope" and the scopes to ask for."""
    d = start(h, scopes="mcp read")
    r = d.initialize_reply(headers=bearer(token(scope="mcp")))
    assert_403(r, "mcp read", "a token without read")
    r = d.initialize_reply(headers=bearer(token(scp=["mcp", "read"],
                                                 scope=None)))
    expect(r.status == 200, f"scp array: HTTP {r.status}")
    tok = token(scope="read mcp extra")
    sid = session(d, tok)
    assert_403(d.post(sid, rpc("ping", None, 1), bearer(token(scope="read"))),
               "mcp read", "a session's request without mcp")
    expect(ping_status(d, sid, tok) == 200, "the session goes on")


ENV_SCRIPT = ('echo "sub=$MCPD_SUBJECT client=$MCPD_CLIENT_ID '
              'scopes=$MCPD_SCOPES iss=$MCPD_ISSUER"; env')


def tools_names(d, sid, tok):
    id = d.new_id()
    r = d.post(sid, rpc("tools/list", {}, id), bearer(tok))
    expect(r.status == 200, f"tools/list HTTP {r.status}")
    return {t["name"] for t in r.rpc(id)["result"]["tools"]}


def test_auth_tool_scope_403_list_filtered_and_exec_env(h):
    """A tool's scope: tools/list shows it only to tokens that have it, a
    tools/call without it is 403 naming the scopes to ask for (required
    and the tool's), and with it the program sees who called in its
    environment, never the token."""
    q = '"' + ENV_SCRIPT.replace('"', '\\"') + '"'
    d = start(h, scopes="mcp", extra=[
        "tool deploy {", f"    exec /bin/sh -c {q}", "    scope deploy",
        "    env MCPD_SUBJECT=forged", "}",
        "tool whoami {", f"    exec /bin/sh -c {q}", "}"])
    plain = token(scope="mcp", client_id="cli-1")
    sid = session(d, plain)
    names = tools_names(d, sid, plain)
    expect("whoami" in names and "echo" in names, f"tools: {names}")
    expect("deploy" not in names, f"deploy listed without its scope: {names}")
    id = d.new_id()
    r = d.post(sid, tool_call("deploy", {}, id), bearer(plain))
    assert_403(r, "mcp deploy", "tools/call deploy without deploy")

    full = token(scope="mcp deploy", client_id="cli-1")
    expect("deploy" in tools_names(d, sid, full), "deploy with its scope")
    id = d.new_id()
    r = d.post(sid, tool_call("deploy", {}, id), bearer(full))
    expect(r.status == 200, f"deploy with its scope: HTTP {r.status}")
    out = result_text(r.rpc(id))
    expect(out.splitlines()[0] ==
           f"sub=alice client=cli-1 scopes=mcp deploy iss={ISSUER}",
           f"deploy's environment: {out!r}")
    expect(full not in out and full.split(".")[2] not in out,
           "the token is in the program's environment")
    expect("forged" not in out, f"the tool's env overrode MCPD_*: {out!r}")
    # The same session with the lesser token again: the call sees its
    # scopes, not those of an earlier request.
    id = d.new_id()
    r = d.post(sid, tool_call("whoami", {}, id), bearer(plain))
    expect(result_text(r.rpc(id)).splitlines()[0].endswith(
        f"scopes=mcp iss={ISSUER}"), f"whoami: {r.body[:300]!r}")


# --------------------------------------------------------------------------
# Sessions bound to their principal


def _assert_not_found_everywhere(d, sid, tok, what):
    unknown = d.post(random_session_id(), rpc("ping", None, 1), bearer(tok))
    expect(unknown.status == 404, f"unknown session: HTTP {unknown.status}")
    r = d.post(sid, rpc("ping", None, 1), bearer(tok))
    expect(r.status == 404, f"{what}: POST HTTP {r.status}")
    expect(r.json == unknown.json, f"{what}: POST says more than an unknown "
           f"session: {r.json!r} vs {unknown.json!r}")
    r = d.post(sid, rpc("notifications/initialized"), bearer(tok))
    expect(r.status == 404, f"{what}: notification HTTP {r.status}")
    r = d.get_sse(sid, headers=bearer(tok))
    expect(r.status == 404, f"{what}: GET HTTP {r.status}")
    r = d.get_sse(sid, "1-0", headers=bearer(tok))
    expect(r.status == 404, f"{what}: resume HTTP {r.status} {r.body!r}")
    expect(r.json == unknown.json, f"{what}: resume reveals {r.json!r}")
    r = d.delete(sid, headers=bearer(tok))
    expect(r.status == 404, f"{what}: DELETE HTTP {r.status}")


def test_auth_session_bound_to_its_principal(h):
    """A session is its creator's (issuer, subject, client id): another
    subject's token, or the same subject through another client, naming it
    is answered as an unknown session on POST, GET, resume and DELETE; the
    owner carries on, with a new token of its own too."""
    d = start(h)
    alice = token(sub="alice", client_id="app")
    sid = session(d, alice)
    id = d.new_id()
    r = d.post(sid, tool_call("echo", {"text": "x"}, id), bearer(alice))
    expect(r.status == 200, f"alice's call: HTTP {r.status}")
    first = r.events[0].id if r.events and r.events[0].id else None
    _assert_not_found_everywhere(d, sid, token(sub="bob", client_id="app"),
                                 "bob")
    _assert_not_found_everywhere(d, sid, token(sub="alice",
                                               client_id="other"),
                                 "alice through another client")
    if first is not None:
        r = d.get_sse(sid, first, headers=bearer(token(sub="bob")))
        expect(r.status == 404, f"bob resuming alice's stream: {r.status}")
    renewed = token(sub="alice", client_id="app", lifetime=600)
    expect(ping_status(d, sid, renewed) == 200, "alice with a new token")
    r = d.delete(sid, headers=bearer(renewed))
    expect(r.status in (200, 204), f"alice's DELETE: HTTP {r.status}")


def test_auth_session_binding_survives_a_restart_on_redis(h):
    """On the redis log the principal is stored with the session: a new
    process loads it from the log and still refuses another principal
    (one instance here; tests of two instances live elsewhere)."""
    need_shared_redis()
    d = start(h)
    alice = token(sub="alice")
    sid = session(d, alice)
    d.stop()
    d2 = h.start(extra_lines=auth_lines(
        jwks_file=os.path.join(h.workdir, "jwks.json")))
    d2.versions[sid] = LATEST
    _assert_not_found_everywhere(d2, sid, token(sub="bob"), "bob, reloaded")
    expect(ping_status(d2, sid, alice) == 200, "alice on the new process")


# --------------------------------------------------------------------------
# Static tokens and introspection


def test_auth_token_file(h):
    """token_file: the SHA-256 of a token, its subject and scopes."""
    secret = "s3cr3t-static-token-for-tests"
    path = write(h, "tokens", "# static\n"
                 f"{authkit.sha256_hex(secret)} robot mcp deploy\n"
                 f"{authkit.sha256_hex('weak-one')} weak other\n")
    d = start(h, scopes="mcp", token_file=path)
    sid = session(d, secret)
    expect(ping_status(d, sid, secret) == 200, "static token")
    assert_401(d.initialize_reply(headers=bearer(secret + "x")), True,
               "a token not in the file")
    assert_403(d.initialize_reply(headers=bearer("weak-one")), "mcp",
               "a static token without mcp")
    expect(ping_status(d, sid, token(sub="robot")) == 404,
           "a JWT of the same subject is another principal")
    expect(secret not in d.stderr_text(), "the static token is logged")


def test_auth_introspection(h):
    """Opaque tokens go to the introspection endpoint (HTTP Basic as the
    configured client); an active answer is cached, an inactive one, a
    wrong audience or an expired token is 401."""
    srv = authkit.IntrospectionServer("mcpd-rs", "intro-secret")
    try:
        secret = write(h, "client-secret", "intro-secret\n")
        now = int(time.time())
        srv.answers = {
            "opaque-good": {"active": True, "sub": "carol",
                            "client_id": "app", "scope": "mcp",
                            "exp": now + 300, "aud": RESOURCE,
                            "iss": ISSUER},
            "opaque-aud": {"active": True, "sub": "carol", "scope": "mcp",
                           "aud": "https://other.example.test"},
            "opaque-old": {"active": True, "sub": "carol", "scope": "mcp",
                           "exp": now - 3600},
            "opaque-noscope": {"active": True, "sub": "carol",
                               "scope": "other"},
        }
        d = start(h, keyset=None, jwks_file=None, scopes="mcp",
                  introspection=f"{srv.url('/introspect')} mcpd-rs {secret}")
        sid = session(d, "opaque-good")
        asked = srv.requests
        for _ in range(3):
            expect(ping_status(d, sid, "opaque-good") == 200, "cached token")
        expect(srv.requests == asked, f"asked again: {srv.requests} > "
               f"{asked} (the answer was not cached)")
        for tok in ("opaque-unknown", "opaque-aud", "opaque-old"):
            assert_401(d.initialize_reply(headers=bearer(tok)), True, tok)
        assert_403(d.initialize_reply(headers=bearer("opaque-noscope")),
                   "mcp", "introspected without mcp")
        expect(srv.bad_auth == 0, "mcpd's client credentials were wrong")
        expect(ping_status(d, sid, token(sub="carol")) == 401,
               "a JWT without jwks is not introspected as valid")
    finally:
        srv.close()


def test_auth_introspection_down_is_503(h):
    """An introspection endpoint that does not answer: 503 with
    Retry-After, never a pass; mcpd goes on serving."""
    srv = authkit.IntrospectionServer("x", "y")
    url = srv.url("/introspect")
    srv.close()
    d = start(h, keyset=None, jwks_file=None, introspection=url, timeout=2)
    r = d.initialize_reply(headers=bearer("opaque"))
    expect(r.status == 503, f"introspection down: HTTP {r.status}")
    expect(r.header("Retry-After"), "503 without Retry-After")
    expect(d.healthz()["status"] == "ok", "mcpd serves on")


def _introspection(h, srv, **auth):
    secret = write(h, "client-secret", "intro-secret\n")
    return start(h, keyset=None, jwks_file=None, scopes="mcp",
                 introspection=f"{srv.url('/introspect')} mcpd-rs {secret}",
                 **auth)


def _introspected(**over):
    now = int(time.time())
    answer = {"active": True, "sub": "carol", "client_id": "app",
              "scope": "mcp", "exp": now + 300, "aud": RESOURCE,
              "iss": ISSUER}
    answer.update(over)
    return answer


def test_auth_introspection_bad_answers(h):
    """An answer that is not RFC 7662's (not JSON, no boolean active)
    cannot check the token: 503 with Retry-After, and nothing is cached,
    so the next request asks again and passes once the endpoint answers
    properly. A claim holding a NUL, or a sub that is not a string, is a
    refusal (never cut short, never replaced by client_id)."""
    srv = authkit.IntrospectionServer("mcpd-rs", "intro-secret")
    try:
        srv.answers = {
            "opaque-flaky": b"<html>a proxy's error page</html>",
            "opaque-noactive": {"sub": "carol", "scope": "mcp"},
            "opaque-active-text": _introspected(active="true"),
            "opaque-nul": _introspected(sub="carol\u0000admin"),
            "opaque-aud-nul": _introspected(aud=RESOURCE + "\u0000x"),
            "opaque-subnum": _introspected(sub=7),
        }
        d = _introspection(h, srv)
        for tok in ("opaque-flaky", "opaque-noactive", "opaque-active-text"):
            before = srv.requests
            r = d.initialize_reply(headers=bearer(tok))
            expect(r.status == 503 and r.header("Retry-After"),
                   f"{tok}: HTTP {r.status}, Retry-After "
                   f"{r.header('Retry-After')!r}")
            expect(srv.requests == before + 1, f"{tok}: not asked")
        with srv.lock:
            srv.answers["opaque-flaky"] = _introspected()
        before = srv.requests
        sid = session(d, "opaque-flaky")
        expect(srv.requests == before + 1, "the unusable answer was cached")
        expect(ping_status(d, sid, "opaque-flaky") == 200, "the token")
        for tok in ("opaque-nul", "opaque-aud-nul", "opaque-subnum"):
            assert_401(d.initialize_reply(headers=bearer(tok)), True, tok)
        expect(d.healthz()["status"] == "ok", "mcpd serves on")
    finally:
        srv.close()


def test_auth_introspection_rate(h):
    """introspection_rate bounds the tokens sent to the endpoint per
    second: made-up tokens beyond it are answered 503 with Retry-After
    (never let through) without reaching the endpoint, while a token with
    a cached answer is not counted and passes all along."""
    srv = authkit.IntrospectionServer("mcpd-rs", "intro-secret")
    try:
        srv.answers = {"opaque-good": _introspected()}
        d = _introspection(h, srv, introspection_rate=1)
        sid = session(d, "opaque-good")
        asked = srv.requests
        statuses = []
        start_t = time.monotonic()
        for i in range(40):
            r = d.initialize_reply(headers=bearer(f"made-up-{i}"))
            statuses.append(r.status)
            expect(r.status in (401, 503), f"made-up token: {r.status}")
            if r.status == 503:
                expect(r.header("Retry-After"), "503 without Retry-After")
            expect(ping_status(d, sid, "opaque-good") == 200,
                   "a cached token refused during the flood")
        elapsed = time.monotonic() - start_t
        new = srv.requests - asked
        expect(statuses.count(401) == new,
               f"{statuses.count(401)} refusals, {new} introspections")
        # One-second windows: the loop spans at most ceil(elapsed) + 1.
        expect(new <= math.ceil(elapsed) + 1,
               f"{new} tokens introspected in {elapsed:.1f} s at "
               "introspection_rate 1")
    finally:
        srv.close()


def test_auth_jwt_claims_read_whole(h):
    """token_type at+jwt: the header's typ must be at+jwt (RFC 9068, either
    spelling, any case). Claims are read whole: an iss or aud with a NUL
    and a suffix, or a sub that is not a string, is refused."""
    d = start(h, token_type="at+jwt")
    for typ in ("at+jwt", "application/AT+JWT"):
        r = d.initialize_reply(headers=bearer(token(header={"typ": typ})))
        expect(r.status == 200, f"typ {typ}: HTTP {r.status}")
    for typ in ("JWT", None):
        assert_401(d.initialize_reply(headers=bearer(token(
            header={"typ": typ}))), True, f"typ {typ}")
    for what, claims in (("iss", {"iss": ISSUER + "\u0000.evil"}),
                         ("aud", {"aud": RESOURCE + "\u0000.evil"}),
                         ("aud in a list", {"aud": [RESOURCE + "\u0000"]}),
                         ("sub", {"sub": "alice\u0000admin"}),
                         ("sub a number", {"sub": 7, "client_id": "app"})):
        assert_401(d.initialize_reply(headers=bearer(token(**claims))),
                   True, what)
    expect(d.healthz()["status"] == "ok", "mcpd serves on")


# --------------------------------------------------------------------------
# jwks_uri


def test_auth_jwks_uri_fetch_rotation_and_bounded_refresh(h):
    """The key set is fetched from jwks_uri over HTTP; a token naming a
    kid the set lacks has it fetched again (the key rotated) and passes;
    another unknown kid within jwks_refresh_min fetches nothing and is
    401."""
    a, b = key("rot-a"), key("rot-b", "ec")
    srv = authkit.JwksServer(authkit.jwks(a.jwk()))
    try:
        d = start(h, keyset=None, jwks_uri=srv.url("/jwks"),
                  jwks_refresh_min="1h")
        tok = token(a)
        sid = session(d, tok)
        expect(ping_status(d, sid, tok) == 200, "kid a")
        fetched = srv.fetches
        expect(fetched == 1, f"{fetched} fetches for one known kid")
        srv.set_keys(authkit.jwks(b.jwk()))
        tb = token(b)
        expect(ping_status(d, sid, tb) == 200, "kid b after the rotation")
        expect(srv.fetches == 2, f"{srv.fetches} fetches after the rotation")
        for i in range(3):
            r = d.post(sid, rpc("ping", None, 1),
                       bearer(token(b, header={"kid": f"unknown-{i}"})))
            assert_401(r, True, f"unknown kid {i}")
        expect(srv.fetches == 2, f"{srv.fetches} fetches: the refresh rate "
               f"is not bounded")
        assert_401(d.post(sid, rpc("ping", None, 1), bearer(tok)), True,
                   "kid a, rotated out")
    finally:
        srv.close()


def _send_initialize(d, tok):
    """An initialize sent on its own connection, its reply not read."""
    conn = d.connect()
    params = {"protocolVersion": LATEST, "capabilities": {},
              "clientInfo": {"name": "mcpd-e2e", "version": "0.1"}}
    conn.send(d.build_request("POST", None,
                              rpc("initialize", params, d.new_id()),
                              bearer(tok)))
    return conn


def _wait_waiting(d, n):
    deadline = time.monotonic() + tmo(10)
    while d.healthz().get("auth_waiting") != n:
        expect(time.monotonic() < deadline, f"auth_waiting never {n}: "
               f"{d.healthz().get('auth_waiting')}")
        time.sleep(0.02)


def test_auth_waiting_requests_share_a_fetch_and_are_bounded(h):
    """Tokens arriving while the key set is being fetched wait for that
    one fetch (max_pending of them; the next is 503), and pass once it
    is in; a client that hung up while waiting costs nothing."""
    a = key("rsa1")
    srv = authkit.JwksServer(authkit.jwks(a.jwk()))
    srv.gate.clear()
    try:
        d = start(h, keyset=None, jwks_uri=srv.url("/jwks"), max_pending=3,
                  timeout=60)
        srv.wait_fetches(1, tmo(10))
        first = _send_initialize(d, token(a, sub="one"))
        _wait_waiting(d, 1)
        second = _send_initialize(d, token(a, sub="two"))
        _wait_waiting(d, 2)
        gone = _send_initialize(d, token(a, sub="gone"))
        _wait_waiting(d, 3)
        gone.close()
        r = d.initialize_reply(headers=bearer(token(a, sub="three")))
        expect(r.status == 503 and r.header("Retry-After"),
               f"beyond max_pending: HTTP {r.status}")
        srv.gate.set()
        for conn, who in ((first, "one"), (second, "two")):
            r = Reply(conn, "POST", time.monotonic() + tmo(10))
            r.read_body()
            expect(r.status == 200 and r.session_id,
                   f"{who}, after the fetch: HTTP {r.status} {r.body!r}")
        expect(srv.fetches == 1, f"{srv.fetches} fetches for one set")
        expect(d.healthz()["auth_waiting"] == 0, "still waiting")
        text, series = test_metrics.scrape(d)
        expect(series.get("mcpd_auth_waiting") == 0.0, f"{series!r}")
        p = subprocess.run([test_metrics.promtool(), "check", "metrics"],
                           input=text.encode(), capture_output=True,
                           timeout=tmo(30))
        expect(p.returncode == 0, f"promtool: {p.stdout!r} {p.stderr!r}")
    finally:
        srv.gate.set()
        srv.close()


def test_auth_reload_keeps_the_running_block(h):
    """SIGHUP: the auth block needs a restart; the running one stays."""
    d = start(h, scopes="mcp")
    tok = token(scope="mcp")
    sid = session(d, tok)
    with open(d.conf_path) as f:
        text = f.read()
    expect("    scopes mcp\n" in text, "the conf has no scopes line")
    with open(d.conf_path, "w") as f:
        f.write(text.replace("    scopes mcp\n", "    scopes mcp admin\n"))
    d.signal(signal.SIGHUP)
    d.wait_log(lambda line: "auth changed in" in line, 5,
               "the reload's line about auth")
    expect(ping_status(d, sid, tok) == 200, "the running block changed")


def test_auth_tool_scope_in_a_batch(h):
    """2025-03-26 batches: a tools/call of a tool whose scope the token
    lacks makes the whole batch 403, and nothing runs."""
    d = start(h, extra=[
        "tool deploy {", "    exec /bin/sh -c \"echo ran\"",
        "    scope deploy", "}"])
    tok = token(scope="mcp")
    sid = d.initialize("2025-03-26", headers=bearer(tok), initialized=False)
    r = d.post(sid, [rpc("ping", None, 1), tool_call("deploy", {}, 2)],
               bearer(tok))
    assert_403(r, "deploy", "a batch calling deploy")
    r = d.post(sid, [rpc("ping", None, 3), tool_call("deploy", {}, 4)],
               bearer(token(scope="deploy")))
    expect(r.status == 200, f"the batch with deploy: HTTP {r.status}")


def _start_env(h, env, **auth):
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update({k: v for k, v in env.items() if v is not None})
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
    try:
        return start(h, keyset=None, **auth)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_auth_jwks_uri_over_https(h):
    """jwks_uri over https: the server's certificate is verified against
    the trust store (here SSL_CERT_FILE naming the test's own CA) and must
    name the host; an untrusted certificate, or one for another address,
    gets no key set fetched (503), never a pass."""
    a = key("rsa1")
    good = authkit.make_cert(h.workdir, "IP:127.0.0.1", "good")
    other = authkit.make_cert(h.workdir, "IP:127.0.0.2", "other")
    servers = [authkit.JwksServer(authkit.jwks(a.jwk()), tls=good),
               authkit.JwksServer(authkit.jwks(a.jwk()), tls=other),
               authkit.JwksServer(authkit.jwks(a.jwk()), tls=good)]
    try:
        expect(servers[0].url("/jwks").startswith("https://"), "not https")
        d = _start_env(h, {"SSL_CERT_FILE": good[0]},
                       jwks_uri=servers[0].url("/jwks"))
        tok = token(a)
        expect(ping_status(d, session(d, tok), tok) == 200,
               "a token verified with a key set fetched over https")
        expect(servers[0].fetches >= 1, "no fetch over https")
        for srv, env, what in (
                (servers[1], {"SSL_CERT_FILE": other[0]},
                 "a certificate for another address"),
                (servers[2], {"SSL_CERT_FILE": other[0]},
                 "a certificate no CA in the store signed")):
            d = _start_env(h, env, jwks_uri=srv.url("/jwks"), timeout=3)
            r = d.initialize_reply(headers=bearer(tok))
            expect(r.status == 503, f"{what}: HTTP {r.status}")
            expect(srv.fetches == 0, f"{what}: the key set was served")
    finally:
        for srv in servers:
            srv.close()


def test_auth_jwks_uri_down_is_503(h):
    """No key set can be fetched: 503, not 401 (the token may be good)."""
    srv = authkit.JwksServer(authkit.jwks())
    url = srv.url("/jwks")
    srv.close()
    d = start(h, keyset=None, jwks_uri=url, timeout=2)
    r = d.initialize_reply(headers=bearer(token()))
    expect(r.status == 503, f"jwks_uri down: HTTP {r.status} {r.body!r}")
    expect(d.healthz()["status"] == "ok", "mcpd serves on")


# --------------------------------------------------------------------------
# The configuration


def _check(h, name, text):
    path = write(h, name, text)
    p = subprocess.run([h.mcpd, "-t", "-c", path], capture_output=True,
                       text=True, timeout=tmo(10))
    return p.returncode, p.stdout + p.stderr


def test_auth_conf_check_and_warning(h):
    """mcpd -t: the auth block's errors name the line; exec tools on a
    non-loopback listen without auth are warned about."""
    jw = write(h, "jwks.json", authkit.jwks(key("rsa1").jwk()))
    tool = "tool t {\n    exec /bin/true\n}\n"
    rc, out = _check(h, "open.conf", "listen 0.0.0.0:8080\n" + tool)
    expect(rc == 0 and "warning: exec tools" in out and "no auth block" in out,
           f"{rc} {out!r}")
    rc, out = _check(h, "lo.conf", "listen 127.0.0.1:8080\n" + tool)
    expect(rc == 0 and "warning:" not in out, f"loopback: {rc} {out!r}")
    block = "\n".join(auth_lines(jwks_file=jw)) + "\n"
    rc, out = _check(h, "authed.conf", "listen 0.0.0.0:8080\n" + tool + block)
    expect(rc == 0 and "warning:" not in out, f"with auth: {rc} {out!r}")
    bad = {
        "no resource": ("auth {\n    authorization_server https://a\n"
                        f"    jwks_file {jw}\n}}\n", ":1:", "resource"),
        "bad url": ("auth {\n    resource mcp.example\n}\n", ":2:", "URL"),
        "unknown": (block.replace("}", "    colour blue\n}"), ":", "colour"),
        "no way": ("auth {\n    resource https://r/mcp\n"
                   "    authorization_server https://a\n}\n", ":1:",
                   "jwks_file"),
        "bad scope": (block.replace("}", '    scopes "a\\"b"\n}'), ":",
                      "scope"),
        "bad jwks": ("auth {\n    resource https://r/mcp\n"
                     "    authorization_server https://a\n"
                     f"    jwks_file {write(h, 'bad.json', '[1]')}\n}}\n",
                     "", "JWK set"),
        "twice": (block + block, ":", "duplicate auth"),
    }
    for what, (text, where, word) in bad.items():
        rc, out = _check(h, what.replace(" ", "_") + ".conf", text)
        expect(rc != 0 and where in out and word in out,
               f"{what}: {rc} {out!r}")


def test_auth_upstream_scope_covers_its_tools(h):
    """scope in an upstream block is every one of its tools' scope: listed
    only to tokens that have it, 403 insufficient_scope without it, the
    upstream never asked; the other tools stay as they were."""
    import test_upstream
    d = start(h, scopes="mcp", extra=test_upstream.upstream(
        "fake", "prefix up_", "scope upstream"))
    md = d.request("GET", path="/.well-known/oauth-protected-resource").json
    expect(md["scopes_supported"] == ["mcp", "upstream"], f"{md!r}")
    full = token(scope="mcp upstream")
    sid = session(d, full)
    test_upstream.wait_for(lambda: "up_echo" in tools_names(d, sid, full),
                           "up_echo listed with its scope")
    plain = token(scope="mcp")
    names = tools_names(d, sid, plain)
    expect("echo" in names, f"builtin echo without the scope: {names}")
    expect(not any(n.startswith("up_") for n in names),
           f"the upstream's tools listed without its scope: {names}")
    r = d.post(sid, tool_call("up_echo", {"text": "hi"}, d.new_id()),
               bearer(plain))
    assert_403(r, "mcp upstream", "up_echo without the upstream's scope")
    id = d.new_id()
    r = d.post(sid, tool_call("up_echo", {"text": "hi"}, id), bearer(full))
    expect(r.status == 200, f"up_echo with its scope: HTTP {r.status}")
    expect("hi" in result_text(r.rpc(id)), "up_echo's result")


def test_auth_stateless_requests_scopes_and_exec_env(h):
    """A 2026-07-28 request (no session) is authorized as a session's is:
    401 without a token, tools/list filtered by the token's scopes, 403
    for a scoped tool, and an exec tool sees the token's principal."""
    import test_stateless
    q = '"echo sub=$MCPD_SUBJECT scopes=$MCPD_SCOPES"'
    d = start(h, scopes="mcp", extra=[
        "tool deploy {", f"    exec /bin/sh -c {q}", "    scope deploy",
        "}"])

    def post(tok, method, params=None):
        params = dict(params or {})
        params["_meta"] = test_stateless._meta()
        headers = test_stateless._headers(method, params)
        if tok is not None:
            headers.update(bearer(tok))
        id = d.new_id()
        r = d.post(None, rpc(method, params, id), headers)
        return r, id

    r, _ = post(None, "tools/list")
    assert_401(r, False, "stateless tools/list without a token")
    plain = token(scope="mcp")
    r, id = post(plain, "tools/list")
    expect(r.status == 200, f"stateless tools/list: HTTP {r.status}")
    names = [t["name"] for t in r.rpc(id)["result"]["tools"]]
    expect("echo" in names and "deploy" not in names,
           f"stateless tools/list without deploy's scope: {names}")
    r, _ = post(plain, "tools/call", {"name": "deploy", "arguments": {}})
    assert_403(r, "mcp deploy", "stateless tools/call deploy without it")
    full = token(scope="mcp deploy")
    r, id = post(full, "tools/list")
    names = [t["name"] for t in r.rpc(id)["result"]["tools"]]
    expect("deploy" in names, f"stateless tools/list with deploy: {names}")
    r, id = post(full, "tools/call", {"name": "deploy", "arguments": {}})
    expect(r.status == 200, f"stateless deploy: HTTP {r.status}")
    out = result_text(r.rpc(id))
    expect(out.strip() == "sub=alice scopes=mcp deploy",
           f"deploy's environment on the stateless path: {out!r}")


def test_auth_openapi_scope_covers_its_tools(h):
    """scope in an openapi block is every one of its tools' scope: in the
    metadata, listed only to tokens that have it, 403 insufficient_scope
    without it (nothing sent), the call made with it."""
    spec = write(h, "api.yaml", "\n".join([
        "openapi: 3.0.3", "info: {title: T, version: '1'}", "paths:",
        "  /items/{id}:", "    get:", "      operationId: getItem",
        "      parameters:",
        "        - {name: id, in: path, required: true, "
        "schema: {type: integer}}",
        "      responses: {'200': {description: ok}}", ""]))
    d = start(h, scopes="mcp", extra=[
        "openapi api {", f"    spec {spec}", "    base_url http://127.0.0.1:9",
        "    prefix api_", "    scope api.read", "}"])
    md = d.request("GET", path="/.well-known/oauth-protected-resource").json
    expect(md["scopes_supported"] == ["mcp", "api.read"], f"{md!r}")
    plain, full = token(scope="mcp"), token(scope="mcp api.read")
    sid = session(d, full)
    expect("api_getItem" in tools_names(d, sid, full), "listed with its scope")
    expect("api_getItem" not in tools_names(d, sid, plain),
           "listed without its scope")
    r = d.post(sid, tool_call("api_getItem", {"id": 1}, d.new_id()),
               bearer(plain))
    assert_403(r, "mcp api.read", "api_getItem without the block's scope")
    id = d.new_id()
    r = d.post(sid, tool_call("api_getItem", {"id": 1}, id), bearer(full))
    expect(r.status == 200, f"api_getItem with its scope: HTTP {r.status}")
    text = result_text(r.rpc(id))
    expect(text.startswith("connection failed: GET "
                           "http://127.0.0.1:9/items/1"),
           f"the call went to the API: {text!r}")
