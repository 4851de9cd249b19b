"""Endpoints (issue 26): `endpoint PATH { ... }` blocks serve one more MCP
endpoint each on the same listener, with a catalog of their own, their
own resource and scopes with an auth block, and sessions bound to them;
the plain `endpoint PATH` stays the default endpoint, as before. A reload
adds and removes endpoint blocks.

The audience tests need node and tests/sdk/node_modules (a real
authorization server, oauth_peer.py); without them they skip saying so (a
failure under MCPD_TEST_NO_SKIP=1, as in CI).
"""

import contextlib
import signal
import time

from mcpd_harness import (DAEMON_CONF, conf_text, expect, result_text, rpc,
                          tmo, tool_call)
from oauth_peer import AuthServer, auth_lines
from test_stateless import _post as _stateless

RESOURCE = "https://mcpd.test/mcp"


@contextlib.contextmanager
def at(d, path):
    """d's requests go to path while the block runs."""
    saved = d.endpoint
    d.endpoint = path
    try:
        yield d
    finally:
        d.endpoint = saved


def _tools(d, sid, headers=None):
    id = d.new_id()
    r = d.post(sid, rpc("tools/list", {}, id), headers)
    expect(r.status == 200, f"tools/list -> HTTP {r.status} {r.body[:200]!r}")
    return sorted(t["name"] for t in r.rpc(id)["result"]["tools"])


def _call(d, sid, name, args, headers=None):
    id = d.new_id()
    r = d.post(sid, tool_call(name, args, id), headers)
    expect(r.status == 200, f"{name} -> HTTP {r.status} {r.body[:200]!r}")
    return r.rpc(id)


BLOCKS = ["endpoint /mcp/echo {", "    tools echo", "}",
          "endpoint /mcp/rest {", "    tools deny echo", "}"]


def test_endpoint_blocks_beside_the_default(h):
    d = h.start(extra_lines=BLOCKS)
    sid = d.initialize()
    expect(_tools(d, sid) == ["echo", "notify", "stream"],
           "the default endpoint serves everything, as without blocks")
    with at(d, "/mcp/echo"):
        esid = d.initialize()
        expect(_tools(d, esid) == ["echo"], "/mcp/echo: only echo")
        msg = _call(d, esid, "echo", {"text": "hi"})
        expect(result_text(msg) == "hi", f"echo -> {msg!r}")
        msg = _call(d, esid, "notify", {"n": 1})
        expect(msg.get("error", {}).get("code") == -32602 and
               "Unknown tool" in msg["error"]["message"],
               f"a tool /mcp/echo does not serve -> {msg!r}")
        # A session of another endpoint does not exist here: POST, GET
        # and DELETE alike.
        r = d.post(sid, rpc("ping", None, d.new_id()))
        expect(r.status == 404, f"the default's session on /mcp/echo -> "
               f"HTTP {r.status}")
        expect(d.get_sse(sid).status == 404, "GET of another endpoint's "
               "session")
        expect(d.delete(sid).status == 404, "DELETE of another endpoint's "
               "session")
    with at(d, "/mcp/rest"):
        rsid = d.initialize()
        expect(_tools(d, rsid) == ["notify", "stream"], "/mcp/rest: all but "
               "echo")
    # The default's session was not deleted by the DELETE elsewhere.
    expect(_tools(d, sid) == ["echo", "notify", "stream"],
           "the default's session goes on")
    r = d.request("POST", None, rpc("ping", None, 1), path="/mcp/other")
    expect(r.status == 404, f"a path that is no endpoint -> {r.status}")


def test_endpoint_renames_and_describes_any_tool(h):
    # An endpoint block's rename and description apply to any tool, an
    # exec tool here, on both revisions; the default endpoint keeps it.
    d = h.start(extra_lines=[
        "tool hello {", "    description \"Says hi\"",
        "    exec /bin/echo hi", "}",
        "endpoint /mcp/ops {", "    tools hello echo",
        "    rename hello greet",
        "    description hello \"Greets whoever calls\"", "}"])
    sid = d.initialize()
    expect("hello" in _tools(d, sid), "the default endpoint keeps hello")
    with at(d, "/mcp/ops"):
        osid = d.initialize()
        id = d.new_id()
        r = d.post(osid, rpc("tools/list", {}, id))
        tools = {t["name"]: t for t in r.rpc(id)["result"]["tools"]}
        expect(sorted(tools) == ["echo", "greet"], f"/mcp/ops: {tools!r}")
        expect(tools["greet"]["description"] == "Greets whoever calls",
               f"greet: {tools['greet']!r}")
        msg = _call(d, osid, "greet", {})
        expect(result_text(msg).strip() == "hi", f"greet -> {msg!r}")
        msg = _call(d, osid, "hello", {})
        expect(msg.get("error", {}).get("code") == -32602,
               f"the old name on /mcp/ops -> {msg!r}")
        r, msg = _stateless(d, "tools/call", {"name": "greet",
                                              "arguments": {}})
        expect(r.status == 200 and result_text(msg).strip() == "hi",
               f"2026-07-28 greet -> {r.status} {msg!r}")
        r, msg = _stateless(d, "tools/call", {"name": "hello",
                                              "arguments": {}})
        expect(msg.get("error", {}).get("code") == -32602,
               f"2026-07-28 hello on /mcp/ops -> {msg!r}")


def test_default_endpoint_block_curates_exec_tools(h):
    # A block of the plain line's path configures the default endpoint:
    # an exec tool denied there, another renamed and described.
    d = h.start(extra_lines=[
        "tool hello {", "    description \"Says hi\"",
        "    exec /bin/echo hi", "}",
        "tool bye {", "    description \"Says bye\"",
        "    exec /bin/echo bye", "}",
        "endpoint /mcp {", "    tools deny bye notify",
        "    rename hello greet",
        "    description hello \"Greets whoever calls\"", "}"])
    sid = d.initialize()
    id = d.new_id()
    r = d.post(sid, rpc("tools/list", {}, id))
    tools = {t["name"]: t for t in r.rpc(id)["result"]["tools"]}
    expect(sorted(tools) == ["echo", "greet", "stream"],
           f"the default endpoint's block: {sorted(tools)!r}")
    expect(tools["greet"]["description"] == "Greets whoever calls",
           f"greet: {tools['greet']!r}")
    msg = _call(d, sid, "greet", {})
    expect(result_text(msg).strip() == "hi", f"greet -> {msg!r}")
    for name in ("bye", "hello"):
        msg = _call(d, sid, name, {})
        expect(msg.get("error", {}).get("code") == -32602,
               f"{name} on the default endpoint -> {msg!r}")
    r, msg = _stateless(d, "tools/call", {"name": "bye", "arguments": {}})
    expect(msg.get("error", {}).get("code") == -32602,
           f"2026-07-28 bye on the default endpoint -> {msg!r}")


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


def test_endpoint_blocks_reloaded(h):
    d = h.start(extra_lines=BLOCKS)
    with at(d, "/mcp/echo"):
        esid = d.initialize()
    _reload(d, ["endpoint /mcp/echo {", "    tools echo stream", "}",
                "endpoint /mcp/new {", "    tools notify", "}"])
    with at(d, "/mcp/echo"):
        expect(_tools(d, esid) == ["echo", "stream"], "a reload changes an "
               "endpoint's catalog for its sessions")
    with at(d, "/mcp/new"):
        nsid = d.initialize()
        expect(_tools(d, nsid) == ["notify"], "a reload adds an endpoint")
    r = d.request("POST", None, rpc("ping", None, 1), path="/mcp/rest")
    expect(r.status == 404, f"a reload removes an endpoint -> {r.status}")


def test_endpoint_conf_errors(h):
    for lines, why in (
            (["endpoint /healthz {", "}"], "a path mcpd serves itself"),
            (["endpoint /x {", "    upstreams nope", "}"],
             "no upstream block named nope"),
            (["endpoint /x {", "}", "endpoint /x {", "}"],
             "duplicate endpoint /x"),
            (["endpoint /x {", "    upstreams a none", "}"],
             "none stands alone"),
            (["endpoint x {", "}"], "path must start with")):
        path = h.write("bad.conf", conf_text(None, lines))
        rc, out = h.run_mcpd("-t", "-c", path)
        expect(rc != 0 and why in out, f"{lines!r}: rc {rc}, {out!r}")


def _bearer(token):
    return {"Authorization": f"Bearer {token}"}


def test_endpoint_audience_scopes_and_metadata(h):
    """Each endpoint is a resource of its own (RFC 8707, RFC 9728): a token
    for one is invalid on another, each has its metadata, and an
    endpoint's scopes are required there only."""
    with AuthServer(h.workdir) as asrv:
        d = h.start(extra_lines=auth_lines(RESOURCE, asrv, scopes=None) + [
            "endpoint /mcp/a {", "    scopes team-a", "}",
            "endpoint /mcp/b {", "    resource https://b.mcpd.test/api",
            "}"])
        asrv.wait_count("/jwks", lambda n: n >= 1, what="jwks fetched")
        for_a = asrv.sign({"sub": "al", "aud": "https://mcpd.test/mcp/a",
                           "scope": "team-a"})
        for_default = asrv.sign({"sub": "al", "aud": RESOURCE,
                                 "scope": "team-a"})
        both = asrv.sign({"sub": "al", "aud": [RESOURCE,
                                               "https://mcpd.test/mcp/a"]})
        for_b = asrv.sign({"sub": "al", "aud": "https://b.mcpd.test/api"})
        with at(d, "/mcp/a"):
            sid = d.initialize(initialized=False, headers=_bearer(for_a))
            expect(sid, "a token for /mcp/a on /mcp/a")
            r = d.initialize_reply(headers=_bearer(for_default))
            expect(r.status == 401 and "audience" in
                   r.header("WWW-Authenticate") and
                   'resource_metadata="https://mcpd.test/.well-known/'
                   'oauth-protected-resource/mcp/a"' in
                   r.header("WWW-Authenticate"),
                   f"the default's token on /mcp/a -> {r.status} "
                   f"{r.header('WWW-Authenticate')!r}")
            r = d.initialize_reply(headers=_bearer(both))
            expect(r.status == 403 and 'scope="team-a"' in
                   r.header("WWW-Authenticate"), "a token for /mcp/a "
                   f"without team-a -> {r.status} "
                   f"{r.header('WWW-Authenticate')!r}")
        r = d.initialize_reply(headers=_bearer(for_a))
        expect(r.status == 401, f"/mcp/a's token on the default -> "
               f"{r.status}")
        expect(d.initialize(initialized=False, headers=_bearer(both)),
               "a token naming both, on the default (no team-a needed)")
        with at(d, "/mcp/b"):
            expect(d.initialize(initialized=False, headers=_bearer(for_b)),
                   "a token for /mcp/b's own resource")
        r = d.request("GET", None, None, {},
                      path="/.well-known/oauth-protected-resource/mcp/a")
        expect(r.status == 200 and r.json["resource"] ==
               "https://mcpd.test/mcp/a" and
               "team-a" in r.json["scopes_supported"],
               f"/mcp/a's metadata -> {r.status} {r.body[:300]!r}")
        r = d.request("GET", None, None, {},
                      path="/.well-known/oauth-protected-resource/api")
        expect(r.status == 200 and r.json["resource"] ==
               "https://b.mcpd.test/api", f"/mcp/b's metadata, where its "
               f"resource puts it -> {r.status} {r.body[:300]!r}")
        r = d.request("GET", None, None, {},
                      path="/.well-known/oauth-protected-resource/mcp")
        expect(r.status == 200 and r.json["resource"] == RESOURCE and
               "team-a" not in r.json["scopes_supported"],
               f"the default's metadata -> {r.body[:300]!r}")
