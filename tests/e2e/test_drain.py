"""Drain, readiness and liveness (issue 12): SIGTERM and SIGUSR2 take an
instance out of a load balancer's pool without losing a call; /readyz,
/livez and /healthz tell the truth; a call whose instance died is
answered within lease_ttl + 2 s."""

import signal
import socket
import subprocess
import time

from mcpd_harness import (LATEST, REDIS_URL, Daemon, assert_rpc_error,
                          check_ids, expect, is_log, is_progress,
                          is_response, message_events, need_shared_redis,
                          parse_event_id, private_redis, result_text, rpc,
                          tmo, tool_call)


# --------------------------------------------------------------------------
# helpers


def _get(d, path):
    """GET path on a new connection: (status, decoded JSON body)."""
    r = d.request("GET", path=path, timeout=5)
    return r.status, r.json


def _poll(d, path, want, timeout, what):
    """GET path until its status is `want`; returns the body. Polls (the
    state changes inside mcpd, nothing to wait on from here), bounded."""
    deadline = time.monotonic() + tmo(timeout)
    while True:
        try:
            status, body = _get(d, path)
            if status == want:
                return body
        except (AssertionError, OSError) as e:
            status, body = None, repr(e)
        expect(time.monotonic() < deadline, f"{what}: {path} still "
               f"answers {status} {body!r} after {tmo(timeout):.1f}s")
        time.sleep(0.02)


def _refused(d):
    """Whether a new connection to d is refused."""
    try:
        s = socket.create_connection((d.host, d.port), tmo(2))
    except ConnectionRefusedError:
        return True
    s.close()
    return False


def _wait_refused(d, timeout, what):
    deadline = time.monotonic() + tmo(timeout)
    while not _refused(d):
        expect(time.monotonic() < deadline, f"{what}: new connections "
               f"still accepted after {tmo(timeout):.1f}s")
        time.sleep(0.02)


def _wait_exit(d, timeout, what):
    """The daemon exits by itself (a drain that ends in exit); its
    status."""
    try:
        rc = d.proc.wait(tmo(timeout))
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{what}: mcpd still running after "
                             f"{tmo(timeout):.1f}s; stderr:\n"
                             f"{d.stderr_tail(15)}") from None
    d.stopped = True
    d.exit_status = rc
    d.err.join(tmo(5))
    d.out.join(tmo(5))
    return rc


def _ping_on(d, sid, conn):
    id = d.new_id()
    r = d.read_whole(d.open("POST", sid, rpc("ping", None, id), conn=conn),
                     10)
    expect(r.status == 200 and r.rpc(id).get("result") == {},
           f"ping on a kept connection -> HTTP {r.status} {r.body[:200]!r}")
    return r


def _stream_whole(r, id, n, token, timeout):
    """Reads a stream call's response to its end: every progress 1..n in
    order, then the result `done n`, then a clean end."""
    r.events_until_close(timeout)
    expect(not r.reader.truncated, "the call's SSE response was cut")
    got = message_events(r.events)
    check_ids(r.events, 1)
    progress = [e.json["params"]["progress"] for e in got
                if is_progress(e.json)]
    expect(progress == list(range(1, n + 1)), f"progress {progress[:5]}..."
           f"{progress[-5:]} ({len(progress)}), expected 1..{n}")
    last = got[-1].json
    expect(is_response(last, id) and result_text(last) == f"done {n}",
           f"the call ended with {got[-1].data[:300]!r}")


# --------------------------------------------------------------------------
# the endpoints


def test_readyz_livez_healthz_while_serving(h):
    d = h.start()
    status, body = _get(d, "/readyz")
    expect(status == 200 and body == {"status": "ready"},
           f"/readyz -> {status} {body!r}")
    status, body = _get(d, "/livez")
    expect(status == 200 and body.get("status") == "live",
           f"/livez -> {status} {body!r}")
    status, body = _get(d, "/healthz")
    backend = "redis" if REDIS_URL else "memory"
    expect(status == 200, f"/healthz -> {status} {body!r}")
    expect(body.get("eventlog") == {"backend": backend, "state": "ready"},
           f"/healthz eventlog: {body.get('eventlog')!r}")
    expect("metrics" in body and "sessions" in body,
           f"/healthz lost its counters: {body!r}")


# --------------------------------------------------------------------------
# drain


def test_sigusr2_not_ready_at_once_serving_during_delay_then_refusing(h):
    d = h.start(drain_delay=4, drain_timeout=5)
    sid = d.initialize(LATEST)
    kept = d.connect()
    _ping_on(d, sid, kept)
    expect(_get(d, "/readyz")[0] == 200, "/readyz before the drain")
    d.signal(signal.SIGUSR2)
    body = _poll(d, "/readyz", 503, 1, "SIGUSR2")
    expect(body == {"status": "draining"}, f"/readyz draining: {body!r}")
    # Within drain_delay (4 s; the requests take milliseconds) new
    # connections are still served as usual.
    d.assert_alive(sid, "during drain_delay")
    r = _ping_on(d, sid, kept)
    expect((r.header("Connection") or "").lower() != "close",
           "a request during drain_delay was answered Connection: close")
    expect(_get(d, "/livez")[0] == 200, "/livez during the drain")
    # Then the listening socket closes.
    _wait_refused(d, 4 + 3, "after drain_delay")
    # A request on a connection opened before is still served, with
    # Connection: close, and the connection is closed after the reply.
    r = _ping_on(d, sid, kept)
    expect((r.header("Connection") or "").lower() == "close",
           "a request after drain_delay on an open connection: no "
           "Connection: close")
    deadline = time.monotonic() + tmo(3)
    while kept.fill(deadline):
        pass
    expect(kept.eof, "mcpd kept the connection open after the reply that "
           "said Connection: close")
    # SIGUSR2 stays up until SIGTERM, which then exits at once with 0.
    expect(d.alive(), "mcpd exited after a SIGUSR2 drain")
    d.wait_log(lambda line: "drain: done" in line, 3, "the drain's end")
    t0 = time.monotonic()
    problems = d.stop(timeout=5)
    expect(not problems, f"SIGTERM after a SIGUSR2 drain: {problems}")
    expect(time.monotonic() - t0 < tmo(3), "SIGTERM after a finished "
           "drain did not exit at once")
    text = d.stderr_text()
    for phase in ("drain: /readyz answers 503", "drain: listening socket "
                  "closed", "drain: no call running", "drain: done"):
        expect(phase in text, f"no log line for the drain phase {phase!r}")


def test_sigterm_drain_running_call_completes_then_exit_0(h):
    d = h.start(drain_delay=1, drain_timeout=30)
    sid = d.initialize(LATEST)
    kept = d.connect()
    _ping_on(d, sid, kept)
    n = 30
    id, r = d.call_open(sid, "stream", {"n": n, "interval_ms": 100}, "dr")
    expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status}")
    expect(r.next_message(5) is not None, "no first message")
    d.signal(signal.SIGTERM)
    _poll(d, "/readyz", 503, 1, "SIGTERM")
    _wait_refused(d, 1 + 3, "SIGTERM drain after drain_delay")
    expect(d.alive(), "mcpd exited with a call running")
    # A call sent on a connection opened before: served, its SSE head
    # says Connection: close, the response is whole, then the connection
    # closes.
    id2 = d.new_id()
    r2 = d.open("POST", sid, tool_call("stream", {"n": 5, "interval_ms": 50},
                                       id2, "late"), conn=kept)
    expect(r2.status == 200 and r2.is_sse, f"a call after drain_delay on "
           f"an open connection -> HTTP {r2.status}")
    expect((r2.header("Connection") or "").lower() == "close",
           "an SSE response begun after drain_delay: no Connection: close")
    _stream_whole(r2, id2, 5, "late", 10)
    deadline = time.monotonic() + tmo(3)
    while kept.fill(deadline):
        pass
    expect(kept.eof, "the connection stayed open after an SSE response "
           "that said Connection: close")
    # The call started before the drain runs to its end (3 s in all),
    # and its client gets every event.
    _stream_whole(r, id, n, "dr", 10)
    rc = _wait_exit(d, 5, "once its call finished")
    expect(rc == 0, f"mcpd exited {rc} after a drain")


def test_drain_timeout_interrupts_the_call_with_an_error(h):
    d = h.start(drain_delay=0, drain_timeout=1)
    sid = d.initialize(LATEST)
    id, r = d.call_open(sid, "stream", {"n": 1000, "interval_ms": 50}, "to")
    expect(r.next_message(5) is not None, "no first message")
    d.signal(signal.SIGTERM)
    r.events_until_close(10)
    expect(not r.reader.truncated, "the response was cut, not ended")
    got = message_events(r.events)
    check_ids(r.events, 1)
    final = got[-1].json
    expect(is_response(final, id) and "error" in final,
           f"the call's last message: {got[-1].data[:300]!r}")
    err = assert_rpc_error(final, id_null=False)
    expect("interrupted" in err["message"], f"error: {err!r}")
    expect(any(e.json.get("params", {}).get("progress", 0) > 1
               for e in got[:-1]), "no progress before the error")
    rc = _wait_exit(d, 5, "after drain_timeout")
    expect(rc == 0, f"mcpd exited {rc} after a drain")
    d.wait_log(lambda line: "drain_timeout reached" in line, 1,
               "the drain_timeout phase logged")


def test_second_sigterm_exits_at_once(h):
    d = h.start(drain_delay=60, drain_timeout=60)
    sid = d.initialize(LATEST)
    id, r = d.call_open(sid, "stream", {"n": 1000, "interval_ms": 50}, "2t")
    expect(r.next_message(5) is not None, "no first message")
    d.signal(signal.SIGTERM)
    d.wait_log(lambda line: "drain: /readyz answers 503" in line, 3,
               "the drain's start")
    t0 = time.monotonic()
    d.signal(signal.SIGTERM)
    rc = _wait_exit(d, 5, "a second SIGTERM")
    expect(rc == 0, f"mcpd exited {rc} on a second SIGTERM")
    expect(time.monotonic() - t0 < tmo(4), "a second SIGTERM did not exit "
           "at once")


def _exit_with_the_log_freed(h, what, **conf):
    """The exit is held right before the event log is freed
    (MCPD_TEST_EXIT_HOLD_MS, a test hook of server.c) for longer than the
    one-second cron's period, and a SIGHUP and a second SIGTERM arrive
    meanwhile: when the exit goes on, no timer and no signal may run into
    what is freed (the cron reads the log; a reload, the providers and the
    HTTP server). Exit 0, no reload, no sanitizer report."""
    d = Daemon(h.mcpd, h.workdir, conf, (), h.sanitized,
               f"mcpd{len(h.daemons)}")
    d.env["MCPD_TEST_EXIT_HOLD_MS"] = "1500"
    h.daemons.append(d)
    d.start()
    sid = d.initialize(LATEST)
    msg, _ = d.call(sid, "echo", {"text": "before the exit"})
    expect(result_text(msg) == "before the exit", f"{what}: echo -> {msg!r}")
    d.signal(signal.SIGTERM)
    d.wait_log(lambda line: "test hook: exit held" in line, 5,
               f"{what}: the exit held before the log is freed")
    d.signal(signal.SIGHUP)
    d.signal(signal.SIGTERM)
    rc = _wait_exit(d, 10, f"{what}: the held exit")
    held = d.stderr_text().split("test hook: exit held", 1)[1]
    expect(rc == 0, f"{what}: mcpd exited with status {rc} (a negative "
           f"status is the signal that killed it); after the hold:\n"
           f"{held[-2000:]}")
    expect("reload" not in held, f"{what}: a SIGHUP during the exit "
           f"reloaded the configuration:\n{held[-2000:]}")
    expect("stopped: exit status 0" in held, f"{what}: no 'stopped' line "
           f"after the hold:\n{held[-2000:]}")


def test_exit_runs_no_timer_or_signal_after_the_log_is_freed(h):
    _exit_with_the_log_freed(h, "memory log")


def test_redis_exit_runs_no_timer_or_signal_after_the_log_is_freed(h):
    # With a shared log the lease timers run too.
    _exit_with_the_log_freed(h, "redis log", eventlog=need_shared_redis())


def test_drain_ends_standalone_stream_with_retry(h):
    d = h.start(drain_delay=0, drain_timeout=5, sse_retry_ms=1234)
    sid = d.initialize(LATEST)
    g = d.get_sse(sid)
    expect(g.status == 200, f"GET -> HTTP {g.status}")
    g.next_event(3)
    d.call(sid, "notify", {"n": 2})
    for _ in range(2):
        expect(g.next_message(5) is not None, "notify: no message")
    d.signal(signal.SIGTERM)
    events = g.events_until_close(5)
    expect(not g.reader.truncated, "the standalone response was cut, not "
           "ended (terminal chunk)")
    expect(any(e.retry == 1234 for e in events),
           f"the drained response has no retry: 1234 field: {events!r}")
    expect(not message_events(events), f"messages after the drain's end: "
           f"{events!r}")
    rc = _wait_exit(d, 5, "a drain with an open standalone stream")
    expect(rc == 0, f"mcpd exited {rc}")


# --------------------------------------------------------------------------
# redis: resume elsewhere, log state, orphans


def test_redis_drained_standalone_stream_resumes_on_another_instance(h):
    need_shared_redis()
    a = h.start(drain_delay=0, drain_timeout=5)
    b = h.start()
    sid = a.initialize(LATEST)
    b.versions[sid] = a.versions[sid]
    g = a.get_sse(sid)
    expect(g.status == 200, f"GET -> HTTP {g.status}")
    g.next_event(3)
    a.call(sid, "notify", {"n": 3})
    seen = []
    for _ in range(3):
        ev, _ = g.next_message(5)
        seen.append(ev)
    k, last = parse_event_id(seen[-1].id)
    a.signal(signal.SIGTERM)
    events = g.events_until_close(5)
    expect(not g.reader.truncated, "a's standalone response was cut")
    expect(any(e.retry is not None for e in events),
           f"a's drained response has no retry: field: {events!r}")
    rc = _wait_exit(a, 5, "a's drain")
    expect(rc == 0, f"a exited {rc}")
    # Committed after the client's last id: through b, while a is gone.
    b.call(sid, "notify", {"n": 2})
    r = b.get_sse(sid, seen[-1].id)
    expect(r.status == 200, f"resume {seen[-1].id} on b -> HTTP {r.status}")
    got = []
    for _ in range(2):
        m = r.next_message(5)
        expect(m is not None, f"resume on b: {got!r} then nothing")
        got.append(m[0])
    expect([parse_event_id(e.id) for e in got] ==
           [(k, last + 1), (k, last + 2)],
           f"resume on b from {seen[-1].id}: {[e.id for e in got]}: not "
           "exactly the events after it")
    expect(all(is_log(e.json) for e in got), f"{got!r}")
    r.close()


def test_redis_kill9_call_answered_within_lease_ttl_plus_2s(h):
    need_shared_redis()
    ttl = 1
    a = h.start(lease_ttl=ttl)
    b = h.start(lease_ttl=ttl)
    sid = a.initialize(LATEST)
    b.versions[sid] = a.versions[sid]
    id, r = a.call_open(sid, "stream", {"n": 10000, "interval_ms": 20},
                        "k9")
    expect(r.status == 200, f"stream -> HTTP {r.status}")
    ev, _ = r.next_message(5)
    g = b.get_sse(sid, ev.id)
    expect(g.status == 200, f"resume {ev.id} on b -> HTTP {g.status}")
    expect(g.next_message(5) is not None, "b's view shows nothing live")
    a.kill()
    a.stopped = True
    killed = time.monotonic()
    while True:
        m = g.next_message(tmo(ttl + 5))
        expect(m is not None, "b's view ended without the error")
        if is_response(m[1]):
            break
    took = time.monotonic() - killed
    expect("error" in m[1], f"the call's response: {m[1]!r}")
    assert_rpc_error(m[1], id_null=False)
    # The contract of issue 12: the client hears within lease_ttl + 2 s.
    # Only tmo() widens it, for the sanitizer build (noise, not design).
    expect(took <= tmo(ttl + 2), f"the error reached the client {took:.2f}s "
           f"after kill -9 (lease_ttl {ttl} s + 2 s)")
    print(f"  kill -9: error after {took:.2f}s (lease_ttl {ttl} s)")


class _NoRedisWaitDaemon(Daemon):
    """Started without waiting for its Redis connection (Redis is not
    there yet)."""

    def _wait_redis_ready(self, timeout):
        pass


def test_redis_readyz_follows_the_log(h):
    with private_redis(h, start=False) as rs:
        # eventlog_wait 0: listening at once, before Redis ever answered.
        d = _NoRedisWaitDaemon(h.mcpd, h.workdir, {"eventlog": rs.url,
                               "eventlog_wait": 0}, (), h.sanitized,
                               f"mcpd{len(h.daemons)}")
        h.daemons.append(d)
        d.start()
        status, body = _get(d, "/readyz")
        expect(status == 503 and body.get("status") == "starting" and
               "Connection refused" in body.get("reason", ""),
               f"/readyz before Redis ever answered (with the reason): "
               f"{status} {body!r}")
        expect(_get(d, "/livez")[0] == 200, "/livez without Redis")
        rs.start()
        _poll(d, "/readyz", 200, 10, "Redis up")
        rs.shutdown()
        body = _poll(d, "/readyz", 503, 5, "Redis stopped")
        expect(body.get("status") == "eventlog unavailable" and
               body.get("reason"),
               f"/readyz with Redis stopped (with the reason): {body!r}")
        status, body = _get(d, "/healthz")
        expect(status == 503 and body.get("eventlog", {}).get("state") ==
               "unavailable", f"/healthz with Redis stopped: {status} "
               f"{body!r}")
        expect(_get(d, "/livez")[0] == 200, "/livez with Redis stopped")
        rs.start()
        _poll(d, "/readyz", 200, 15, "Redis back")
        status, body = _get(d, "/healthz")
        expect(status == 200 and body["eventlog"] == {"backend": "redis",
               "state": "ready"}, f"/healthz with Redis back: {body!r}")


def test_sigquit_drains_like_sigterm(h):
    # nginx's graceful stop, and what some supervisors send: it must drain,
    # not dump core (its default action) with a call running.
    d = h.start(drain_delay=0, drain_timeout=30)
    sid = d.initialize(LATEST)
    n = 10
    id, r = d.call_open(sid, "stream", {"n": n, "interval_ms": 100}, "q")
    expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status}")
    expect(r.next_message(5) is not None, "no first message")
    d.signal(signal.SIGQUIT)
    d.wait_log(lambda line: f"signal {int(signal.SIGQUIT)}: draining" in line,
               3, "the SIGQUIT drain's start")
    expect(d.alive(), "mcpd exited on SIGQUIT with a call running")
    _stream_whole(r, id, n, "q", 10)
    rc = _wait_exit(d, 5, "once its call finished")
    expect(rc == 0, f"mcpd exited {rc} after a SIGQUIT drain")
