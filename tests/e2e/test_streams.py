"""Streams and their views: disconnect and resume, takeover, DELETE,
cancellation, logging level, shutdown."""

import time

from mcpd_harness import (LATEST, VERSIONS, cancelled, check_ids, expect,
                          is_log, is_progress, is_response, message_events,
                          result_text, rpc, tmo)


def _read_messages(r, count, timeout=5):
    """The next `count` message events (skipping priming/retry blocks)."""
    out = []
    while len(out) < count:
        got = r.next_message(timeout)
        expect(got is not None, f"stream ended after {len(out)} of {count} "
               "messages")
        out.append(got[0])
    return out


def test_disconnect_mid_stream_then_resume(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v)
        id, r = d.call_open(sid, "stream", {"n": 50, "interval_ms": 20},
                            "tok")
        first = _read_messages(r, 10)
        r.cut()                     # RST, unread bytes dropped
        cursor = first[-1].id
        g = d.get_sse(sid, cursor)
        expect(g.status == 200, f"{v}: resume {cursor} -> HTTP {g.status} "
               f"{g.body[:200] if not g.is_sse else ''}")
        rest = message_events(g.events_until_close(10))
        allev = first + rest
        k, last = check_ids(allev, 1, what=f"{v} POST stream + resume")
        msgs = [e.json for e in allev]
        prog = [m["params"]["progress"] for m in msgs if is_progress(m)]
        expect(prog == list(range(1, 51)), f"{v}: progress seen across the "
               f"disconnect: {prog}")
        expect(len(msgs) == 51 and is_response(msgs[-1], id) and
               result_text(msgs[-1]) == "done 50",
               f"{v}: after 50 progress expected the result only, got "
               f"{msgs[50:]!r}")


def test_disconnect_is_not_cancellation(h):
    d = h.start()
    sid = d.initialize(LATEST)
    id, r = d.call_open(sid, "stream", {"n": 30, "interval_ms": 20}, "tok")
    first = _read_messages(r, 3)
    r.cut()
    # no view attached while the call runs (30 x 20 ms); then come back
    time.sleep(30 * 0.02 + 0.4)
    g = d.get_sse(sid, first[-1].id)
    expect(g.status == 200, f"resume after the call ran detached -> HTTP "
           f"{g.status}")
    rest = message_events(g.events_until_close(10))
    check_ids(first + rest, 1, what="detached stream")
    last = rest[-1].json if rest else None
    expect(last is not None and is_response(last, id) and
           result_text(last) == "done 30",
           f"a client disconnect cancelled the call: last message {last!r}")


def test_one_view_per_stream_post_then_get(h):
    d = h.start()
    sid = d.initialize(LATEST)
    id, r = d.call_open(sid, "stream", {"n": 100, "interval_ms": 30}, "tok")
    first = _read_messages(r, 5)
    cursor = first[-1].id
    t0 = time.monotonic()
    g = d.get_sse(sid, cursor)
    expect(g.status == 200, f"takeover GET {cursor} -> HTTP {g.status}")
    # the POST view is closed by the server, long before the call ends
    tail = r.events_until_close(1.5)
    expect(not any(e.is_message and is_response(e.json, id) for e in tail),
           "the old view kept streaming to the end instead of being closed")
    expect(time.monotonic() - t0 < tmo(2), "old view not closed promptly")
    # the new view continues right after the cursor, to the end
    rest = message_events(g.events_until_close(10))
    k, last = check_ids(first + rest, 1, what="POST view + takeover view")
    expect(last == 101 and result_text(rest[-1].json) == "done 100",
           f"takeover view ended at {k}-{last}: {rest[-1].data!r}")


def test_one_view_per_stream_get_then_get(h):
    d = h.start()
    sid = d.initialize(LATEST)
    id, r = d.call_open(sid, "stream", {"n": 100, "interval_ms": 30}, "tok")
    first = _read_messages(r, 3)
    r.cut()
    g1 = d.get_sse(sid, first[-1].id)
    expect(g1.status == 200, f"GET #1 -> HTTP {g1.status}")
    mid = _read_messages(g1, 3)
    g2 = d.get_sse(sid, mid[-1].id)
    expect(g2.status == 200, f"GET #2 -> HTTP {g2.status}")
    tail = g1.events_until_close(1.5)
    expect(not any(e.is_message and is_response(e.json, id) for e in tail),
           "first GET view was not closed by the takeover")
    rest = message_events(g2.events_until_close(10))
    check_ids(first + mid + rest, 1, what="GET view + takeover GET view")
    expect(result_text(rest[-1].json) == "done 100", f"{rest[-1].data!r}")


def test_one_view_on_standalone_stream(h):
    d = h.start()
    sid = d.initialize(LATEST)
    g1 = d.get_sse(sid)
    expect(g1.status == 200, f"GET #1 -> HTTP {g1.status}")
    g1.next_event(3)
    g2 = d.get_sse(sid)
    expect(g2.status == 200, f"GET #2 -> HTTP {g2.status}")
    g1.events_until_close(2)        # closed by the server
    d.call(sid, "notify", {"n": 1})
    ev, m = g2.next_message(5)
    expect(is_log(m), f"standalone message on the new view: {m!r}")
    g2.close()


def test_delete_ends_running_calls(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v)
        id, r = d.call_open(sid, "stream", {"n": 200, "interval_ms": 25},
                            "tok")
        first = _read_messages(r, 3)
        g = d.get_sse(sid)
        expect(g.status == 200, f"{v}: GET -> HTTP {g.status}")
        t0 = time.monotonic()
        x = d.delete(sid)
        expect(x.status in (200, 204), f"{v}: DELETE -> HTTP {x.status}")
        tail = r.events_until_close(3)
        expect(not any(e.is_message and is_response(e.json, id) and
                       "result" in e.json for e in tail),
               f"{v}: the call ran to its end after DELETE")
        expect(time.monotonic() - t0 < tmo(3), f"{v}: stream not ended")
        g.events_until_close(3)
        for what, rr in (("POST ping", d.ping(sid)),
                         ("GET", d.get_sse(sid)),
                         ("GET Last-Event-ID", d.get_sse(sid, first[-1].id)),
                         ("tools/call", d.post(sid, rpc("tools/call", {
                             "name": "echo", "arguments": {"text": "x"}},
                             1)))):
            expect(rr.status == 404, f"{v}: {what} after DELETE -> HTTP "
                   f"{rr.status}, expected 404")


def test_cancelled_call_sends_no_response(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v)
        id, r = d.call_open(sid, "stream", {"n": 200, "interval_ms": 30},
                            "tok")
        first = _read_messages(r, 3)
        c = d.post(sid, cancelled(id))
        expect(c.status == 202, f"{v}: notifications/cancelled -> HTTP "
               f"{c.status}")
        t0 = time.monotonic()
        tail = r.events_until_close(3)
        expect(time.monotonic() - t0 < tmo(3), f"{v}: stream not ended")
        msgs = [e.json for e in first + message_events(tail)]
        expect(not any(is_response(m, id) for m in msgs),
               f"{v}: a response for the cancelled request {id} was sent: "
               f"{[m for m in msgs if is_response(m)]!r}")
        expect(len([m for m in msgs if is_progress(m)]) < 200,
               f"{v}: all 200 progress sent: not cancelled")
        # a resume neither hangs nor reveals a response
        last = (first + message_events(tail))[-1].id
        g = d.get_sse(sid, last)
        if g.status == 200:
            more = [e.json for e in message_events(g.events_until_close(3))]
            expect(not any(is_response(m, id) for m in more),
                   f"{v}: resume after cancel delivered a response: {more!r}")
        d.assert_alive(sid, f"{v} after cancellation")


def test_cancel_unknown_request_is_harmless(h):
    d = h.start()
    sid = d.initialize(LATEST)
    c = d.post(sid, cancelled(987654))
    expect(c.status == 202, f"cancel of an unknown id -> HTTP {c.status}")
    msg, _ = d.call(sid, "stream", {"n": 2}, "t")
    expect(result_text(msg) == "done 2", f"{msg!r}")


def test_set_level_error_suppresses_info(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v)
        id = d.new_id()
        r = d.post(sid, rpc("logging/setLevel", {"level": "error"}, id))
        expect(r.status == 200, f"{v}: logging/setLevel -> HTTP {r.status}")
        expect(r.rpc(id).get("result") == {},
               f"{v}: logging/setLevel -> {r.rpc(id)!r}")
        msg, rr = d.call(sid, "stream", {"n": 3})
        expect(result_text(msg) == "done 3", f"{v}: {msg!r}")
        logs = [m for m in rr.messages() if is_log(m)]
        expect(not logs, f"{v}: info messages despite level error: {logs!r}")
        # back to info: they come again
        d.post(sid, rpc("logging/setLevel", {"level": "info"}, d.new_id()))
        msg, rr = d.call(sid, "stream", {"n": 2})
        logs = [m for m in rr.messages() if is_log(m)]
        expect(len(logs) == 2, f"{v}: level info: {len(logs)} messages")


def test_set_level_invalid_is_error(h):
    d = h.start()
    sid = d.initialize(LATEST)
    id = d.new_id()
    r = d.post(sid, rpc("logging/setLevel", {"level": "loud"}, id))
    expect(r.status in (200, 400), f"setLevel loud -> HTTP {r.status}")
    if r.status == 200:
        expect("error" in r.rpc(id), f"setLevel loud accepted: {r.json!r}")
    d.assert_alive(sid)


def test_sigterm_with_open_streams_exits_0_promptly(h):
    d = h.start()
    sid = d.initialize(LATEST)
    g = d.get_sse(sid)
    expect(g.status == 200, f"GET -> HTTP {g.status}")
    id, r = d.call_open(sid, "stream", {"n": 1000, "interval_ms": 50}, "t")
    _read_messages(r, 2)
    id2, r2 = d.call_open(d.initialize("2025-03-26"), "stream",
                          {"n": 1000, "interval_ms": 50})
    _read_messages(r2, 1)
    t0 = time.monotonic()
    problems = d.stop(timeout=3, close_clients=False)
    expect(not problems, f"SIGTERM with open SSE streams: {problems}")
    expect(time.monotonic() - t0 < tmo(3), "slow shutdown")
    for s in (g, r, r2):
        s.events_until_close(2)     # the clients see their streams end
