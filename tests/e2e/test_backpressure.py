"""Backpressure: block pauses the producer, close disconnects a slow
consumer with a terminal event (DESIGN.md, Slow-consumer disconnect)."""

import json
import time

from mcpd_harness import (LATEST, check_ids, expect, is_log, is_progress,
                          message_events, parse_event_id, result_text, tmo,
                          tool_call)

N = 2000
SIZE = 4096         # N * SIZE ~ 8 MB: far beyond socket buffers


def _grace_line(h):
    """A short slow-consumer grace if the conf knows the directive."""
    for line in ("slow_consumer_grace_ms 300",):
        if h.conf_accepts(line):
            return [line]
    return []


def test_slow_standalone_consumer_is_disconnected(h):
    extra = _grace_line(h)
    d = h.start(extra, backpressure_standalone="close",
                sse_high_watermark=65536, stream_maxlen=100000)
    sid = d.initialize(LATEST)
    g = d.get_sse(sid, rcvbuf=4096)
    expect(g.status == 200, f"GET -> HTTP {g.status}")
    prime = g.next_event(3)
    while prime.id is None:
        prime = g.next_event(3)
    msg, _ = d.call(sid, "notify", {"n": N, "size": SIZE}, timeout=20)
    expect(result_text(msg) == f"queued {N}", f"notify: {msg!r}")
    # stall: read nothing until the server has had time to give up
    time.sleep(1.5 if extra else 4)
    events = g.events_until_close(20)
    ends = [e for e in events if e.event == "backpressure-disconnect"]
    expect(ends, f"slow standalone consumer (policy close, watermark 64k, "
           f"{N * SIZE >> 20} MB queued) was never sent a "
           f"backpressure-disconnect event; got {len(events)} events, the "
           f"last {events[-1:]!r}")
    term = ends[0]
    expect(term is events[-1] or not any(e.is_message for e in
                                         events[events.index(term) + 1:]),
           "messages after backpressure-disconnect")
    expect(term.id is None, f"backpressure-disconnect has an id: {term!r}")
    expect(term.retry is not None, f"backpressure-disconnect without retry: "
           f"{term!r}")
    data = json.loads(term.data)
    expect(data.get("reason") == "slow-consumer", f"reason: {data!r}")
    before = [e for e in events[:events.index(term)] if e.id is not None]
    last = before[-1].id if before else prime.id
    expect(data.get("last_event_id") == last, f"terminal event names "
           f"{data.get('last_event_id')!r}, the last id written was {last!r}")
    got = message_events(events[:events.index(term)])
    expect(len(got) < N, "every message arrived: nothing was slow")
    # resume from the last processed id: nothing lost
    g2 = d.get_sse(sid, last)
    expect(g2.status == 200, f"resume {last} after the disconnect -> HTTP "
           f"{g2.status} {g2.body[:200] if not g2.is_sse else ''}")
    rest = []
    while len(got) + len(rest) < N:
        ev, m = g2.next_message(10)
        rest.append(ev)
    k0, n0 = parse_event_id(prime.id)
    check_ids(got + rest, n0 + 1, k0, "standalone across the disconnect")
    idx = [e.json["params"]["data"]["i"] for e in got + rest
           if is_log(e.json)]
    expect(idx == list(range(1, N + 1)), "notify messages lost or "
           "reordered across the slow-consumer disconnect")
    g2.close()


test_slow_standalone_consumer_is_disconnected.timeout = 60


def test_slow_request_consumer_blocks_producer(h):
    d = h.start(backpressure_request="block", sse_high_watermark=65536,
                stream_maxlen=100000)
    sid = d.initialize(LATEST)
    id = d.new_id()
    r = d.open("POST", sid, tool_call("stream", {"n": N, "size": SIZE}, id,
                                      "bp"), rcvbuf=4096)
    expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status}")
    time.sleep(1.5)                 # stalled consumer
    t0 = time.monotonic()
    events = r.events_until_close(30)
    expect(not any(e.event == "backpressure-disconnect" for e in events),
           "request stream with policy block was disconnected")
    check_ids(events, 1, what="blocked request stream")
    msgs = [e.json for e in message_events(events)]
    prog = [m["params"]["progress"] for m in msgs if is_progress(m)]
    expect(prog == list(range(1, N + 1)), "progress lost under block")
    expect(result_text(msgs[-1]) == f"done {N}", f"{msgs[-1]!r}")
    expect(time.monotonic() - t0 < tmo(30), "slow drain")
    d.assert_alive(sid)


test_slow_request_consumer_blocks_producer.timeout = 60
