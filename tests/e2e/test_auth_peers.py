"""End-to-end tests of mcpd's `auth` block against real peers (issue 14):
a real authorization server (oauth2-mock-server, tests/sdk/authserver.mjs,
see oauth_peer.py) that issues JWT access tokens by client credentials and
publishes its keys at a jwks_uri mcpd fetches over HTTP (and answers its
introspection endpoint for the opaque tokens it issues); two mcpd on one
Redis that must keep a session to the principal that created it; and the
official TypeScript SDK client finding its own way from a bare 401 to a
tool call (tests/sdk/oauth_client.mjs).

They need node and tests/sdk/node_modules (`make deps`); without them they
skip saying so (a failure under MCPD_TEST_NO_SKIP=1, as in CI). The
two-instance test runs on one instance without Redis (MCPD_TEST_REDIS_URL,
as scripts/with-redis sets it).
"""

import base64
import json
import os
import re
import time
import urllib.parse

from mcpd_harness import (REDIS_URL, SANITIZER_MARKERS, Reply, expect,
                          free_port, is_progress, is_response,
                          parse_event_id, result_text, rpc, tmo, tool_call)
from oauth_peer import (AuthServer, auth_lines, environ, http, jwt_parts,
                        run_oauth_client)
import authkit

# The audience mcpd wants in tests 1 and 2 (RFC 8707 resource): a name,
# never connected to, so that nothing but aud ties a token to it.
RESOURCE = "https://mcpd.test/mcp"
ALICE = ("alice", "alice-secret")
BOB = ("bob", "bob-secret")
CHALLENGE_PARAM = re.compile(r'\s*([A-Za-z_]+)="((?:[^"\\]|\\.)*)"\s*,?')


def _bearer(token):
    return {"Authorization": f"Bearer {token}"}


def _challenge(r):
    """The Bearer challenge of a reply's WWW-Authenticate, as a dict."""
    values = r.header_all("WWW-Authenticate")
    expect(len(values) == 1, f"HTTP {r.status}: WWW-Authenticate headers "
           f"{values!r}, expected one")
    v = values[0]
    expect(v[:7].lower() == "bearer ", f"WWW-Authenticate {v!r} is not a "
           "Bearer challenge with parameters")
    rest = v[7:]
    params = {}
    pos = 0
    while pos < len(rest):
        m = CHALLENGE_PARAM.match(rest, pos)
        expect(m is not None and m.end() > pos,
               f"WWW-Authenticate {v!r}: cannot parse from {rest[pos:]!r}")
        params[m.group(1)] = m.group(2)
        pos = m.end()
    return params


def _expect_401(r, what, error="invalid_token"):
    expect(r.status == 401, f"{what} -> HTTP {r.status}, expected 401: "
           f"{r.body[:200]!r}")
    c = _challenge(r)
    expect("resource_metadata" in c, f"{what}: 401 without "
           f"resource_metadata: {c!r}")
    expect(c.get("error") == error, f"{what}: 401 error={c.get('error')!r}, "
           f"expected {error!r}: {c!r}")
    return c


def _expect_403(r, what, scope):
    expect(r.status == 403, f"{what} -> HTTP {r.status}, expected 403: "
           f"{r.body[:200]!r}")
    c = _challenge(r)
    expect(c.get("error") == "insufficient_scope",
           f"{what}: 403 error={c.get('error')!r}: {c!r}")
    expect(scope in c.get("scope", "").split(),
           f"{what}: 403 scope={c.get('scope')!r} does not name {scope!r}")
    return c


def _session(d, token):
    """A new session with token on every request (Daemon.initialize sends
    its headers on the initialize only)."""
    sid = d.initialize(initialized=False, headers=_bearer(token))
    r = d.post(sid, rpc("notifications/initialized"), _bearer(token))
    expect(r.status == 202, f"notifications/initialized -> HTTP {r.status} "
           f"{r.body[:200]!r}")
    return sid


def _ping(d, sid, token):
    id = d.new_id()
    r = d.post(sid, rpc("ping", None, id), _bearer(token))
    if r.status == 200:
        expect(r.rpc(id).get("result") == {}, f"ping -> {r.body[:200]!r}")
    return r


def _echo(d, sid, token, text):
    id = d.new_id()
    r = d.post(sid, tool_call("echo", {"text": text}, id), _bearer(token))
    expect(r.status == 200, f"echo with a valid token -> HTTP {r.status} "
           f"{r.body[:300]!r}")
    got = result_text(r.rpc(id))
    expect(got == text, f"echo {text!r} -> {got!r}")


def _start(h, asrv, resource=RESOURCE, extra=(), **conf):
    d = h.start(extra_lines=auth_lines(resource, asrv, extra=extra), **conf)
    # mcpd fetches the key set at start-up; the tests count from there.
    asrv.wait_count("/jwks", lambda n: n >= 1,
                    what="mcpd fetched jwks_uri at start-up")
    return d


# --------------------------------------------------------------------------
# 1. a real authorization server, its keys fetched from jwks_uri


def test_auth_peer_jwks_uri_token_accepted(h):
    # No token: 401 naming the metadata, which names the authorization
    # server. A token the server issued for mcpd's resource with scope mcp:
    # a session and a tool call. Tokens the same server issued but that are
    # not for mcpd (another aud, no mcp scope) or that it did not sign
    # (altered, another key) are refused, and the daemon serves on.
    with AuthServer(h.workdir, dict([ALICE])) as asrv:
        d = _start(h, asrv)
        r = d.initialize_reply()
        expect(r.status == 401, f"initialize without a token -> HTTP "
               f"{r.status}: {r.body[:200]!r}")
        c = _challenge(r)
        expect("error" not in c, f"401 without a token has an error "
               f"parameter: {c!r} (RFC 6750 3.1: none when no token)")
        meta_url = urllib.parse.urlsplit(c.get("resource_metadata", ""))
        expect(meta_url.path.startswith(
            "/.well-known/oauth-protected-resource"),
            f"resource_metadata {c.get('resource_metadata')!r}")
        m = d.request("GET", path=meta_url.path)
        expect(m.status == 200 and m.is_json, f"GET {meta_url.path} -> "
               f"HTTP {m.status} {m.body[:200]!r}")
        meta = m.json
        expect(meta.get("resource") == RESOURCE,
               f"metadata resource {meta.get('resource')!r}")
        expect(meta.get("authorization_servers") == [asrv.issuer],
               f"metadata authorization_servers "
               f"{meta.get('authorization_servers')!r}")

        tok = asrv.token("alice", scope="mcp", resource=RESOURCE)
        header, claims = jwt_parts(tok)
        expect(header.get("kid") == asrv.kid and claims.get("aud") ==
               RESOURCE and claims.get("sub") == "alice",
               f"the AS's token: {header!r} {claims!r}")
        sid = _session(d, tok)
        _echo(d, sid, tok, "with a real token")

        other = asrv.token("alice", scope="mcp",
                           resource="https://other.test/mcp")
        _expect_401(_ping(d, sid, other), "a token for another resource")
        noscope = asrv.token("alice", scope="profile", resource=RESOURCE)
        _expect_403(_ping(d, sid, noscope), "a token without scope mcp",
                    "mcp")
        h64, p64, s64 = tok.split(".")
        forged = dict(claims, sub="mallory")
        p2 = base64.urlsafe_b64encode(json.dumps(forged).encode()) \
            .rstrip(b"=").decode()
        _expect_401(_ping(d, sid, f"{h64}.{p2}.{s64}"),
                    "the AS's token with its payload altered")
        foreign = asrv.sign({"sub": "alice", "aud": RESOURCE,
                             "scope": "mcp", "client_id": "alice"},
                            unpublished=True)
        _expect_401(_ping(d, sid, foreign), "a token signed by a key the "
                    "AS never published")
        expired = asrv.sign({"sub": "alice", "aud": RESOURCE,
                             "scope": "mcp", "client_id": "alice"},
                            expires_in=-3600)
        _expect_401(_ping(d, sid, expired), "an expired token")
        r = _ping(d, sid, tok)
        expect(r.status == 200, f"the good token after the bad ones -> "
               f"HTTP {r.status}")


def test_auth_peer_jwks_file_from_the_as(h):
    # The AS's published key set saved to a file (jwks_file, no jwks_uri):
    # its tokens pass without mcpd ever asking the AS. After a rotation
    # the file lacks the new kid and mcpd has nowhere to look: the new
    # key's tokens are 401 invalid_token until the file is updated and
    # mcpd restarted, the old key's still pass.
    with AuthServer(h.workdir, dict([ALICE])) as asrv:
        r = http("GET", asrv.jwks_uri)
        expect(r.status == 200 and len(r.json.get("keys", [])) == 1,
               f"the AS's JWKS -> HTTP {r.status} {r.body[:200]!r}")
        path = h.write("jwks.json", r.body.decode())
        fetched = asrv.jwks_fetches()
        d = h.start(extra_lines=auth_lines(RESOURCE, asrv, jwks=path))
        tok1 = asrv.token("alice", scope="mcp", resource=RESOURCE)
        sid = _session(d, tok1)
        _echo(d, sid, tok1, "verified with the AS's keys from a file")
        asrv.rotate()
        tok2 = asrv.token("alice", scope="mcp", resource=RESOURCE)
        _expect_401(_ping(d, sid, tok2), "a token of the rotated key, "
                    "which jwks_file lacks")
        _echo(d, sid, tok1, "the old key's token after the rotation")
        expect(asrv.jwks_fetches() == fetched, "mcpd fetched the AS's "
               "JWKS with only jwks_file configured")


def test_auth_peer_jwks_key_rotation(h):
    # The AS rotates its signing key. The first token signed with the new
    # kid makes mcpd fetch jwks_uri again (a kid the set lacks; start-up's
    # fetch does not count against jwks_refresh_min) and waits for it, so
    # it is accepted at once, and mcpd logs the set's two keys. The old key
    # is still published: its tokens still pass, with no fetch more.
    with AuthServer(h.workdir, dict([ALICE])) as asrv:
        d = _start(h, asrv, extra=["jwks_refresh_min 60"])
        old_kid = asrv.kid
        tok1 = asrv.token("alice", scope="mcp", resource=RESOURCE)
        sid = _session(d, tok1)
        _echo(d, sid, tok1, "before the rotation")
        fetched = asrv.jwks_fetches()

        new_kid = asrv.rotate()
        tok2 = asrv.token("alice", scope="mcp", resource=RESOURCE)
        expect(jwt_parts(tok2)[0].get("kid") == new_kid != old_kid,
               f"the AS signed with kid {jwt_parts(tok2)[0].get('kid')!r}, "
               f"expected the new {new_kid!r}")
        expect(asrv.jwks_fetches() == fetched, "jwks_uri fetched before "
               "any token named the new kid")
        _echo(d, sid, tok2, "signed with the rotated key")
        after = asrv.jwks_fetches()
        expect(after == fetched + 1, f"jwks_uri fetched {after - fetched} "
               "times for one new kid, expected exactly once")
        d.wait_log(lambda line: f"auth: jwks_uri {asrv.jwks_uri}: 2 keys"
                   in line, what="the log line of the set fetched with "
                   "the new key")
        _echo(d, sid, tok1, "signed with the old key, still published")
        _echo(d, sid, tok2, "with the new key again")
        expect(asrv.jwks_fetches() == after, "jwks_uri fetched again for "
               "kids mcpd already has")


def test_auth_peer_unknown_kid_fetch_rate_bounded(h):
    # Tokens naming a kid the AS does not publish: the first makes mcpd
    # look at jwks_uri again, and every one arriving while that fetch is
    # under way waits for it; after it, none does until jwks_refresh_min
    # (60 s here) has passed. 10 at once, then 10 one by one, cost the AS
    # one fetch; each is 401 invalid_token, and a good token keeps working.
    with AuthServer(h.workdir, dict([ALICE])) as asrv:
        d = _start(h, asrv, extra=["jwks_refresh_min 60"])
        tok = asrv.token("alice", scope="mcp", resource=RESOURCE)
        sid = _session(d, tok)
        before = asrv.jwks_fetches()
        foreign = asrv.sign({"sub": "alice", "aud": RESOURCE,
                             "scope": "mcp", "client_id": "alice"},
                            unpublished=True)
        conns = []
        for i in range(10):
            c = d.connect()
            c.send(d.build_request("POST", sid, rpc("ping", None,
                                                    d.new_id()),
                                   _bearer(foreign)))
            conns.append(c)
        for i, c in enumerate(conns):
            r = Reply(c, "POST", time.monotonic() + tmo(10))
            r.read_body()
            _expect_401(r, f"unknown-kid token #{i + 1} (of 10 at once)")
            c.close()
        for i in range(10):
            _expect_401(_ping(d, sid, foreign),
                        f"unknown-kid token #{i + 11} (one by one)")
        extra = asrv.jwks_fetches() - before
        expect(extra == 1, f"20 tokens with an unknown kid made mcpd fetch "
               f"jwks_uri {extra} times, expected once (for the first; "
               "then jwks_refresh_min)")
        _echo(d, sid, tok, "after the unknown kids")


def test_auth_peer_introspection_of_opaque_tokens(h):
    # Clients whose tokens are opaque: mcpd asks the AS's introspection
    # endpoint (RFC 7662, as client mcpd with the secret from its file)
    # once per token, then answers from its cache; JWTs of another client
    # are still verified locally. An opaque token the AS never issued, or
    # issued for another resource, is 401; one without scope mcp 403; and
    # an opaque principal is bound to its session like any other.
    clients = {"alice": "alice-secret", "bob": "bob-secret",
               "carol": "carol-secret"}
    with AuthServer(h.workdir, clients, opaque={"alice", "bob"},
                    resource_servers={"mcpd": "rs-secret"}) as asrv:
        secret = h.write("introspection.secret", "rs-secret\n")
        d = _start(h, asrv, extra=[f"introspection {asrv.url('/introspect')}"
                                   f" mcpd {secret}"])
        ta = asrv.token("alice", scope="mcp", resource=RESOURCE)
        sid = _session(d, ta)
        asked = asrv.count("/introspect", "POST")
        expect(asked == 1, f"the AS was asked {asked} times about one "
               "opaque token, expected once")
        _echo(d, sid, ta, "with an opaque token")
        r = _ping(d, sid, ta)
        expect(r.status == 200, f"opaque token again -> HTTP {r.status}")
        expect(asrv.count("/introspect", "POST") == 1, "the answer for a "
               "token already introspected was not cached")

        tc = asrv.token("carol", scope="mcp", resource=RESOURCE)
        sc = _session(d, tc)
        _echo(d, sc, tc, "a JWT next to opaque tokens")
        expect(asrv.count("/introspect", "POST") == 1,
               "a JWT was sent to introspection")

        tb = asrv.token("bob", scope="mcp", resource=RESOURCE)
        r = _ping(d, sid, tb)
        expect(r.status == 404, f"Bob's opaque token on Alice's session "
               f"-> HTTP {r.status}, expected 404")
        _expect_401(_ping(d, sid, "never-issued-by-the-as-0123456789"),
                    "an opaque token the AS never issued")
        other = asrv.token("alice", scope="mcp",
                           resource="https://other.test/mcp")
        _expect_401(_ping(d, sid, other),
                    "an opaque token for another resource")
        narrow = asrv.token("alice", scope="profile", resource=RESOURCE)
        _expect_403(_ping(d, sid, narrow), "an opaque token without scope "
                    "mcp", "mcp")
        expect(asrv.count("/introspect", "POST") == 5,
               f"introspection requests: "
               f"{asrv.count('/introspect', 'POST')}, expected 5 (one "
               "per distinct opaque token)")
        _echo(d, sid, ta, "Alice's opaque token after all that")


# --------------------------------------------------------------------------
# 2. a session belongs to its principal, on every instance


def _sse_messages(r, count, timeout=5):
    got = []
    while len(got) < count:
        m = r.next_message(timeout)
        expect(m is not None, f"SSE ended after {len(got)} of {count}")
        got.append(m)
    return got


def test_auth_peer_session_bound_to_principal(h):
    # Alice's session, created on instance 1, is not found (404) for Bob,
    # a principal with a valid token of the same AS, on instance 2 (and on
    # 1): POST, GET, resume (GET with Last-Event-ID) and DELETE; none of
    # that touches it, and Alice goes on with it on instance 2. Without
    # Redis both "instances" are one daemon.
    with AuthServer(h.workdir, dict([ALICE, BOB])) as asrv:
        one = _start(h, asrv)
        two = h.start(extra_lines=auth_lines(RESOURCE, asrv)) \
            if REDIS_URL else one
        if REDIS_URL is None:
            print("NOTE principal binding on one instance: two need "
                  "MCPD_TEST_REDIS_URL (scripts/with-redis)")
        ta = asrv.token("alice", scope="mcp", resource=RESOURCE)
        tb = asrv.token("bob", scope="mcp", resource=RESOURCE)
        sid = _session(one, ta)
        two.versions[sid] = one.versions[sid]

        id = one.new_id()
        r = one.post_open(sid, tool_call("stream", {"n": 3}, id, "p"),
                          _bearer(ta))
        expect(r.status == 200 and r.is_sse, f"stream with Alice's token "
               f"-> HTTP {r.status}")
        msgs = _sse_messages(r, 4)
        r.close()
        expect(is_progress(msgs[0][1]) and is_response(msgs[3][1], id),
               f"stream: {[m[1] for m in msgs]!r}")
        first = msgs[0][0].id
        k, n = parse_event_id(first)

        for d, where in ((two, "instance 2"), (one, "instance 1")):
            bob = _bearer(tb)
            r = _ping(d, sid, tb)
            expect(r.status == 404, f"Bob's POST to Alice's session on "
                   f"{where} -> HTTP {r.status}, expected 404")
            r = d.get_sse(sid, headers=bob)
            expect(r.status == 404, f"Bob's GET of Alice's session on "
                   f"{where} -> HTTP {r.status}, expected 404")
            r.close()
            r = d.get_sse(sid, first, headers=bob)
            expect(r.status == 404, f"Bob's resume (Last-Event-ID {first}) "
                   f"of Alice's session on {where} -> HTTP {r.status}, "
                   "expected 404")
            r.close()
            r = d.delete(sid, headers=bob)
            expect(r.status == 404, f"Bob's DELETE of Alice's session on "
                   f"{where} -> HTTP {r.status}, expected 404")

        r = _ping(two, sid, ta)
        expect(r.status == 200, f"Alice's POST on instance 2 after Bob's "
               f"tries -> HTTP {r.status} {r.body[:200]!r}")
        g = two.get_sse(sid, first, headers=_bearer(ta))
        expect(g.status == 200 and g.is_sse, f"Alice's resume on instance "
               f"2 -> HTTP {g.status}")
        rest = _sse_messages(g, 3)
        g.close()
        expect([e.id for e, _ in rest] ==
               [f"{k}-{n + i}" for i in (1, 2, 3)] and
               result_text(rest[2][1]) == "done 3",
               f"Alice's resume after {first}: "
               f"{[(e.id, m) for e, m in rest]!r}")
        s = two.get_sse(sid, headers=_bearer(ta))
        expect(s.status == 200 and s.is_sse, f"Alice's GET on instance 2 "
               f"-> HTTP {s.status}")
        s.close()
        r = two.delete(sid, headers=_bearer(ta))
        expect(r.status in (200, 204), f"Alice's DELETE on instance 2 -> "
               f"HTTP {r.status}")
        # Instance 1 drops its copy when the delete's message on the
        # session's Redis channel reaches it (README, Known limitations).
        deadline = time.monotonic() + tmo(5)
        while True:
            r = _ping(one, sid, ta)
            if r.status == 404:
                break
            expect(r.status == 200 and time.monotonic() < deadline,
                   f"Alice's session on instance 1 after her DELETE on 2 "
                   f"-> HTTP {r.status}, expected 404 within "
                   f"{tmo(5):.0f}s")
            time.sleep(0.02)


# --------------------------------------------------------------------------
# 3. the official SDK client's OAuth support


def _start_on_free_port(h, extra_lines):
    """mcpd on a port chosen beforehand: its resource must name the URL
    the client is given, port included (the SDK checks that). A port taken
    meanwhile by someone else is tried again with another."""
    for _ in range(5):
        port = free_port()
        try:
            d = h.start(extra_lines=extra_lines(port),
                        listen=f"127.0.0.1:{port}")
            return d, port
        except AssertionError:
            d = h.daemons.pop()
            text = d.stderr_text()
            if f"cannot listen on 127.0.0.1:{port}" not in text or \
                    any(m in text for m in SANITIZER_MARKERS):
                h.daemons.append(d)
                raise
    raise AssertionError("no free port for mcpd in 5 tries")


SDK_CLIENT = ("sdk-client", "sdk-secret")


def _deploy_tool(marker):
    # Prints "deployed" and appends it to marker: the test sees whether
    # mcpd ran it.
    return ["tool deploy {",
            '    description "Deploys (writes a line); needs scope deploy"',
            '    exec /bin/sh -c "echo deployed | tee -a \\"$1\\"" sh '
            f"{marker}",
            "    env PATH=/usr/bin:/bin",
            "    scope deploy",
            "}"]


def _sdk_setup(h, asrv):
    marker = h.write("deployed", "")
    os.unlink(marker)

    def lines(port):
        return auth_lines(f"http://127.0.0.1:{port}/mcp", asrv) + \
            _deploy_tool(marker)
    d, port = _start_on_free_port(h, lines)
    asrv.wait_count("/jwks", lambda n: n >= 1,
                    what="mcpd fetched jwks_uri at start-up")
    return d, f"http://127.0.0.1:{port}/mcp", marker


def _trace(fetches):
    return "\n".join(f"  {f['method']} {f['url']} -> {f.get('status')} "
                     f"auth={f.get('authorization')} "
                     f"www={f.get('www_authenticate')!r}" for f in fetches)


def _find(fetches, pred, start, what):
    for i in range(start, len(fetches)):
        if pred(fetches[i]):
            return i
    raise AssertionError(f"the SDK did not {what} (after request "
                         f"#{start}):\n{_trace(fetches)}")


def _check_discovery(asrv, url, fetches, scope):
    """The SDK's way from a bare POST to an authorized one; the index of
    the authorized POST."""
    first = fetches[0]
    expect(first["url"] == url and first["method"] == "POST" and
           first["status"] == 401 and first["authorization"] is None,
           f"the SDK's first request was not a 401 POST to mcpd:\n"
           f"{_trace(fetches)}")
    meta = re.search(r'resource_metadata="([^"]+)"',
                     first["www_authenticate"] or "")
    expect(meta is not None and "error=" not in first["www_authenticate"],
           f"401 to a request without a token: {first!r}")
    i = _find(fetches, lambda f: f["url"] == meta.group(1) and
              f["status"] == 200, 1,
              "fetch the resource_metadata URL of the 401")
    i = _find(fetches, lambda f: f["url"] == asrv.url(
        "/.well-known/oauth-authorization-server") and f["status"] == 200,
        i + 1, "fetch the AS's RFC 8414 metadata")
    i = _find(fetches, lambda f: f["url"] == asrv.token_endpoint and
              f["status"] == 200, i + 1, "get a token")
    form = urllib.parse.parse_qs(fetches[i].get("body") or "")
    expect(form.get("grant_type") == ["client_credentials"] and
           form.get("resource") == [url] and
           (form.get("scope") or [""])[0] == scope,
           f"token request {form!r}: expected client_credentials, "
           f"resource {url}, scope {scope!r}")
    i = _find(fetches, lambda f: f["url"] == url and f["status"] == 200 and
              f["authorization"] == "Bearer", i + 1,
              "retry the POST with the token")
    bare = [f for f in fetches[1:] if f["url"] == url and
            f["authorization"] is None]
    expect(not bare, f"requests to mcpd without a token after the first: "
           f"{bare!r}")
    return i


def test_auth_peer_sdk_client_credentials(h):
    # The SDK client starts with client credentials and nothing else: the
    # 401 sends it to mcpd's metadata, that to the AS's metadata, from
    # which it gets a token (with mcpd's resource, RFC 8707) and connects.
    # With scope mcp only, the deploy tool (scope deploy) is hidden from
    # its list and calling it anyway is 403 insufficient_scope naming
    # deploy, and the program never runs; a client given "mcp deploy" sees
    # it and runs it.
    with AuthServer(h.workdir, dict([SDK_CLIENT])) as asrv:
        d, url, marker = _sdk_setup(h, asrv)
        calls = [("echo", {"text": "through OAuth"}), ("deploy", {})]
        rc, doc, err = run_oauth_client(url, *SDK_CLIENT, asrv.issuer,
                                        scope="mcp", calls=calls)
        fetches = doc["fetches"]
        expect(rc == 0 and doc["error"] is None,
               f"SDK client failed (exit {rc}): {doc['error']}\n"
               f"{_trace(fetches)}\nstderr: {err[-1500:]}")
        i = _check_discovery(asrv, url, fetches, "mcp")
        expect("echo" in doc["tools"] and "deploy" not in doc["tools"],
               f"tools/list with scope mcp only: {doc['tools']!r} (deploy "
               "needs scope deploy)")
        got = {c["name"]: c for c in doc["calls"]}
        echo = got["echo"].get("result", {}).get("content", [{}])[0]
        expect(echo.get("text") == "through OAuth",
               f"echo through the SDK -> {got['echo']!r}")
        expect("403" in got["deploy"].get("error", ""),
               f"deploy with scope mcp only -> {got['deploy']!r}")
        i = _find(fetches, lambda f: f["url"] == url and
                  f["status"] == 403, i + 1, "get a 403 for deploy")
        www = fetches[i]["www_authenticate"] or ""
        expect('error="insufficient_scope"' in www and
               re.search(r'scope="[^"]*\bdeploy\b', www),
               f"403 challenge for deploy: {www!r}")
        expect(not os.path.exists(marker), "deploy ran on a 403")

        rc, doc, err = run_oauth_client(url, *SDK_CLIENT, asrv.issuer,
                                        scope="mcp deploy", calls=calls)
        fetches = doc["fetches"]
        expect(rc == 0 and doc["error"] is None,
               f"SDK client with scope 'mcp deploy' failed (exit {rc}): "
               f"{doc['error']}\n{_trace(fetches)}\nstderr: {err[-1500:]}")
        _check_discovery(asrv, url, fetches, "mcp deploy")
        expect("deploy" in doc["tools"], f"tools/list with scope deploy: "
               f"{doc['tools']!r}")
        got = {c["name"]: c for c in doc["calls"]}
        res = got["deploy"].get("result") or {}
        expect(not res.get("isError") and
               res.get("content", [{}])[0].get("text", "").strip() ==
               "deployed", f"deploy with scope deploy -> {got['deploy']!r}")
        with open(marker) as f:
            expect(f.read() == "deployed\n", "deploy did not run once")
        n = asrv.count("/token", "POST")
        expect(n == 3, f"the AS issued {n} tokens, expected 3 (the first "
               "client's, again on its step-up, the second's)")


test_auth_peer_sdk_client_credentials.timeout = 60


def test_auth_peer_over_https(h):
    # The AS on https, as it would be deployed, with a CA of the test's
    # own: mcpd trusts it through SSL_CERT_FILE, the SDK through
    # NODE_EXTRA_CA_CERTS. mcpd fetches the key set over https, the SDK
    # discovers and gets its token over https and calls a tool, and a
    # rotated key is fetched over https on its first token.
    cert, key = authkit.make_cert(h.workdir, "IP:127.0.0.1", "as")
    with AuthServer(h.workdir, dict([SDK_CLIENT]), tls=(cert, key)) as asrv:
        expect(asrv.jwks_uri.startswith("https://127.0.0.1:"),
               f"the AS is not on https: {asrv.jwks_uri}")
        with environ(SSL_CERT_FILE=cert):
            d, url, _ = _sdk_setup(h, asrv)
        rc, doc, err = run_oauth_client(
            url, *SDK_CLIENT, asrv.issuer, scope="mcp deploy",
            calls=[("echo", {"text": "over https"})], cafile=cert)
        fetches = doc["fetches"]
        expect(rc == 0 and doc["error"] is None,
               f"SDK client with an https AS failed (exit {rc}): "
               f"{doc['error']}\n{_trace(fetches)}\nstderr: {err[-1500:]}")
        _check_discovery(asrv, url, fetches, "mcp deploy")
        echo = doc["calls"][0].get("result", {}).get("content", [{}])[0]
        expect(echo.get("text") == "over https", f"echo -> {doc['calls']!r}")

        fetched = asrv.jwks_fetches()
        asrv.rotate()
        tok = asrv.token(SDK_CLIENT[0], scope="mcp", resource=url)
        sid = _session(d, tok)
        _echo(d, sid, tok, "the rotated key, fetched over https")
        expect(asrv.jwks_fetches() == fetched + 1, "the rotated key's set "
               "was not fetched once")


test_auth_peer_over_https.timeout = 60


def test_auth_peer_sdk_wrong_secret(h):
    # The same client with a wrong secret: the AS refuses it
    # (invalid_client), the SDK gives up, and mcpd never saw a token.
    with AuthServer(h.workdir, dict([SDK_CLIENT])) as asrv:
        d, url, _ = _sdk_setup(h, asrv)
        rc, doc, _ = run_oauth_client(url, SDK_CLIENT[0], "not-the-secret",
                                      asrv.issuer, scope="mcp")
        expect(rc != 0 and doc["error"], f"the SDK connected with a wrong "
               f"client secret: {doc!r}")
        tokens = [f for f in doc["fetches"]
                  if f["url"] == asrv.token_endpoint]
        expect(tokens and all(f["status"] == 401 for f in tokens),
               f"token requests with the wrong secret: {tokens!r}")
        expect(not any(f["url"] == url and f["authorization"]
                       for f in doc["fetches"]),
               "the SDK sent mcpd a token it never got")
        r = d.initialize_reply()
        expect(r.status == 401, f"mcpd after the failed client -> HTTP "
               f"{r.status}")


test_auth_peer_sdk_wrong_secret.timeout = 60
