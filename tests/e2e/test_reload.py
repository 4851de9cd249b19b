"""SIGHUP: the conf file read again. What can change live changes for new
work, what needs a restart keeps its running value and says so, a broken
file changes nothing, and a running call keeps its tool's definition."""

import signal
import time

from mcpd_harness import (DAEMON_CONF, conf_text, expect, result_text, rpc,
                          tmo, tool_call)


def _reload(d, lines, outcome="applied", overrides=None):
    """Rewrite d's conf (the harness defaults plus lines), SIGHUP, and
    wait for the reload's outcome line; returns it."""
    before = d.stderr_text().count("reload: ")
    conf = dict(DAEMON_CONF)            # what the harness started it with
    conf.update(overrides or {})
    with open(d.conf_path, "w") as f:
        f.write(conf_text(conf, lines))
    d.signal(signal.SIGHUP)
    deadline = time.monotonic() + tmo(10)
    while time.monotonic() < deadline:
        lines_now = [ln for ln in d.stderr_text().splitlines()
                     if "reload: " in ln]
        done = [ln for ln in lines_now[before:]
                if " applied" in ln or "configuration stays" in ln]
        if done:
            expect(outcome in done[0], f"reload: {done[0]}")
            return "\n".join(lines_now[before:])
        time.sleep(0.02)
    raise AssertionError(f"no reload outcome:\n{d.stderr_tail(10)}")


def _tool_names(d, s):
    id = d.new_id()
    r = d.post(s, rpc("tools/list", {}, id=id))
    return {t["name"] for t in r.rpc(id)["result"]["tools"]}


def test_tool_added_and_log_level_changed(h):
    d = h.start()
    s = d.initialize()
    expect("greet" not in _tool_names(d, s), "greet before the reload")
    _reload(d, ["log_level debug", "tool greet {",
                "  exec /bin/echo hello from the reload", "}"])
    expect("greet" in _tool_names(d, s), "greet not listed after reload")
    msg, _ = d.call(s, "greet", {})
    expect("hello from the reload" in result_text(msg), f"greet: {msg}")
    # debug lines now appear (the level changed live)
    d.wait_log(lambda ln: " debug " in ln, what="a debug line")
    d.assert_alive(s, "after a reload")


def test_broken_file_changes_nothing(h):
    d = h.start(extra_lines=["tool greet {", "  exec /bin/echo hi", "}"])
    s = d.initialize()
    out = _reload(d, ["tool greet {", "  exec /bin/echo hi", "}",
                      "stream_maxlen lots"], outcome="configuration stays")
    expect(f"{d.conf_path}:" in out, f"error lacks FILE:LINE:\n{out}")
    expect("greet" in _tool_names(d, s), "a broken reload dropped a tool")
    msg, _ = d.call(s, "greet", {})
    expect("hi" in result_text(msg), f"greet after a broken reload: {msg}")


def test_restart_only_keys_keep_their_running_value(h):
    d = h.start()
    s = d.initialize()
    out = _reload(d, ["stream_maxlen 77"], overrides={"endpoint": "/other"})
    expect("stream_maxlen changed" in out and "endpoint changed" in out,
           f"restart-only keys not reported:\n{out}")
    d.assert_alive(s, "the endpoint must not have moved")


def test_limits_apply_to_new_requests(h):
    d = h.start()
    s = d.initialize()
    body = rpc("tools/call", {"name": "echo",
                              "arguments": {"text": "x" * 3000}},
               id=d.new_id())
    r = d.post(s, body)
    expect(r.status == 200, f"3 KB body before the reload: {r.status}")
    _reload(d, ["max_body 1k"])
    r = d.post(s, body)
    expect(r.status == 413, f"3 KB body over max_body 1k: {r.status}")


def test_running_call_keeps_its_definition(h):
    slow = ["tool slow {", '  exec /bin/sh -c "sleep 0.5; echo done"', "}"]
    d = h.start(extra_lines=slow)
    s = d.initialize()
    id = d.new_id()
    r = d.post_open(s, tool_call("slow", {}, id))
    expect(r.status == 200, f"slow call: {r.status}")
    _reload(d, [])                       # the tool is gone for new calls
    expect("slow" not in _tool_names(d, s), "slow still listed")
    msg = r.rpc(id)
    expect("done" in result_text(msg),
           f"the running call did not finish with its definition: {msg}")
