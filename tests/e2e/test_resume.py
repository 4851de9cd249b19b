"""Every resume outcome of GET + Last-Event-ID (docs/protocol.md, Resuming)."""

import json
import time

from mcpd_harness import (LATEST, VERSIONS, assert_rpc_error, check_ids,
                          expect, is_log, is_response, message_events,
                          parse_event_id, result_text, tmo)


def _finished_stream(d, sid, n, token="p"):
    """Runs stream n to its end; returns (K, head N, {N: message})."""
    id, r = d.call_open(sid, "stream", {"n": n}, token)
    expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status}")
    events = r.events_until_close()
    k, head = check_ids(events, 1)
    msgs = {parse_event_id(e.id)[1]: e.json for e in message_events(events)}
    expect(result_text(msgs[head]) == f"done {n}", f"{msgs[head]!r}")
    return k, head, msgs


def _gone(r, reason, cursor, what):
    """A 410 with the contract's JSON-RPC error body; returns error.data."""
    expect(r.status == 410, f"{what}: GET Last-Event-ID {cursor} -> HTTP "
           f"{r.status} {r.body[:300]!r}, expected 410 {reason}")
    expect(r.is_json, f"{what}: 410 Content-Type "
           f"{r.header('Content-Type')!r}, expected application/json")
    body = r.json
    expect("id" in body and body["id"] is None,
           f"{what}: 410 body must carry id null: {body!r}")
    err = assert_rpc_error(body)
    data = err.get("data")
    expect(isinstance(data, dict), f"{what}: error.data missing: {body!r}")
    expect(data.get("reason") == reason, f"{what}: error.data.reason "
           f"{data.get('reason')!r}, expected {reason!r}")
    expect(data.get("last_event_id") == cursor, f"{what}: error.data."
           f"last_event_id {data.get('last_event_id')!r}, expected {cursor!r}")
    return data


def _no_priming(events, cursor_n, what):
    for e in events:
        if e.id is not None:
            _, n = parse_event_id(e.id)
            expect(e.is_message, f"{what}: resumed stream sent a priming "
                   f"event with an id: {e!r}")
            expect(n > cursor_n, f"{what}: replayed {e.id}, at or before "
                   "the cursor")


def test_resume_delivers_exactly_the_events_after_the_cursor(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v)
        k, head, orig = _finished_stream(d, sid, 5)
        expect(head == 6, f"{v}: head {k}-{head}, expected {k}-6")
        cursors = [1, 3, 5, 6] + ([0] if v == "2025-11-25" else [])
        for c in cursors:
            cursor = f"{k}-{c}"
            g = d.get_sse(sid, cursor)
            expect(g.status == 200 and g.is_sse, f"{v}: resume {cursor} -> "
                   f"HTTP {g.status} {g.body[:200] if not g.is_sse else ''}")
            # a stream whose final response was delivered closes at once
            events = g.events_until_close(1 if c == head else 3)
            _no_priming(events, c, f"{v} resume {cursor}")
            got = message_events(events)
            ns = [parse_event_id(e.id)[1] for e in got]
            expect(ns == list(range(c + 1, head + 1)),
                   f"{v}: resume {cursor} delivered N={ns}, expected "
                   f"{list(range(c + 1, head + 1))}")
            for e in got:
                n = parse_event_id(e.id)[1]
                expect(e.json == orig[n], f"{v}: {e.id} replayed as "
                       f"{e.data!r}, first sent as {json.dumps(orig[n])}")
        d.assert_alive(sid, f"{v} after resumes")


def test_resume_follows_live_stream_then_closes(h):
    d = h.start()
    for v in (LATEST, "2025-03-26"):
        sid = d.initialize(v)
        id, r = d.call_open(sid, "stream", {"n": 15, "interval_ms": 60}, "p")
        first = []
        while len(first) < 3:
            ev, m = r.next_message(5)
            first.append(ev)
        r.close()
        cursor = first[-1].id
        c = parse_event_id(cursor)[1]
        g = d.get_sse(sid, cursor)
        expect(g.status == 200, f"{v}: resume {cursor} -> HTTP {g.status}")
        events = g.events_until_close(10)
        _no_priming(events, c, f"{v} resume {cursor}")
        k, last = check_ids(events, c + 1, parse_event_id(cursor)[0],
                            f"{v} resumed stream")
        msgs = [e.json for e in message_events(events)]
        expect(last == 16, f"{v}: resumed stream ends at {k}-{last}, "
               f"expected {k}-16")
        expect(is_response(msgs[-1], id) and
               result_text(msgs[-1]) == "done 15", f"{v}: {msgs[-1]!r}")


def test_resume_trimmed_is_410(h):
    d = h.start(stream_maxlen=5)
    for v in VERSIONS:
        sid = d.initialize(v)
        k, head, _ = _finished_stream(d, sid, 20)
        expect(head == 21, f"{v}: head {k}-{head}, expected {k}-21")
        cursor = f"{k}-1"
        data = _gone(d.get_sse(sid, cursor), "trimmed", cursor, v)
        expect(data.get("head") == f"{k}-21", f"{v}: error.data.head "
               f"{data.get('head')!r}, expected {k}-21")
        oldest = data.get("oldest")
        ok, on = parse_event_id(oldest)
        expect(ok == k and 1 < on <= 21 and 21 - on + 1 <= 5,
               f"{v}: error.data.oldest {oldest!r} with stream_maxlen 5 and "
               f"head {k}-21")
        d.assert_alive(sid, f"{v} after 410 trimmed")
        # the oldest retained id is itself a good cursor
        g = d.get_sse(sid, oldest)
        expect(g.status == 200, f"{v}: resume at oldest {oldest} -> HTTP "
               f"{g.status}")
        ns = [parse_event_id(e.id)[1]
              for e in message_events(g.events_until_close(3))]
        expect(ns == list(range(on + 1, 22)), f"{v}: resume at {oldest} "
               f"gave {ns}")


def test_resume_expired_is_410(h):
    d = h.start(stream_ttl=2)
    sid = d.initialize(LATEST)
    k, head, _ = _finished_stream(d, sid, 1)
    ended = time.monotonic()
    cursor = f"{k}-1"
    g = d.get_sse(sid, cursor)
    expect(g.status == 200, f"resume {cursor} right after the stream ended "
           f"(stream_ttl 2) -> HTTP {g.status} {g.body[:200]!r}")
    g.events_until_close(3)
    # bounded poll on the clock until the TTL has run out
    deadline = ended + tmo(2 + 6)
    while True:
        r = d.get_sse(sid, cursor)
        if r.status != 200:
            break
        r.close()
        expect(time.monotonic() < deadline, "finished stream still "
               "resumable 8s after it ended with stream_ttl 2")
        time.sleep(0.25)
    expect(time.monotonic() - ended >= 1.5,
           f"stream expired {time.monotonic() - ended:.1f}s after it "
           "ended, stream_ttl is 2")
    _gone(r, "expired", cursor, "stream_ttl 2")
    d.assert_alive(sid, "after 410 expired")


def test_resume_ahead_is_410_and_logged(h):
    d = h.start()
    sid = d.initialize(LATEST)
    k, head, _ = _finished_stream(d, sid, 2)
    expect(head == 3, f"head {k}-{head}")
    for n in (10, 4):
        cursor = f"{k}-{n}"
        data = _gone(d.get_sse(sid, cursor), "ahead", cursor, "beyond head")
        expect(data.get("head") == f"{k}-3", f"error.data.head "
               f"{data.get('head')!r}, expected {k}-3")
        ok, on = parse_event_id(data.get("oldest"))
        expect(ok == k and on <= 3, f"error.data.oldest {data.get('oldest')!r}"
               f" must name the oldest retained id of {k} (head {k}-3)")
        d.wait_log(lambda line: sid in line and cursor in line and
                   f"{k}-3" in line, 3,
                   f"resumability-violation log line naming session {sid}, "
                   f"cursor {cursor} and head {k}-3")
        d.assert_alive(sid, f"after 410 ahead {cursor}")


def test_resume_ahead_on_standalone_stream(h):
    d = h.start()
    sid = d.initialize(LATEST)
    g = d.get_sse(sid)
    ev = g.next_event(3)
    while ev.id is None:
        ev = g.next_event(3)
    g.close()
    k, n = parse_event_id(ev.id)
    cursor = f"{k}-{n + 7}"
    _gone(d.get_sse(sid, cursor), "ahead", cursor, "standalone beyond head")
    d.assert_alive(sid, "after 410 ahead on the standalone stream")


def test_resume_unknown_stream_is_410_without_leaks(h):
    d = h.start()
    a = d.initialize(LATEST)
    b = d.initialize(LATEST)
    kb, _, _ = _finished_stream(d, b, 2)
    ka, _, _ = _finished_stream(d, a, 2)
    gb = d.get_sse(b)              # B's standalone stream number
    ev = gb.next_event(3)
    while ev.id is None:
        ev = gb.next_event(3)
    gb.close()
    kbs = parse_event_id(ev.id)[0]
    bodies = []
    rk = 123456789012345
    while rk in (ka, kb, kbs):
        rk += 1
    for sess, cursor, what in ((a, f"{kb}-1", "A resumes B's stream"),
                               (b, f"{ka}-2", "B resumes A's stream"),
                               (a, f"{rk}-1", "A resumes a random stream"),
                               (a, f"{kbs}-0", "A resumes B's standalone"),
                               (a, f"{rk}-0", "A resumes a random stream")):
        r = d.get_sse(sess, cursor)
        data = _gone(r, "unknown-stream", cursor, what)
        expect("oldest" not in data and "head" not in data,
               f"{what}: unknown-stream reveals {data!r}")
        body = r.json
        body["error"]["data"].pop("last_event_id")
        bodies.append((what, json.dumps(body, sort_keys=True)))
    expect(bodies[0][1] == bodies[2][1], "another session's stream and a "
           f"random one are told apart: {bodies[0]} vs {bodies[2]}")
    d.assert_alive(a, "after unknown-stream")
    d.assert_alive(b, "after unknown-stream")
    g = d.get_sse(b, f"{kb}-1")
    expect(g.status == 200, f"B's own cursor {kb}-1 -> HTTP {g.status}")
    g.close()


def test_resume_malformed_cursor_is_400(h):
    d = h.start()
    sid = d.initialize(LATEST)
    k, _, _ = _finished_stream(d, sid, 1)
    for cursor in ("abc", "1-", "-1", "01-2", "1-02", f"{k}-01", f"0{k}-1",
                   "1--2", "1-2-3", "1_2", "0x1-2", "1-2a", "+1-2", "1-+2",
                   "1.0-2", "x" * 5000):
        r = d.get_sse(sid, cursor)
        expect(r.status == 400, f"Last-Event-ID {cursor[:40]!r} -> HTTP "
               f"{r.status}, expected 400")
        assert_rpc_error(r.json, id_null=False)
        d.assert_alive(sid, f"after Last-Event-ID {cursor[:40]!r}")


def test_resume_standalone_stream(h):
    d = h.start()
    for v in (LATEST, "2025-03-26"):
        sid = d.initialize(v)
        g = d.get_sse(sid)
        expect(g.status == 200, f"{v}: GET -> HTTP {g.status}")
        if v == LATEST:
            ev = g.next_event(3)
            while ev.id is None:
                ev = g.next_event(3)
        msg, _ = d.call(sid, "notify", {"n": 3})
        expect(result_text(msg) == "queued 3", f"{v}: {msg!r}")
        got = [g.next_message(5)[0] for _ in range(3)]
        g.cut()
        msg, _ = d.call(sid, "notify", {"n": 2})     # while detached
        cursor = got[1].id
        g = d.get_sse(sid, cursor)
        expect(g.status == 200, f"{v}: resume standalone {cursor} -> HTTP "
               f"{g.status}")
        rest = [g.next_message(5) for _ in range(3)]
        evs = [e for e, _ in rest]
        _no_priming(evs, parse_event_id(cursor)[1], f"{v} standalone")
        check_ids(got[:2] + evs, parse_event_id(got[0].id)[1],
                  what=f"{v} standalone across the resume")
        expect(evs[0].data == got[2].data, f"{v}: first resumed event "
               f"{evs[0]!r} is not the one after the cursor {got[2]!r}")
        datas = [m["params"]["data"] for _, m in rest]
        expect(all(is_log(m) for _, m in rest) and
               [(x["i"], x["n"]) for x in datas] == [(3, 3), (1, 2), (2, 2)],
               f"{v}: resumed standalone messages {datas!r}")
        g.close()


def test_repeated_disconnects_along_one_stream(h):
    d = h.start()
    for v in ("2025-11-25", "2025-06-18"):
        sid = d.initialize(v)
        id, r = d.call_open(sid, "stream", {"n": 40, "interval_ms": 10}, "rd")
        seen = []
        if v == "2025-11-25":       # first cut right after the priming event
            ev = r.next_event(3)
            while ev.id is None:
                ev = r.next_event(3)
            r.cut()
            cursor = ev.id
        else:
            seen.append(r.next_message(3)[0])
            r.cut()
            cursor = seen[-1].id
        for take in (1, 3, 7, 2, 5):
            g = d.get_sse(sid, cursor)
            expect(g.status == 200, f"{v}: resume {cursor} -> HTTP "
                   f"{g.status}")
            for _ in range(take):
                got = g.next_message(5)
                expect(got is not None, f"{v}: resumed stream ended early")
                seen.append(got[0])
            g.cut()
            cursor = seen[-1].id
        g = d.get_sse(sid, cursor)
        expect(g.status == 200, f"{v}: final resume {cursor} -> {g.status}")
        seen += message_events(g.events_until_close(10))
        k, last = check_ids(seen, 1, what=f"{v} stream across 6 cuts")
        expect(last == 41 and result_text(seen[-1].json) == "done 40",
               f"{v}: ends at {k}-{last}: {seen[-1].data!r}")


def test_paused_producer_resumes_on_reattach(h):
    # stream_window 10: with no view attached the producer pauses after 10
    # undelivered events; re-attaching must let it run to its end
    d = h.start(stream_window=10)
    sid = d.initialize(LATEST)
    id, r = d.call_open(sid, "stream", {"n": 60}, "w")
    first = [r.next_message(3)[0] for _ in range(2)]
    r.cut()
    time.sleep(0.3)                 # give the producer time to hit the window
    g = d.get_sse(sid, first[-1].id)
    expect(g.status == 200, f"resume -> HTTP {g.status}")
    rest = message_events(g.events_until_close(10))
    k, last = check_ids(first + rest, 1, what="paused stream")
    expect(last == 61 and result_text(rest[-1].json) == "done 60",
           f"paused producer: stream ends at {k}-{last}")


def test_resume_trimmed_on_standalone_stream(h):
    d = h.start(stream_maxlen=5)
    sid = d.initialize(LATEST)
    g = d.get_sse(sid)
    ev = g.next_event(3)
    while ev.id is None:
        ev = g.next_event(3)
    g.cut()
    k, n0 = parse_event_id(ev.id)
    msg, _ = d.call(sid, "notify", {"n": 20})    # nobody attached
    expect(result_text(msg) == "queued 20", f"notify: {msg!r}")
    cursor = f"{k}-{n0 + 1}"
    data = _gone(d.get_sse(sid, cursor), "trimmed", cursor, "standalone")
    expect(data.get("head") == f"{k}-{n0 + 20}", f"error.data.head "
           f"{data.get('head')!r}, expected {k}-{n0 + 20}")
    oldest = data.get("oldest")
    g = d.get_sse(sid, oldest)
    expect(g.status == 200, f"resume standalone at oldest {oldest} -> HTTP "
           f"{g.status}")
    on = parse_event_id(oldest)[1]
    got = [g.next_message(3)[0] for _ in range(n0 + 20 - on)]
    check_ids(got, on + 1, k, "standalone after trim")
    g.close()
    d.assert_alive(sid, "after 410 trimmed on the standalone stream")
