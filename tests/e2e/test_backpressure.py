"""Backpressure: block pauses the producer, close disconnects a slow
consumer with a terminal event (docs/protocol.md, Backpressure)."""

import json
import time

from mcpd_harness import (LATEST, SLOW, Timeout, assert_rpc_error,
                          check_ids, expect, is_log, is_progress,
                          is_response, message_events, parse_event_id,
                          result_text, rpc, tmo, tool_call)

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


# --------------------------------------------------------------------------
# Real slow readers (issue 5). A SlowConn has a tiny SO_RCVBUF, set before
# connect, and reads small chunks with pauses. On loopback the daemon's
# kernel send buffer still autotunes to megabytes, so a stream has to carry
# well over that (N * SIZE = 8 MB) before mcpd's own output buffer, the one
# sse_high_watermark bounds, fills at all.

WATERMARK = 16384
GRACE_MS = 50
SLOW_CHUNK = 4096       # bytes per read ...
SLOW_PAUSE = 0.002      # ... after this pause: at most ~2 MB/s
DEADLINE = 15           # seconds for one test's whole exchange


def _terminal_ok(ev, last_on_conn, label):
    """docs/protocol.md, Backpressure: no id field at all, retry:,
    data names the last id written to this connection."""
    expect(not any(name == "id" for name, _ in ev.fields),
           f"{label}: backpressure-disconnect carries an id field (it must "
           f"not move the client's cursor): {ev.fields!r}")
    expect(ev.retry is not None, f"{label}: backpressure-disconnect "
           f"without a numeric retry: field: {ev.fields!r}")
    try:
        data = json.loads(ev.data or "")
    except ValueError:
        raise AssertionError(f"{label}: backpressure-disconnect data is not "
                             f"JSON: {ev.data!r}") from None
    expect(data.get("reason") == "slow-consumer",
           f"{label}: backpressure-disconnect reason {data!r}")
    expect(data.get("last_event_id") == last_on_conn,
           f"{label}: backpressure-disconnect names last_event_id "
           f"{data.get('last_event_id')!r}; the last id written to this "
           f"connection was {last_on_conn!r}")
    return data


def _read_connection(r, deadline, cursor, done, label, before=0):
    """Reads one SSE response until mcpd ends it or done(count, last)
    holds (count: messages so far, `before` of them from earlier
    connections; last: the latest message event). Returns (the message
    events, the backpressure-disconnect event or None). `cursor` is the
    Last-Event-ID this connection resumed from: the last id written to it
    before anything arrived."""
    last_on_conn = cursor
    got = []
    term = None
    while True:
        remaining = deadline - time.monotonic()
        expect(remaining > 0, f"{label}: out of time after {len(got)} "
               "messages on this connection")
        ev = r.next_event(remaining / SLOW)
        if ev is None:
            break
        if term is not None:
            raise AssertionError(f"{label}: event after "
                                 f"backpressure-disconnect: "
                                 f"{repr(ev.fields)[:300]}")
        if ev.event == "backpressure-disconnect":
            _terminal_ok(ev, last_on_conn, label)
            term = ev
            continue
        if ev.id is not None:
            last_on_conn = ev.id
        if ev.is_message:
            got.append(ev)
            if done(before + len(got), ev):
                break
    return got, term


def _consume_across_disconnects(d, sid, first, done, label, drop_first=0,
                                deadline=None):
    """A client reading slowly: on every backpressure-disconnect it
    resumes with GET + Last-Event-ID from the id of the last message it
    processed itself (after the first disconnect it "crashed" before
    processing the last `drop_first` messages it had received). Returns
    (processed message events, number of disconnects)."""
    deadline = deadline or time.monotonic() + tmo(DEADLINE)
    processed = []
    r, cursor, disconnects = first, None, 0
    while True:
        got, term = _read_connection(
            r, deadline, cursor, done,
            f"{label}, connection {disconnects + 1}", len(processed))
        if term is not None and disconnects == 0 and drop_first:
            got = got[:max(0, len(got) - drop_first)]
        processed += got
        r.close()
        if processed and done(len(processed), processed[-1]):
            return processed, disconnects
        expect(term is not None, f"{label}: connection "
               f"{disconnects + 1} ended after {len(processed)} messages "
               f"without backpressure-disconnect and before the end")
        disconnects += 1
        expect(processed, f"{label}: disconnected before any message")
        cursor = processed[-1].id
        r = d.get_sse_slow(sid, cursor, chunk=SLOW_CHUNK, pause=SLOW_PAUSE)
        expect(r.status == 200 and r.is_sse, f"{label}: resume from "
               f"{cursor} after backpressure-disconnect -> HTTP {r.status} "
               f"{r.body[:300] if not r.is_sse else ''!r}")


def _log_indices(events):
    return [e.json["params"]["data"]["i"] for e in events
            if is_log(e.json)]


def _slow_conf(**policy):
    conf = dict(sse_high_watermark=WATERMARK, stream_maxlen=100000,
                slow_consumer_grace_ms=GRACE_MS)
    conf.update(policy)
    return conf


def test_slow_reader_standalone_close_exactly_once(h):
    d = h.start(**_slow_conf(backpressure_standalone="close"))
    sid = d.initialize(LATEST)
    g = d.get_sse_slow(sid, chunk=SLOW_CHUNK, pause=SLOW_PAUSE)
    expect(g.status == 200 and g.is_sse, f"GET -> HTTP {g.status}")
    prime = g.next_event(3)
    expect(prime.id is not None and not prime.is_message,
           f"standalone GET should prime with a cursor: {prime!r}")
    msg, _ = d.call(sid, "notify", {"n": N, "size": SIZE}, timeout=10)
    expect(result_text(msg) == f"queued {N}", f"notify: {msg!r}")
    got, disconnects = _consume_across_disconnects(
        d, sid, g, lambda count, ev: count >= N, "standalone, policy close",
        drop_first=3)
    expect(disconnects >= 1, f"a reader at ~2 MB/s behind {N * SIZE >> 20} "
           f"MB was never disconnected (watermark {WATERMARK}, grace "
           f"{GRACE_MS} ms)")
    k, n0 = parse_event_id(prime.id)
    check_ids(got, n0 + 1, k, "standalone across backpressure-disconnects")
    expect(_log_indices(got) == list(range(1, N + 1)),
           "notify messages lost, repeated or reordered across "
           f"{disconnects} backpressure-disconnects")
    m = d.healthz()["metrics"]
    expect(m["slow_consumers_closed"] >= disconnects,
           f"/healthz slow_consumers_closed {m['slow_consumers_closed']} < "
           f"the {disconnects} disconnects seen")
    expect(m["producers_paused"] == 0, f"policy close paused a producer: "
           f"{m!r}")
    d.assert_alive(sid, "after slow-consumer disconnects")


test_slow_reader_standalone_close_exactly_once.timeout = 20


def test_slow_reader_request_close_exactly_once(h):
    d = h.start(**_slow_conf(backpressure_request="close"))
    sid = d.initialize(LATEST)
    id = d.new_id()
    r = d.open_slow("POST", sid, tool_call("stream", {"n": N, "size": SIZE},
                                           id, "bp"),
                    chunk=SLOW_CHUNK, pause=SLOW_PAUSE)
    expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status}")

    def done(count, ev):
        return is_response(ev.json, id)

    got, disconnects = _consume_across_disconnects(
        d, sid, r, done, "request stream, policy close", drop_first=2)
    expect(disconnects >= 1, f"a reader at ~2 MB/s behind {N * SIZE >> 20} "
           f"MB was never disconnected (backpressure_request close)")
    check_ids(got, 1, what="request stream across backpressure-disconnects")
    msgs = [e.json for e in got]
    prog = [m["params"]["progress"] for m in msgs if is_progress(m)]
    expect(prog == list(range(1, N + 1)), "progress lost, repeated or "
           f"reordered across {disconnects} backpressure-disconnects")
    expect(len(msgs) == N + 1 and result_text(msgs[-1]) == f"done {N}",
           f"after {N} progress notifications expected only the result: "
           f"{[m.get('id') for m in msgs[N:]]!r}")
    m = d.healthz()["metrics"]
    expect(m["slow_consumers_closed"] >= disconnects and
           m["producers_paused"] == 0, f"/healthz metrics {m!r} after "
           f"{disconnects} disconnects under policy close")
    d.assert_alive(sid)


test_slow_reader_request_close_exactly_once.timeout = 20


def test_slow_reader_request_block_exactly_once(h):
    d = h.start(**_slow_conf(backpressure_request="block"))
    sid = d.initialize(LATEST)
    id = d.new_id()
    r = d.open_slow("POST", sid, tool_call("stream", {"n": N, "size": SIZE},
                                           id, "bp"),
                    chunk=SLOW_CHUNK, pause=SLOW_PAUSE)
    expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status}")
    events = r.events_until_close(DEADLINE)
    term = [e for e in events if e.event == "backpressure-disconnect"]
    expect(not term, f"policy block disconnected the slow reader: {term!r}")
    check_ids(events, 1, what="slow reader, policy block")
    msgs = [e.json for e in message_events(events)]
    prog = [m["params"]["progress"] for m in msgs if is_progress(m)]
    expect(prog == list(range(1, N + 1)), "progress lost under block")
    expect(len(msgs) == N + 1 and result_text(msgs[-1]) == f"done {N}",
           f"last message {msgs[-1]!r}"[:300])
    m = d.healthz()["metrics"]
    expect(m["producers_paused"] > 0, f"a ~2 MB/s reader behind "
           f"{N * SIZE >> 20} MB never paused the producer: {m!r}")
    expect(m["slow_consumers_closed"] == 0, f"policy block closed a "
           f"consumer: {m!r}")
    d.assert_alive(sid)


test_slow_reader_request_block_exactly_once.timeout = 20


def test_slow_reader_standalone_block_exactly_once(h):
    d = h.start(**_slow_conf(backpressure_standalone="block"))
    sid = d.initialize(LATEST)
    g = d.get_sse_slow(sid, chunk=SLOW_CHUNK, pause=SLOW_PAUSE)
    expect(g.status == 200 and g.is_sse, f"GET -> HTTP {g.status}")
    prime = g.next_event(3)
    expect(prime.id is not None, f"no priming cursor: {prime!r}")
    id, call = d.call_open(sid, "notify", {"n": N, "size": SIZE})
    expect(call.status == 200, f"notify -> HTTP {call.status}")
    # The reader has not read a byte of it yet: the producer must be held.
    d.wait_metric("producers_paused", lambda v: v > 0, 5,
                  "notify paused by a standalone reader that reads nothing")
    early = []
    try:
        while True:
            ev = call.next_event(0.3)
            if ev is None:
                break
            early.append(ev)
    except Timeout:
        pass
    expect(not any(e.is_message and is_response(e.json, id) for e in early),
           "notify answered 'queued' while its standalone stream's reader "
           "was paused with a full window (policy block)")
    deadline = time.monotonic() + tmo(DEADLINE)
    got, term = _read_connection(g, deadline, prime.id,
                                 lambda count, ev: count >= N,
                                 "standalone, policy block")
    expect(term is None, f"policy block disconnected the reader: {term!r}")
    k, n0 = parse_event_id(prime.id)
    check_ids(got, n0 + 1, k, "standalone, policy block")
    expect(_log_indices(got) == list(range(1, N + 1)),
           "notify messages lost or reordered under block")
    resp = call.rpc(id)
    expect(result_text(resp) == f"queued {N}", f"notify: {resp!r}")
    m = d.healthz()["metrics"]
    expect(m["slow_consumers_closed"] == 0, f"block closed: {m!r}")
    d.assert_alive(sid)


test_slow_reader_standalone_block_exactly_once.timeout = 20


def test_ping_answered_while_request_stream_blocked(h):
    d = h.start(backpressure_request="block", sse_high_watermark=WATERMARK,
                stream_maxlen=100000)
    sid = d.initialize(LATEST)
    id = d.new_id()
    r = d.open("POST", sid, tool_call("stream", {"n": N, "size": SIZE}, id,
                                      "bp"), rcvbuf=4096)
    expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status}")
    d.wait_metric("producers_paused", lambda v: v > 0, 5,
                  "the stream call paused by its reader that reads nothing")
    for i in range(3):
        t0 = time.monotonic()
        pid = d.new_id()
        p = d.post(sid, rpc("ping", None, pid), timeout=2)
        took = time.monotonic() - t0
        expect(p.status == 200 and p.rpc(pid).get("result") == {},
               f"ping while a request stream is blocked -> HTTP {p.status} "
               f"{p.body[:200]!r}")
        expect(took < tmo(0.5), f"ping took {took:.2f}s while a request "
               "stream of the same session was blocked")
    msg, _ = d.call(sid, "echo", {"text": "still here"}, timeout=2)
    expect(result_text(msg) == "still here", f"echo: {msg!r}")
    # the blocked stream is whole once its reader reads
    events = r.events_until_close(DEADLINE)
    check_ids(events, 1, what="blocked stream read after the ping")
    msgs = [e.json for e in message_events(events)]
    prog = [m["params"]["progress"] for m in msgs if is_progress(m)]
    expect(prog == list(range(1, N + 1)), "progress lost under block")
    expect(result_text(msgs[-1]) == f"done {N}", "no result")


test_ping_answered_while_request_stream_blocked.timeout = 20


def test_close_policy_client_away_too_long_gets_410_trimmed(h):
    maxlen = 1000
    n1 = maxlen             # 4 MB: all retained, beyond any socket buffer
    d = h.start(backpressure_standalone="close",
                sse_high_watermark=WATERMARK, stream_maxlen=maxlen,
                slow_consumer_grace_ms=GRACE_MS)
    sid = d.initialize(LATEST)
    g = d.get_sse_slow(sid, rcvbuf=4096, chunk=SLOW_CHUNK, pause=SLOW_PAUSE)
    prime = g.next_event(3)
    k, n0 = parse_event_id(prime.id)
    msg, _ = d.call(sid, "notify", {"n": n1, "size": SIZE}, timeout=10)
    expect(result_text(msg) == f"queued {n1}", f"notify: {msg!r}")
    # the reader stalls until mcpd gives up on it, then reads what it had
    d.wait_metric("slow_consumers_closed", lambda v: v >= 1, 5,
                  "a stalled standalone reader disconnected")
    deadline = time.monotonic() + tmo(DEADLINE)
    got, term = _read_connection(g, deadline, prime.id,
                                 lambda count, ev: False,
                                 "stalled reader")
    expect(term is not None, f"connection ended without "
           f"backpressure-disconnect after {len(got)} messages")
    expect(0 < len(got) < n1, f"{len(got)} of {n1} messages before the "
           "disconnect")
    check_ids(got, n0 + 1, k, "before the disconnect")
    cursor = got[-1].id
    # away too long: the stream moves on past retention
    msg, _ = d.call(sid, "notify", {"n": maxlen, "size": 16}, timeout=10)
    expect(result_text(msg) == f"queued {maxlen}", f"notify: {msg!r}")
    r = d.get_sse(sid, cursor)
    expect(r.status == 410, f"resume from {cursor} after {maxlen} newer "
           f"events (stream_maxlen {maxlen}) -> HTTP {r.status}, expected "
           f"410 trimmed")
    err = assert_rpc_error(r.json)
    data = err.get("data") or {}
    expect(data.get("reason") == "trimmed", f"410 reason {data!r}")
    expect(data.get("last_event_id") == cursor, f"410 last_event_id "
           f"{data!r}, sent {cursor}")
    head = n0 + n1 + maxlen
    expect(data.get("head") == f"{k}-{head}", f"410 head {data!r}, "
           f"expected {k}-{head}")
    oldest = data.get("oldest")
    expect(oldest is not None and parse_event_id(oldest)[0] == k and
           parse_event_id(oldest)[1] > parse_event_id(cursor)[1],
           f"410 oldest {oldest!r} is not past the cursor {cursor}")
    d.assert_alive(sid, "after 410 trimmed")
    # what is retained is still served exactly from the oldest retained id
    g2 = d.get_sse(sid, oldest)
    expect(g2.status == 200, f"resume from oldest {oldest} -> HTTP "
           f"{g2.status}")
    on = parse_event_id(oldest)[1]
    rest = []
    while on + len(rest) < head:
        ev, _ = g2.next_message(5)
        rest.append(ev)
    check_ids(rest, on + 1, k, "resumed from oldest")
    g2.close()


test_close_policy_client_away_too_long_gets_410_trimmed.timeout = 20


# Memory: a client that never reads and never comes back costs the daemon
# its watermark (plus what retention keeps), not the data sent to it.
# Under block the producer runs a window past what the client's side
# acknowledged (issue 22): the default window of 256 such events (1 MB)
# fits in the kernel's send buffer on loopback and never reaches mcpd's
# own output buffer, so these tests take a window of 600 (2.4 MB) to run
# into the watermark.

MEM_BOUND_KIB = 8 * 1024        # N * SIZE = 8 MB of data
MEM_WINDOW = 600


def _check_growth(h, d, label, before, after):
    grown = after - before
    if h.sanitized:
        return          # ASan's quarantine keeps freed memory resident
    expect(grown < MEM_BOUND_KIB, f"{label}: mcpd's RSS grew {grown} KiB "
           f"({before} -> {after} KiB) for {N * SIZE >> 20} MB sent to a "
           f"client that never reads; bound {MEM_BOUND_KIB} KiB")


def _warm_up(d, sid):
    msg, _ = d.call(sid, "stream", {"n": 50, "size": SIZE})
    expect(result_text(msg) == "done 50", f"warm-up: {msg!r}")


def _never_reader_request(d, sid):
    r = d.open("POST", sid, tool_call("stream", {"n": N, "size": SIZE},
                                      d.new_id(), "bp"), rcvbuf=4096)
    expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status}")
    return r


def _never_reader_get(d, sid):
    g = d.get_sse(sid, rcvbuf=4096)
    expect(g.status == 200 and g.is_sse, f"GET -> HTTP {g.status}")
    g.next_event(3)             # the priming cursor; then it reads nothing
    return g


def _bytes_queued_ok(d):
    # bytes_queued is refreshed by the once-a-second cron
    q = d.wait_metric("bytes_queued", lambda v: v > 0, 3,
                      "bytes queued to the never-reading client")
    bound = WATERMARK + 64 * (SIZE + 256)
    expect(q <= bound, f"/healthz bytes_queued {q}: over the watermark "
           f"{WATERMARK} plus one 64-entry batch ({bound})")


def test_never_reading_request_client_memory_bounded_block(h):
    d = h.start(backpressure_request="block", sse_high_watermark=WATERMARK,
                stream_maxlen=100000, stream_window=MEM_WINDOW)
    sid = d.initialize(LATEST)
    _warm_up(d, sid)
    base = d.metric("events_committed")
    before = d.rss_kib()
    _never_reader_request(d, sid)
    d.wait_metric("producers_paused", lambda v: v > 0, 5,
                  "the stream call paused by a reader that reads nothing")
    _bytes_queued_ok(d)         # (a cron pass later: steady state)
    _check_growth(h, d, "request stream, block", before, d.rss_kib())
    m = d.healthz()["metrics"]
    expect(m["events_committed"] - base < N // 2, f"a paused producer kept "
           f"committing: {m!r}")


test_never_reading_request_client_memory_bounded_block.timeout = 20


def test_never_reading_standalone_client_memory_bounded_block(h):
    d = h.start(backpressure_standalone="block",
                sse_high_watermark=WATERMARK, stream_maxlen=100000,
                stream_window=MEM_WINDOW)
    sid = d.initialize(LATEST)
    _warm_up(d, sid)
    _never_reader_get(d, sid)
    base = d.metric("events_committed")
    before = d.rss_kib()
    id, call = d.call_open(sid, "notify", {"n": N, "size": SIZE})
    expect(call.status == 200, f"notify -> HTTP {call.status}")
    d.wait_metric("producers_paused", lambda v: v > 0, 5,
                  "notify paused by a standalone reader that reads nothing")
    _bytes_queued_ok(d)         # (a cron pass later: steady state)
    _check_growth(h, d, "standalone stream, block", before, d.rss_kib())
    m = d.healthz()["metrics"]
    expect(m["events_committed"] - base < N // 2, f"a paused producer kept "
           f"committing: {m!r}")


test_never_reading_standalone_client_memory_bounded_block.timeout = 20


CLOSE_MAXLEN = 100      # retention: 100 * 4 KiB per stream


def test_never_reading_request_client_memory_bounded_close(h):
    d = h.start(backpressure_request="close", sse_high_watermark=WATERMARK,
                stream_maxlen=CLOSE_MAXLEN, slow_consumer_grace_ms=GRACE_MS)
    sid = d.initialize(LATEST)
    _warm_up(d, sid)
    base = d.metric("events_committed")
    before = d.rss_kib()
    _never_reader_request(d, sid)
    # the producer never waits under close: the call runs to its end
    d.wait_metric("events_committed", lambda v: v >= base + N + 1, 10,
                  "the stream call ran to its end")
    _check_growth(h, d, "request stream, close", before, d.rss_kib())
    d.wait_metric("slow_consumers_closed", lambda v: v >= 1, 3,
                      "the never-reading request reader disconnected as a "
                      "slow consumer")
    expect(d.metric("producers_paused") == 0, "close paused a producer")


test_never_reading_request_client_memory_bounded_close.timeout = 20


def test_never_reading_standalone_client_memory_bounded_close(h):
    d = h.start(backpressure_standalone="close",
                sse_high_watermark=WATERMARK, stream_maxlen=CLOSE_MAXLEN,
                slow_consumer_grace_ms=GRACE_MS)
    sid = d.initialize(LATEST)
    _warm_up(d, sid)
    _never_reader_get(d, sid)
    before = d.rss_kib()
    msg, _ = d.call(sid, "notify", {"n": N, "size": SIZE}, timeout=10)
    expect(result_text(msg) == f"queued {N}", f"notify: {msg!r}")
    _check_growth(h, d, "standalone stream, close", before, d.rss_kib())
    d.wait_metric("slow_consumers_closed", lambda v: v >= 1, 3,
                  "the never-reading standalone reader disconnected as a "
                  "slow consumer")
    expect(d.metric("producers_paused") == 0, "close paused a producer")


test_never_reading_standalone_client_memory_bounded_close.timeout = 20


def test_prompt_reader_is_not_cut_under_close(h):
    """A reader that reads at once, with ordinary buffers, is no slow
    consumer: under close it gets every message of a notify burst that
    fits its socket buffers twice over (5000 x ~200 B), with the default
    watermark and retention."""
    d = h.start(backpressure_standalone="close")
    sid = d.initialize(LATEST)
    g = d.get_sse(sid)
    expect(g.status == 200 and g.is_sse, f"GET -> HTTP {g.status}")
    prime = g.next_event(3)
    n = 5000
    msg, _ = d.call(sid, "notify", {"n": n, "size": 100}, timeout=10)
    expect(result_text(msg) == f"queued {n}", f"notify: {msg!r}")
    deadline = time.monotonic() + tmo(10)
    got, term = _read_connection(g, deadline, prime.id,
                                 lambda count, ev: count >= n,
                                 "prompt standalone reader")
    m = d.healthz()["metrics"]
    expect(term is None and len(got) == n, f"a reader that reads at once "
           f"got {len(got)} of {n} messages, then the stream "
           f"{'sent backpressure-disconnect' if term else 'ended'}; "
           f"/healthz metrics {m!r}")
    k, n0 = parse_event_id(prime.id)
    check_ids(got, n0 + 1, k, "prompt standalone reader")


# --------------------------------------------------------------------------
# Block never lets retention trim what the client has not received (issue
# 10, invariant 5): whatever the producer, however many of them share the
# stream, every append waits for room under stream_window <= stream_maxlen.

SMALL_MAXLEN = 256


def _no_disconnect(d, events, label):
    for e in events:
        if e.event == "backpressure-disconnect":
            log = "\n".join(line for line in d.stderr_text().splitlines()
                            if "retention" in line or "slow" in line)
            raise AssertionError(
                f"{label}: policy block disconnected its reader: "
                f"{e.data!r}; log:\n{log}")


def test_block_exec_lines_to_a_slow_reader_small_retention(h):
    # An exec tool prints n lines of 4 KB (far beyond the socket buffers)
    # to a client reading through a 4 KB receive window; retention is
    # only stream_maxlen 256. The program's lines are pipelined (several
    # in flight) and each must still wait for room.
    n = 1500
    d = h.start(["tool lines {", "    param n integer required",
                 '    exec /bin/sh -c "exec seq -f %04095.0f 1 $0" {n}',
                 "    timeout 60", "}"],
                backpressure_request="block", stream_maxlen=SMALL_MAXLEN)
    sid = d.initialize(LATEST)
    id = d.new_id()
    r = d.open_slow("POST", sid, tool_call("lines", {"n": n}, id, "ln"),
                    chunk=SLOW_CHUNK, pause=SLOW_PAUSE)
    expect(r.status == 200 and r.is_sse, f"lines -> HTTP {r.status}")
    events = r.events_until_close(30)
    _no_disconnect(d, events, "exec lines, stream_maxlen 256")
    check_ids(events, 1, what="exec lines to a slow reader")
    msgs = [e.json for e in message_events(events)]
    prog = [m["params"] for m in msgs if is_progress(m)]
    expect([p["progress"] for p in prog] == list(range(1, n + 1)),
           f"{len(prog)} of {n} lines arrived, in order, under block")
    expect(all(p["message"] == f"{i:04095d}"
               for i, p in enumerate(prog, 1)), "a line changed on its way")
    expect(is_response(msgs[-1], id) and "result" in msgs[-1],
           f"the call ended with {json.dumps(msgs[-1])[:300]}")
    expect(d.metric("producers_paused") > 0, "the program was never paused")
    d.assert_alive(sid)


test_block_exec_lines_to_a_slow_reader_small_retention.timeout = 60


def test_block_batch_of_more_calls_than_maxlen(h):
    # 2025-03-26: one batch of more streaming calls than stream_maxlen on
    # one request stream. Each call's first message must wait for room
    # like every other: the client, reading slowly, gets the whole stream.
    maxlen = 8
    calls = 40
    d = h.start(backpressure_request="block", stream_maxlen=maxlen,
                sse_high_watermark=WATERMARK)
    sid = d.initialize("2025-03-26")
    ids = [d.new_id() for _ in range(calls)]
    batch = [tool_call("stream", {"n": 3, "size": SIZE}, i, f"b{i}")
             for i in ids]
    r = d.open_slow("POST", sid, batch, chunk=SLOW_CHUNK, pause=SLOW_PAUSE)
    expect(r.status == 200 and r.is_sse, f"batch -> HTTP {r.status}")
    events = r.events_until_close(DEADLINE)
    _no_disconnect(d, events, f"batch of {calls} calls, stream_maxlen "
                   f"{maxlen}")
    check_ids(events, 1, what="batch stream")
    msgs = [e.json for e in message_events(events)]
    done = sorted(m["id"] for m in msgs if is_response(m))
    expect(done == sorted(ids), f"responses for {done}, expected {ids}")
    for i in ids:
        prog = [m["params"]["progress"] for m in msgs if is_progress(m) and
                m["params"]["progressToken"] == f"b{i}"]
        expect(prog == [1, 2, 3], f"call {i}: progress {prog}")
    expect(len(msgs) == calls * 4, f"{len(msgs)} messages, expected "
           f"{calls * 4}")
    d.assert_alive(sid)


test_block_batch_of_more_calls_than_maxlen.timeout = 30


# --------------------------------------------------------------------------
# Written is not received (issue 22, invariant 5). A reader with a 4 KB
# receive window stops reading: what mcpd wrote for it sits unacknowledged
# in mcpd's output buffer and kernel send queue. The reader takes three
# more messages and its connection is cut (RST): the rest of what was
# written is lost, and the client resumes from the last message it
# processed. The producer may have run only a window (half of retention)
# past what the client's side acknowledged, so every message after the
# cursor is still retained: 200, not 410 "trimmed". Counting what was
# written, the producer ran a window past the output buffer and the send
# queue besides, and their messages were trimmed.

def test_cut_with_unacknowledged_events_resumes(h):
    maxlen, n, size = 32, 200, 2000
    d = h.start(backpressure_request="block", stream_maxlen=maxlen,
                sse_high_watermark=WATERMARK)
    sid = d.initialize(LATEST)
    id = d.new_id()
    r = d.open("POST", sid, tool_call("stream", {"n": n, "size": size}, id,
                                      "cut"), rcvbuf=4096)
    expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status}")
    d.wait_metric("producers_paused", lambda v: v > 0, 5,
                  "the stream call paused by a reader that reads nothing")
    got = r.next_messages(3, what="the stream before the cut")
    r.cut()
    cursor = got[-1].id
    g = d.get_sse(sid, cursor)
    expect(g.status == 200, f"resume from {cursor} after a cut with "
           f"unacknowledged events (stream_maxlen {maxlen}) -> HTTP "
           f"{g.status} {g.body[:300] if not g.is_sse else ''!r}")
    rest = message_events(g.events_until_close(DEADLINE))
    check_ids(got + rest, 1, what="stream resumed after the cut")
    msgs = [e.json for e in got + rest]
    prog = [m["params"]["progress"] for m in msgs if is_progress(m)]
    expect(prog == list(range(1, n + 1)), f"progress across the cut: "
           f"{len(prog)} of {n}, in order: {prog == sorted(set(prog))}")
    expect(result_text(msgs[-1]) == f"done {n}", f"{msgs[-1]!r}"[:300])
    d.assert_alive(sid)


test_cut_with_unacknowledged_events_resumes.timeout = 20
