"""Session lifetime: idle expiry."""

import time

from mcpd_harness import LATEST, expect, tmo


def _smallest_session_ttl(h):
    for ttl in (1, 2, 3, 5, 10):
        if h.conf_accepts(f"session_ttl {ttl}"):
            return ttl
    raise AssertionError("mcpd -t accepts no session_ttl of 10 or less")


def test_idle_session_expires(h):
    ttl = _smallest_session_ttl(h)
    d = h.start(session_ttl=ttl)
    idle = d.initialize(LATEST)
    busy = d.initialize(LATEST)
    _, r = d.call_open(idle, "echo", {"text": "x"})
    cursor = [e for e in r.events_until_close() if e.is_message][0].id
    start = time.monotonic()
    # keep one session busy while the other idles; a request to the idle
    # one would count as activity, so it is not touched before its TTL
    while time.monotonic() - start < ttl + tmo(1.5):
        d.assert_alive(busy, "while it is in use")
        time.sleep(min(0.5, ttl / 4))
    deadline = start + ttl + tmo(6)
    while True:
        r = d.ping(idle)
        if r.status == 404:
            break
        expect(r.status == 200, f"idle session ping -> HTTP {r.status}")
        expect(time.monotonic() < deadline, f"session idle for "
               f"{time.monotonic() - start:.1f}s with session_ttl {ttl} "
               "still answers")
        time.sleep(0.5)
    r = d.get_sse(idle)
    expect(r.status == 404, f"GET on the expired session -> HTTP {r.status}")
    r = d.get_sse(idle, cursor)
    expect(r.status == 404, f"GET Last-Event-ID {cursor} on the expired "
           f"session -> HTTP {r.status}, expected 404 (session gone)")
    d.assert_alive(busy, "(an active session must not expire)")


test_idle_session_expires.timeout = 60
