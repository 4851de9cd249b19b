"""Upstream MCP servers (conf `upstream NAME { }` blocks) against a fake
stdio server written for these tests (upstream_fake.py), which misbehaves
on purpose: the catalog merged under a prefix, calls forwarded with ids and
progress tokens remapped, log messages, cancellation, timeouts,
max_concurrency, the program exiting mid-call (error naming it, restart,
the next call works), garbage and oversized lines, stderr floods,
list_changed, sampling, elicitation and roots through the client, sharing
session, and no child left behind."""

import json
import os
import sys
import time

from mcpd_harness import (REDIS_URL, cancelled, expect, is_progress,
                          is_response, rpc, tmo, tool_call)
from test_exec import children, proc_status
from test_stateless import _listen

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "upstream_fake.py")


# --------------------------------------------------------------------------
# Helpers


def upstream(name, *lines, args=()):
    exec_line = "exec " + " ".join([sys.executable, FAKE] + list(args))
    return [f"upstream {name} {{", "    " + exec_line] + \
        [f"    {ln}" for ln in lines] + ["}"]


def wait_for(cond, what, timeout=10):
    deadline = time.monotonic() + tmo(timeout)
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def live_children(d):
    return [p for p, s in children(d.proc.pid) if not s.startswith("Z")]


def tool_names(d, sid):
    id = d.new_id()
    r = d.post(sid, rpc("tools/list", {}, id))
    return [t["name"] for t in r.rpc(id)["result"]["tools"]]


def start_ready(h, lines, tool="pid", **conf):
    """mcpd with the upstream blocks of lines, once tool is listed."""
    d = h.start(extra_lines=lines, **conf)
    sid = d.initialize()
    wait_for(lambda: tool in tool_names(d, sid), f"tool {tool} listed")
    return d, sid


def result_of(msg):
    expect(is_response(msg), f"not a response: {msg!r}")
    expect("result" in msg, f"not a result: {msg!r}")
    return msg["result"]


def text_of(msg):
    return "".join(c.get("text", "") for c in result_of(msg)["content"])


def error_of(msg):
    expect(is_response(msg) and "error" in msg, f"not an error: {msg!r}")
    return msg["error"]


# --------------------------------------------------------------------------
# Catalog and forwarding


def test_upstream_tools_listed_and_called(h):
    d, sid = start_ready(h, upstream("fake"))
    names = tool_names(d, sid)
    expect("echo" not in names or names.count("echo") == 1,
           f"echo served twice: {names}")
    msg, _ = d.call(sid, "pid", {})
    expect(text_of(msg).isdigit(), f"pid: {msg!r}")
    # The built-in echo (builtin_tools on) keeps the name; the upstream's
    # echo is not served, and the log says why, naming both.
    d.wait_log(lambda t: "tool echo is also served by the builtin "
               "provider" in t, what="collision error naming both")
    # Many calls, one child.
    for i in range(20):
        msg, _ = d.call(sid, "pid", {})
    kids = live_children(d)
    expect(len(kids) == 1, f"one upstream child expected: {kids}")


def test_upstream_prefix_and_merge(h):
    d, sid = start_ready(
        h, upstream("one", 'prefix "a_"') + upstream("two", 'prefix "b_"'),
        tool="b_echo", builtin_tools="off")
    wait_for(lambda: "a_echo" in tool_names(d, sid), "a_echo listed")
    names = tool_names(d, sid)
    for n in ("a_echo", "b_echo", "a_slow", "b_pid"):
        expect(n in names, f"{n} not listed: {names}")
    expect("echo" not in names, f"unprefixed name served: {names}")
    msg, _ = d.call(sid, "a_echo", {"text": "via one"})
    expect(text_of(msg) == "via one", f"{msg!r}")
    pa = text_of(d.call(sid, "a_pid", {})[0])
    pb = text_of(d.call(sid, "b_pid", {})[0])
    expect(pa != pb, "both prefixes reached the same program")


def test_upstream_collision_between_upstreams(h):
    d, sid = start_ready(h, upstream("first") + upstream("second"),
                         tool="slow", builtin_tools="off")
    d.wait_log(lambda t: "tool slow is also served by upstream first; not "
               "served from upstream second" in t, what="collision error")
    names = tool_names(d, sid)
    expect(names.count("slow") == 1, f"slow listed {names.count('slow')} "
           f"times: {names}")


def test_upstream_progress_tokens_mapped(h):
    d, sid = start_ready(h, upstream("fake"))
    for token in ("tok-1", 42):
        msg, r = d.call(sid, "slow", {"n": 4}, token)
        prog = [m for m in r.messages() if is_progress(m)]
        expect(len(prog) == 4, f"{len(prog)} progress, expected 4: "
               f"{r.messages()!r}")
        for i, m in enumerate(prog, 1):
            p = m["params"]
            expect(p["progressToken"] == token and p["progress"] == i,
                   f"progress {i}: {p!r}")
        expect(text_of(msg) == "slow done 4", f"{msg!r}")
    msg, r = d.call(sid, "slow", {"n": 2})
    expect(not any(is_progress(m) for m in r.messages()),
           "progress without a progressToken")


def test_upstream_log_messages_follow_session_level(h):
    d, sid = start_ready(h, upstream("fake"))
    msg, r = d.call(sid, "log", {"n": 3, "level": "info"})
    logs = [m for m in r.messages() if m.get("method") ==
            "notifications/message"]
    expect(len(logs) == 3, f"3 log messages expected: {r.messages()!r}")
    id = d.new_id()
    d.post(sid, rpc("logging/setLevel", {"level": "error"}, id)).rpc(id)
    msg, r = d.call(sid, "log", {"n": 3, "level": "info"})
    logs = [m for m in r.messages() if m.get("method") ==
            "notifications/message"]
    expect(not logs, f"info messages above the session's level: {logs!r}")


def test_upstream_error_and_unknown(h):
    d, sid = start_ready(h, upstream("fake"))
    err = error_of(d.call(sid, "error", {})[0])
    expect(err["code"] == -32099 and "fake failure" in err["message"] and
           "fake" in err["message"], f"{err!r}")
    err = error_of(d.call(sid, "nosuch", {})[0])
    expect("Unknown tool" in err["message"], f"{err!r}")


def test_upstream_resources_prompts_completions(h):
    d, sid = start_ready(h, upstream("fake", 'prefix "f_"'), tool="f_echo",
                         builtin_tools="off")
    id = d.new_id()
    res = d.post(sid, rpc("resources/list", {}, id)).rpc(id)["result"]
    uris = [x["uri"] for x in res["resources"]]
    expect(uris == ["fake://hello", "fake://two"],
           f"both pages of resources expected: {uris}")
    id = d.new_id()
    res = d.post(sid, rpc("resources/templates/list", {}, id)).rpc(id)
    tmpl = res["result"]["resourceTemplates"]
    expect(tmpl and tmpl[0]["name"] == "f_item" and
           tmpl[0]["uriTemplate"] == "fake://item/{id}", f"{tmpl!r}")
    for uri in ("fake://hello", "fake://item/7"):
        id = d.new_id()
        msg = d.post(sid, rpc("resources/read", {"uri": uri}, id)).rpc(id)
        c = result_of(msg)["contents"]
        expect(c[0]["text"] == "content of " + uri, f"{msg!r}")
    id = d.new_id()
    msg = d.post(sid, rpc("resources/read", {"uri": "other://x"}, id)).rpc(id)
    expect(error_of(msg)["code"] in (-32002,), f"{msg!r}")
    id = d.new_id()
    res = d.post(sid, rpc("prompts/list", {}, id)).rpc(id)["result"]
    expect([p["name"] for p in res["prompts"]] == ["f_greet"], f"{res!r}")
    id = d.new_id()
    msg = d.post(sid, rpc("prompts/get", {"name": "f_greet", "arguments":
                                          {"who": "you"}}, id)).rpc(id)
    expect(result_of(msg)["messages"][0]["content"]["text"] == "hello you",
           f"{msg!r}")
    id = d.new_id()
    msg = d.post(sid, rpc("completion/complete", {
        "ref": {"type": "ref/prompt", "name": "f_greet"},
        "argument": {"name": "who", "value": "x"}}, id)).rpc(id)
    expect(result_of(msg)["completion"]["values"] == ["xa", "xb"],
           f"{msg!r}")


def test_upstream_catalog_resources_and_templates(h):
    # An upstream block's resources lines: a URI left out is in no list
    # and cannot be read, not even by the template or the only-upstream
    # fallbacks that find a URI nobody lists.
    d, sid = start_ready(h, upstream("fake", "resources deny fake://two",
                                     "resources deny fake://item/*"),
                         tool="echo", builtin_tools="off")
    id = d.new_id()
    res = d.post(sid, rpc("resources/list", {}, id)).rpc(id)["result"]
    expect([x["uri"] for x in res["resources"]] == ["fake://hello"],
           f"resources/list: {res!r}")
    id = d.new_id()
    res = d.post(sid, rpc("resources/templates/list", {}, id)).rpc(id)
    expect(res["result"]["resourceTemplates"] == [],
           f"the denied template is listed: {res!r}")
    for uri in ("fake://two", "fake://item/7"):
        id = d.new_id()
        msg = d.post(sid, rpc("resources/read", {"uri": uri}, id)).rpc(id)
        expect(error_of(msg)["code"] == -32002, f"read {uri}: {msg!r}")
    id = d.new_id()
    msg = d.post(sid, rpc("resources/read", {"uri": "fake://hello"},
                          id)).rpc(id)
    expect(result_of(msg)["contents"][0]["text"] ==
           "content of fake://hello", f"{msg!r}")


# --------------------------------------------------------------------------
# The program failing


def test_upstream_exit_mid_call_restarts(h):
    d, sid = start_ready(h, upstream("fake", "restart_delay 1"))
    pid1 = int(text_of(d.call(sid, "pid", {})[0]))
    err = error_of(d.call(sid, "exit", {"code": 9})[0])
    expect("upstream fake" in err["message"] and "status 9" in
           err["message"], f"the error must name the upstream and its "
           f"exit: {err!r}")
    d.wait_log(lambda t: "upstream=fake" in t and "restarting in" in t,
               what="restart announced")
    # The next call waits for the restart and works.
    pid2 = int(text_of(d.call(sid, "pid", {}, timeout=15)[0]))
    expect(pid2 != pid1, "the same program answered after its exit")
    wait_for(lambda: proc_status(pid1) is None, "the old program reaped")
    d.assert_alive(sid, "after the upstream's restart")
    text = d.request("GET", path="/metrics").body.decode()
    for line in ('mcpd_upstream_exits_total{upstream="fake"} 1',
                 'mcpd_upstream_up{upstream="fake"} 1',
                 'mcpd_upstream_instances{upstream="fake"} 1',
                 'mcpd_upstream_requests_inflight{upstream="fake"} 0'):
        expect(line in text.splitlines(), f"/metrics lacks {line!r}")


def test_upstream_exit_with_calls_in_flight(h):
    d, sid = start_ready(h, upstream("fake"))
    opened = [d.call_open(sid, "hang", {}) for _ in range(3)]
    time.sleep(0.2)
    pid = int(text_of(d.call(sid, "pid", {})[0]))
    os.kill(pid, 9)
    for id, r in opened:
        r.events_until_close(10)
        msgs = [m for m in r.messages()]
        expect(msgs and is_response(msgs[-1], id) and "error" in msgs[-1],
               f"a hanging call must end with an error: {msgs!r}")
        m = msgs[-1]["error"]["message"]
        expect("upstream fake" in m and "signal 9" in m, f"{m!r}")
    pid2 = int(text_of(d.call(sid, "pid", {}, timeout=15)[0]))
    expect(pid2 != pid, "not restarted")


def test_upstream_that_cannot_start_fails_fast(h):
    d = h.start(extra_lines=upstream("broken", "restart_delay 30",
                                     args=["--fail-init"]))
    sid = d.initialize()
    d.wait_log(lambda t: "upstream=broken" in t and "status 3" in t,
               what="the failed start logged")
    d.wait_log(lambda t: "upstream=broken" in t and "fake: refusing to "
               "start" in t, what="its stderr in the log with its name")
    expect("pid" not in tool_names(d, sid), "tools of a dead upstream")
    msg, _ = d.call(sid, "pid", {})
    expect("error" in msg and "Unknown tool" in msg["error"]["message"],
           f"{msg!r}")


def test_upstream_garbage_lines_are_skipped(h):
    d, sid = start_ready(h, upstream("fake"))
    pid = text_of(d.call(sid, "pid", {})[0])
    msg, _ = d.call(sid, "garbage", {})
    expect(text_of(msg) == "after garbage", f"{msg!r}")
    d.wait_log(lambda t: "upstream=fake" in t and "not a JSON-RPC "
               "message" in t, what="garbage logged")
    expect(text_of(d.call(sid, "pid", {})[0]) == pid,
           "garbage restarted the program")


def test_upstream_oversized_message_restarts(h):
    d, sid = start_ready(h, upstream("fake", "max_message 64k"))
    msg, _ = d.call(sid, "huge", {"size": 60000})
    expect(len(text_of(msg)) == 60000, "a message under the limit")
    msg, _ = d.call(sid, "huge", {"size": 200000})
    err = error_of(msg)
    expect("upstream fake" in err["message"] and "max_message" in
           err["message"], f"{err!r}")
    msg, _ = d.call(sid, "echo", {"text": "x"}, timeout=15) \
        if False else d.call(sid, "pid", {}, timeout=15)
    expect(text_of(msg).isdigit(), f"not restarted: {msg!r}")


def test_upstream_stderr_logged_rate_limited(h):
    d, sid = start_ready(h, upstream("fake"))
    msg, _ = d.call(sid, "stderr", {"n": 500})
    expect(text_of(msg) == "wrote 500", f"{msg!r}")
    d.wait_log(lambda t: "upstream=fake" in t and "stderr: fake stderr "
               "line 0" in t, what="stderr line with the upstream's name")
    time.sleep(0.3)
    lines = [ln for ln in d.stderr_text().splitlines()
             if "stderr: fake stderr line" in ln]
    expect(0 < len(lines) <= 20, f"{len(lines)} stderr lines logged, "
           "expected at most 20 per 10 s")


def test_upstream_timeout_cancels(h):
    d, sid = start_ready(h, upstream("fake", "timeout 1"))
    msg, _ = d.call(sid, "hang", {})
    err = error_of(msg)
    expect("upstream fake" in err["message"] and "within 1 s" in
           err["message"], f"{err!r}")
    d.wait_log(lambda t: "fake cancelled" in t and "timed out" in t,
               what="notifications/cancelled reaching the upstream")
    d.assert_alive(sid)


def test_upstream_client_cancel_forwarded(h):
    d, sid = start_ready(h, upstream("fake"))
    id, r = d.call_open(sid, "hang", {})
    time.sleep(0.2)
    a = d.post(sid, cancelled(id))
    expect(a.status == 202, f"cancel -> {a.status}")
    d.wait_log(lambda t: "fake cancelled" in t and "cancelled by the "
               "client" in t, what="the cancellation forwarded")
    r.close()
    d.assert_alive(sid)


def test_upstream_max_concurrency(h):
    d, sid = start_ready(h, upstream("fake", "max_concurrency 2"))
    opened = [d.call_open(sid, "hang", {}) for _ in range(2)]
    time.sleep(0.3)
    err = error_of(d.call(sid, "pid", {})[0])
    expect("busy" in err["message"] and "max_concurrency" in
           err["message"], f"{err!r}")
    for _, r in opened:
        r.close()


# --------------------------------------------------------------------------
# Messages from the upstream


def test_upstream_list_changed_reaches_standalone(h):
    d, sid = start_ready(h, upstream("fake"))
    g = d.get_sse(sid)
    expect(g.status == 200, f"GET -> {g.status}")
    expect("extra" not in tool_names(d, sid), "extra listed too early")
    msg, _ = d.call(sid, "change", {})
    got = None
    deadline = time.monotonic() + tmo(5)
    while time.monotonic() < deadline:
        m = g.next_message(5)
        if m is None:
            break
        if m[1].get("method") == "notifications/tools/list_changed":
            got = m[1]
            break
    expect(got is not None, "no tools/list_changed on the standalone stream")
    expect("extra" in tool_names(d, sid), "the new tool is not listed")
    msg, _ = d.call(sid, "extra", {})
    expect(text_of(msg) == "extra", f"{msg!r}")
    g.close()


def _subscribe(d, sid, uri):
    id = d.new_id()
    r = d.post(sid, rpc("resources/subscribe", {"uri": uri}, id))
    expect("result" in r.rpc(id), f"subscribe {uri}: {r.body!r}")


def _expect_next(streams, method, what, uri=None):
    for name, stream in streams:
        got, m = _next_method(stream, name)
        expect(got == method and (uri is None or
                                  m["params"]["uri"] == uri),
               f"{name} stream {what}: {m!r}, wanted {method} {uri or ''}")


def test_upstream_list_changed_reaches_listen_and_standalone_once(h):
    # One notice board: an upstream's list_changed reaches the 2025
    # standalone stream and the 2026-07-28 listen stream, each exactly
    # once, and so does its resources/updated (the listen stream heard
    # neither before announce.c). Once: the next message on each stream
    # is a later change, not the same one again.
    d, sid = start_ready(h, upstream("fake"))
    uris = ["fake://hello", "fake://two"]
    listen, ack = _listen(d, {"toolsListChanged": True,
                              "resourceSubscriptions": uris}, 90)
    expect(ack["params"]["notifications"] == {
        "toolsListChanged": True, "resourceSubscriptions": uris},
        f"ack {ack!r}")
    g = d.get_sse(sid)
    expect(g.status == 200, f"GET -> {g.status}")
    streams = [("listen", listen), ("standalone", g)]
    msg, _ = d.call(sid, "change", {})
    expect(text_of(msg) == "changed", f"{msg!r}")
    got, m = _next_method(listen, "listen")
    expect(got == "notifications/tools/list_changed" and
           m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
           == 90, f"listen stream: {m!r} (the upstream's list_changed "
           "never reached it)")
    _expect_next(streams[1:], "notifications/tools/list_changed",
                 "after the change")
    # The fake answers a subscribe with resources/updated of its URI.
    _subscribe(d, sid, "fake://hello")
    _expect_next(streams, "notifications/resources/updated",
                 "after the list change", "fake://hello")
    _subscribe(d, sid, "fake://two")
    _expect_next(streams, "notifications/resources/updated",
                 "after the first update", "fake://two")
    listen.close()
    g.close()


def test_upstream_list_changed_reaches_listens_across_instances_on_redis(h):
    # Two instances on one Redis, each with its upstream: a change on A
    # reaches the listen streams of both once (A's through the channel,
    # as B's), and B does not send it round again.
    if REDIS_URL is None:
        print("SKIP upstream changes across instances: needs "
              "MCPD_TEST_REDIS_URL")
        return
    a, sid = start_ready(h, upstream("fake"))
    b, _ = start_ready(h, upstream("fake"))
    filt = {"toolsListChanged": True,
            "resourceSubscriptions": ["fake://hello", "fake://two"]}
    on_b, _ = _listen(b, filt, 91)
    on_a, _ = _listen(a, filt, 92)
    streams = [("B's listen", on_b), ("A's listen", on_a)]
    msg, _ = a.call(sid, "change", {})
    expect(text_of(msg) == "changed", f"{msg!r}")
    _expect_next(streams, "notifications/tools/list_changed",
                 "after A's upstream changed")
    _subscribe(a, sid, "fake://hello")
    _expect_next(streams, "notifications/resources/updated",
                 "after the list change", "fake://hello")
    _subscribe(a, sid, "fake://two")
    _expect_next(streams, "notifications/resources/updated",
                 "after the first update", "fake://two")
    on_a.close()
    on_b.close()


def test_upstream_list_changed_reaches_three_instances_on_redis(h):
    # Three instances on one Redis, each with its upstream: a list change
    # of A's upstream reaches the listen streams of all three exactly once
    # and A's sessions' standalone streams (docs/architecture.md, The
    # notification hub; a session hears a change from the instance it
    # happened on, so it is not told once per instance).
    if REDIS_URL is None:
        print("SKIP upstream changes across three instances: needs "
              "MCPD_TEST_REDIS_URL")
        return
    a, sid = start_ready(h, upstream("fake"))
    others = [start_ready(h, upstream("fake"))[0] for _ in range(2)]
    filt = {"toolsListChanged": True,
            "resourceSubscriptions": ["fake://hello"]}
    listens = [(f"listen on {n}", _listen(d, filt, 93 + i)[0])
               for i, (n, d) in enumerate(zip("ABC", [a, *others]))]
    g = a.get_sse(sid)
    expect(g.status == 200, f"GET -> {g.status}")
    msg, _ = a.call(sid, "change", {})
    expect(text_of(msg) == "changed", f"{msg!r}")
    streams = [*listens, ("A's session", g)]
    _expect_next(streams, "notifications/tools/list_changed",
                 "after A's upstream changed")
    # Exactly once: what follows on each stream is the next change (the
    # fake answers a subscribe with resources/updated of its URI).
    _subscribe(a, sid, "fake://hello")
    _expect_next(streams, "notifications/resources/updated",
                 "after the list change, told once", "fake://hello")
    for _, s in streams:
        s.close()


def _count_method(stream, method):
    return sum(1 for ev in stream.events_until_close(10)
               if ev.data and method in ev.data)


def test_upstream_changes_reach_only_endpoints_serving_them(h):
    # Two upstreams, an endpoint for each: a change of one reaches the
    # sessions and listen streams of the endpoint that serves it, never
    # the other's. Counted once the daemon has stopped and every stream
    # has ended, so a change wrongly told would be seen.
    with_endpoints = upstream("one") + upstream("two", "prefix two_") + [
        "endpoint /mcp/one {", "    upstreams one", "}",
        "endpoint /mcp/two {", "    upstreams two", "}"]
    d = h.start(extra_lines=with_endpoints, builtin_tools="off")
    sids, gets, listens = {}, {}, {}
    for name in ("one", "two"):
        d.endpoint = f"/mcp/{name}"
        sids[name] = d.initialize()
        tool = "pid" if name == "one" else "two_pid"
        wait_for(lambda: tool in tool_names(d, sids[name]), f"{tool} listed")
        names = tool_names(d, sids[name])
        expect(all(n.startswith("two_") == (name == "two") for n in names),
               f"/mcp/{name} lists {names!r}")
        gets[name] = d.get_sse(sids[name])
        expect(gets[name].status == 200, f"GET on /mcp/{name}")
        listens[name] = _listen(d, {"toolsListChanged": True},
                                95 if name == "one" else 96)[0]
    for name, tool in (("one", "change"), ("two", "two_change")):
        d.endpoint = f"/mcp/{name}"
        msg, _ = d.call(sids[name], tool, {})
        expect(text_of(msg) == "changed", f"{tool}: {msg!r}")
        _expect_next([(f"/mcp/{name}'s session", gets[name]),
                      (f"/mcp/{name}'s listen", listens[name])],
                     "notifications/tools/list_changed",
                     f"after upstream {name} changed")
    d.endpoint = "/mcp"
    problems = d.stop(close_clients=False)
    expect(not problems, f"stop: {problems!r}")
    for name in ("one", "two"):
        for what, s in ((f"/mcp/{name}'s session", gets[name]),
                        (f"/mcp/{name}'s listen", listens[name])):
            n = _count_method(s, "notifications/tools/list_changed")
            expect(n == 0, f"{what} was told the other upstream's change "
                   f"({n} more list_changed)")


def _next_method(stream, what, timeout=5):
    m = stream.next_message(timeout)
    expect(m is not None, f"{what}: nothing more on the stream")
    return m[1].get("method"), m[1]


def _ask(d, sid, name, method):
    id, r = d.call_open(sid, name, {})
    expect(r.status == 200 and r.is_sse, f"{name} -> {r.status}")
    got = r.next_message(5)
    expect(got is not None, f"{name}: no request from the server")
    req = got[1]
    expect(req.get("method") == method and isinstance(req.get("id"), str),
           f"{name}: {req!r}")
    return id, r, req


def _answer(d, sid, req_id, result=None, error=None):
    body = {"jsonrpc": "2.0", "id": req_id}
    if error is not None:
        body["error"] = error
    else:
        body["result"] = result
    a = d.post(sid, body)
    expect(a.status == 202, f"answer -> {a.status} {a.body[:200]!r}")


def _last(r, id):
    r.events_until_close(10)
    msgs = [m for m in r.messages()]
    expect(msgs and is_response(msgs[-1], id), f"{msgs!r}")
    return msgs[-1]


def test_upstream_sampling_elicitation_roots(h):
    d, sid = start_ready(h, upstream("fake"))
    id, r, req = _ask(d, sid, "sample", "sampling/createMessage")
    expect(req["params"]["messages"][0]["content"]["text"] == "hi",
           f"{req!r}")
    _answer(d, sid, req["id"], {"role": "assistant", "model": "m",
                                "content": {"type": "text",
                                            "text": "from client"}})
    expect(text_of(_last(r, id)) == "sampled: from client", "sampling")

    id, r, req = _ask(d, sid, "elicit", "elicitation/create")
    _answer(d, sid, req["id"], {"action": "accept",
                                "content": {"name": "Ann"}})
    t = text_of(_last(r, id))
    expect(t.startswith("elicited: ") and json.loads(t[10:]) == {
        "action": "accept", "content": {"name": "Ann"}}, t)

    id, r, req = _ask(d, sid, "roots", "roots/list")
    _answer(d, sid, req["id"], {"roots": [{"uri": "file:///tmp"}]})
    t = text_of(_last(r, id))
    expect(json.loads(t[7:]) == {"roots": [{"uri": "file:///tmp"}]}, t)

    # The client's error reaches the upstream as an error.
    id, r, req = _ask(d, sid, "sample", "sampling/createMessage")
    _answer(d, sid, req["id"], error={"code": -1, "message": "no model"})
    res = result_of(_last(r, id))
    expect(res.get("isError") and "no model" in
           res["content"][0]["text"], f"{res!r}")


def test_upstream_request_with_several_clients_is_refused(h):
    d, sid = start_ready(h, upstream("fake"))
    sid2 = d.initialize()
    _, r1 = d.call_open(sid2, "hang", {})
    time.sleep(0.2)
    msg, _ = d.call(sid, "sample", {})
    res = result_of(msg)
    expect(res.get("isError") and "which one" in res["content"][0]["text"],
           f"an unplaceable request must be refused loudly: {res!r}")
    r1.close()


# --------------------------------------------------------------------------
# sharing session, shutdown


def test_upstream_sharing_session(h):
    d, sid = start_ready(h, upstream("fake", "sharing session",
                                     "max_instances 2"))
    sids = [sid, d.initialize(), d.initialize()]
    p1 = text_of(d.call(sids[0], "pid", {})[0])
    expect(text_of(d.call(sids[0], "pid", {})[0]) == p1,
           "a session changed programs")
    p2 = text_of(d.call(sids[1], "pid", {})[0])
    expect(p1 != p2, "two sessions share a program under sharing session")
    err = error_of(d.call(sids[2], "pid", {})[0])
    expect("max_instances" in err["message"], f"{err!r}")
    # The catalog instance plus one per session.
    expect(len(live_children(d)) == 3, f"{live_children(d)}")
    # Several calls of one session in flight: a request goes to its latest.
    id, r, req = _ask(d, sids[1], "sample", "sampling/createMessage")
    _answer(d, sids[1], req["id"], {"role": "assistant", "model": "m",
                                    "content": {"type": "text",
                                                "text": "own"}})
    expect(text_of(_last(r, id)) == "sampled: own", "session sampling")
    a = d.delete(sids[0])
    expect(a.status in (200, 204), f"DELETE -> {a.status}")
    wait_for(lambda: proc_status(int(p1)) is None,
             "the session's program stopped and reaped on DELETE")
    p3 = text_of(d.call(sids[2], "pid", {})[0])
    expect(p3 not in (p1, p2), "a free slot was not used")


def test_upstream_children_stopped_on_shutdown(h):
    d, sid = start_ready(h, upstream("one") + upstream(
        "two", "sharing session", 'prefix "s_"'))
    wait_for(lambda: "s_pid" in tool_names(d, sid), "s_pid listed")
    pids = [int(text_of(d.call(sid, n, {})[0])) for n in ("pid", "s_pid")]
    _, r = d.call_open(sid, "hang", {})
    time.sleep(0.2)
    d.stop()
    expect(d.proc.returncode == 0, f"mcpd exited {d.proc.returncode}")
    for p in pids:
        # Gone, not a zombie: mcpd reaped it before exiting.
        wait_for(lambda: proc_status(p) is None, f"pid {p} gone")


def test_upstream_reload(h):
    """SIGHUP: an unchanged upstream goes on running; a changed one is
    restarted, one removed is stopped, and no child is left over."""
    d, sid = start_ready(h, upstream("fake") + upstream(
        "gone", 'prefix "g_"'))
    wait_for(lambda: "g_pid" in tool_names(d, sid), "g_pid listed")
    p1 = int(text_of(d.call(sid, "pid", {})[0]))
    pg = int(text_of(d.call(sid, "g_pid", {})[0]))
    d.signal(1)
    d.wait_log(lambda t: "upstream fake: unchanged" in t, what="reload")
    expect(int(text_of(d.call(sid, "pid", {})[0])) == p1 and
           int(text_of(d.call(sid, "g_pid", {})[0])) == pg,
           "an unchanged upstream was restarted on reload")
    _, r = d.call_open(sid, "hang", {})
    time.sleep(0.2)
    with open(d.conf_path) as f:
        text = f.read()
    cut = text.index("upstream gone")
    with open(d.conf_path, "w") as f:
        f.write(text[:cut].replace("upstream fake {", "upstream fake {\n"
                                   "    timeout 30"))
    d.signal(1)
    wait_for(lambda: proc_status(pg) is None, "the removed one reaped")
    wait_for(lambda: proc_status(p1) is None, "the changed one reaped")
    r.events_until_close(10)
    last = r.messages()[-1]
    expect("error" in last and "upstream fake stopped (its block changed"
           in last["error"]["message"], f"the call in flight: {last!r}")
    p2 = int(wait_for(lambda: _pid_or_none(d, sid), "a call after reload"))
    expect(p2 != p1, "a changed upstream was not restarted")
    expect("g_pid" not in tool_names(d, sid), "a removed upstream's tools")
    expect(len(live_children(d)) == 1, f"{live_children(d)}")


def _pid_or_none(d, sid):
    msg, _ = d.call(sid, "pid", {})
    if "result" in msg and text_of(msg).isdigit():
        return text_of(msg)
    return None


def test_upstream_slow_client_does_not_stall_others(h):
    """A client that does not read its call's stream: the shared upstream
    goes on, another session's calls are answered, and the slow call ends
    with an error once its backlog is 2 x stream_window + 64."""
    d, sid = start_ready(h, upstream("fake"), stream_window=8,
                         stream_maxlen=200, sse_high_watermark="4k")
    sid2 = d.initialize()
    id = d.new_id()
    r = d.open("POST", sid, tool_call("slow", {
        "n": 3000, "pad": 8000, "interval_ms": 0}, id, "tok"), rcvbuf=4096)
    expect(r.status == 200, f"slow call -> {r.status}")
    d.wait_log(lambda t: "not yet delivered to its client; the call ends"
               in t, what="the slow call ended", timeout=15)
    rss = d.rss_kib()
    for i in range(5):
        msg, _ = d.call(sid2, "echo", {"text": f"other {i}"})
    msg, _ = d.call(sid2, "pid", {})
    expect(text_of(msg).isdigit(), f"another session stalled: {msg!r}")
    r.events_until_close(20)
    msgs = r.messages()
    prog = [m for m in msgs if is_progress(m)]
    # What the sockets took before the window closed, and the backlog.
    expect(len(prog) < 3000, f"{len(prog)} progress messages: the slow "
           "call was not cut")
    last = msgs[-1]
    expect(is_response(last, id) and "error" in last and "too slow" in
           last["error"]["message"], f"{last!r}")
    expect(d.rss_kib() < rss + 50000, "memory grew with the slow client")


# --------------------------------------------------------------------------
# HTTP upstreams (upstream_fake_http.py)


FAKE_HTTP = os.path.join(HERE, "upstream_fake_http.py")


class HttpFake:
    """The fake server over Streamable HTTP, a child of the test."""

    def __init__(self, h, *args):
        import subprocess
        self.portfile = os.path.join(h.workdir, f"port{time.time_ns()}")
        self.logfile = self.portfile + ".log"
        self.proc = subprocess.Popen(
            [sys.executable, FAKE_HTTP, self.portfile, "--log",
             self.logfile] + list(args), stdin=subprocess.DEVNULL)
        wait_for(lambda: os.path.exists(self.portfile), "the fake's port")
        with open(self.portfile) as f:
            self.port = int(f.read())
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def log(self):
        try:
            with open(self.logfile) as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def http_upstream(name, url, *lines):
    return [f"upstream {name} {{", f"    url {url}"] + \
        [f"    {ln}" for ln in lines] + ["}"]


def test_upstream_http_calls(h):
    f = HttpFake(h)
    try:
        d, sid = start_ready(h, http_upstream("web", f.url))
        msg, _ = d.call(sid, "pid", {})
        expect(text_of(msg) == str(f.proc.pid), f"{msg!r}")
        msg, r = d.call(sid, "slow", {"n": 3}, "tk")
        prog = [m for m in r.messages() if is_progress(m)]
        expect([p["params"]["progress"] for p in prog] == [1, 2, 3] and
               all(p["params"]["progressToken"] == "tk" for p in prog),
               f"{prog!r}")
        expect(text_of(msg) == "slow done 3", f"{msg!r}")
        # The session id and the revision go with every later request.
        log = f.log()
        expect("POST tools/call session=" in log and "session=None" not
               in log.split("POST initialize")[1].split("\n", 1)[1] and
               "version=2025-06-18" in log, f"headers: {log}")
        # Sampling through the client over HTTP.
        id, r, req = _ask(d, sid, "sample", "sampling/createMessage")
        _answer(d, sid, req["id"], {"role": "assistant", "model": "m",
                                    "content": {"type": "text",
                                                "text": "via http"}})
        expect(text_of(_last(r, id)) == "sampled: via http", "sampling")
        id = d.new_id()
        res = d.post(sid, rpc("resources/list", {}, id)).rpc(id)["result"]
        expect(len(res["resources"]) == 2, f"{res!r}")
        d.stop()
        wait_for(lambda: "DELETE" in f.log(), "the session deleted on "
                 "shutdown")
    finally:
        f.stop()


def test_upstream_http_stream_resumed(h):
    f = HttpFake(h)
    try:
        d, sid = start_ready(h, http_upstream("web", f.url))
        msg, r = d.call(sid, "drop", {"n": 2}, "tk")
        expect(text_of(msg) == "dropped after 2", f"{msg!r}")
        prog = [m["params"]["progress"] for m in r.messages()
                if is_progress(m)]
        expect(prog == [1, 2, 3], f"each progress exactly once: {prog}")
        expect("GET resume" in f.log(), "no Last-Event-ID resume")
    finally:
        f.stop()


def test_upstream_http_stream_lost_without_ids(h):
    f = HttpFake(h, "--no-event-ids")
    try:
        d, sid = start_ready(h, http_upstream("web", f.url))
        err = error_of(d.call(sid, "drop", {"n": 2})[0])
        expect("upstream web" in err["message"] and "no event ids" in
               err["message"], f"{err!r}")
        msg, _ = d.call(sid, "pid", {})
        expect(text_of(msg).isdigit(), "the next call fails too")
    finally:
        f.stop()


def test_upstream_http_session_forgotten_and_server_down(h):
    # 404, as the spec says; 400 "No valid session ID", as some SDK
    # servers (server-everything's) answer an id they do not know.
    for flags, code in (((), "404"), (("--unknown-session-400",), "400")):
        f = HttpFake(h, *flags)
        try:
            d, sid = start_ready(h, http_upstream("web", f.url,
                                                  "restart_delay 1"))
            msg, _ = d.call(sid, "forget", {})
            expect(text_of(msg) == "forgotten", f"{msg!r}")
            # The next request fails naming the upstream, and a new
            # session is made.
            err = error_of(d.call(sid, "pid", {})[0])
            expect("upstream web" in err["message"] and code in
                   err["message"], f"{err!r}")
            msg = wait_for(lambda: _pid_or_none(d, sid), "a new session")
            expect(f.log().count("POST initialize") == 2, f.log())
        finally:
            f.stop()
        if not flags:
            d.stop()
    # The server is gone: calls fail loudly, at once or within the timeout.
    err = error_of(d.call(sid, "pid", {}, timeout=15)[0])
    expect("upstream web" in err["message"], f"{err!r}")
    d.assert_alive(sid)


# --------------------------------------------------------------------------
# Two instances on one Redis


def test_upstream_sampling_answered_through_another_instance(h):
    from mcpd_harness import need_shared_redis
    need_shared_redis()
    a, sid = start_ready(h, upstream("fake"))
    b = h.start(extra_lines=upstream("fake"))
    b.versions[sid] = a.versions[sid]
    b.assert_alive(sid, "on B (B loads the session)")
    id, r, req = _ask(a, sid, "sample", "sampling/createMessage")
    _answer(b, sid, req["id"], {"role": "assistant", "model": "m",
                                "content": {"type": "text",
                                            "text": "from B"}})
    expect(text_of(_last(r, id)) == "sampled: from B",
           "the answer posted to B did not reach A's upstream")


def test_upstream_session_roots_at_start_and_own_lists(h):
    """sharing session: the roots/list a server asks right after its
    handshake goes to the session whose first call started it; a shared
    one, asked with no call in flight, gets no roots. A session's own
    child serves that session its own lists, and list_changed from it
    reaches only that session."""
    d, sid = start_ready(h, upstream("own", "sharing session",
                                     args=["--ask-roots"]) +
                         upstream("all", 'prefix "all_"',
                                  args=["--ask-roots"]),
                         tool="all_pid")
    wait_for(lambda: "roots_at_start" in tool_names(d, sid), "own listed")
    id, r, req = _ask(d, sid, "roots_at_start", "roots/list")
    _answer(d, sid, req["id"], {"roots": [{"uri": "file:///mine"}]})
    t = text_of(_last(r, id))
    expect(json.loads(t) == {"roots": [{"uri": "file:///mine"}]}, t)
    t = text_of(d.call(sid, "all_roots_at_start", {})[0])
    expect(json.loads(t) == {"roots": []}, f"shared: {t}")

    sid2 = d.initialize()
    g1 = d.get_sse(sid)
    g2 = d.get_sse(sid2)
    text_of(d.call(sid2, "pid", {})[0])
    d.call(sid, "change", {})
    got = None
    while got is None:
        m = g1.next_message(5)
        expect(m is not None, "session 1 heard no list_changed")
        if m[1].get("method") == "notifications/tools/list_changed":
            got = m[1]
    expect("extra" in tool_names(d, sid), "session 1 lacks its new tool")
    expect("extra" not in tool_names(d, sid2),
           "session 2 lists session 1's tool")
    expect(text_of(d.call(sid, "extra", {})[0]) == "extra", "extra")
    err = error_of(d.call(sid2, "extra", {})[0])
    expect("Unknown tool" in err["message"], f"{err!r}")
    try:
        m = g2.next_message(0.5)
        expect(m is None or m[1].get("method") !=
               "notifications/tools/list_changed",
               "session 2 heard session 1's list_changed")
    except Exception as e:
        if "no SSE event" not in str(e):
            raise
    g1.close()
    g2.close()


def test_upstream_session_log_outside_calls_to_standalone(h):
    d, sid = start_ready(h, upstream("own", "sharing session"))
    g = d.get_sse(sid)
    expect(text_of(d.call(sid, "log_later", {"n": 3})[0]) == "later", "")
    got = []
    while len(got) < 3:
        m = g.next_message(5)
        expect(m is not None, f"standalone stream ended after {got}")
        if m[1].get("method") == "notifications/message":
            got.append(m[1]["params"]["data"]["later"])
    expect(got == [0, 1, 2], f"{got}")
    g.close()


def test_upstream_late_catalog_announced(h):
    """A session opened before the upstream answered hears of its tools:
    list_changed on its standalone stream once the catalog arrives."""
    d = h.start(extra_lines=upstream("slowstart", args=["--start-delay"]))
    sid = d.initialize()
    g = d.get_sse(sid)
    expect("pid" not in tool_names(d, sid), "listed before it answered")
    got = None
    while got is None:
        m = g.next_message(10)
        expect(m is not None, "no list_changed once the catalog came")
        if m[1].get("method") == "notifications/tools/list_changed":
            got = m[1]
    expect("pid" in tool_names(d, sid), "still not listed")
    g.close()


def test_upstream_metrics_pass_promtool(h):
    import subprocess
    from test_metrics import promtool
    d, sid = start_ready(h, upstream("fake") + upstream(
        "per", "sharing session", 'prefix "p_"'))
    wait_for(lambda: "p_pid" in tool_names(d, sid), "p_pid listed")
    d.call(sid, "p_pid", {})
    text = d.request("GET", path="/metrics").body.decode()
    expect('mcpd_upstream_instances{upstream="per"} 2' in text,
           "the catalog instance and the session's")
    r = subprocess.run([promtool(), "check", "metrics"], input=text,
                       capture_output=True, text=True)
    expect(r.returncode == 0, f"promtool: {r.stdout}{r.stderr}")


def test_upstream_http_request_placed_by_its_stream(h):
    """Over HTTP a server's request comes on the stream of the request it
    is for: with calls of two clients in flight on a shared upstream it
    still reaches the right one (over stdio it would be refused)."""
    f = HttpFake(h)
    try:
        d, sid = start_ready(h, http_upstream("web", f.url))
        sid2 = d.initialize()
        _, r2 = d.call_open(sid2, "slow", {"n": 40, "interval_ms": 100})
        time.sleep(0.3)
        id, r, req = _ask(d, sid, "sample", "sampling/createMessage")
        _answer(d, sid, req["id"], {"role": "assistant", "model": "m",
                                    "content": {"type": "text",
                                                "text": "placed"}})
        expect(text_of(_last(r, id)) == "sampled: placed", "sampling")
        r2.close()
    finally:
        f.stop()


def test_upstream_http_server_restarted(h):
    """The server dies mid-call and comes back on its port: the call ends
    with an error naming the upstream, mcpd makes a new session (the old
    id is unknown to the new server) and calls work again."""
    f = HttpFake(h)
    port = f.port
    d, sid = start_ready(h, http_upstream("web", f.url, "restart_delay 1"))
    f2 = None
    try:
        _, r = d.call_open(sid, "slow", {"n": 100, "interval_ms": 50})
        time.sleep(0.3)
        f.stop()
        r.events_until_close(10)
        last = r.messages()[-1]
        expect("error" in last and "upstream web" in
               last["error"]["message"], f"{last!r}")
        f2 = HttpFake(h, "--port", str(port))
        msg = wait_for(lambda: _pid_or_none(d, sid), "a call to the new "
                       "server", timeout=20)
        expect(msg == str(f2.proc.pid), f"{msg!r}")
        expect("POST initialize" in f2.log(), "no new session")
    finally:
        f.stop()
        if f2 is not None:
            f2.stop()


def test_upstream_session_request_outside_calls_to_standalone(h):
    """sharing session: a request the session's own upstream makes when
    none of the session's calls is in flight goes to its client on the
    session's standalone stream, and the answer back to the upstream."""
    d, sid = start_ready(h, upstream("own", "sharing session",
                                     args=["--ask-roots-after", "500"]))
    g = d.get_sse(sid)
    expect(text_of(d.call(sid, "pid", {})[0]).isdigit(), "pid")
    req = None
    while req is None:
        m = g.next_message(10)
        expect(m is not None, "no roots/list on the standalone stream")
        if m[1].get("method") == "roots/list":
            req = m[1]
    _answer(d, sid, req["id"], {"roots": [{"uri": "file:///late"}]})
    t = text_of(d.call(sid, "roots_at_start", {})[0])
    expect(json.loads(t) == {"roots": [{"uri": "file:///late"}]}, t)
    g.close()


# --------------------------------------------------------------------------
# Large catalogs (max_tools), names that are not names, scope on everything


def _all_tools(d, sid):
    """Every tool through tools/list's pages, and the cursors seen."""
    names, cursors, cursor = [], [], None
    while True:
        id = d.new_id()
        r = d.post(sid, rpc("tools/list", {} if cursor is None
                            else {"cursor": cursor}, id), timeout=30)
        res = r.rpc(id)["result"]
        names += [t["name"] for t in res["tools"]]
        cursor = res.get("nextCursor")
        if cursor is None:
            return names, cursors
        expect(cursor not in cursors, f"cursor {cursor} handed out twice")
        cursors.append(cursor)


def test_upstream_large_catalog_merged_without_stalling(h):
    # 30,000 tools: the loop stays responsive while the catalog is merged
    # (a ping sent as the last page arrives is answered), and tools/list
    # pages through every tool once.
    n = 30000
    d = h.start(extra_lines=upstream("big", "max_tools 40000",
                                     args=("--many", str(n))))
    sid = d.initialize()
    while not any("upstream=big" in ln and "ready," in ln for ln in
                  d.stderr_text().splitlines()):
        r = d.post(sid, rpc("ping", None, 1), timeout=10)
        expect(r.status == 200, f"ping while loading: HTTP {r.status}")
    r = d.post(sid, rpc("ping", None, 2), timeout=10)
    expect(r.status == 200, f"ping after loading: HTTP {r.status}")
    wait_for(lambda: "many29999" in _all_tools(d, sid)[0],
             "the whole catalog listed", timeout=60)
    names, cursors = _all_tools(d, sid)
    many = [x for x in names if x.startswith("many")]
    expect(len(many) == n and len(set(many)) == n,
           f"{len(many)} many* tools, {len(set(many))} distinct")
    expect(len(names) == len(set(names)), "a tool listed twice")
    expect(all(int(c) % 100 == 0 for c in cursors), f"cursors {cursors[:5]}")


def test_upstream_max_tools(h):
    d = h.start(extra_lines=upstream("big", "max_tools 50",
                                     args=("--many", "100")))
    sid = d.initialize()
    line = d.wait_log(lambda t: "upstream=big" in t and "max_tools" in t,
                      timeout=10, what="max_tools line")
    names = wait_for(lambda: [x for x in tool_names(d, sid)
                              if x not in ("echo", "stream", "notify")],
                     "the upstream's tools")
    # 18 tools of upstream_fake.py, then many00000...: the first 50 kept
    # (echo among them, not served: the built-in one has the name).
    expect(len(names) == 49 and "many00031" in names and
           "many00032" not in names, f"{len(names)} tools: {names[-3:]}")
    expect("68 tools past max_tools (50) not served" in line, line)


def test_upstream_bad_tool_names_refused_rest_served(h):
    # CR/LF, an escape sequence, a NUL and an empty name: those tools are
    # refused with a log line (escaped: no forged line), the others are
    # served, and the upstream is ready once, not restarted over and over.
    d, sid = start_ready(h, upstream("odd", args=("--bad-names",)))
    names = tool_names(d, sid)
    expect("echo" in names and not any(x.startswith(("evil", "esc", "nul"))
                                       or x == "" for x in names),
           f"{names}")
    d.wait_log(lambda t: 'tool "evil\\r\\n2026-01-01T00:00:00.000Z error '
               'forged line" not served' in t, what="CR/LF refused, escaped")
    d.wait_log(lambda t: 'tool "esc\\x1b[31mred" not served' in t,
               what="escape refused, escaped")
    d.wait_log(lambda t: 'tool "nul' in t and "NUL" in t, what="NUL refused")
    msg, _ = d.call(sid, "echo", {"text": "still"})
    expect(text_of(msg) == "still", f"{msg!r}")
    err = d.stderr_text()
    expect(not any(ln.startswith("2026-01-01T00:00:00.000Z error forged")
                   for ln in err.splitlines()), "a forged log line")
    expect("\x1b" not in err, "an escape sequence reached the log")
    expect(err.count("upstream=odd") and "timed out" not in err and
           err.count("ready,") == 1, "the upstream restarted")


def test_upstream_scope_covers_resources_and_prompts(h):
    # An upstream's scope protects what it serves: its resources, templates
    # and prompts are listed only with the scope, and reading or getting
    # them without it is 403 insufficient_scope, as for its tools; on the
    # session path and the stateless (2026-07-28) path.
    import test_auth as ta
    import test_stateless
    d = ta.start(h, scopes="mcp", extra=upstream("fake", "prefix up_",
                                                 "scope upstream"))
    full, plain = ta.token(scope="mcp upstream"), ta.token(scope="mcp")
    sid = ta.session(d, full)
    wait_for(lambda: "up_echo" in ta.tools_names(d, sid, full), "listed")

    def listed(tok, method, key, session=sid):
        id = d.new_id()
        params = {}
        headers = ta.bearer(tok)
        if session is None:
            params["_meta"] = test_stateless._meta()
            headers.update(test_stateless._headers(method, params))
        r = d.post(session, rpc(method, params, id), headers)
        expect(r.status == 200, f"{method}: HTTP {r.status}")
        return r.rpc(id)["result"][key]

    def asked(tok, method, params, session=sid):
        headers = ta.bearer(tok)
        if session is None:
            params = dict(params, _meta=test_stateless._meta())
            headers.update(test_stateless._headers(method, params))
        return d.post(session, rpc(method, params, d.new_id()), headers)

    for path in (sid, None):
        what = "stateless" if path is None else "session"
        for method, key in (("resources/list", "resources"),
                            ("resources/templates/list",
                             "resourceTemplates"),
                            ("prompts/list", "prompts")):
            expect(listed(full, method, key, path),
                   f"{what} {method} empty with the scope")
            got = listed(plain, method, key, path)
            expect(got == [], f"{what} {method} without the scope: {got}")
        for method, params in (
                ("resources/read", {"uri": "fake://hello"}),
                ("resources/read", {"uri": "fake://item/7"}),
                ("prompts/get", {"name": "up_greet"}),
                ("completion/complete", {
                    "ref": {"type": "ref/prompt", "name": "up_greet"},
                    "argument": {"name": "who", "value": "x"}})):
            ta.assert_403(asked(plain, method, params, path),
                          "mcp upstream", f"{what} {method} without it")
            r = asked(full, method, params, path)
            expect(r.status == 200, f"{what} {method} with the scope: "
                   f"HTTP {r.status}")
    ta.assert_403(asked(plain, "resources/subscribe",
                        {"uri": "fake://hello"}), "mcp upstream",
                  "resources/subscribe without it")
