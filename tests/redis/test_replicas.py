"""commit replicas:1 gates what clients see (issue 24; docs/deployment.md,
"Failover and the invariants"): an event the primary holds but no replica
does is written to no client: not on the instance whose call wrote it,
not on another instance a client resumes on, not on another instance
following the session's standalone stream live. It is, once the replica
has it. The replica is stopped (SIGSTOP) between two events of a call.
"""

import threading
import time

from mcpd_harness import (LATEST, RedisServer, check_ids, expect,
                          is_response, parse_event_id, result_text, tmo)
from redisops import need_tools, redis

N = 4


class _Reader(threading.Thread):
    """Reads an open SSE reply (or, with resume=(daemon, sid, last), the
    GET that resumes after last) to the call's response."""

    def __init__(self, reply=None, resume=None, id=None, count=None):
        super().__init__(daemon=True)
        self.reply, self.resume, self.id = reply, resume, id
        self.count = count
        self.msgs = []
        self.failure = None

    def run(self):
        try:
            r = self.reply
            if r is None:
                d, sid, last = self.resume
                r = self.reply = d.get_sse(sid, last, timeout=120)
                if not (r.status == 200 and r.is_sse):
                    raise AssertionError(f"resume after {last} -> HTTP "
                                         f"{r.status} {r.body[:200]!r}")
            while True:
                m = r.next_message(120)
                if m is None:
                    return
                self.msgs.append(m[0])
                if is_response(m[1], self.id) or len(self.msgs) == \
                        self.count:
                    return
        except BaseException as e:      # reported by the main thread
            self.failure = e


def _wait_for(what, fn, timeout=30):
    deadline = time.monotonic() + tmo(timeout)
    while not fn():
        expect(time.monotonic() < deadline, f"{what} not within "
               f"{tmo(timeout):.0f}s")
        time.sleep(0.05)


def test_replicas1_no_client_sees_an_event_before_a_replica_has_it(h):
    need_tools()
    with redis(h, "--repl-diskless-sync-delay", "0") as primary:
        replica = RedisServer(h.workdir, "--replicaof", "127.0.0.1",
                              primary.port)
        try:
            replica.start()
            _wait_for("the replica in sync", lambda: "state=online" in
                      primary.cmd("INFO", "replication"))
            conf = {"eventlog": primary.url, "commit": "replicas:1",
                    "eventlog_outage_grace": 120}
            a = h.start(**conf)
            b = h.start(**conf)
            sid = a.initialize(LATEST)
            b.versions[sid] = LATEST
            # Two calls on A: one read there, one cut and resumed on B.
            calls = []
            for token in ("on-a", "to-b"):
                id, r = a.call_open(sid, "stream", {
                    "n": N, "interval_ms": 300}, token)
                expect(r.status == 200 and r.is_sse, f"stream -> HTTP "
                       f"{r.status}")
                first = r.next_messages(1, timeout=10)[0]
                k, n = parse_event_id(first.id)
                expect(n == 1, f"first message {first.id}, not {k}-1")
                calls.append((id, r, first, k))
            calls[1][1].cut()
            # C follows the session's standalone stream, live (an
            # instance of its own: on B the resume's WAIT would hold
            # its reads back anyway).
            c = h.start(**conf)
            c.versions[sid] = LATEST
            g = c.get_sse(sid)
            expect(g.status == 200 and g.is_sse, f"GET on C -> HTTP "
                   f"{g.status}")
            prime = g.next_event(10)
            while prime.id is None:
                prime = g.next_event(10)
            ks, ns = parse_event_id(prime.id)
            # The replica has acknowledged everything written so far (B's
            # own writes among it): only what comes next is its own.
            primary.cmd("SET", "mcpd-test:mark", "1")
            expect(primary.cmd("WAIT", "1", "10000") == 1, "the replica "
                   "does not acknowledge")

            replica.pause()
            # Two notifications on the standalone stream, from A.
            notify = threading.Thread(target=lambda: a.call(
                sid, "notify", {"n": 2, "size": 16}, timeout=120),
                daemon=True)
            notify.start()
            _wait_for("the notifications on the primary", lambda: int(
                primary.cmd("XLEN", f"mcpd:{{{sid}}}:s:{ks}")) >= ns + 3)
            live = _Reader(reply=g, count=2)
            live.start()
            # The primary takes the next entries; no WAIT can succeed.
            for _, _, _, k in calls:
                key = f"mcpd:{{{sid}}}:s:{k}"
                _wait_for(f"entry {k}-2 on the primary", lambda: int(
                    primary.cmd("XLEN", key)) >= 3)
            on_a = _Reader(reply=calls[0][1], id=calls[0][0])
            on_a.start()
            on_b = _Reader(resume=(b, sid, calls[1][2].id), id=calls[1][0])
            on_b.start()
            # Each instance has sent a WAIT after writing or reading the
            # entries, and heard that no replica has them.
            readers = (("on the instance of the call", on_a, calls[0]),
                       ("resumed on the other instance", on_b, calls[1]))
            for (what, t, _), d in zip(readers + (
                    ("following live on a third instance", live,
                     None),), (a, b, c)):
                _wait_for(f"a WAIT short of the replica ({what})",
                          lambda: t.msgs or "reached 0 of 1 replicas" in
                          d.stderr_text())
            for what, t, _ in readers + (
                    ("following live on a third instance", live, None),):
                expect(t.failure is None, f"{what}: {t.failure!r}")
                expect(not t.msgs, f"a client {what} got "
                       f"{[m.id for m in t.msgs]} while the primary "
                       "alone held them (commit replicas:1)")

            replica.resume()
            for what, t, (id, _, first, k) in readers:
                t.join(tmo(120))
                expect(not t.is_alive(), f"{what}: silent after the "
                       "replica came back")
                if t.failure is not None:
                    raise t.failure
                expect(t.msgs, f"{what}: the stream ended without a "
                       f"message: HTTP {t.reply.status} "
                       f"{t.reply.events[-3:]!r}")
                _, head = check_ids([first] + t.msgs, 1, stream=k,
                                    what=what)
                last = t.msgs[-1].json
                expect(head == N + 1 and is_response(last, id) and
                       result_text(last) == f"done {N}", f"{what}: ended "
                       f"at {k}-{head} with {t.msgs[-1].data[:200]!r}")
            live.join(tmo(120))
            expect(not live.is_alive() and live.failure is None,
                   f"following live: {live.failure!r}")
            check_ids([prime] + live.msgs, ns + 1, stream=ks,
                      what="following live")
            expect(len(live.msgs) == 2, f"following live: {live.msgs!r}")
            notify.join(tmo(120))
            expect(a.alive() and b.alive() and c.alive(), "an mcpd died")
        finally:
            h.stop_all()
            replica.stop()


test_replicas1_no_client_sees_an_event_before_a_replica_has_it.timeout = \
    120
