"""Faults from outside the protocol (issue 10, "Faults"): the open file
limit reached, and log lines a client can cause at will. Neither may make
mcpd spin or flood its log, and mcpd serves again once the fault is gone."""

import os
import socket
import time

from mcpd_harness import (LATEST, Timeout, assert_rpc_error, expect,
                          parse_event_id, rpc, tmo)

# src/log.h: lines a cause may write per interval.
LOG_LIMIT_LINES = 10


def _cpu_seconds(pid):
    """utime + stime of a process so far, in seconds (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is field 3 (state): utime and stime are fields 14 and 15
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _lines(d, *needles):
    return [line for line in d.stderr_text().splitlines()
            if any(n in line for n in needles)]


def _ping_on(d, sid, conn, what):
    id = d.new_id()
    r = d.read_whole(d.open("POST", sid, rpc("ping", None, id), conn=conn),
                     10)
    expect(r.status == 200 and r.rpc(id).get("result") == {},
           f"{what}: ping -> HTTP {r.status}")


def test_open_file_limit_pauses_accept_and_recovers(h):
    """At the open file limit accept() fails with the connection left in
    the kernel's queue: mcpd must not call it again at once forever (a
    spin, one log line per call), but rest, keep serving the connections
    it has, and take new ones once descriptors are free."""
    d = h.start(nofile=32)
    sid = d.initialize(LATEST)
    kept = d.connect()
    _ping_on(d, sid, kept, "before the limit")

    socks = []
    try:
        for _ in range(48):         # more than the 32 descriptors
            s = socket.create_connection((d.host, d.port), tmo(5))
            socks.append(s)
        d.wait_log(lambda line: "Too many open files" in line, 5,
                   "accept() failing with EMFILE, logged")

        # A spin detector, not a performance bound: CPU time spent while
        # the queue holds connections mcpd cannot take.
        period = 2.0
        cpu0 = _cpu_seconds(d.proc.pid)
        time.sleep(period)
        cpu = _cpu_seconds(d.proc.pid) - cpu0
        expect(cpu < period / 4, f"mcpd used {cpu:.2f}s of CPU in "
               f"{period:.0f}s at the open file limit: it spins on accept()")
        lines = _lines(d, "accept")
        expect(1 <= len(lines) <= 3, f"{len(lines)} log lines about accept "
               f"at the open file limit (expected one, at most 3): "
               f"{lines[:5]!r}")
        expect(d.alive(), "mcpd died at the open file limit")
        # Connections it already has are served meanwhile.
        _ping_on(d, sid, kept, "at the open file limit")
    finally:
        for s in socks:
            s.close()

    # Descriptors free again: a new connection is taken (the listener
    # rests 100 ms between tries; poll within a bound).
    deadline = time.monotonic() + tmo(5)
    while True:
        try:
            r = d.ping(sid)
            if r.status == 200:
                break
        except (AssertionError, Timeout, OSError) as e:
            expect(time.monotonic() < deadline, f"no new connection served "
                   f"{tmo(5):.0f}s after descriptors were freed: {e}")
        time.sleep(0.05)
    d.assert_alive(sid, "after the open file limit")
    d.wait_log(lambda line: "accept: no failure" in line, 5,
               "the end of the accept failures logged")


def test_client_caused_log_lines_are_rate_limited(h):
    """A client repeating requests that each cause a log line (a cursor
    ahead of the head: an error-level resumability violation; a refused
    resume; an answer to no request) cannot flood the log: each cause is
    written at most LOG_LIMIT_LINES times per interval. Every request is
    still answered as before."""
    d = h.start()
    sid = d.initialize(LATEST)
    _, r = d.call(sid, "stream", {"n": 2})
    k = parse_event_id([e for e in r.events if e.is_message][0].id)[0]
    before = len(d.stderr_text().splitlines())
    rounds = 40
    for i in range(rounds):
        cursor = f"{k}-{100 + i}"
        g = d.get_sse(sid, cursor)
        expect(g.status == 410, f"round {i}: ahead {cursor} -> {g.status}")
        err = assert_rpc_error(g.json)
        expect(err["data"]["reason"] == "ahead", f"round {i}: {err!r}")
        a = d.post(sid, {"jsonrpc": "2.0", "id": f"nobody-{i}",
                         "result": {}})
        expect(a.status < 500, f"round {i}: stray answer -> {a.status}")
    violations = _lines(d, "resumability violation")
    refused = _lines(d, "refused: ahead")
    stray = _lines(d, "matches no pending request")
    for name, got in (("resumability violation", violations),
                      ("resume refused", refused),
                      ("stray answer", stray)):
        expect(1 <= len(got) <= LOG_LIMIT_LINES, f"{len(got)} '{name}' "
               f"lines for {rounds} requests (at most {LOG_LIMIT_LINES} "
               f"per interval): the log is not rate-limited")
    total = len(d.stderr_text().splitlines()) - before
    expect(total <= 3 * LOG_LIMIT_LINES + 5, f"{total} log lines for "
           f"{rounds * 2} bad requests:\n{d.stderr_tail(10)}")
    d.assert_alive(sid, "after a flood of client-caused log lines")
