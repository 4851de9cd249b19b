"""SSE framing: priming events, event ids, headers, stream end."""

import os

from mcpd_harness import (LATEST, VERSIONS, check_ids, expect, is_log,
                          is_response, message_events, parse_event_id,
                          result_text)


def _priming_checks(events, what):
    """events start with the priming event K-0 (empty data) and a retry:
    field comes before the first message. Returns K."""
    with_id = [e for e in events if e.id is not None]
    expect(with_id, f"{what}: no event with an id at all: {events!r}")
    prime = with_id[0]
    k, n = parse_event_id(prime.id)
    expect(n == 0, f"{what}: first id is {prime.id}, expected the priming "
           f"id {k}-0")
    expect(prime.data == "", f"{what}: priming event must have an empty "
           f"data field, got {prime!r}")
    before = events[:events.index(prime) + 1]
    expect(not any(e.is_message for e in before),
           f"{what}: a message came before the priming event: {events!r}")
    first_msg = next((i for i, e in enumerate(events) if e.is_message),
                     len(events))
    expect(any(e.retry is not None for e in events[:first_msg]),
           f"{what}: no retry: field with the priming event: "
           f"{events[:first_msg]!r}")
    return k


def test_post_stream_priming_event_on_2025_11_25(h):
    d = h.start()
    sid = d.initialize("2025-11-25")
    id, r = d.call_open(sid, "stream", {"n": 3}, "p")
    events = r.events_until_close()
    k = _priming_checks(events, "2025-11-25 POST stream")
    kk, last = check_ids(events, 1, stream=k, what="2025-11-25 POST stream")
    expect(last == 4, f"ids end at {kk}-{last}, expected {k}-4 "
           "(3 progress + the result)")


def test_standalone_priming_on_2025_11_25(h):
    d = h.start()
    sid = d.initialize("2025-11-25")
    g = d.get_sse(sid)
    expect(g.status == 200 and g.is_sse, f"GET -> HTTP {g.status}")
    events = [g.next_event(3)]
    while events[-1].id is None:
        events.append(g.next_event(3))
    _priming_checks(events, "2025-11-25 standalone GET")
    g.close()


def test_no_priming_before_2025_11_25(h):
    d = h.start()
    for v in ("2025-03-26", "2025-06-18"):
        sid = d.initialize(v)
        id, r = d.call_open(sid, "stream", {"n": 3}, "p")
        events = r.events_until_close()
        for e in events:
            if e.id is not None:
                _, n = parse_event_id(e.id)
                expect(n != 0, f"{v}: priming id {e.id} sent to a pre-"
                       "2025-11-25 client")
                expect(e.is_message, f"{v}: event with id and no data "
                       f"(priming) sent to a pre-2025-11-25 client: {e!r}")
        k, last = check_ids(events, 1, what=f"{v} POST stream")
        expect(last == 4, f"{v}: ids end at {k}-{last}, expected {k}-4")


def test_ids_canonical_consecutive_one_k(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v)
        id, r = d.call_open(sid, "stream", {"n": 30}, "p")
        events = r.events_until_close()
        k, last = check_ids(events, 1, what=f"{v} n=30 stream")
        expect(last == 31, f"{v}: last id {k}-{last}, expected {k}-31")
        for e in message_events(events):
            expect(e.id == f"{k}-{parse_event_id(e.id)[1]}",
                   f"{v}: id {e.id!r} is not canonical")
            m = e.json
            expect(isinstance(m, dict) and m.get("jsonrpc") == "2.0",
                   f"{v}: event data is not a JSON-RPC message: {e.data!r}")


def test_stream_numbers_differ_across_streams(h):
    d = h.start()
    ks = {}
    for who in ("a", "b"):
        sid = d.initialize(LATEST)
        for i in range(3):
            id, r = d.call_open(sid, "echo", {"text": "x"})
            events = r.events_until_close()
            k = parse_event_id(message_events(events)[0].id)[0]
            expect(k not in ks, f"stream number K={k} of session {who} "
                   f"call {i} already used by {ks.get(k)}")
            ks[k] = f"session {who} call {i}"
        g = d.get_sse(sid)
        ev = g.next_event(3)
        while ev.id is None:
            ev = g.next_event(3)
        k = parse_event_id(ev.id)[0]
        expect(k not in ks, f"standalone stream of session {who} has K={k} "
               f"already used by {ks.get(k)}")
        ks[k] = f"standalone {who}"
        g.close()


def _sse_headers(r, what):
    expect(r.status == 200 and r.is_sse, f"{what}: HTTP {r.status} "
           f"{r.header('Content-Type')!r}")
    cc = (r.header("Cache-Control") or "").lower()
    expect("no-cache" in cc, f"{what}: Cache-Control {cc!r}, expected "
           "no-cache")
    xab = (r.header("X-Accel-Buffering") or "").lower()
    expect(xab == "no", f"{what}: X-Accel-Buffering {xab!r}, expected 'no'")


def test_sse_response_headers(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v)
        id, r = d.call_open(sid, "stream", {"n": 2}, "p")
        _sse_headers(r, f"{v} POST tools/call")
        events = r.events_until_close()
        g = d.get_sse(sid)
        _sse_headers(g, f"{v} GET standalone")
        g.close()
        first = message_events(events)[0].id
        g = d.get_sse(sid, first)
        _sse_headers(g, f"{v} GET resume {first}")
        g.close()


def test_post_stream_closes_after_final_response(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v)
        id, r = d.call_open(sid, "stream", {"n": 3, "interval_ms": 20}, None)
        while True:
            got = r.next_message(5)
            expect(got is not None, f"{v}: stream closed before the response")
            ev, m = got
            if is_response(m, id):
                break
            expect(is_log(m), f"{v}: unexpected message {m!r}")
        expect(result_text(m) == "done 3", f"{v}: {m!r}")
        rest = r.events_until_close(2)
        expect(not any(e.is_message for e in rest),
               f"{v}: messages after the final response: {rest!r}")


def test_standalone_get_primes_with_current_last_id(h):
    d = h.start()
    for v in ("2025-11-25", "2025-03-26"):
        sid = d.initialize(v)
        g = d.get_sse(sid)
        expect(g.status == 200, f"{v}: GET -> HTTP {g.status}")
        msg, _ = d.call(sid, "notify", {"n": 3})
        got = [g.next_message(5)[0] for _ in range(3)]
        k, last = check_ids(got, parse_event_id(got[0].id)[1],
                            what=f"{v} standalone")
        g.close()
        # a fresh GET (no Last-Event-ID) starts at the head
        g = d.get_sse(sid)
        expect(g.status == 200, f"{v}: second GET -> HTTP {g.status}")
        if v == "2025-11-25":
            ev = g.next_event(3)
            while ev.id is None:
                ev = g.next_event(3)
            expect(ev.id == f"{k}-{last}" and ev.data == "",
                   f"{v}: GET on a standalone stream with entries must prime "
                   f"with its current last id {k}-{last} and empty data, got "
                   f"{ev!r}")
        d.call(sid, "notify", {"n": 1})
        ev, m = g.next_message(5)
        expect(ev.id == f"{k}-{last + 1}" and m["params"]["data"]["i"] == 1,
               f"{v}: after the head {k}-{last} the next standalone event "
               f"must be {k}-{last + 1} (the new one), got {ev!r}")
        g.close()


def test_stream_numbers_not_reused_after_restart(h):
    # invariant 2: K is never reused, not after a restart either
    ks = {}
    for run in (1, 2):
        d = h.start()
        sid = d.initialize(LATEST)
        for i in range(3):
            _, r = d.call_open(sid, "echo", {"text": "x"})
            k = parse_event_id(message_events(r.events_until_close())[0].id)[0]
            expect(k not in ks, f"run {run}: K={k} reused (first issued in "
                   f"{ks.get(k)})")
            ks[k] = f"run {run} call {i}"
        g = d.get_sse(sid)
        ev = g.next_event(3)
        while ev.id is None:
            ev = g.next_event(3)
        k = parse_event_id(ev.id)[0]
        expect(k not in ks, f"run {run}: standalone K={k} reused (first "
               f"issued in {ks.get(k)})")
        ks[k] = f"run {run} standalone"
        g.close()
        problems = d.stop()
        expect(not problems, f"run {run}: {problems}")
        old = sid
    d = h.start()
    r = d.ping(old, {"MCP-Protocol-Version": LATEST})
    # The memory log dies with its process; Redis keeps sessions across
    # restarts (docs/protocol.md, Sessions: they live in the event log).
    want = 200 if os.environ.get("MCPD_TEST_REDIS_URL") else 404
    expect(r.status == want, f"a session of a previous instance -> "
           f"HTTP {r.status}, expected {want}")
