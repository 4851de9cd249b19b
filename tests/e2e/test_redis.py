"""End-to-end tests of the redis event log (docs/protocol.md: event ids,
resuming, "Redis layout"): crashes and restarts of mcpd, several mcpd on one
Redis, every resume outcome, and Redis itself restarting, hanging, missing,
misconfigured or unable to honour `commit replicas:N`.

Tests that use the shared server (MCPD_TEST_REDIS_URL, as set by
scripts/with-redis) skip without it (need_shared_redis: listed and counted
as skipped, never as passed). Tests that must stop, restart, pause or
configure Redis start their own redis-server (`with private_redis(h) as
rs:`) and run in every mode (they skip only when no redis-server binary is
installed); it stops, after every mcpd, however the test ends.
"""

import json
import os
import signal
import subprocess
import time
import uuid

from mcpd_harness import (LATEST, REDIS_URL, VERSIONS, Conn, Daemon,
                          RedisError, Skip, Timeout, assert_rpc_error,
                          check_ids,
                          expect, is_log, is_progress, is_response,
                          message_events, free_port, need_shared_redis,
                          parse_event_id, private_redis, redis_calls,
                          redis_command, redis_info,
                          result_text, rpc, tmo, tool_call)


# --------------------------------------------------------------------------
# helpers


def _kill9(d):
    """SIGKILL the daemon (a crash): no shutdown, nothing flushed."""
    pid = d.proc.pid
    os.kill(pid, signal.SIGKILL)
    try:
        d.proc.wait(tmo(5))
    except subprocess.TimeoutExpired:
        raise AssertionError(f"mcpd pid {pid} still there after SIGKILL")
    expect(d.proc.returncode == -signal.SIGKILL,
           f"mcpd pid {pid} exit status {d.proc.returncode} after SIGKILL")
    for c in d.conns:
        c.close()
    d.stopped = True                # teardown: not "died unexpectedly"
    d.exit_status = d.proc.returncode
    d.err.join(tmo(5))
    d.out.join(tmo(5))


class _NoRedisWaitDaemon(Daemon):
    """A daemon whose start does not wait for its Redis connection (for a
    Redis that is not there yet)."""

    def _wait_redis_ready(self, timeout):
        pass


def _start_no_wait(h, **conf):
    d = _NoRedisWaitDaemon(h.mcpd, h.workdir, conf, (), h.sanitized,
                           f"mcpd{len(h.daemons)}")
    h.daemons.append(d)
    d.start()
    return d


def _adopt(d, other, sid):
    """d serves sid too: send the version `other` negotiated."""
    d.versions[sid] = other.versions.get(sid, LATEST)


def _read_messages(r, count, timeout=5):
    """The next `count` message events of an open SSE reply."""
    got = []
    while len(got) < count:
        m = r.next_message(timeout)
        expect(m is not None, f"SSE stream ended after {len(got)} of "
               f"{count} messages: {r.events[-3:]!r}")
        got.append(m[0])
    return got


def _check_progress(events, token, what):
    """Each message event but the responses is a progress notification
    for token whose progress equals the event's N (the stream tool's
    message i is entry i)."""
    for e in message_events(events):
        msg = e.json
        if is_response(msg):
            continue
        expect(is_progress(msg), f"{what}: {e.id} is not a progress "
               f"notification: {e.data[:200]!r}")
        p = msg["params"]
        n = parse_event_id(e.id)[1]
        expect(p.get("progressToken") == token and p.get("progress") == n,
               f"{what}: {e.id} carries {p!r}, expected progressToken "
               f"{token!r} progress {n}")


def _finished_stream(d, sid, n, token="p", interval_ms=0):
    """Runs the stream tool to its end on d; returns (K, head N,
    {N: raw data}) of its message events."""
    args = {"n": n}
    if interval_ms:
        args["interval_ms"] = interval_ms
    id, r = d.call_open(sid, "stream", args, token)
    expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status} "
           f"{'' if r.is_sse else r.body[:300]!r}")
    events = r.events_until_close(10 + n * interval_ms / 1000)
    k, head = check_ids(events, 1)
    expect(head == n + 1, f"stream n={n}: head {k}-{head}, expected "
           f"{k}-{n + 1}")
    raw = {parse_event_id(e.id)[1]: e.data for e in message_events(events)}
    last = message_events(events)[-1].json
    expect(is_response(last, id) and result_text(last) == f"done {n}",
           f"stream n={n} ended with {last!r}")
    return k, head, raw


def _resume_all(d, sid, cursor, timeout=10):
    """GET + Last-Event-ID: expects 200 SSE and reads until mcpd closes."""
    g = d.get_sse(sid, cursor)
    expect(g.status == 200 and g.is_sse, f"resume {cursor} -> HTTP "
           f"{g.status} {'' if g.is_sse else g.body[:300]!r}")
    return g.events_until_close(timeout)


def _expect_resume_identical(d, sid, k, cursor_n, head, raw, what):
    events = _resume_all(d, sid, f"{k}-{cursor_n}", 5)
    got = message_events(events)
    ns = [parse_event_id(e.id) for e in got]
    expect(ns == [(k, n) for n in range(cursor_n + 1, head + 1)],
           f"{what}: resume {k}-{cursor_n} delivered "
           f"{[e.id for e in got]}, expected {k}-{cursor_n + 1}..{k}-{head}")
    for e in got:
        n = parse_event_id(e.id)[1]
        expect(e.data == raw[n], f"{what}: {e.id} now reads {e.data!r}, "
               f"was first delivered as {raw[n]!r}")


def _gone(r, reason, cursor, what):
    """A 410 with the contract's body; returns error.data."""
    expect(r.status == 410, f"{what}: GET Last-Event-ID {cursor} -> HTTP "
           f"{r.status} {r.body[:300]!r}, expected 410 {reason}")
    expect(r.is_json, f"{what}: 410 Content-Type "
           f"{r.header('Content-Type')!r}")
    err = assert_rpc_error(r.json)
    data = err.get("data")
    expect(isinstance(data, dict), f"{what}: no error.data: {r.json!r}")
    expect(data.get("reason") == reason, f"{what}: error.data.reason "
           f"{data.get('reason')!r}, expected {reason!r}: {r.json!r}")
    expect(data.get("last_event_id") == cursor, f"{what}: error.data."
           f"last_event_id {data.get('last_event_id')!r}, expected "
           f"{cursor!r}")
    return data


def _expect_503(r, what, elapsed, bound=5):
    """503 + Retry-After + a JSON-RPC error body, answered in time."""
    expect(elapsed <= tmo(bound), f"{what}: answered after {elapsed:.1f}s "
           f"(bound {tmo(bound):.0f}s): the request hung on the log")
    expect(r.status == 503, f"{what}: HTTP {r.status} "
           f"{r.body[:300]!r}, expected 503")
    ra = r.header("Retry-After")
    expect(ra is not None and ra.strip().isdigit(),
           f"{what}: 503 without a Retry-After header (headers "
           f"{r.headers!r}, body {r.body[:200]!r})")
    expect(r.is_json, f"{what}: 503 Content-Type "
           f"{r.header('Content-Type')!r}, expected application/json")
    assert_rpc_error(r.json, id_null=False)


def _timed(fn, *args, **kwargs):
    t0 = time.monotonic()
    r = fn(*args, **kwargs)
    return r, time.monotonic() - t0


def _poll_initialize(d, timeout, what):
    """initialize until 200 (503 meanwhile); returns (sid, seconds)."""
    t0 = time.monotonic()
    deadline = t0 + tmo(timeout)
    statuses = []
    while True:
        r = d.initialize_reply(LATEST)
        statuses.append(r.status)
        if r.status == 200:
            sid = r.session_id
            expect(sid, "initialize 200 without Mcp-Session-Id")
            d.versions[sid] = LATEST
            n = d.post(sid, rpc("notifications/initialized"))
            expect(n.status == 202, f"initialized -> HTTP {n.status}")
            return sid, time.monotonic() - t0
        expect(r.status == 503, f"{what}: initialize -> HTTP {r.status} "
               f"{r.body[:200]!r} (only 503 or 200 are acceptable)")
        expect(time.monotonic() < deadline, f"{what}: initialize still "
               f"503 after {tmo(timeout):.0f}s ({len(statuses)} tries); "
               f"stderr:\n{d.stderr_tail(10)}")
        time.sleep(0.1)


def _poll_status(fn, want, timeout, what):
    """Calls fn() (a request) until its status is `want`; returns it."""
    deadline = time.monotonic() + tmo(timeout)
    while True:
        r = fn()
        if r.status == want:
            return r
        expect(r.status == 503, f"{what}: HTTP {r.status} "
               f"{r.body[:200] if not r.is_sse else ''!r} while waiting for "
               f"{want} (only 503 is acceptable meanwhile)")
        r.close()
        expect(time.monotonic() < deadline, f"{what}: still HTTP "
               f"{r.status} after {tmo(timeout):.0f}s")
        time.sleep(0.1)


def _echo(d, sid, text):
    msg, r = d.call(sid, "echo", {"text": text})
    expect(result_text(msg) == text, f"echo {text!r} -> {msg!r}")
    return parse_event_id(message_events(r.events)[0].id)[0]


def _stream_entries(url, sid, k):
    """XRANGE of stream K of sid: [(N, data)] (entry 0 included)."""
    out = []
    for eid, fields in redis_command(url, "XRANGE", f"mcpd:{{{sid}}}:s:{k}",
                                     "-", "+"):
        ek, en = parse_event_id(eid)
        expect(ek == k, f"stream key of {k} holds id {eid}")
        f = dict(zip(fields[::2], fields[1::2]))
        out.append((en, f.get("d")))
    return out


# --------------------------------------------------------------------------
# 1. kill -9 of mcpd while a call streams


def test_redis_kill9_during_stream_call_is_answered_by_the_next_process(h):
    url = need_shared_redis()
    a = h.start()
    sid = a.initialize(LATEST)
    id, r = a.call_open(sid, "stream", {"n": 100, "interval_ms": 50},
                        "kill9")
    expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status}")
    got = _read_messages(r, 10)
    k, last = check_ids(got, 1, what="before kill -9")
    _check_progress(got, "kill9", "before kill -9")
    cursor = f"{k}-{last}"
    # Let the call commit some entries this client has not read (polling
    # the log, bounded), so the resume has committed events to deliver.
    key = f"mcpd:{{{sid}}}:s:{k}"
    deadline = time.monotonic() + tmo(5)
    while redis_command(url, "XLEN", key) - 1 < last + 5:
        expect(time.monotonic() < deadline, f"stream {k} did not grow past "
               f"{k}-{last + 5} in Redis within {tmo(5):.0f}s")
        time.sleep(0.02)
    _kill9(a)
    killed = time.monotonic()
    at_kill = redis_command(url, "XLEN", key) - 1

    b = h.start()
    _adopt(b, a, sid)
    g = b.get_sse(sid, cursor)
    expect(g.status == 200 and g.is_sse, f"resume {cursor} on a new mcpd "
           f"after kill -9 -> HTTP {g.status} "
           f"{'' if g.is_sse else g.body[:300]!r}")
    events = g.events_until_close(20)
    answered = time.monotonic() - killed
    got = message_events(events)
    expect(got, f"resume {cursor} after kill -9: stream closed silently")
    _, head = check_ids(events, last + 1, k, "resume after kill -9")
    expect(head > at_kill, f"resume after kill -9 ended at {k}-{head}; "
           f"the log held {k}-{at_kill} at the kill")
    final = got[-1].json
    expect(is_response(final, id) and "error" in final,
           f"resume after kill -9: the stream's last message is "
           f"{got[-1].data[:300]!r}, expected a JSON-RPC error response "
           f"for request id {id}")
    assert_rpc_error(final, id_null=False)
    expect(not any(is_response(e.json) for e in got[:-1]),
           "resume after kill -9: a response before the last message")
    _check_progress(got[:-1], "kill9", "resume after kill -9")
    expect(answered <= tmo(12), f"the interrupted call was answered "
           f"{answered:.1f}s after kill -9 (lease 5 s + checks): too late")
    print(f"  kill -9: {head - last - 1} committed events after {cursor}, "
          f"then the error response, {answered:.1f}s after the kill")

    # Exactly what the log committed after the cursor, nothing else.
    entries = _stream_entries(url, sid, k)
    expect([n for n, _ in entries] == list(range(0, head + 1)),
           f"Redis stream {k} holds N={[n for n, _ in entries]}, expected "
           f"0..{head}")
    delivered = [(parse_event_id(e.id)[1], e.data) for e in got]
    expect(delivered == [e for e in entries if e[0] > last],
           f"resume after kill -9 delivered {delivered[:3]}... which is not "
           f"the log's {entries[-3:]}")
    # Answered once: resuming again from the same cursor gives the same.
    again = message_events(_resume_all(b, sid, cursor, 5))
    expect([(e.id, e.data) for e in again] ==
           [(e.id, e.data) for e in got],
           "a second resume after kill -9 differs from the first")
    b.assert_alive(sid, "after the orphaned call was answered")


# --------------------------------------------------------------------------
# 2. SIGTERM of mcpd while a call streams


def _expect_interrupted(events, cursor, k, last, token, id):
    """A resume from cursor K-last after mcpd stopped mid-call: the rest of
    the call's progress, in order, then an error saying it was
    interrupted."""
    got = message_events(events)
    expect(got, f"resume {cursor} after SIGTERM: nothing, stream closed")
    check_ids(events, last + 1, k, "resume after SIGTERM")
    _check_progress(got[:-1], token, "resume after SIGTERM")
    final = got[-1].json
    expect(is_response(final, id) and "error" in final,
           f"resume after SIGTERM ended with {got[-1].data[:300]!r}, "
           f"expected a JSON-RPC error for id {id}")
    err = assert_rpc_error(final, id_null=False)
    expect("interrupted" in err["message"].lower(),
           f"the error response does not say the call was interrupted: "
           f"{err!r}")


def test_redis_sigterm_during_stream_call_resumes_to_interrupted_error(h):
    need_shared_redis()
    a = h.start()
    sid = a.initialize(LATEST)
    id, r = a.call_open(sid, "stream", {"n": 100, "interval_ms": 50},
                        "term")
    expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status}")
    got = _read_messages(r, 8)
    k, last = check_ids(got, 1, what="before SIGTERM")
    cursor = f"{k}-{last}"
    problems = a.stop()
    expect(not problems, f"SIGTERM during a call: {problems}")

    b = h.start()
    _adopt(b, a, sid)
    t0 = time.monotonic()
    events = _resume_all(b, sid, cursor, 5)
    took = time.monotonic() - t0
    _expect_interrupted(events, cursor, k, last, "term", id)
    expect(took <= tmo(3), f"resume of a stream ended at shutdown took "
           f"{took:.1f}s (it is complete: it should close at once)")
    b.assert_alive(sid, "after resuming the interrupted call")


def test_redis_sigterm_while_producer_paused_resumes_to_interrupted_error(h):
    # The usual reason to resume: the client's connection dropped, and the
    # call, under the block policy, paused once stream_window entries were
    # undelivered. Then mcpd is restarted (a deploy).
    need_shared_redis()
    # Message 1 is read, then the client goes (long before message 2, due
    # 500 ms later); messages 2..4 are committed undelivered, so the last
    # one pauses the producer (4 - 1 >= stream_window 3).
    a = h.start(stream_window=3)
    sid = a.initialize(LATEST)
    id, r = a.call_open(sid, "stream", {"n": 4, "interval_ms": 500},
                        "paused")
    expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status}")
    got = _read_messages(r, 1)
    r.cut()
    k, last = check_ids(got, 1, what="before the disconnect")
    cursor = f"{k}-{last}"
    a.wait_metric("producers_paused", lambda v: v >= 1, 5,
                  "the call's producer paused (no client, block policy)")
    problems = a.stop()
    expect(not problems, f"SIGTERM with a paused producer: {problems}")

    b = h.start()
    _adopt(b, a, sid)
    events = _resume_all(b, sid, cursor, 5)
    _expect_interrupted(events, cursor, k, last, "paused", id)
    b.assert_alive(sid, "after resuming the interrupted call")


# --------------------------------------------------------------------------
# 3. restart between calls


def test_redis_restart_between_calls_keeps_session_and_fresh_k(h):
    url = need_shared_redis()
    a = h.start()
    sid = a.initialize(LATEST)
    ks = {_echo(a, sid, "before-1"), _echo(a, sid, "before-2")}
    k, _, _ = _finished_stream(a, sid, 3)
    ks.add(k)
    s = a.get_sse(sid)
    prime = s.next_event(3)
    expect(prime.id is not None, f"standalone GET primed with {prime!r}")
    standalone_k = parse_event_id(prime.id)[0]
    s.close()
    expect(standalone_k not in ks, "the standalone K equals a request K")
    problems = a.stop()
    expect(not problems, f"SIGTERM between calls: {problems}")

    b = h.start()
    _adopt(b, a, sid)
    b.assert_alive(sid, "on the new process (ping)")
    new = set()
    for i in range(5):
        k = _echo(b, sid, f"after-{i}")
        expect(k not in ks and k not in new and k != standalone_k,
               f"K={k} reused after the restart (before: {sorted(ks)}, "
               f"standalone {standalone_k})")
        new.add(k)
    k, head, _ = _finished_stream(b, sid, 3, "after")
    expect(k not in ks | new, f"K={k} reused after the restart")
    # The standalone stream carries on under its own number.
    s = b.get_sse(sid)
    prime = s.next_event(3)
    expect(prime.id is not None and
           parse_event_id(prime.id)[0] == standalone_k,
           f"standalone GET on the new process primed with {prime!r}, "
           f"expected stream {standalone_k}")
    s.close()
    meta = redis_command(url, "HKEYS", f"mcpd:{{{sid}}}:meta")
    for k in ks | new | {standalone_k}:
        expect(f"k:{k}" in meta, f"meta hash of {sid} lacks k:{k}: {meta}")


# --------------------------------------------------------------------------
# 4. two mcpd on one Redis


def test_redis_two_processes_resume_and_live_follow(h):
    need_shared_redis()
    a = h.start()
    b = h.start()
    sid = a.initialize(LATEST)
    _adopt(b, a, sid)
    id, r = a.call_open(sid, "stream", {"n": 20, "interval_ms": 50}, "ab")
    expect(r.status == 200 and r.is_sse, f"stream on A -> HTTP {r.status}")
    got = _read_messages(r, 5)
    k, last = check_ids(got, 1, what="stream on A")
    cursor = f"{k}-{last}"
    r.cut()
    events = _resume_all(b, sid, cursor, 10)
    got = message_events(events)
    _, head = check_ids(events, last + 1, k, "resume on B of A's call")
    expect(head == 21, f"resume on B ended at {k}-{head}, expected {k}-21 "
           f"(20 progress + the result)")
    _check_progress(got[:-1], "ab", "resume on B")
    expect(is_response(got[-1].json, id) and
           result_text(got[-1].json) == "done 20",
           f"resume on B ended with {got[-1].data[:200]!r}")

    # B's standalone view follows what A commits.
    s = b.get_sse(sid)
    expect(s.status == 200 and s.is_sse, f"GET on B -> HTTP {s.status}")
    prime = s.next_event(3)
    expect(prime.id is not None and not prime.is_message,
           f"standalone GET on B primed with {prime!r}")
    sk, sn = parse_event_id(prime.id)
    msg, _ = a.call(sid, "notify", {"n": 3})
    expect(result_text(msg) == "queued 3", f"notify on A -> {msg!r}")
    for i in range(1, 4):
        m = s.next_message(5)
        expect(m is not None, "B's standalone stream ended")
        ev, note = m
        expect(ev.id == f"{sk}-{sn + i}" and is_log(note) and
               note["params"]["data"]["i"] == i,
               f"B's standalone stream: expected notify {i} of A as "
               f"{sk}-{sn + i}, got {ev!r}")

    s.close()
    a.assert_alive(sid, "on A")
    b.assert_alive(sid, "on B")


def test_redis_two_processes_both_produce_on_the_standalone_stream(h):
    # No sticky routing (docs/protocol.md, Sessions): a client's requests
    # land on either process. notify through A, then through B: both append
    # to the one standalone stream, in order, and a view on either sees it all.
    need_shared_redis()
    a = h.start()
    b = h.start()
    sid = a.initialize(LATEST)
    _adopt(b, a, sid)
    b.assert_alive(sid, "on B (B loads the session)")
    s = b.get_sse(sid)
    prime = s.next_event(3)
    expect(prime.id is not None, f"standalone GET on B primed with "
           f"{prime!r}")
    sk, sn = parse_event_id(prime.id)
    s.close()
    msg, _ = a.call(sid, "notify", {"n": 3})
    expect(result_text(msg) == "queued 3", f"notify on A -> {msg!r}")
    t = a.get_sse(sid)
    prime = t.next_event(3)
    expect(prime.id == f"{sk}-{sn + 3}", f"standalone GET on A primed with "
           f"{prime!r}, expected {sk}-{sn + 3}")
    msg, _ = b.call(sid, "notify", {"n": 2})
    expect(is_response(msg) and "result" in msg and
           result_text(msg) == "queued 2",
           f"notify through B after notify through A -> {msg!r} (B's "
           f"standalone stream must append after A's entries; log of B:\n"
           f"{b.stderr_tail(6)})")
    for i in range(1, 3):
        m = t.next_message(5)
        expect(m is not None, "A's standalone stream ended")
        ev, note = m
        expect(ev.id == f"{sk}-{sn + 3 + i}" and is_log(note) and
               note["params"]["data"]["i"] == i,
               f"A's standalone stream: expected notify {i} of B as "
               f"{sk}-{sn + 3 + i}, got {ev!r}")
    a.assert_alive(sid, "on A")
    b.assert_alive(sid, "on B")


def test_redis_session_deleted_through_another_process_is_gone(h):
    # DELETE through B ends the session everywhere: A, which holds it, finds
    # it gone when its next call opens a stream, answers 404 and forgets it.
    need_shared_redis()
    a = h.start()
    b = h.start()
    sid = a.initialize(LATEST)
    _echo(a, sid, "before")
    _adopt(b, a, sid)
    b.assert_alive(sid, "on B (B loads the session)")
    r = b.delete(sid)
    expect(r.status in (200, 204), f"DELETE through B -> HTTP {r.status}")
    id = a.new_id()
    r = a.post(sid, tool_call("echo", {"text": "after"}, id))
    expect(r.status == 404, f"tools/call on A after DELETE through B -> "
           f"HTTP {r.status} {r.body[:200]!r}")
    id = a.new_id()
    r = a.post(sid, rpc("ping", None, id))
    expect(r.status == 404, f"ping on A after A found the session gone -> "
           f"HTTP {r.status} {r.body[:200]!r}")
    # The line is written before the 404; the harness reads stderr on its
    # own thread, so it is awaited, not read at once.
    a.wait_log(lambda t: "gone from the shared log" in t,
               what="A's line saying why it dropped the session")


def test_redis_two_processes_share_the_log_level(h):
    # The log level is session state (docs/protocol.md, Sessions: it lives in
    # the event log, any instance can serve it): set through A, it holds for
    # calls that run on B.
    need_shared_redis()
    a = h.start()
    b = h.start()
    sid = a.initialize(LATEST)
    _adopt(b, a, sid)
    b.assert_alive(sid, "on B (B loads the session)")
    id = a.new_id()
    r = a.post(sid, rpc("logging/setLevel", {"level": "error"}, id))
    expect(r.status == 200 and r.rpc(id).get("result") == {},
           f"logging/setLevel error on A -> HTTP {r.status} {r.body!r}")
    for d, name in ((a, "A"), (b, "B")):
        msg, rr = d.call(sid, "stream", {"n": 3})
        expect(result_text(msg) == "done 3", f"stream on {name} -> {msg!r}")
        logs = [e.data for e in message_events(rr.events)
                if is_log(e.json)]
        expect(not logs, f"stream on {name} sent info-level "
               f"notifications/message after logging/setLevel error "
               f"(through A): {logs[:2]!r}")


# --------------------------------------------------------------------------
# 5. every resume outcome on Redis


def test_redis_every_resume_outcome(h):
    url = need_shared_redis()
    # 200
    d = h.start()
    sid = d.initialize(LATEST)
    k, head, raw = _finished_stream(d, sid, 5)
    _expect_resume_identical(d, sid, k, 2, head, raw, "200 resume")
    _expect_resume_identical(d, sid, k, head, head, raw, "resume at head")

    # 410 trimmed (an interval keeps the POST's own view in step)
    t = h.start(stream_maxlen=5)
    tsid = t.initialize(LATEST)
    tk, thead, traw = _finished_stream(t, tsid, 20, interval_ms=5)
    data = _gone(t.get_sse(tsid, f"{tk}-1"), "trimmed", f"{tk}-1", "trimmed")
    expect(data.get("head") == f"{tk}-{thead}", f"trimmed: head "
           f"{data.get('head')!r}, expected {tk}-{thead}")
    ok, on = parse_event_id(data.get("oldest"))
    expect(ok == tk and thead - on + 1 <= 5 and on > 1,
           f"trimmed: oldest {data.get('oldest')!r} with stream_maxlen 5")
    _expect_resume_identical(t, tsid, tk, on, thead, traw,
                             "resume at the oldest retained id")
    _expect_resume_identical(t, tsid, tk, on - 1, thead, traw,
                             "resume just before the oldest retained id")
    cursor = f"{tk}-{on - 2}"
    _gone(t.get_sse(tsid, cursor), "trimmed", cursor, "trimmed successor")
    t.assert_alive(tsid, "after 410 trimmed")

    # 410 expired
    e = h.start(stream_ttl=1)
    esid = e.initialize(LATEST)
    ek, ehead, _ = _finished_stream(e, esid, 1)
    ended = time.monotonic()
    cursor = f"{ek}-1"
    deadline = ended + tmo(8)
    while True:
        r = e.get_sse(esid, cursor)
        if r.status != 200:
            break
        r.close()
        expect(time.monotonic() < deadline, "stream still resumable 8s "
               "after it ended with stream_ttl 1")
        time.sleep(0.1)
    data = _gone(r, "expired", cursor, "stream_ttl 1")
    expect(redis_command(url, "EXISTS", f"mcpd:{{{esid}}}:s:{ek}") == 0,
           "expired answered while the stream key still exists")
    e.assert_alive(esid, "after 410 expired")

    # 410 ahead: a cursor beyond the head ...
    cursor = f"{k}-{head + 5}"
    data = _gone(d.get_sse(sid, cursor), "ahead", cursor, "ahead")
    expect(data.get("head") == f"{k}-{head}", f"ahead: error.data.head "
           f"{data.get('head')!r}, expected {k}-{head}")
    line = d.wait_log(lambda l: "resumability violation" in l and
                      cursor in l, 3, "resumability violation line")
    expect(sid in line and f"{k}-{head}" in line, f"the resumability "
           f"violation line must name session {sid}, cursor {cursor} and "
           f"head {k}-{head}: {line!r}")
    # ... also at the top of the id range, where N + 1 would wrap to 0
    # (and Lua's doubles cannot tell 2^53 + 1 from 2^53)
    for n in (2**64 - 1, 2**64 - 2, 2**53 + 1):
        cursor = f"{k}-{n}"
        data = _gone(d.get_sse(sid, cursor), "ahead", cursor, "top of range")
        expect(data.get("head") == f"{k}-{head}", f"{cursor}: error.data."
               f"head {data.get('head')!r}, expected {k}-{head}")
    # ... and the real thing: Redis lost the last committed entry.
    redis_command(url, "XDEL", f"mcpd:{{{sid}}}:s:{k}", f"{k}-{head}")
    cursor = f"{k}-{head}"
    data = _gone(d.get_sse(sid, cursor), "ahead", cursor,
                 "the log lost the last entry")
    expect(data.get("head") == f"{k}-{head - 1}", f"lost entry: head "
           f"{data.get('head')!r}, expected {k}-{head - 1}")
    line = d.wait_log(lambda l: "resumability violation" in l and
                      f"cursor={cursor} " in l, 3,
                      "resumability violation line for the lost entry")
    expect(sid in line and f"{k}-{head - 1}" in line, f"{line!r} must name "
           f"session, cursor and head {k}-{head - 1}")

    # 410 unknown-stream: another session's stream, a random one
    rk = 123456789012345
    while rk in (k, tk, ek):
        rk += 1
    bodies = []
    for cursor, what in ((f"{tk}-1", "another session's stream"),
                         (f"{rk}-1", "a random stream")):
        r = d.get_sse(sid, cursor)
        data = _gone(r, "unknown-stream", cursor, what)
        expect("oldest" not in data and "head" not in data,
               f"{what}: unknown-stream reveals {data!r}")
        data.pop("last_event_id")
        bodies.append(repr(sorted(data.items())))
    expect(bodies[0] == bodies[1], f"another session's stream and a random "
           f"one are told apart: {bodies}")

    # 400 malformed
    for cursor in ("abc", f"{k}-01", f"0{k}-1", "1-", "1-2-3"):
        r = d.get_sse(sid, cursor)
        expect(r.status == 400, f"Last-Event-ID {cursor!r} -> HTTP "
               f"{r.status}, expected 400")
        assert_rpc_error(r.json, id_null=False)
    d.assert_alive(sid, "after every resume outcome")


# Drops the entries of stream KEYS[1] after ARGV[1] at once, as a failover
# to a replica that lacked them does (an XDEL would leave the stream's top
# id behind, which no new primary has); keeps the key's lifetime. Returns
# how many it dropped.
_LOSE_TAIL = """
local e = redis.call('XRANGE', KEYS[1], '-', '+')
local ttl = redis.call('PTTL', KEYS[1])
redis.call('DEL', KEYS[1])
local kept = 0
for i = 1, #e do
    if tonumber(string.match(e[i][1], '%-(%d+)$')) <= tonumber(ARGV[1]) then
        redis.call('XADD', KEYS[1], e[i][1], unpack(e[i][2]))
        kept = kept + 1
    end
end
if ttl > 0 then
    redis.call('PEXPIRE', KEYS[1], ttl)
end
return #e - kept
"""


def test_redis_ended_stream_compacted_exactly(h):
    """A stream is compacted as it ends (the script's COPY and RENAME):
    Redis gives a new stream a 4 KB node and would keep it for
    stream_ttl; the finished stream's key holds a few hundred bytes, and
    every entry, the final mark and the lifetime are what they were: a
    resume from the start gets the call's events byte for byte."""
    need_shared_redis()
    url = REDIS_URL
    d = h.start(stream_ttl=300)
    sid = d.initialize(LATEST)
    k, head, raw = _finished_stream(d, sid, 3)
    key = f"mcpd:{{{sid}}}:s:{k}"
    size = redis_command(url, "MEMORY", "USAGE", key)
    expect(isinstance(size, int) and size < 3000, f"the ended stream "
           f"{key} holds {size!r} bytes: not compacted (Redis gives a "
           "new stream a 4 KB node)")
    expect(redis_command(url, "EXISTS", key + ":c") == 0,
           "the compaction's copy left behind")
    ttl = redis_command(url, "PTTL", key)
    expect(isinstance(ttl, int) and 290000 < ttl <= 300000,
           f"the ended stream's lifetime {ttl!r} ms, not stream_ttl")
    again = _resume_all(d, sid, f"{k}-0")
    got = {parse_event_id(e.id)[1]: e.data for e in message_events(again)}
    expect(got == {n: v for n, v in raw.items() if n > 0},
           f"resume after compaction: {sorted(got)} against "
           f"{sorted(raw)}")
    print(f"  an ended stream of {head} entries: {size} bytes")
    # A long stream is left as it is: its copy would cost Redis the whole
    # stream (a tenth of a stream n=100 call's CPU) to save one node's
    # slack.
    copies = redis_calls(redis_info(url), "copy")
    _finished_stream(d, sid, 40)
    expect(redis_calls(redis_info(url), "copy") == copies, "a stream of "
           "42 entries was copied as it ended")


def test_redis_log_lost_a_calls_last_entries_resume_error_or_410(h):
    """The log loses the last entries of a running call, as a failover
    under commit primary does (issue 24): the call's next append is
    refused and its error takes the id after what the log kept. A client
    behind the loss resumes exactly and gets that error; one holding a
    lost entry, including the one whose id the error took, gets 410
    ahead, on every resume: never a 200 that ends with nothing."""
    url = need_shared_redis()
    d = h.start()
    sid = d.initialize(LATEST)
    id, r = d.call_open(sid, "stream", {"n": 400, "interval_ms": 20}, "tok")
    expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status}")
    got = r.next_messages(6, what="the call's first messages")
    r.cut()
    k, cursor = check_ids(got, 1, what="before the loss")
    kept = cursor - 1       # the log keeps K-1..K-5: the client's K-6 is lost
    key = f"mcpd:{{{sid}}}:s:{k}"
    dropped = redis_command(url, "EVAL", _LOSE_TAIL, "1", key, str(kept))
    expect(dropped >= 1, f"the log lost {dropped} entries after {k}-{kept}")

    # Behind the loss: K-kept as the client had it, then the error, the
    # stream's end, at K-(kept + 1).
    g = d.get_sse(sid, f"{k}-{kept - 1}")
    expect(g.status == 200 and g.is_sse, f"resume behind the loss -> HTTP "
           f"{g.status}")
    evs = message_events(g.events_until_close(30))
    check_ids(evs, kept, stream=k, what="resume behind the loss")
    expect(len(evs) == 2 and evs[0].data == got[kept - 1].data,
           f"resume behind the loss: {[(e.id, e.data[:80]) for e in evs]}")
    err = evs[1].json
    expect(is_response(err, id) and "error" in err and "lost or diverged"
           in err["error"]["message"], f"resume behind the loss ends with "
           f"{evs[1].data[:300]!r}, not the call's documented error")

    # At and past the loss: 410 ahead, every time (the error took the
    # client's K-6; the log never had the ones after it).
    for n in (cursor, cursor, cursor + 1, cursor + 3):
        c = f"{k}-{n}"
        data = _gone(d.get_sse(sid, c), "ahead", c, "a cursor the log lost")
        expect(data.get("head") == f"{k}-{kept + 1}", f"{c}: error.data."
               f"head {data.get('head')!r}, expected {k}-{kept + 1}")
    d.wait_log(lambda l: f"lost entries {kept + 1} to" in l and sid in l, 5,
               "the loss logged")
    # At the head the log kept: just the error.
    g = d.get_sse(sid, f"{k}-{kept}")
    expect(g.status == 200 and g.is_sse, f"resume at {k}-{kept} -> HTTP "
           f"{g.status}")
    evs = message_events(g.events_until_close(10))
    expect([e.id for e in evs] == [f"{k}-{kept + 1}"] and
           is_response(evs[0].json, id), f"resume at {k}-{kept}: "
           f"{[(e.id, e.data[:80]) for e in evs]}")
    d.assert_alive(sid, "after the log lost entries of a call")


def test_redis_small_maxlen_burst_reaches_a_reading_client_whole(h):
    # Invariant 5 on Redis: with stream_maxlen 5 (stream_window follows it
    # down) and the block policy, a producer that bursts (the stream tool
    # without interval pipelines its appends) is paused before retention
    # trims anything its reading client has not received. The client
    # reads as fast as it can: it must get every event, not a
    # backpressure-disconnect. (The memory log passes this.)
    need_shared_redis()
    d = h.start(stream_maxlen=5)
    for v in VERSIONS:
        _burst(d, v)


def _burst(d, v):
    sid = d.initialize(v)
    id, r = d.call_open(sid, "stream", {"n": 20}, "burst")
    expect(r.status == 200 and r.is_sse, f"{v}: stream -> HTTP {r.status}")
    events = r.events_until_close(10)
    for e in events:
        if e.event == "backpressure-disconnect":
            log = "\n".join(line for line in d.stderr_text().splitlines()
                            if "retention" in line or "slow" in line)
            raise AssertionError(
                f"{v}: a client reading as fast as it can was disconnected as a "
                f"slow consumer on its request stream (block policy): "
                f"{e.data!r}; log:\n{log}")
    k, head = check_ids(events, 1)
    expect(head == 21, f"{v}: burst ended at {k}-{head}, expected {k}-21")
    last = message_events(events)[-1].json
    expect(is_response(last, id) and result_text(last) == "done 20",
           f"{v}: burst ended with {last!r}")


# --------------------------------------------------------------------------
# 6. Redis restarts (AOF): committed events survive identical


def test_redis_restart_with_aof_keeps_events_identical(h):
    with private_redis(h, aof=True) as rs:
        d = h.start(eventlog=rs.url)
        sid = d.initialize(LATEST)
        k, head, raw = _finished_stream(d, sid, 10)
        rs.shutdown()
        rs.start()
        # mcpd kept running: it reconnects (503 meanwhile), then serves
        # exactly what it served before.
        g = _poll_status(lambda: d.get_sse(sid, f"{k}-1"), 200, 15,
                         "resume after the Redis restart")
        g.close()
        expect(d.alive(), "mcpd died when Redis restarted")
        for c in (0, 1, 5):
            _expect_resume_identical(d, sid, k, c, head, raw,
                                     "after the Redis restart")
        d.assert_alive(sid, "after the Redis restart")
        expect(_echo(d, sid, "after") != k, "K reused")
        # and a new process on the restarted Redis agrees
        e = h.start(eventlog=rs.url)
        _adopt(e, d, sid)
        _expect_resume_identical(e, sid, k, 1, head, raw,
                                 "new mcpd after the Redis restart")


# --------------------------------------------------------------------------
# 7. Redis unavailable while serving, with no outage grace
# (eventlog_outage_grace 0; the default waits an outage out for 10 s, which
# tests/e2e/test_redis_outage.py covers): 503 at once, then recovery


def _requests_while_down(d, sid, k, what):
    """Every kind of request that needs the log: 503 + Retry-After +
    JSON-RPC error, in bounded time. Returns the failures (the test goes
    on to check the recovery, then reports them)."""
    failures = []

    def check(r, t, name):
        try:
            _expect_503(r, f"{what}: {name}", t)
        except AssertionError as e:
            failures.append(str(e))

    r, t = _timed(d.initialize_reply, LATEST)
    check(r, t, "initialize")
    id = d.new_id()
    r, t = _timed(d.post, sid, tool_call("echo", {"text": "x"}, id))
    check(r, t, "tools/call on an existing session")
    other = uuid.uuid4().hex        # well-formed (32 hex), not held here
    r, t = _timed(d.post, other, rpc("ping", None, d.new_id()),
                  {"MCP-Protocol-Version": LATEST})
    check(r, t, "a session this process does not hold")
    r, t = _timed(d.get_sse, sid, f"{k}-1")
    if r.status == 200:
        r.close()
    check(r, t, f"GET resume {k}-1")
    return failures


def test_redis_down_while_serving_503_then_recovers(h):
    with private_redis(h, aof=True) as rs:
        d = h.start(eventlog=rs.url, eventlog_outage_grace="0")
        sid = d.initialize(LATEST)
        k, head, raw = _finished_stream(d, sid, 3)
        rs.shutdown()
        # Keep asking for 3 s: each answer quick, while mcpd's reconnect
        # backoff grows (it must still notice Redis promptly later).
        down = time.monotonic()
        failures = []
        while time.monotonic() - down < tmo(3):
            for f in _requests_while_down(d, sid, k, "Redis stopped"):
                if f.split(":")[1] not in "".join(failures):
                    failures.append(f)
            time.sleep(0.2)
        expect(d.alive(), "mcpd died with Redis stopped")
        rs.start()
        _, took = _poll_initialize(d, 15, "Redis back")
        print(f"  recovered {took:.1f}s after Redis came back")
        d.assert_alive(sid, "after Redis came back")
        _expect_resume_identical(d, sid, k, 1, head, raw,
                                 "after Redis came back")
        expect(_echo(d, sid, "back") != k, "K reused")
        expect(not failures, "\n".join(failures))


def test_redis_hung_while_serving_503_then_recovers(h):
    # SIGSTOP: connections are accepted, nothing is answered.
    with private_redis(h, aof=True) as rs:
        d = h.start(eventlog=rs.url, eventlog_outage_grace="0")
        sid = d.initialize(LATEST)
        k, head, raw = _finished_stream(d, sid, 3)
        rs.pause()
        try:
            failures = _requests_while_down(d, sid, k, "Redis hung")
        finally:
            rs.resume()
        expect(d.alive(), "mcpd died with Redis hung")
        _, took = _poll_initialize(d, 15, "Redis answering again")
        print(f"  recovered {took:.1f}s after Redis answered again")
        d.assert_alive(sid, "after Redis answered again")
        _expect_resume_identical(d, sid, k, 1, head, raw,
                                 "after Redis answered again")
        expect(not failures, "\n".join(failures))


# --------------------------------------------------------------------------
# 8. Redis down when mcpd starts


def _refused(port):
    try:
        s = Conn("127.0.0.1", port, tmo(2))
    except ConnectionRefusedError:
        return True
    s.close()
    return False


def test_redis_down_at_start_listens_only_once_it_is_up(h):
    # A starting instance takes no connection before its log is
    # reachable (eventlog_wait, 10 s by default): a balancer then tries
    # another instance instead of getting 503 "Event log unavailable".
    # Once it listens, the first request is served.
    with private_redis(h, start=False) as rs:
        port = free_port()
        d = Daemon(h.mcpd, h.workdir, {"eventlog": rs.url,
                   "listen": f"127.0.0.1:{port}"}, (), h.sanitized,
                   f"mcpd{len(h.daemons)}")
        h.daemons.append(d)
        d.start(listening=False)
        d.wait_log(lambda l: rs.url in l and "connection failed" in l, 5,
                   "a log line saying the Redis connection failed")
        expect(_refused(port), f"mcpd accepts connections on port {port} "
               f"with its event log unreachable")
        expect("listening on" not in d.stderr_text(), f"mcpd says it "
               f"listens with its event log unreachable:\n"
               f"{d.stderr_tail(10)}")
        d.wait_log(lambda l: "eventlog_wait" in l and "waiting" in l, 5,
                   "a log line saying start-up waits for the log")
        # A reload asked for meanwhile is taken up once it listens (a
        # reload says READY=1 to the service manager).
        d.signal(signal.SIGHUP)
        d.wait_log(lambda l: "reload: once listening" in l, 5,
                   "a line saying the reload waits for the listening")
        expect("reload: reading" not in d.stderr_text(), "reloaded while "
               "waiting for the log")
        rs.start()
        d.await_listening(15)
        expect(d.port == port, f"mcpd listens on {d.port}, not {port}")
        d.wait_log(lambda l: "reload:" in l and "applied" in l, 5,
                   "the reload, once listening")
        text = d.stderr_text()
        expect(text.index("listening on") < text.index("reload: reading"),
               "the reload ran before mcpd listened")
        r = d.request("GET", path="/readyz", timeout=5)
        expect(r.status == 200, f"/readyz once listening -> HTTP "
               f"{r.status} {r.body[:200]!r}")
        r = d.initialize_reply(LATEST)
        expect(r.status == 200, f"the first initialize once listening -> "
               f"HTTP {r.status} {r.body[:200]!r}")
        sid = r.session_id
        d.versions[sid] = LATEST
        _echo(d, sid, "first")
        d.assert_alive(sid, "after Redis came up")


def test_redis_down_at_start_past_eventlog_wait_listens_unready(h):
    # Past eventlog_wait mcpd listens all the same, not ready, and says
    # why; requests get 503 until Redis is up, then it serves.
    with private_redis(h, start=False) as rs:
        d = _start_no_wait(h, eventlog=rs.url, eventlog_wait=1)
        line = d.wait_log(lambda l: "eventlog_wait" in l and
                          "not reachable" in l, 5,
                          "a warning that the log is not reachable")
        expect(rs.url in line and "not ready" in line and " warn" in line,
               f"the warning should name the log and say the instance is "
               f"not ready: {line!r}")
        r = d.request("GET", path="/readyz", timeout=5)
        expect(r.status == 503 and (r.json or {}).get("status") ==
               "starting", f"/readyz with Redis down at start -> HTTP "
               f"{r.status} {r.body[:200]!r}, expected 503 starting")
        r, t = _timed(d.initialize_reply, LATEST)
        _expect_503(r, "initialize with Redis down at start", t)
        expect(d.alive(), "mcpd died without Redis")
        rs.start()
        sid, took = _poll_initialize(d, 15, "Redis came up")
        print(f"  serving {took:.1f}s after Redis came up")
        _echo(d, sid, "up")
        _finished_stream(d, sid, 3)
        d.assert_alive(sid, "after Redis came up")


def test_redis_sigterm_while_waiting_at_start_exits(h):
    # A stop while start-up waits for the log: exit 0 without listening.
    with private_redis(h, start=False) as rs:     # never started
        d = Daemon(h.mcpd, h.workdir, {"eventlog": rs.url, "drain_delay": 0},
                   (), h.sanitized, f"mcpd{len(h.daemons)}")
        h.daemons.append(d)
        d.start(listening=False)
        d.wait_log(lambda l: rs.url in l and "connection failed" in l, 5,
                   "a log line saying the Redis connection failed")
        d.signal(signal.SIGTERM)
        try:
            rc = d.proc.wait(tmo(5))
        except subprocess.TimeoutExpired:
            raise AssertionError("mcpd waiting for its log did not exit on "
                                 "SIGTERM") from None
        d.stopped = True
        d.exit_status = rc
        expect(rc == 0, f"mcpd exited with status {rc} on SIGTERM while "
               f"waiting for its log")
        expect("listening on" not in d.stderr_text(), f"mcpd listened after "
               f"SIGTERM:\n{d.stderr_tail(10)}")


# --------------------------------------------------------------------------
# 9. maxmemory-policy other than noeviction: a warning at start


def test_redis_eviction_policy_warns_at_start(h):
    with private_redis(h, "--maxmemory-policy", "allkeys-lru") as rs:
        d = h.start(eventlog=rs.url)
        line = d.wait_log(lambda l: "maxmemory-policy" in l, 5,
                          "a warning naming maxmemory-policy")
        expect("allkeys-lru" in line and "noeviction" in line,
               f"the warning should name the policy found (allkeys-lru) "
               f"and the one wanted (noeviction): {line!r}")
        expect(" warn" in line.lower(), f"not a warning: {line!r}")
        sid = d.initialize(LATEST)      # warns, still serves
        _echo(d, sid, "lru")
        # control: noeviction, no warning
        rs.cmd("CONFIG", "SET", "maxmemory-policy", "noeviction")
        e = h.start(eventlog=rs.url)
        e.initialize(LATEST)            # after the CONFIG GET reply
        expect("maxmemory-policy" not in e.stderr_text(),
               f"warning with noeviction:\n{e.stderr_tail(10)}")


# --------------------------------------------------------------------------
# 10. commit replicas:1 without replicas: loud failure


def test_redis_commit_replicas_without_replicas_fails_loudly(h):
    need_shared_redis()
    if REDIS_URL.startswith("redis-cluster://"):
        raise Skip("the shared Redis is a cluster with replicas: the run "
                   "on one Redis tests this", other_run=True)
    expect(h.conf_accepts("commit replicas:1"),
           "mcpd -t refuses `commit replicas:1`")
    a = h.start()                       # commit primary
    sid = a.initialize(LATEST)
    # Without an outage grace: a missing replica is not waited out
    # (tests/redis/ waits one out).
    b = h.start(extra_lines=["commit replicas:1"], eventlog_outage_grace=0)
    _adopt(b, a, sid)
    id = b.new_id()
    r, t = _timed(b.post, sid, tool_call("echo", {"text": "x"}, id))
    expect(not (r.status == 200 and any(
        is_response(m, id) and "result" in m for m in r.messages())),
        f"tools/call with commit replicas:1 and no replica returned a "
        f"result: {r.messages()!r} (a commit that was never replicated)")
    _expect_503(r, "tools/call with commit replicas:1 and no replica", t)
    line = b.wait_log(lambda l: " warn " in l and "replica" in l and
                      "commit" in l, 3,
                      "a warning saying the commit missed its replicas")
    expect("0 of 1" in line, f"the warning should say how many replicas "
           f"acknowledged (0 of 1): {line!r}")
    r, t = _timed(b.initialize_reply, LATEST)
    _expect_503(r, "initialize with commit replicas:1 and no replica", t)
    # The primary-commit process is unaffected.
    _echo(a, sid, "primary")


def test_redis_client_answer_reaches_the_asking_process(h):
    """A server->client request sent through A is answered by a POST that
    the load balancer sends to B: the answer reaches the waiting call on
    A (issue 3: routing of client responses across instances)."""
    need_shared_redis()
    a = h.start(["fixtures conformance"])
    b = h.start(["fixtures conformance"])
    sid = a.initialize(LATEST)
    _adopt(b, a, sid)
    id, r = a.call_open(sid, "test_sampling", {"prompt": "across"})
    expect(r.status == 200 and r.is_sse, f"tools/call on A -> {r.status}")
    got = r.next_message(5)
    expect(got is not None, "no sampling request on A's stream")
    req = got[1]
    expect(req.get("method") == "sampling/createMessage",
           f"first message on A: {req!r}")
    answer = b.post(sid, {"jsonrpc": "2.0", "id": req["id"], "result": {
        "role": "assistant", "model": "m", "content": {
            "type": "text", "text": "from B"}}})
    expect(answer.status == 202, f"answer POSTed to B -> {answer.status}")
    got = r.next_message(10)
    expect(got is not None, "A's call never finished")
    res = got[1]
    expect(res.get("id") == id, f"A's stream ended with {res!r}")
    text = res["result"]["content"][0]["text"]
    expect(text == "LLM response: from B" and
           not res["result"].get("isError"), f"A's result: {res!r}")


def test_redis_diverged_log_ends_the_call_with_an_error(h):
    """Another writer reaches the call's stream first (the log diverged from
    what mcpd committed): mcpd's next append is refused by the
    compare-and-append, no id is re-issued, and the call ends with a
    JSON-RPC error after what the log has."""
    need_shared_redis()
    url = REDIS_URL
    d = h.start()
    sid = d.initialize(LATEST)
    id, r = d.call_open(sid, "stream", {"n": 40, "interval_ms": 100}, "dv")
    got = _read_messages(r, 3)
    k, last = check_ids(got, 1, what="stream before the divergence")
    key = f"mcpd:{{{sid}}}:s:{k}"
    foreign = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                          "params": {"level": "info", "data": "foreign"}})
    for attempt in range(20):
        # mcpd may append between XLEN and XADD: then the id is taken
        head = redis_command(url, "XLEN", key) - 1
        try:
            redis_command(url, "XADD", key, f"{k}-{head + 1}", "d", foreign)
            break
        except RedisError:
            expect(attempt < 19, "could not slip an entry into the stream")
    events = r.events_until_close(10)
    msgs = message_events(got + events)
    check_ids(msgs, 1, k, "the whole diverged stream")
    end = msgs[-1].json
    expect(end.get("id") == id and "error" in end,
           f"the call ended with {msgs[-1].data[:300]!r}")
    expect("diverged" in end["error"]["message"],
           f"error message: {end['error']!r}")
    d.wait_log(lambda line: "resumability violation" in line and
               f"stream={k}" in line, what="the violation logged")


# --------------------------------------------------------------------------
# 13. The log loses a stream while a call writes it (issue 10): the open
# response ends (never keep-alives for as long as the client waits), an
# error line says what was lost, the call ends, a resume hears 410 or 404,
# and the daemon goes on serving.


def _resume_refused(d, sid, cursor, what, timeout=10):
    """GET + Last-Event-ID until it is not 503 (Redis coming back):
    expects 404, or 410 with a reason that says the stream is gone."""
    deadline = time.monotonic() + tmo(timeout)
    while True:
        g = d.get_sse(sid, cursor)
        if g.status != 503 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    expect(g.status in (404, 410), f"{what}: resume {cursor} -> HTTP "
           f"{g.status} {'' if g.is_sse else g.body[:300]!r}, expected "
           f"410 or 404")
    if g.status == 410:
        reason = (assert_rpc_error(g.json).get("data") or {}).get("reason")
        expect(reason in ("expired", "unknown-stream"), f"{what}: 410 "
               f"reason {reason!r}")


def _call_loses_its_stream(h, rs, lose, what, log_timeout=3):
    d = h.start(eventlog=rs.url)
    sid = d.initialize(LATEST)
    id, r = d.call_open(sid, "stream", {"n": 400, "interval_ms": 25},
                        "lost")
    expect(r.status == 200 and r.is_sse, f"{what}: stream -> HTTP "
           f"{r.status}")
    got = _read_messages(r, 3)
    k, _ = check_ids(got, 1, what=f"{what}: before")
    lose(sid, k)
    try:
        rest = r.events_until_close(5)
    except Timeout:
        raise AssertionError(f"{what}: the call's SSE response was not "
                             f"ended (keep-alives only); last events "
                             f"{r.events[-2:]!r}") from None
    msgs = message_events(got + rest)
    check_ids(msgs, 1, k, f"{what}: the whole response")
    expect(not any(is_response(e.json) for e in msgs), f"{what}: a "
           "response was delivered although the log lost the stream")
    d.wait_log(lambda line: " error " in line and f"session={sid}" in line
               and f"stream={k}" in line and "not committed" in line,
               log_timeout, f"{what}: an error line naming the session, "
               "the stream and what was not committed")
    d.wait_log(lambda line: f"session={sid}" in line and
               "cancelled: the event log lost its stream" in line,
               log_timeout, f"{what}: the call ended")
    _resume_refused(d, sid, msgs[-1].id, what)
    sid2, _ = _poll_initialize(d, 10, f"{what}: a new session")
    _finished_stream(d, sid2, 3)
    d.assert_alive(sid2, f"{what}: a new session")
    return d


def test_redis_stream_key_deleted_during_a_call_ends_it_loudly(h):
    with private_redis(h) as rs:
        _call_loses_its_stream(
            h, rs, lambda sid, k: rs.cmd("DEL", f"mcpd:{{{sid}}}:s:{k}"),
            "DEL of the stream key")


def test_redis_flushall_during_a_call_ends_it_loudly(h):
    with private_redis(h) as rs:
        _call_loses_its_stream(h, rs, lambda sid, k: rs.cmd("FLUSHALL"),
                               "FLUSHALL")


def test_redis_restarted_empty_during_a_call_is_said(h):
    def restart(sid, k):
        rs.shutdown()
        rs.start()

    with private_redis(h) as rs:        # no AOF: it restarts empty
        d = _call_loses_its_stream(h, rs, restart, "Redis restarted empty",
                                   log_timeout=10)
        d.wait_log(lambda line: " error " in line and
                   "Redis restarted empty" in line, 3,
                   "a log line saying Redis restarted empty")


# --------------------------------------------------------------------------
# 14. Redis stalls (CLIENT PAUSE, DEBUG SLEEP, a hung server) while a call
# streams, with no outage grace (eventlog_outage_grace 0: what happens past
# the grace; within it, the default 10 s, the call goes on, which
# tests/e2e/test_redis_outage.py covers): the call ends with an error
# saying the event log was unavailable (not that its server stopped),
# within the bound README states.


def _expect_log_unavailable_error(msg, id, what):
    expect(is_response(msg, id) and "error" in msg,
           f"{what}: the call ended with {msg!r}, expected a JSON-RPC error "
           f"for id {id}")
    err = assert_rpc_error(msg, id_null=False)
    text = err["message"].lower()
    expect("event log" in text and "unavailable" in text,
           f"{what}: the error does not say the event log was unavailable: "
           f"{err!r}")
    expect("server running it stopped" not in text,
           f"{what}: a stall reported as a dead server: {err!r}")


def _expect_no_dead_owner(d, what):
    dead = [line for line in d.stderr_text().splitlines()
            if "is gone (lease expired" in line]
    expect(not dead, f"{what}: mcpd took its own call for a dead "
           f"process's: {dead!r}")
    d.wait_log(lambda line: " error " in line and "event log is "
               "unavailable" in line, 3, "an error line saying the event log "
               "was unavailable")


def _stall_during_call(h, stall, what):
    """A stream call is running when Redis stops answering for 2 to 3 s
    (longer than mcpd's 2 s reply timeout): the client's open response
    carries the call's progress without a hole, then its error response,
    within the bound; a resume from the last progress gives exactly the
    same; the session goes on."""
    with private_redis(h, "--enable-debug-command", "yes") as rs:
        d = h.start(eventlog=rs.url, eventlog_outage_grace="0")
        sid = d.initialize(LATEST)
        id, r = d.call_open(sid, "stream", {"n": 100, "interval_ms": 50},
                            "stall")
        expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status}")
        got = _read_messages(r, 3)
        t0 = time.monotonic()
        stall(rs)
        events = r.events_until_close(20)
        took = time.monotonic() - t0
        msgs = message_events(got + events)
        k, head = check_ids(msgs, 1, what=what)
        _check_progress(msgs[:-1], "stall", what)
        _expect_log_unavailable_error(msgs[-1].json, id, what)
        # README: a commit fails after 2 s without a reply; the error is
        # committed as soon as Redis answers again.
        expect(took <= tmo(6), f"{what}: the error came {took:.1f}s after "
               f"the stall began (Redis answers again within 3 s)")
        print(f"  {what}: error response {took:.1f}s after the stall, at "
              f"{k}-{head}")
        _expect_no_dead_owner(d, what)
        again = message_events(_resume_all(d, sid, f"{k}-3", 5))
        expect([(e.id, e.data) for e in again] ==
               [(e.id, e.data) for e in msgs[3:]],
               f"{what}: resume {k}-3 differs from what the response carried")
        d.assert_alive(sid, f"after {what}")
        _echo(d, sid, "after the stall")


def test_redis_client_pause_ends_the_call_with_log_unavailable(h):
    # 3 s, not 2 (as DEBUG SLEEP below): a pause exactly as long as mcpd's
    # 2 s reply timeout races it, and on a loaded machine the reply can win.
    _stall_during_call(h, lambda rs: rs.cmd("CLIENT", "PAUSE", "3000"),
                       "CLIENT PAUSE 3000")


def test_redis_debug_sleep_ends_the_call_with_log_unavailable(h):
    # 3 s, not 2: a stall right at mcpd's 2 s reply timeout may as well
    # be waited out. The append in flight is executed when Redis wakes,
    # after mcpd gave up on it: the error goes after it.
    def sleep(rs):
        # DEBUG SLEEP answers when it is over: send it, read never.
        conn = Conn("127.0.0.1", rs.port, tmo(5))
        conn.send(b"*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$1\r\n3\r\n")
        sleepers.append(conn)
    sleepers = []
    try:
        _stall_during_call(h, sleep, "DEBUG SLEEP 3")
    finally:
        for c in sleepers:
            c.close()


def test_redis_hung_during_call_ends_the_response_within_the_bound(h):
    """Redis hangs (SIGSTOP) while a call streams and stays away: the open
    response ends within the documented bound (a commit fails after 2 s,
    the response waits 3 s more for the log), a resume meanwhile is
    answered 503, and once Redis answers the resume delivers the call's
    error response."""
    with private_redis(h) as rs:
        d = h.start(eventlog=rs.url, eventlog_outage_grace="0")
        sid = d.initialize(LATEST)
        id, r = d.call_open(sid, "stream", {"n": 100, "interval_ms": 50},
                            "hung")
        expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status}")
        got = _read_messages(r, 3)
        rs.pause()
        try:
            t0 = time.monotonic()
            events = r.events_until_close(15)
            took = time.monotonic() - t0
            expect(took <= tmo(7), f"the response ended {took:.1f}s after "
                   f"Redis hung (bound: 2 s + 3 s)")
            msgs = message_events(got + events)
            k, last = check_ids(msgs, 1, what="before the end")
            expect(not any(is_response(m.json) for m in msgs),
                   f"a response while Redis is hung: {msgs[-1].data!r}")
            g, t = _timed(d.get_sse, sid, f"{k}-{last}")
            _expect_503(g, "resume while Redis is hung", t)
        finally:
            rs.resume()
        g = _poll_status(lambda: d.get_sse(sid, f"{k}-{last}"), 200, 15,
                         "resume once Redis answers")
        rest = message_events(g.events_until_close(10))
        expect(rest, "the resume after Redis came back delivered nothing")
        check_ids(rest, last + 1, k, "resume after Redis came back")
        _expect_log_unavailable_error(rest[-1].json, id, "Redis hung")
        _expect_no_dead_owner(d, "Redis hung")
        d.assert_alive(sid, "after Redis hung")


# --------------------------------------------------------------------------
# 15. Redis loses a session that processes hold (FLUSHALL, a restart
# without persistence): once the log says it is gone, every request about
# it is 404 on every process, and their views of it end.


def _lost_session_setup(h, rs):
    """Two processes on rs holding one session: a finished call's cursor
    and a standalone GET open on each. Returns (a, b, sid, cursor,
    {process: its open standalone reply})."""
    a = h.start(eventlog=rs.url)
    b = h.start(eventlog=rs.url)
    sid = a.initialize(LATEST)
    _adopt(b, a, sid)
    k, head, _ = _finished_stream(a, sid, 2)
    b.assert_alive(sid, "on B before the log loses it")     # B holds it
    views = {}
    for d in (a, b):
        s = d.get_sse(sid)
        expect(s.status == 200 and s.is_sse, f"standalone GET -> HTTP "
               f"{s.status}")
        expect(s.next_event(5).id is not None, "the standalone GET was "
               "not primed")
        views[d] = s
    return a, b, sid, f"{k}-{head}", views


def _view_ends(s, what, timeout=5):
    try:
        rest = s.events_until_close(timeout)
    except Timeout:
        raise AssertionError(f"{what}: the standalone GET of the lost "
                             f"session stayed open") from None
    expect(not message_events(rest), f"{what}: messages after the log "
           f"lost the session: {rest!r}")


def _every_request_404(d, sid, cursor, what):
    def check(r, name):
        if r.status == 200 and r.is_sse:
            r.close()
        expect(r.status == 404, f"{what}: {name} -> HTTP {r.status} "
               f"{'' if r.is_sse else r.body[:200]!r}, expected 404")
        assert_rpc_error(r.json)
    check(d.post(sid, rpc("ping", None, d.new_id())), "ping")
    check(d.post(sid, rpc("tools/list", None, d.new_id())), "tools/list")
    check(d.post(sid, rpc("notifications/initialized")), "a notification")
    check(d.post(sid, {"jsonrpc": "2.0", "id": "mcpd-0123456789ab",
                       "result": {}}), "a response")
    check(d.post(sid, tool_call("echo", {"text": "x"}, d.new_id())),
          "tools/call")
    check(d.get_sse(sid), "GET")
    check(d.get_sse(sid, cursor), f"GET Last-Event-ID {cursor}")
    check(d.delete(sid), "DELETE")


def test_redis_flushall_session_404_on_every_process(h):
    # FLUSHALL tells nobody: the first request that reads the session
    # (here a ping on A) hears it is gone; A tells B, whose view of it ends
    # before B gets any request; then everything is 404 on both.
    with private_redis(h) as rs:
        a, b, sid, cursor, views = _lost_session_setup(h, rs)
        rs.cmd("FLUSHALL")
        r = a.post(sid, rpc("ping", None, a.new_id()))
        expect(r.status == 404, f"ping on A after FLUSHALL -> HTTP "
               f"{r.status} {r.body[:200]!r}, expected 404")
        _view_ends(views[a], "A")
        _view_ends(views[b], "B (told by A)")
        for d, name in ((a, "A"), (b, "B")):
            d.wait_log(lambda l: f"session={sid} closed: gone from the "
                       "shared log" in l, 3, f"{name}: a line saying the "
                       "session is gone from the log")
            _every_request_404(d, sid, cursor, f"{name} after FLUSHALL")
        sid2 = a.initialize(LATEST)
        _echo(a, sid2, "after")


def test_redis_restarted_empty_session_404_on_every_process(h):
    # Both processes reconnect to a Redis that lost everything: the
    # re-read after the reconnection finds the session gone, without any
    # request; then everything is 404 on both.
    with private_redis(h) as rs:  # no AOF: it restarts empty
        a, b, sid, cursor, views = _lost_session_setup(h, rs)
        rs.shutdown()
        rs.start()
        for d, name in ((a, "A"), (b, "B")):
            d.wait_log(lambda l: f"session={sid} closed: gone from the "
                       "shared log" in l, 15, f"{name}: a line saying the "
                       "session is gone from the log")
            _view_ends(views[d], name)
        for d, name in ((a, "A"), (b, "B")):
            _every_request_404(d, sid, cursor, f"{name} after the restart")


def test_redis_subscription_back_before_commands_still_rereads(h):
    # The race of a reconnection: each process's subscription is back
    # (subscribed again) while its command connection cannot be set up
    # (SCRIPT denied), and meanwhile the session is lost. Once commands
    # work again, both re-read it and drop it without any request.
    with private_redis(h) as rs:
        a, b, sid, cursor, views = _lost_session_setup(h, rs)
        rs.cmd("ACL", "SETUSER", "default", "-script")
        rs.cmd("FLUSHALL")
        rs.cmd("CLIENT", "KILL", "TYPE", "pubsub")
        rs.cmd("CLIENT", "KILL", "TYPE", "normal")
        channel = f"mcpd:{{{sid}}}:events"
        deadline = time.monotonic() + tmo(10)
        while rs.cmd("PUBSUB", "NUMSUB", channel)[1] < 2:
            expect(time.monotonic() < deadline, "the processes did not "
                   "subscribe again")
            time.sleep(0.05)
        for d in (a, b):
            expect("command connection ready" not in
                   d.stderr_text().split("command connection lost")[-1],
                   "a command connection came back with SCRIPT denied")
        rs.cmd("ACL", "SETUSER", "default", "+script")
        for d, name in ((a, "A"), (b, "B")):
            d.wait_log(lambda l: f"session={sid} closed: gone from the "
                       "shared log" in l, 15, f"{name}: a line saying the "
                       "session is gone from the log (no re-read once "
                       "commands worked again)")
            _view_ends(views[d], name)
            _every_request_404(d, sid, cursor, f"{name} after the race")


def test_redis_flushall_not_brought_back_by_a_re_store(h):
    # A process re-stores a session in use (every session_ttl / 4; an
    # open GET keeps it in use) without any request. After FLUSHALL that
    # re-store must not bring the session back for every process: it is
    # refused, and the process drops the session (its GET ends).
    with private_redis(h) as rs:
        d = h.start(eventlog=rs.url, session_ttl=10)
        sid = d.initialize(LATEST)
        s = d.get_sse(sid)
        expect(s.status == 200 and s.is_sse, f"GET -> HTTP {s.status}")
        expect(s.next_event(5).id is not None, "the GET was not primed")
        rs.cmd("FLUSHALL")
        d.wait_log(lambda l: f"session={sid} closed: gone from the shared "
                   "log (found when storing it again)" in l, 10,
                   "a line saying the re-store found the session gone")
        _view_ends(s, "the GET of the session")
        meta = f"mcpd:{{{sid}}}:meta"
        expect(rs.cmd("EXISTS", meta) == 0, f"{meta} is back in Redis "
               f"after FLUSHALL: a re-store brought the session back")
        _every_request_404(d, sid, "1-0", "after the refused re-store")
