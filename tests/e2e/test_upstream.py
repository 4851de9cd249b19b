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

from mcpd_harness import (LATEST, cancelled, expect, is_progress,
                          is_response, rpc, tmo)

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "upstream_fake.py")


# --------------------------------------------------------------------------
# Helpers


def upstream(name, *lines, args=()):
    exec_line = "exec " + " ".join([sys.executable, FAKE] + list(args))
    return [f"upstream {name} {{", "    " + exec_line] + \
        [f"    {ln}" for ln in lines] + ["}"]


def proc_status(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            text = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


def children(pid):
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = proc_status(name)
        if st is not None and st.get("PPid") == str(pid):
            out.append((int(name), st.get("State", "?")))
    return out


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
