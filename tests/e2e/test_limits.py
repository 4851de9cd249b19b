"""Limits (conf `limit NAME { }`, docs/limits.md), on one instance: a
rate's burst and 429 with Retry-After, another principal unaffected, the
JSON-RPC error -32023 for a request of a batch and on the stateless path,
concurrency, a daily quota, a reload that changes a limit, /metrics, and
what a check does while Redis cannot answer (limit_fallback).
The same tests run on the memory log (buckets in the process) and, under
scripts/with-redis, on Redis (buckets in Redis); three instances behind
nginx are tests/cluster/test_governance.py's. Each test names its limits
afresh: Redis keeps a bucket between tests."""

import os
import signal
import subprocess
import time

import authkit
import test_metrics
from mcpd_harness import (REDIS_URL, expect, is_response, private_redis, rpc,
                          tmo, tool_call)

ISSUER = "https://as.example.test"
RESOURCE = "https://mcp.example.test/mcp"
TOKENS = {"alice": "alice-static-token-for-limits",
          "bob": "bob-static-token-for-limits"}


def name(what):
    """A limit name no other test (nor an earlier run on the same Redis)
    used."""
    return f"{what}-{os.urandom(6).hex()}"


def limit_lines(lname, **kv):
    return [f"limit {lname} {{"] + [f"    {k} {v}" for k, v in kv.items()] \
        + ["}"]


def auth_lines(h):
    path = h.write("tokens", "".join(
        f"{authkit.sha256_hex(t)} {who} mcp\n" for who, t in TOKENS.items()))
    return ["auth {", f"    resource {RESOURCE}",
            f"    authorization_server {ISSUER}", f"    token_file {path}",
            "}"]


def bearer(who):
    return {"Authorization": "Bearer " + TOKENS[who]}


def session(d, who=None, version=None):
    headers = bearer(who) if who else None
    kw = {"headers": headers}
    if version:
        kw["version"] = version
    sid = d.initialize(initialized=False, **kw)
    n = d.post(sid, rpc("notifications/initialized"), headers)
    expect(n.status == 202, f"notifications/initialized -> HTTP {n.status}")
    return sid


def call(d, sid, who=None, tool="echo", args=None):
    """A tools/call; returns (HTTP status, its response message, reply)."""
    id = d.new_id()
    r = d.post(sid, tool_call(tool, args or {"text": "hi"}, id),
               bearer(who) if who else None)
    if r.status == 200:
        return r.status, r.rpc(id), r
    return r.status, r.json, r


def expect_limited(status, msg, r, lname, reason, what):
    """A 429 with Retry-After and the JSON-RPC error -32023 as its body."""
    expect(status == 429, f"{what}: HTTP {status}, wanted 429: {msg!r}")
    retry = r.header("Retry-After")
    expect(retry is not None and retry.isdigit() and int(retry) >= 1,
           f"{what}: Retry-After {retry!r}")
    data = expect_error(msg, lname, reason, what)
    expect(int(retry) == data["retryAfter"], f"{what}: Retry-After {retry} "
           f"but data.retryAfter {data['retryAfter']}")
    return int(retry)


def expect_error(msg, lname, reason, what):
    """The JSON-RPC error -32023 with data.retryAfter (whole seconds)."""
    err = (msg or {}).get("error") or {}
    expect(err.get("code") == -32023, f"{what}: wanted error -32023, got "
           f"{msg!r}")
    data = err.get("data") or {}
    expect(isinstance(data.get("retryAfter"), int) and
           data["retryAfter"] >= 1, f"{what}: data.retryAfter {data!r}")
    expect(data.get("limit") == lname and data.get("reason") == reason,
           f"{what}: data {data!r}, wanted limit {lname} reason {reason}")
    return data


def stateless_echo(d):
    """A 2026-07-28 tools/call echo: (HTTP status, its response)."""
    id = d.new_id()
    params = {"name": "echo", "arguments": {"text": "c"}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}
    r = d.post(None, rpc("tools/call", params, id), {
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
        "Mcp-Name": "echo"})
    msg = r.rpc(id) if r.is_sse else r.json
    expect(msg.get("id") == id, f"stateless call: {msg!r}")
    return r.status, msg


def metrics_text(d):
    r = d.request("GET", path="/metrics")
    expect(r.status == 200, f"/metrics -> HTTP {r.status}")
    return r.body.decode()


def metric(text, series):
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return None


# --------------------------------------------------------------------------


def test_limit_burst_then_429_another_principal_unaffected(h):
    """key principal, rate 1/m, burst 3: alice's first three calls run,
    the fourth is 429 with Retry-After and -32023 naming the limit; bob's
    calls run meanwhile; /metrics counts what was refused, by limit. A
    limit of another endpoint path (burst 1) does not count calls to
    /mcp."""
    lname = name("per-caller")
    # Another endpoint's limit (the request's path decides): not alice's.
    d = h.start(extra_lines=auth_lines(h) + limit_lines(
        lname, key="principal", rate="1/m", burst=3) + limit_lines(
        name("elsewhere"), key="principal", rate="1/h", burst=1,
        endpoints="/elsewhere"))
    alice, bob = session(d, "alice"), session(d, "bob")
    for i in range(3):
        status, msg, _ = call(d, alice, "alice")
        expect(status == 200 and "result" in msg,
               f"alice's call {i + 1} of the burst: HTTP {status} {msg!r}")
    status, msg, r = call(d, alice, "alice")
    retry = expect_limited(status, msg, r, lname, "rate",
                           "alice's fourth call")
    # One token a minute: the next is due in (almost) a minute.
    expect(retry > 5, f"Retry-After {retry}s for a rate of 1/m")
    for i in range(3):
        status, msg, _ = call(d, bob, "bob")
        expect(status == 200 and "result" in msg,
               f"bob's call {i + 1} while alice is limited: HTTP {status} "
               f"{msg!r}")
    text = metrics_text(d)
    refused = metric(text, f'mcpd_limited_total{{limit="{lname}",'
                     'reason="rate"}')
    admitted = metric(text, f'mcpd_limit_admitted_total{{limit="{lname}"}}')
    expect(refused == 1 and admitted == 6, f"/metrics: refused {refused}, "
           f"admitted {admitted} (wanted 1 and 6)")
    p = subprocess.run([test_metrics.promtool(), "check", "metrics"],
                       input=text.encode(), capture_output=True)
    expect(p.returncode == 0, f"promtool check metrics: "
           f"{(p.stdout + p.stderr).decode()}")


def test_limit_batch_member_and_stateless_call_get_32023(h):
    """A refused request of a batch (2025-03-26) is answered -32023 on the
    batch's stream beside the admitted one; a refused stateless
    (2026-07-28) tools/call is the JSON-RPC error -32023, data.retryAfter
    in seconds."""
    lname = name("one")
    d = h.start(extra_lines=limit_lines(lname, key="principal",
                                        rate="1/h", burst=1))
    sid = session(d, version="2025-03-26")
    ids = [d.new_id(), d.new_id()]
    r = d.post(sid, [tool_call("echo", {"text": "a"}, ids[0]),
                     tool_call("echo", {"text": "b"}, ids[1])])
    expect(r.status == 200 and r.is_sse, f"batch -> HTTP {r.status} "
           f"{r.body[:200]!r}")
    answers = {m.get("id"): m for m in r.messages() if is_response(m)}
    expect(set(answers) == set(ids), f"batch answers {answers!r}")
    expect("result" in answers[ids[0]], f"first of the batch: "
           f"{answers[ids[0]]!r}")
    expect_error(answers[ids[1]], lname, "rate", "second of the batch")

    status, msg = stateless_echo(d)
    expect(status == 200, f"stateless call -> HTTP {status} {msg!r}")
    expect_error(msg, lname, "rate", "the stateless call")


def test_limit_concurrency_slot_freed_when_the_call_ends(h):
    """concurrency 1: a second call while one runs is 429 (concurrency);
    once the first ends (cancelled), the next one runs."""
    lname = name("one-at-a-time")
    d = h.start(extra_lines=limit_lines(lname, key="principal",
                                        concurrency=1, tools="stream"))
    sid = session(d)
    id, long = d.call_open(sid, "stream", {"n": 200, "interval_ms": 50})
    expect(long.status == 200, f"the long call -> HTTP {long.status}")
    long.next_message(timeout=10)
    status, msg, r = call(d, sid, tool="stream", args={"n": 1})
    expect_limited(status, msg, r, lname, "concurrency", "a second call")
    status, msg, _ = call(d, sid, tool="echo")
    expect(status == 200 and "result" in msg, f"echo, not covered by the "
           f"limit (tools stream): HTTP {status} {msg!r}")
    d.post(sid, rpc("notifications/cancelled", {"requestId": id}))
    long.close()
    deadline = time.monotonic() + tmo(10)
    while True:
        status, msg, _ = call(d, sid, tool="stream", args={"n": 1})
        if status == 200:
            break
        expect(time.monotonic() < deadline, f"no call admitted 10 s after "
               f"the running one was cancelled: HTTP {status} {msg!r}")
        time.sleep(0.05)
    expect("result" in msg, f"after the cancel: {msg!r}")
    # Counted where the log keeps them (Redis, or here), never a fallback.
    fallbacks = metric(metrics_text(d), "mcpd_limit_fallbacks_total")
    expect(fallbacks == 0, f"{fallbacks} checks fell back to this "
           "instance's own counts")


def test_limit_daily_quota(h):
    """quota 2/day: the third call of the day is refused (reason quota)
    until midnight UTC, which Retry-After names."""
    lname = name("daily")
    d = h.start(extra_lines=limit_lines(lname, key="principal",
                                        quota="2/day"))
    # The first of the day is a stateless call (with Redis, the key's
    # first check waits for its lease), the second a session's.
    status, msg = stateless_echo(d)
    expect(status == 200 and "result" in msg, f"stateless call: {msg!r}")
    sid = session(d)
    status, msg, _ = call(d, sid)
    expect(status == 200, f"call 2 of the quota: HTTP {status}")
    status, msg, r = call(d, sid)
    retry = expect_limited(status, msg, r, lname, "quota", "the third call")
    now = time.time()
    midnight = (int(now) // 86400 + 1) * 86400
    expect(abs((midnight - now) - retry) <= 60, f"Retry-After {retry}s, "
           f"midnight UTC is {midnight - now:.0f}s away")


def test_limit_reload_changes_the_limit_for_new_calls(h):
    """A reload that raises the rate admits calls the old limit refused
    (for a minute at least)."""
    lname = name("reloaded")
    d = h.start(extra_lines=limit_lines(lname, key="principal",
                                        rate="1/m", burst=1))
    sid = session(d)
    status, _, _ = call(d, sid)
    expect(status == 200, f"first call: HTTP {status}")
    status, msg, r = call(d, sid)
    retry = expect_limited(status, msg, r, lname, "rate", "before reload")
    expect(retry > 10, f"Retry-After {retry} for 1/m")
    with open(d.conf_path) as f:
        conf = f.read()
    with open(d.conf_path, "w") as f:
        f.write(conf.replace("rate 1/m", "rate 100/s"))
    d.signal(signal.SIGHUP)
    d.wait_log(lambda t: "reload: " in t and "applied" in t, timeout=10,
               what="the reload applied")
    deadline = time.monotonic() + tmo(5)
    while True:
        status, msg, _ = call(d, sid)
        if status == 200:
            break
        expect(time.monotonic() < deadline, f"still refused 5 s after the "
               f"reload to 100/s: {msg!r}")
        time.sleep(0.05)
    expect("result" in msg, f"after reload: {msg!r}")


def test_limit_keyed_by_upstream(h):
    """key upstream: the calls of one upstream's tools share a bucket;
    mcpd's own tools (upstream "-") have another."""
    import test_upstream
    lname = name("per-upstream")
    d, sid = test_upstream.start_ready(h, test_upstream.upstream(
        "fake") + limit_lines(lname, key="upstream", rate="1/h", burst=1))
    status, msg, _ = call(d, sid, tool="pid", args={})
    expect(status == 200 and "result" in msg, f"the upstream's first call: "
           f"HTTP {status} {msg!r}")
    status, msg, r = call(d, sid, tool="pid", args={})
    expect_limited(status, msg, r, lname, "rate", "the upstream's second")
    status, msg, _ = call(d, sid)
    expect(status == 200 and "result" in msg, f"echo (upstream \"-\"): "
           f"HTTP {status} {msg!r}")


def test_limit_lease_serves_checks_without_a_round_trip(h):
    """rate 1000/s, burst 1000: a lease is a tenth of a second of the rate
    (100 tokens), so 30 calls under the limit cost one script call to
    Redis for it (plus, if the run took over a second, the unused tokens
    given back, and one lease more at most), not one per check; with the
    memory log, none."""
    lname = name("lease")
    d = h.start(extra_lines=limit_lines(lname, key="principal",
                                        rate="1000/s", burst=1000))
    sid = session(d)
    for i in range(30):
        status, msg, _ = call(d, sid)
        expect(status == 200 and "result" in msg, f"call {i + 1}: HTTP "
               f"{status} {msg!r}")
    text = metrics_text(d)
    admitted = metric(text, f'mcpd_limit_admitted_total{{limit="{lname}"}}')
    store = metric(text, "mcpd_limit_store_calls_total")
    expect(admitted == 30, f"admitted {admitted}, wanted 30")
    if REDIS_URL is None:
        expect(store == 0, f"{store} store calls with the memory log")
    else:
        expect(1 <= store <= 3, f"{store} script calls to Redis for 30 "
               "checks of one key: leases do not serve them")


def wait_metric(d, series, predicate, what, timeout=15):
    """Poll /metrics until predicate(the series' value)."""
    deadline = time.monotonic() + tmo(timeout)
    while True:
        value = metric(metrics_text(d), series)
        if value is not None and predicate(value):
            return value
        expect(time.monotonic() < deadline, f"{series} = {value}: {what} "
               f"not reached within {tmo(timeout):.0f} s")
        time.sleep(0.05)


def test_limit_while_redis_is_down(h):
    """With the redis log, a check while Redis cannot answer: under
    limit_fallback refuse the stateless call is -32023 reason
    "unavailable", retryAfter 1; under local (the default) the instance
    counts in its own bucket: its burst, then reason "rate". Both count
    mcpd_limit_fallbacks_total and keep serving; once Redis is back the
    checks go to Redis again."""
    lname = name("fallback")
    lines = limit_lines(lname, key="principal", rate="1/h", burst=2)
    with private_redis(h) as rs:
        refuse = h.start(eventlog=rs.url, limit_fallback="refuse",
                         extra_lines=lines)
        local = h.start(eventlog=rs.url, extra_lines=lines)
        # Redis up: the shared bucket (burst 2) serves one call of each.
        for d, who in ((refuse, "refuse"), (local, "local")):
            status, msg = stateless_echo(d)
            expect(status == 200 and "result" in msg, f"{who}, Redis up: "
                   f"HTTP {status} {msg!r}")
        rs.shutdown()
        for d in (refuse, local):
            wait_metric(d, "mcpd_eventlog_up", lambda v: v == 0,
                        "the event log seen down")

        status, msg = stateless_echo(refuse)
        expect(status == 200, f"refuse: HTTP {status} {msg!r}")
        data = expect_error(msg, lname, "unavailable", "refuse, Redis down")
        expect(data["retryAfter"] == 1, f"refuse: data {data!r}")

        for i in range(2):
            status, msg = stateless_echo(local)
            expect(status == 200 and "result" in msg, f"local, Redis down, "
                   f"call {i + 1} of its own burst: {msg!r}")
        status, msg = stateless_echo(local)
        expect_error(msg, lname, "rate", "local, Redis down, past its burst")
        for d, n in ((refuse, 1), (local, 3)):
            fb = metric(metrics_text(d), "mcpd_limit_fallbacks_total")
            expect(fb == n, f"mcpd_limit_fallbacks_total {fb}, wanted {n}")
            expect(d.alive(), "mcpd died with Redis down")

        # Back (empty: no persistence): a fresh bucket in Redis.
        rs.start()
        wait_metric(refuse, "mcpd_eventlog_up", lambda v: v == 1,
                    "the event log seen up again", timeout=30)
        before = metric(metrics_text(refuse), "mcpd_limit_store_calls_total")
        status, msg = stateless_echo(refuse)
        expect(status == 200 and "result" in msg, f"refuse, Redis back: "
               f"{msg!r}")
        text = metrics_text(refuse)
        after = metric(text, "mcpd_limit_store_calls_total")
        expect(after > before, f"no script call for the limit after Redis "
               f"came back ({before} -> {after})")
        expect(metric(text, "mcpd_limit_fallbacks_total") == 1,
               "a check fell back with Redis up again")


def test_limit_of_an_endpoint_block_counts_its_calls_only(h):
    """endpoints /mcp/team: a limit of an endpoint block (issue 26: each
    endpoint its own limits) refuses the second call there, while the
    default endpoint's calls, by the same principal, run on."""
    lname = name("team")
    d = h.start(extra_lines=auth_lines(h) + [
        "endpoint /mcp/team {", "    tools echo", "}"] + limit_lines(
        lname, key="principal", rate="1/h", burst=1,
        endpoints="/mcp/team"))
    saved = d.endpoint
    d.endpoint = "/mcp/team"
    try:
        team = session(d, "alice")
        status, msg, _ = call(d, team, "alice")
        expect(status == 200 and "result" in msg,
               f"the first call at /mcp/team: HTTP {status} {msg!r}")
        status, msg, r = call(d, team, "alice")
        expect_limited(status, msg, r, lname, "rate",
                       "the second call at /mcp/team")
    finally:
        d.endpoint = saved
    default = session(d, "alice")
    for i in range(3):
        status, msg, _ = call(d, default, "alice")
        expect(status == 200 and "result" in msg,
               f"call {i + 1} at the default endpoint: HTTP {status} "
               f"{msg!r}")
