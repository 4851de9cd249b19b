"""The service manager's notify protocol, on a datagram socket the test
owns as systemd would: READY=1 with a STATUS once mcpd listens, watchdog
pings at half WATCHDOG_USEC, STOPPING=1 when it is told to stop."""

import os
import signal
import socket
import time

from mcpd_harness import Daemon, expect, private_redis, tmo


def _messages(sock, until, timeout=10):
    """Datagrams received until one satisfies until(msg) (included)."""
    got = []
    deadline = time.monotonic() + tmo(timeout)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"notify: never got the message; got {got}")
        sock.settimeout(remaining)
        try:
            msg = sock.recv(4096).decode()
        except socket.timeout:
            continue
        got.append(msg)
        if until(msg):
            return got


def _wait_exit(d):
    """The stop the test asked for: exit 0, and no second signal."""
    rc = d.proc.wait(tmo(40))
    expect(rc == 0, f"mcpd exited {rc} after SIGTERM")
    d.stopped = True


def _start_notified(h, **env):
    path = os.path.join(h.workdir, "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    saved = dict(os.environ)
    os.environ["NOTIFY_SOCKET"] = path
    os.environ.update(env)
    try:
        d = h.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return d, sock


def test_ready_status_then_stopping(h):
    d, sock = _start_notified(h)
    try:
        got = _messages(sock, lambda m: "READY=1" in m)
        expect(len(got) == 1, f"messages before READY=1: {got}")
        fields = dict(ln.split("=", 1) for ln in got[0].splitlines())
        expect(f":{d.port}" in fields.get("STATUS", ""),
               f"STATUS does not say where it listens: {got[0]!r}")
        # Ready means served: the endpoint answers now.
        d.ping(d.initialize())
        d.signal(signal.SIGTERM)
        got = _messages(sock, lambda m: "STOPPING=1" in m)
        expect(not any("READY=1" in m for m in got), f"READY again: {got}")
        _wait_exit(d)
    finally:
        sock.close()


def test_watchdog_pings_while_the_loop_turns(h):
    d, sock = _start_notified(h, WATCHDOG_USEC="200000")
    try:
        _messages(sock, lambda m: "READY=1" in m)
        # Pings every 100 ms: a few of them, whatever the load.
        for _ in range(3):
            _messages(sock, lambda m: m == "WATCHDOG=1")
        expect(d.alive(), "mcpd died while pinging the watchdog")
    finally:
        sock.close()


def test_no_watchdog_pings_for_another_process(h):
    d, sock = _start_notified(h, WATCHDOG_USEC="100000", WATCHDOG_PID="1")
    try:
        got = _messages(sock, lambda m: "READY=1" in m)
        expect(not any("WATCHDOG" in m for m in got), f"pinged: {got}")
        d.ping(d.initialize())      # a few loop turns without a ping
        d.signal(signal.SIGTERM)
        got = _messages(sock, lambda m: "STOPPING=1" in m)
        expect(not any("WATCHDOG" in m for m in got), f"pinged: {got}")
        _wait_exit(d)
    finally:
        sock.close()


def test_ready_only_once_the_redis_log_is_reachable(h):
    # A service manager (and what follows it: a socket-activated balancer,
    # a rolling restart script) hears READY=1 only when the instance can
    # serve: not while its Redis is down (eventlog_wait).
    with private_redis(h, start=False) as rs:
        path = os.path.join(h.workdir, "notify.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(path)
        d = Daemon(h.mcpd, h.workdir, {"eventlog": rs.url}, (),
                   h.sanitized, f"mcpd{len(h.daemons)}")
        d.env["NOTIFY_SOCKET"] = path
        h.daemons.append(d)
        try:
            d.start(listening=False)
            got = _messages(sock, lambda m: "STATUS=waiting for the event "
                            "log" in m)
            expect(not any("READY=1" in m for m in got), f"READY=1 before "
                   f"the log was reachable: {got}")
            d.wait_log(lambda l: rs.url in l and "connection failed" in l,
                       5, "a log line saying the Redis connection failed")
            rs.start()
            got = _messages(sock, lambda m: "READY=1" in m)
            expect("redis (connected)" in got[-1], f"READY=1 without the "
                   f"log connected: {got[-1]!r}")
            d.await_listening(10)
            d.ping(d.initialize())
        finally:
            sock.close()
