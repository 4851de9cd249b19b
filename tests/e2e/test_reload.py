"""SIGHUP: the conf file read again. What can change live changes for new
work, what needs a restart keeps its running value and says so, a broken
file changes nothing, and a running call keeps its tool's definition."""

import signal
import time

from mcpd_harness import (DAEMON_CONF, LATEST, conf_text, expect,
                          result_text, rpc, tmo, tool_call)


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


def _first_retry(g):
    ev = g.next_event(3)
    expect(ev is not None, "GET: no first event")
    return ev.retry


def test_sse_retry_and_max_views_apply_to_new_responses(h):
    d = h.start(sse_retry_ms=1111)
    s = d.initialize()
    g = d.get_sse(s)
    expect(g.status == 200, f"GET -> HTTP {g.status}")
    expect(_first_retry(g) == 1111, "retry: before the reload")
    _reload(d, [], overrides={"sse_retry_ms": "2222", "max_views": "1"})
    # The open view fills the one place max_views now leaves.
    r = d.post(s, tool_call("echo", {"text": "x"}, d.new_id()))
    expect(r.status == 503, f"a second SSE response over max_views 1 -> "
           f"HTTP {r.status}")
    expect(r.header("Retry-After") is not None, "503 without Retry-After")
    g.close()
    # Once mcpd has seen the connection go, the place is free again, and
    # the new response carries the new retry: (awaited, not slept for).
    deadline = time.monotonic() + tmo(5)
    while True:
        g = d.get_sse(s)
        if g.status == 200:
            break
        g.close()
        expect(time.monotonic() < deadline, "the freed view's place never "
               f"came back (GET -> HTTP {g.status})")
        time.sleep(0.05)
    expect(_first_retry(g) == 2222, "retry: after the reload")
    g.close()


def test_allowed_origins_apply_to_new_requests(h):
    d = h.start()
    origin = {"Origin": "http://app.example"}
    s = d.initialize()
    r = d.ping(s, origin)
    expect(r.status == 403, f"a non-loopback Origin before the reload -> "
           f"HTTP {r.status}")
    _reload(d, [], overrides={"allowed_origins": "http://app.example"})
    r = d.ping(s, origin)
    expect(r.status == 200, f"the Origin the reload allowed -> "
           f"HTTP {r.status}")
    r = d.ping(s, {"Origin": "http://other.example"})
    expect(r.status == 403, f"an Origin still not allowed -> "
           f"HTTP {r.status}")


def test_request_timeout_applies_to_new_requests(h):
    fixtures = ["fixtures conformance"]
    d = h.start(extra_lines=fixtures, request_timeout=60)
    s = d.initialize(LATEST)
    _reload(d, fixtures, overrides={"request_timeout": "1"})
    id, r = d.call_open(s, "test_elicitation", {"message": "m"})
    got = r.next_message(5)
    expect(got is not None and got[1].get("method") == "elicitation/create",
           f"the call's first message: {got!r}")
    # Not answered: request_timeout 1 (the reloaded value, not 60) ends it
    # within the test's 30 s.
    final = r.rpc(id)
    text = result_text(final)
    expect("did not answer the request in time" in text,
           f"unanswered elicitation after request_timeout 1: {final!r}")
