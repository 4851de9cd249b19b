"""End-to-end tests of the redis event log's outage grace
(`eventlog_outage_grace`, docs/protocol.md "Redis layout", Connections and
failures): Redis stalls (CLIENT PAUSE, DEBUG SLEEP) or restarts with its
data (AOF) while thirty clients have calls streaming. Within the grace
every call completes: its client sees a pause, then the rest of its call,
ids contiguous with no duplicate and nothing lost, in the response and in
Redis. Past the grace the calls end with the documented error ("the event
log was unavailable") and new requests are answered 503 at once.

Every test starts its own redis-server (`with private_redis(h) as rs:`) and
runs in every mode; it skips only when no redis-server binary is installed.
"""

import signal
import threading
import time

from mcpd_harness import (LATEST, Conn, assert_rpc_error, check_ids,
                          expect, is_progress, is_response, message_events,
                          parse_event_id, private_redis, redis_command,
                          result_text, tmo)

CLIENTS = 30
N = 40                  # progress messages per call
INTERVAL_MS = 150       # so a call runs about 6 s, across the fault


class _Call:
    """One client's streaming call: its session, request id, open reply,
    and every event it has read."""

    def __init__(self, d, i, n, interval_ms):
        self.sid = d.initialize(LATEST)
        self.token = f"c{i}"
        self.id, self.r = d.call_open(self.sid, "stream",
                                      {"n": n, "interval_ms": interval_ms},
                                      self.token)
        expect(self.r.status == 200 and self.r.is_sse,
               f"client {i}: stream -> HTTP {self.r.status}")
        self.events = []
        self.failure = None

    def read_some(self, count):
        self.events += self.r.next_messages(count, 10, f"{self.token}")

    def read_to_end(self, timeout):
        try:
            self.events += self.r.events_until_close(timeout)
        except BaseException as e:          # reported by the main thread
            self.failure = e


def _start_calls(d, count, n=N, interval_ms=INTERVAL_MS):
    """count clients, each with a call streaming (two progress messages
    read already)."""
    calls = [_Call(d, i, n, interval_ms) for i in range(count)]
    for c in calls:
        c.read_some(2)
    return calls


def _read_all(calls, timeout):
    """Reads every call's response to its end, all at once (threads)."""
    threads = [threading.Thread(target=c.read_to_end, args=(timeout,))
               for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(tmo(timeout) + 10)
    for c in calls:
        if c.failure is not None:
            raise c.failure


def _stream_entries(url, sid, k):
    """XRANGE of stream K of sid: [(N, data)] in the log's order."""
    out = []
    for eid, fields in redis_command(url, "XRANGE", f"mcpd:{{{sid}}}:s:{k}",
                                     "-", "+"):
        ek, en = parse_event_id(eid)
        expect(ek == k, f"stream key of {k} holds id {eid}")
        f = dict(zip(fields[::2], fields[1::2]))
        out.append((en, f.get("d")))
    return out


def _check_complete(rs, c, n, what):
    """The call completed as if nothing happened: progress 1..n then its
    result, ids K-1..K-(n+1) with no hole or repeat, and Redis holds
    exactly those entries (each once, the data the client got)."""
    msgs = message_events(c.events)
    k, head = check_ids(msgs, 1, what=f"{what}: {c.token}")
    expect(head == n + 1, f"{what}: {c.token} ended at {k}-{head}, "
           f"expected {k}-{n + 1}: {msgs[-1].data[:200]!r}")
    last = msgs[-1].json
    expect(is_response(last, c.id) and "result" in last and
           result_text(last) == f"done {n}",
           f"{what}: {c.token}'s call ended with {last!r}, expected its "
           f"result \"done {n}\"")
    for e in msgs[:-1]:
        m = e.json
        expect(is_progress(m) and m["params"].get("progressToken") ==
               c.token and m["params"].get("progress") ==
               parse_event_id(e.id)[1],
               f"{what}: {c.token}: {e.id} carries {e.data[:200]!r}")
    log = _stream_entries(rs.url, c.sid, k)
    expect([en for en, _ in log] == list(range(n + 2)),
           f"{what}: {c.token}: stream {k} in Redis holds entries "
           f"{[en for en, _ in log]}, expected 0..{n + 1} once each")
    got = {parse_event_id(e.id)[1]: e.data for e in msgs}
    for en, data in log[1:]:
        expect(got.get(en) == data, f"{what}: {c.token}: {k}-{en} is "
               f"{data[:100]!r} in Redis, the client got "
               f"{got.get(en, '')[:100]!r}")


def _expect_no_failure_logged(d, what):
    bad = [line for line in d.stderr_text().splitlines()
           if "not committed" in line or "resumability violation" in line
           or "append-failed" in line or "create failed" in line]
    expect(not bad, f"{what}: mcpd logged failed commits: {bad[:3]!r}")


def _outage_under_load(h, rs, fault, what, during=None):
    """Thirty clients' calls stream when `fault(rs)` happens; every call
    completes. `during(d)`, if given, runs right after the fault starts
    (new work meanwhile) and returns a check to run at the end."""
    d = h.start(eventlog=rs.url)
    calls = _start_calls(d, CLIENTS)
    fault(rs)
    check = during(d) if during is not None else None
    _read_all(calls, 60)
    for c in calls:
        _check_complete(rs, c, N, what)
    if check is not None:
        check()
    expect(d.alive(), f"mcpd died during {what}")
    _expect_no_failure_logged(d, what)
    d.assert_alive(calls[0].sid, f"after {what}")
    return d


def _new_call_meanwhile(d):
    """A new client initializes and calls echo while the log is paused: it
    waits, then is served (a pause, not a 503)."""
    out = {}

    def run():
        try:
            r = d.initialize_reply(LATEST)
            out["status"] = r.status
            if r.status == 200:
                sid = r.session_id
                d.versions[sid] = LATEST
                msg, _ = d.call(sid, "echo", {"text": "meanwhile"},
                                timeout=30)
                out["echo"] = result_text(msg)
            else:
                out["body"] = r.body[:200]
        except BaseException as e:
            out["failure"] = e

    t = threading.Thread(target=run)
    t.start()

    def check():
        t.join(tmo(30))
        if "failure" in out:
            raise out["failure"]
        expect(out.get("status") == 200, f"initialize during the outage "
               f"-> HTTP {out.get('status')} {out.get('body')!r}, expected "
               f"200 once Redis answered")
        expect(out.get("echo") == "meanwhile", f"echo during the outage "
               f"-> {out.get('echo')!r}")
    return check


def test_redis_outage_client_pause_under_load_every_call_completes(h):
    with private_redis(h) as rs:
        _outage_under_load(h, rs,
                           lambda rs: rs.cmd("CLIENT", "PAUSE", "3000"),
                           "CLIENT PAUSE 3000", _new_call_meanwhile)


test_redis_outage_client_pause_under_load_every_call_completes.timeout = 120


def test_redis_outage_debug_sleep_under_load_every_call_completes(h):
    sleepers = []

    def sleep(rs):
        # DEBUG SLEEP answers when it is over: send it, read never.
        conn = Conn("127.0.0.1", rs.port, tmo(10))
        conn.send(b"*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$1\r\n4\r\n")
        sleepers.append(conn)

    with private_redis(h, "--enable-debug-command", "yes") as rs:
        try:
            _outage_under_load(h, rs, sleep, "DEBUG SLEEP 4")
        finally:
            for c in sleepers:
                c.close()


test_redis_outage_debug_sleep_under_load_every_call_completes.timeout = 120


def test_redis_outage_restart_with_aof_under_load_every_call_completes(h):
    # appendonly yes, appendfsync always: what Redis executed is on disk
    # when it stops, so an append whose answer the restart cut off is
    # found there by its retry (the same id, not a second entry), and one
    # Redis never executed is committed by it.
    def restart(rs):
        rs.shutdown()
        rs.start()

    with private_redis(h, aof=True) as rs:
        d = _outage_under_load(h, rs, restart, "Redis restart with AOF")
        d.wait_log(lambda line: "command connection lost" in line, 1,
                   "a log line saying the connection was lost")


test_redis_outage_restart_with_aof_under_load_every_call_completes.timeout \
    = 120


# --------------------------------------------------------------------------
# Past the grace: today's documented error


def _expect_log_unavailable_error(msg, id, what):
    expect(is_response(msg, id) and "error" in msg,
           f"{what}: the call ended with {msg!r}, expected a JSON-RPC error "
           f"for id {id}")
    err = assert_rpc_error(msg, id_null=False)
    text = err["message"].lower()
    expect("event log" in text and "unavailable" in text,
           f"{what}: the error does not say the event log was unavailable: "
           f"{err!r}")


def _resume_until_served(d, sid, cursor, timeout, what):
    """GET + Last-Event-ID until 200 (503 while Redis is away); returns the
    events of that response, read to its end."""
    deadline = time.monotonic() + tmo(timeout)
    while True:
        g = d.get_sse(sid, cursor)
        if g.status == 200:
            return g.events_until_close(15)
        expect(g.status == 503, f"{what}: resume {cursor} -> HTTP "
               f"{g.status} {g.body[:200]!r} (only 503 may come first)")
        expect(time.monotonic() < deadline, f"{what}: resume {cursor} "
               f"still 503 after {tmo(timeout):.0f}s")
        time.sleep(0.2)


def test_redis_outage_past_the_grace_ends_calls_with_the_error(h):
    """eventlog_outage_grace 3 and a 7 s CLIENT PAUSE: three seconds into
    the stall the calls end with "the event log was unavailable" (in the
    open response, or, if Redis is still away when the response ends, read
    by a resume once it answers), new requests are refused 503 at once
    until Redis answers, and the session goes on."""
    with private_redis(h) as rs:
        d = h.start(eventlog=rs.url, eventlog_outage_grace="3")
        calls = _start_calls(d, 5, 100, 50)
        rs.cmd("CLIENT", "PAUSE", "7000")
        t0 = time.monotonic()
        line = d.wait_log(lambda l: "past eventlog_outage_grace" in l, 10,
                          "a log line saying the grace is over")
        expect(time.monotonic() - t0 >= 2.5, f"the grace ended "
               f"{time.monotonic() - t0:.1f}s into the stall: {line!r}")
        t1 = time.monotonic()
        r = d.initialize_reply(LATEST)
        took = time.monotonic() - t1
        expect(r.status == 503 and r.header("Retry-After") is not None,
               f"initialize past the grace -> HTTP {r.status} "
               f"{r.body[:200]!r}, expected 503 with Retry-After")
        expect(took < tmo(2), f"initialize past the grace took {took:.1f}s: "
               f"it waited instead of being refused")
        _read_all(calls, 30)
        for c in calls:
            msgs = message_events(c.events)
            k, last = check_ids(msgs, 1, what=c.token)
            if not (msgs and is_response(msgs[-1].json)):
                # Redis still away when the response ended: the error
                # is read by a resume once it answers.
                rest = message_events(_resume_until_served(
                    d, c.sid, f"{k}-{last}", 20, c.token))
                check_ids(rest, last + 1, k, f"{c.token}: resume")
                msgs += rest
            _expect_log_unavailable_error(msgs[-1].json, c.id, c.token)
        d.assert_alive(calls[0].sid, "after an outage past the grace")


test_redis_outage_past_the_grace_ends_calls_with_the_error.timeout = 90


# --------------------------------------------------------------------------
# Leases across an outage


def test_redis_outage_lease_lapsed_in_a_restart_is_not_taken_for_death(h):
    """A runs a call, B shows its stream (the client resumed there), and
    Redis (AOF) is down longer than the call's lease (lease_ttl 3), so the
    lease is gone when it comes back. B reconnects while A is held up a
    moment longer (SIGSTOP, as a slower reconnection would): B must not
    take the missing lease for A's death while its own log has not
    answered steadily for a lease's lifetime since the outage. A renews
    when it is back, and the call completes on B's view."""
    with private_redis(h, aof=True) as rs:
        a = h.start(eventlog=rs.url, lease_ttl="3")
        b = h.start(eventlog=rs.url, lease_ttl="3")
        sid = a.initialize(LATEST)
        b.versions[sid] = a.versions[sid]
        id, r = a.call_open(sid, "stream", {"n": 80, "interval_ms": 100},
                            "lease")
        expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status}")
        seen = r.next_messages(2, 10, "the call on a")
        r.cut()
        g = b.get_sse(sid, seen[-1].id)
        expect(g.status == 200 and g.is_sse, f"resume {seen[-1].id} on b "
               f"-> HTTP {g.status}")
        seen += g.next_messages(2, 10, "b's view")
        rs.shutdown()
        # Down longer than the lease (renewed at most 1 s before): it is
        # gone when Redis is back.
        time.sleep(4.5)
        a.signal(signal.SIGSTOP)
        try:
            rs.start()
            b.wait_log(lambda l: "Redis answers again" in l, 10,
                       "b reconnected")
            # b checks the lease twice a second meanwhile.
            time.sleep(1.5)
        finally:
            a.signal(signal.SIGCONT)
        rest = g.events_until_close(40)
        msgs = message_events(seen + rest)
        k, head = check_ids(msgs, 1, what="the call seen on a then b")
        last = msgs[-1].json
        expect(is_response(last, id) and "result" in last and
               result_text(last) == "done 80", f"the call ended with "
               f"{last!r}: a live owner's lapsed lease was taken for its "
               f"death")
        dead = [l for l in b.stderr_text().splitlines()
                if "lease expired" in l]
        expect(not dead, f"b took a for dead: {dead!r}")


test_redis_outage_lease_lapsed_in_a_restart_is_not_taken_for_death.timeout \
    = 90
