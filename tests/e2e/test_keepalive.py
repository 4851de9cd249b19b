"""The end of an SSE response and the connection it came on (issue 10).

A client that pools connections (Node's fetch, undici) puts a connection
back in its pool as soon as a response has ended by its framing, and sends
its next request on it at once. So every response mcpd ends cleanly (the
terminal chunk) must leave the connection open for that request: a close
right after the end, unannounced in the head, loses it. Where mcpd does cut
a stream (a view taken over by another connection, shutdown, a client that
sends on its response stream), the cut must not look like an end: no
terminal chunk, unless the head said `Connection: close`.

Each test reads an SSE response to its end and then, without waiting,
sends the next request on the same socket.
"""

import signal
import time

from mcpd_harness import (LATEST, REDIS_URL, expect, is_log,
                          message_events, need_shared_redis, redis_command,
                          result_text, rpc, tmo, tool_call)


def _ended(r, what):
    """r's SSE body ended by its terminal chunk, the connection open."""
    r.events_until_close(10)
    expect(not r.reader.truncated, f"{what}: the SSE response was cut "
           "(EOF/RST before its terminal chunk) instead of ended")
    expect((r.header("Connection") or "").lower() != "close",
           f"{what}: the head announced Connection: close")


def _reused(d, r, sid, status, what):
    """The next request, sent at once on r's connection, is answered."""
    id = d.new_id()
    try:
        p = d.open("POST", sid, rpc("ping", None, id), conn=r.conn,
                   timeout=5)
        p.read_body(5)
    except AssertionError as e:
        raise AssertionError(
            f"{what}: a POST sent at once on the connection whose SSE "
            f"response had just ended was lost ({e}); mcpd closed a "
            "connection that it had left open for reuse") from None
    expect(p.status == status, f"{what}: POST on the reused connection -> "
           f"HTTP {p.status}, expected {status}")
    if status == 200:
        expect(p.rpc(id).get("result") == {}, f"{what}: ping -> {p.body!r}")


def _cut(r, what, timeout=5):
    """r's SSE body was cut, not ended: the client must see an error (or
    the head must have announced the close)."""
    r.events_until_close(timeout)
    expect(r.reader.truncated or
           (r.header("Connection") or "").lower() == "close",
           f"{what}: the connection was closed after a clean end of the "
           "response (terminal chunk) that the head did not announce; a "
           "pooling client takes it for a reusable connection")


def test_normal_end_leaves_connection_reusable(h):
    d = h.start()
    sid = d.initialize(LATEST)
    id, r = d.call_open(sid, "stream", {"n": 3}, "n")
    _ended(r, "stream call")
    expect(result_text(r.rpc(id)) == "done 3", f"{r.messages()!r}")
    _reused(d, r, sid, 200, "after a stream call's response")
    # a resume of a finished stream ends at once, also cleanly
    cursor = message_events(r.events)[0].id
    g = d.get_sse(sid, cursor)
    expect(g.status == 200, f"resume {cursor} -> HTTP {g.status}")
    _ended(g, f"resume {cursor} of a finished stream")
    _reused(d, g, sid, 200, "after a resume of a finished stream")


def test_ended_stream_connection_idles_out(h):
    # Streaming turns the connection's timeouts off (an idle stream is
    # healthy); once the response has ended the connection is an idle
    # keep-alive one like any other, closed after the request timeout (30 s),
    # not held for ever.
    d = h.start()
    sid = d.initialize(LATEST)
    id, r = d.call_open(sid, "stream", {"n": 2}, "i")
    _ended(r, "stream call")
    try:
        while r.conn.fill(time.monotonic() + tmo(45)):
            pass
    except AssertionError:
        raise AssertionError("the idle connection of an ended SSE "
                             "response still open after 45 s") from None
    expect(not r.conn.buf, f"data after the end: {bytes(r.conn.buf)!r}")


test_ended_stream_connection_idles_out.timeout = 90


def test_delete_ends_streams_and_leaves_connections_reusable(h):
    d = h.start()
    sid = d.initialize(LATEST)
    id, r = d.call_open(sid, "stream", {"n": 200, "interval_ms": 25}, "d")
    expect(r.next_message(5) is not None, "stream call: no message")
    g = d.get_sse(sid)
    expect(g.status == 200, f"GET -> HTTP {g.status}")
    g.next_event(3)
    x = d.delete(sid)               # from another connection
    expect(x.status in (200, 204), f"DELETE -> HTTP {x.status}")
    for what, resp in (("POST stream", r), ("GET stream", g)):
        _ended(resp, f"{what} ended by DELETE")
        _reused(d, resp, sid, 404, f"after DELETE ended the {what}")


def test_session_ended_in_shared_log_ends_stream_reusably(h):
    # A session that expired in the shared log, or was deleted through
    # another process, is dropped here when this process next finds it
    # gone: its streams end like after a DELETE. (A session is never idle
    # while it has a stream open, so its own session_ttl ends none.)
    need_shared_redis()
    a = h.start()
    b = h.start()
    for how in ("expired", "deleted through another process"):
        sid = a.initialize(LATEST)
        g = a.get_sse(sid)
        expect(g.status == 200, f"{how}: GET -> HTTP {g.status}")
        g.next_event(3)
        if how == "expired":
            key = f"mcpd:{{{sid}}}:meta"
            expect(redis_command(REDIS_URL, "PEXPIRE", key, 1) == 1,
                   f"no key {key} in Redis")
            deadline = time.monotonic() + tmo(5)
            while redis_command(REDIS_URL, "EXISTS", key) != 0:
                expect(time.monotonic() < deadline, f"{key} not expired")
                time.sleep(0.01)
        else:
            b.versions[sid] = LATEST
            x = b.delete(sid)
            expect(x.status in (200, 204), f"DELETE through B -> HTTP "
                   f"{x.status}")
        r = a.post(sid, tool_call("echo", {"text": "x"}, a.new_id()))
        expect(r.status == 404, f"{how}: tools/call -> HTTP {r.status}")
        _ended(g, f"GET stream of a session {how}")
        _reused(a, g, sid, 404, f"after the session {how} ended the GET "
                "stream")


def test_slow_consumer_disconnect_leaves_connection_reusable(h):
    n, size = 2000, 4096            # ~8 MB: far beyond socket buffers
    d = h.start(["slow_consumer_grace_ms 300"],
                backpressure_standalone="close", sse_high_watermark=65536,
                stream_maxlen=100000)
    sid = d.initialize(LATEST)
    g = d.get_sse(sid, rcvbuf=4096)
    expect(g.status == 200, f"GET -> HTTP {g.status}")
    g.next_event(3)
    msg, _ = d.call(sid, "notify", {"n": n, "size": size}, timeout=20)
    expect(result_text(msg) == f"queued {n}", f"notify: {msg!r}")
    d.wait_metric("slow_consumers_closed", lambda v: v >= 1, 10,
                  "the stalled GET client disconnected as slow")
    _ended(g, "GET stream ended by a slow-consumer disconnect")
    ends = [e for e in g.events if e.event == "backpressure-disconnect"]
    expect(ends and ends[-1] is g.events[-1], "the response did not end "
           f"with backpressure-disconnect: {g.events[-2:]!r}")
    _reused(d, g, sid, 200, "after a slow-consumer disconnect")


test_slow_consumer_disconnect_leaves_connection_reusable.timeout = 60


def test_log_read_error_ends_stream_and_leaves_connection_reusable(h):
    # A view reads its stream from the log as its client drains. Here the
    # log loses the stream under a stalled reader (the memory log lets a
    # session's oldest finished stream expire early at its stream budget),
    # so the view's next read fails.
    n, size = 3000, 4096            # ~12 MB: far beyond socket buffers
    d = h.start(eventlog="memory", session_max_streams=2,
                stream_maxlen=100000, sse_high_watermark=65536)
    sid = d.initialize(LATEST)
    id, r = d.call_open(sid, "stream", {"n": n, "size": size})
    _ended(r, "the stream call")
    first = message_events(r.events)[0].id
    g = d.get_sse(sid, first, rcvbuf=4096)
    expect(g.status == 200, f"resume {first} -> HTTP {g.status}")
    g.next_event(5)
    # a new stream in the session: the finished one expires early
    d.call(sid, "echo", {"text": "x"})
    d.wait_log(lambda line: "expired early" in line, 5,
               "the resumed stream expiring early")
    _ended(g, "resume ended by a failed log read")
    d.wait_log(lambda line: "view ends: log read" in line, 5,
               "the view ending on a failed log read")
    _reused(d, g, sid, 200, "after a failed log read ended the stream")


test_log_read_error_ends_stream_and_leaves_connection_reusable.timeout = 60


def test_takeover_cuts_old_view(h):
    d = h.start()
    sid = d.initialize(LATEST)
    g1 = d.get_sse(sid)
    expect(g1.status == 200, f"GET #1 -> HTTP {g1.status}")
    g1.next_event(3)
    g2 = d.get_sse(sid)
    expect(g2.status == 200, f"GET #2 -> HTTP {g2.status}")
    _cut(g1, "standalone view taken over by another GET")
    id, r = d.call_open(sid, "stream", {"n": 100, "interval_ms": 30}, "t")
    ev, _ = r.next_message(5)
    g3 = d.get_sse(sid, ev.id)
    expect(g3.status == 200, f"resume {ev.id} -> HTTP {g3.status}")
    _cut(r, "POST view taken over by a resume")
    d.call(sid, "notify", {"n": 1})
    _, m = g2.next_message(5)
    expect(is_log(m), f"the new standalone view: {m!r}")
    g2.close()
    g3.close()


def test_shutdown_cuts_streams(h):
    # The stop that does not drain: a second SIGTERM during a drain exits
    # at once (a drain ends its responses cleanly, with retry:; see
    # test_drain.py).
    d = h.start(drain_delay=60)
    sid = d.initialize(LATEST)
    g = d.get_sse(sid)
    expect(g.status == 200, f"GET -> HTTP {g.status}")
    g.next_event(3)
    id, r = d.call_open(sid, "stream", {"n": 1000, "interval_ms": 20}, "s")
    expect(r.next_message(5) is not None, "stream call: no message")
    d.signal(signal.SIGTERM)
    d.wait_log(lambda line: "drain: /readyz answers 503" in line, 5,
               "the drain's start")
    problems = d.stop(timeout=5, close_clients=False)
    expect(not problems, f"SIGTERM with open streams: {problems}")
    _cut(g, "GET stream at shutdown")
    _cut(r, "POST stream at shutdown")


def test_client_sending_on_stream_is_cut(h):
    d = h.start()
    sid = d.initialize(LATEST)
    g = d.get_sse(sid)
    expect(g.status == 200, f"GET -> HTTP {g.status}")
    g.next_event(3)
    g.conn.send(b"x" * (256 * 1024))
    t0 = time.monotonic()
    _cut(g, "GET stream whose client sends on it", 10)
    expect(time.monotonic() - t0 < tmo(5), "not cut promptly")
    d.assert_alive(sid, "after cutting a client that sent on its stream")
