"""/metrics for Prometheus: scraped before and after a known load, the
counters move by what the load did, and `promtool check metrics` (Debian's
prometheus package, unpacked by `make deps`) finds nothing to say."""

import os
import re
import shutil
import subprocess

from mcpd_harness import Skip, expect, random_session_id, rpc, tool_call

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SERIES = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')


def promtool():
    local = os.path.join(ROOT, ".deps/prometheus/usr/bin/promtool")
    if os.access(local, os.X_OK):
        return local
    found = shutil.which("promtool")
    if found is None:
        raise Skip("no promtool: run `make deps` (it unpacks Debian's "
                   "prometheus package into .deps/prometheus)")
    return found


def scrape(d):
    r = d.request("GET", path="/metrics")
    expect(r.status == 200, f"/metrics -> HTTP {r.status}")
    expect(r.header("Content-Type").startswith("text/plain; version=0.0.4"),
           f"/metrics Content-Type {r.header('Content-Type')!r}")
    text = r.body.decode()
    series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SERIES.match(line)
        expect(m is not None, f"not a sample line: {line!r}")
        series[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return text, series


def delta(before, after, key):
    return after.get(key, 0.0) - before.get(key, 0.0)


def test_counters_follow_a_load_and_promtool_is_clean(h):
    d = h.start(extra_lines=["tool fails {", "  exec /bin/false", "}"])
    _, before = scrape(d)
    s1, s2 = d.initialize(), d.initialize()
    for i in range(3):
        msg, _ = d.call(s1, "echo", {"text": f"m{i}"})
        expect("result" in msg, f"echo: {msg}")
    msg, _ = d.call(s2, "fails", {})
    expect(msg["result"].get("isError") is True, f"fails: {msg}")
    msg, _ = d.call(s2, "no_such_tool", {})
    expect("error" in msg, f"unknown tool: {msg}")
    r = d.post(s1, tool_call("stream", {"n": 5}, d.new_id()))
    expect(r.status == 200, f"stream: {r.status}")
    r = d.request("GET", session=random_session_id())
    expect(r.status == 404, f"GET with an unknown session: {r.status}")
    text, after = scrape(d)

    ok = 'mcpd_tool_calls_total{tool="echo",outcome="ok"}'
    expect(delta(before, after, ok) == 3, f"echo ok: {delta(before, after, ok)}")
    err = 'mcpd_tool_calls_total{tool="fails",outcome="tool_error"}'
    expect(delta(before, after, err) == 1, "fails tool_error")
    expect(not any('no_such_tool' in k for k in after),
           "an unknown tool name became a label")
    dur = 'mcpd_tool_call_duration_seconds_count{tool="echo"}'
    expect(delta(before, after, dur) == 3, "echo duration count")
    inf = 'mcpd_tool_call_duration_seconds_bucket{tool="echo",le="+Inf"}'
    expect(after.get(inf) == after.get(dur), "+Inf bucket != count")
    expect(delta(before, after,
                 'mcpd_http_responses_total{method="GET",code="404"}') == 1,
           "GET 404 not counted once")
    expect(delta(before, after,
                 'mcpd_http_responses_total{method="POST",code="200"}') >= 8,
           "POST 200s not counted")
    expect(after["mcpd_sessions"] == 2, f"sessions {after['mcpd_sessions']}")
    expect(delta(before, after, "mcpd_events_committed_total") >= 3 + 5,
           "events committed")
    expect(delta(before, after, "mcpd_events_written_total") >= 3 + 5,
           "events written")
    appends = "mcpd_eventlog_append_duration_seconds_count"
    expect(delta(before, after, appends) >= 3 + 5, "append latency count")
    expect(after["mcpd_eventlog_append_duration_seconds_bucket{le=\"+Inf\"}"]
           == after[appends], "append +Inf bucket != count")
    expect(delta(before, after,
                 'mcpd_eventlog_appends_total{result="committed"}') >= 8,
           "appends committed")
    expect(after["mcpd_eventlog_up"] == 1 and after["mcpd_ready"] == 1 and
           after["mcpd_draining"] == 0, "log up, ready, not draining")
    expect(after["mcpd_streams"] >= 2, "standalone streams of 2 sessions")
    expect(after["process_resident_memory_bytes"] > 1e6, "RSS")
    expect(after["process_open_fds"] >= 3, "open fds")

    p = subprocess.run([promtool(), "check", "metrics"], input=text.encode(),
                       capture_output=True, timeout=30)
    out = (p.stdout + p.stderr).decode()
    expect(p.returncode == 0 and out.strip() == "",
           f"promtool check metrics: exit {p.returncode}:\n{out}")
