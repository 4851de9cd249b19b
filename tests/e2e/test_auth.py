"""Authorization (conf `auth { }`, docs/authorization.md): mcpd as an OAuth
2.1 resource server. Protected resource metadata, 401 and 403 with their
WWW-Authenticate, JWT access tokens verified with keys the test makes with
openssl (RS256, PS256, ES256, EdDSA) and every bad token refused, scopes
per request and per tool, sessions bound to their principal (POST, GET,
resume, DELETE; on Redis across a restart too), the principal in an exec
tool's environment, static tokens, RFC 7662 introspection and jwks_uri
served by the test over HTTP on 127.0.0.1."""

import json
import os
import subprocess
import tempfile
import time

import authkit
from mcpd_harness import (LATEST, REDIS_URL, expect, random_session_id, rpc,
                          result_text, tmo, tool_call)

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
    if REDIS_URL is None:
        print("SKIP principal stored in the log: no redis "
              "(MCPD_TEST_REDIS_URL; scripts/with-redis)")
        return
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
