"""Sentinel failovers under load (issue 24; docs/deployment.md, "Failover
and the invariants"): a primary, one replica and three sentinels on
loopback, with passwords on all of them; two mcpd on
redis-sentinel://, thirty clients (29 of these threads, and the official
TypeScript SDK client through a proxy that cuts it) streaming calls,
each cut twice and resumed on the other instance. The failover comes
while every call runs: SENTINEL FAILOVER, and separately kill -9 of the
primary.

- commit replicas:1: every call completes, its ids contiguous from 1 to
  its end with nothing lost or repeated across the cuts, and the new
  primary holds exactly what the clients got. After kill -9 the new
  primary has no replica: commits wait (eventlog_outage_grace) until the
  old server rejoins as its replica, as docs/deployment.md says.
- commit primary: a failover may lose the last commits. Every client
  either resumes exactly (its ids contiguous, the call ending with its
  result or with the documented error), or is answered 410 with a
  reason; never a gap, a repeat, or silence. A client holding an event
  the new primary lost gets 410 ahead, also when the call's error then
  took that event's id.

Each test prints how long the failover took and how long mcpd paused.
"""

import os
import re
import shutil
import subprocess
import threading
import time

from mcpd_harness import (LATEST, Skip, Timeout, check_ids, expect,
                          is_progress, is_response, message_events,
                          parse_event_id, redis_command, result_text, tmo)
from redisops import ROOT, need_tools, sentinel_deployment

PASSWORD = "sentinel-pw-5b7e"
CLIENTS = 29            # plus the SDK client
N = 40                  # progress notifications per call
INTERVAL_MS = 100       # a call runs 4 s without a failover
CUTS = (3, 20)          # each client cuts after these many messages
GRACE = 45              # eventlog_outage_grace: above a failover's pause


class _Client(threading.Thread):
    """One client: a stream call on A, cut after CUTS[0] messages and
    resumed on B, cut again after CUTS[1] and resumed on A, read to its
    end. Records every message event, and each resume's answer."""

    def __init__(self, a, b, i, ready):
        super().__init__(daemon=True)
        self.a, self.b, self.i, self.ready = a, b, i, ready
        self.token = f"c{i}"
        self.msgs = []
        self.resumes = []           # (status, body or None)
        self.gone = None            # the 410 body, if one
        self.failure = None

    def run(self):
        try:
            self._run()
        except BaseException as e:      # reported by the main thread
            self.failure = e
        finally:
            self.ready.set()

    def _read(self, r, until):
        """Messages of r until `until` in all (then cut), or its end (None:
        to its end); whether it ended."""
        while until is None or len(self.msgs) < until:
            m = r.next_message(GRACE + 15)
            if m is None:
                return True
            self.msgs.append(m[0])
        r.cut()
        return False

    def _done(self):
        return self.msgs and is_response(self.msgs[-1].json, self.id)

    def _run(self):
        a, b = self.a, self.b
        self.sid = a.initialize(LATEST)
        b.versions[self.sid] = LATEST
        self.id, r = a.call_open(self.sid, "stream", {
            "n": N, "interval_ms": INTERVAL_MS}, self.token)
        expect(r.status == 200 and r.is_sse, f"{self.token}: stream -> "
               f"HTTP {r.status}")
        self._read(r, CUTS[0])
        self.ready.set()
        # Cut at CUTS[1], and resumed (as SSE clients do) whenever the
        # stream ends before the call's response: on the other instance.
        cut_at = [CUTS[1]]
        d = b
        while not self._done():
            expect(len(self.resumes) < 6, f"{self.token}: resumed "
                   f"{len(self.resumes)} times: {self.resumes!r}")
            last = self.msgs[-1].id
            g = d.get_sse(self.sid, last, timeout=GRACE + 15)
            self.resumes.append((g.status, None if g.is_sse else
                                 g.body[:300]))
            if g.status == 410:
                self.gone = g.json
                return
            expect(g.status == 200 and g.is_sse, f"{self.token}: resume "
                   f"after {last} -> HTTP {g.status} {g.headers!r} "
                   f"{self.resumes[-1][1]!r}")
            self._read(g, cut_at.pop() if cut_at else None)
            d = a if d is b else b


def _sdk(url, mode):
    """The SDK client (tests/sdk/failover_resume.mjs) in the background;
    returns the process once it said it started."""
    script = os.path.join(ROOT, "tests", "sdk", "failover_resume.mjs")
    if shutil.which("node") is None or not os.path.isdir(os.path.join(
            ROOT, "tests", "sdk", "node_modules", "@modelcontextprotocol",
            "sdk")):
        raise Skip("node or tests/sdk/node_modules missing "
                   "(scripts/install-deps)")
    p = subprocess.Popen(["node", script, url, mode], cwd=ROOT,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    out = []
    line = p.stdout.readline()
    out.append(line)
    expect(line.strip() == "started", f"failover_resume.mjs did not start "
           f"its call: {line!r}{p.stdout.read() if p.poll() is not None else ''}")
    p.lines = out
    return p


def _sdk_result(p, timeout):
    try:
        rest, _ = p.communicate(timeout=tmo(timeout))
    except subprocess.TimeoutExpired:
        p.kill()
        rest, _ = p.communicate()
        raise AssertionError(f"failover_resume.mjs did not end within "
                             f"{tmo(timeout):.0f}s:\n{rest}")
    text = "".join(p.lines) + rest
    m = re.search(r"^failover_resume: (\d+) passed, (\d+) failed", text,
                  re.M)
    expect(m is not None and m.group(2) == "0" and m.group(1) != "0" and
           p.returncode == 0, f"the SDK client failed:\n{text}")
    o = re.search(r"the SDK client across the failover \([a-z-]+\): "
                  r"([a-z]+)", text)
    return o.group(1) if o else "?"


def _stream_in_redis(dep, sid, k):
    """[(N, data)] of stream K of sid on the current primary."""
    url = f"redis://127.0.0.1:{dep.primary_port()}"
    out = []
    for eid, fields in redis_command(url, "XRANGE", f"mcpd:{{{sid}}}:s:{k}",
                                     "-", "+", password=PASSWORD):
        f = dict(zip(fields[::2], fields[1::2]))
        out.append((parse_event_id(eid)[1], f.get("d")))
    return out


def _check_exact(dep, c, what):
    """c's call completed exactly: progress 1..N then the result, ids
    K-1..K-(N+1) across its cuts, and the primary holds just those."""
    k, head = check_ids(c.msgs, 1, what=f"{what}: {c.token}")
    expect(head == N + 1, f"{what}: {c.token} ended at {k}-{head} "
           f"({c.resumes!r})")
    last = c.msgs[-1].json
    expect(is_response(last, c.id) and result_text(last) == f"done {N}",
           f"{what}: {c.token} ended with {c.msgs[-1].data[:200]!r}")
    for e in c.msgs[:-1]:
        expect(is_progress(e.json) and e.json["params"]["progress"] ==
               parse_event_id(e.id)[1], f"{what}: {c.token}: {e.id} is "
               f"{e.data[:100]!r}")
    log = _stream_in_redis(dep, c.sid, k)
    expect([n for n, _ in log] == list(range(N + 2)), f"{what}: "
           f"{c.token}: the new primary holds {[n for n, _ in log]}")
    got = {parse_event_id(e.id)[1]: e.data for e in c.msgs}
    for n, data in log[1:]:
        expect(got.get(n) == data, f"{what}: {c.token}: {k}-{n} differs "
               "between Redis and the client")


def _check_exact_or_gone(c, what):
    """commit primary: what c got is unbroken; it ends with the result,
    with the documented error, or with a 410 that has a reason."""
    msgs = message_events(c.msgs)
    if msgs:
        k, head = check_ids(msgs, 1, what=f"{what}: {c.token}")
    if c.gone is not None:
        err = c.gone.get("error", {})
        expect(err.get("data", {}).get("reason") in ("ahead", "trimmed",
                                                     "expired"),
               f"{what}: {c.token}: 410 without a reason: {c.gone!r}")
        return "gone"
    last = msgs[-1].json
    expect(is_response(last, c.id), f"{what}: {c.token} ended with "
           f"{msgs[-1].data[:200]!r}, not its response")
    if "result" in last:
        expect(result_text(last) == f"done {N}" and head == N + 1,
               f"{what}: {c.token}: {last!r} at {head}")
        return "exact"
    expect("interrupted" in last["error"]["message"] or "event log" in
           last["error"]["message"], f"{what}: {c.token}: not the "
           f"documented error: {last!r}")
    return "error"


def _paused(d):
    """The longest 'Redis answers again after N ms' of d, in seconds."""
    ms = [int(x) for x in re.findall(r"Redis answers again after (\d+) ms",
                                     d.stderr_text())]
    return max(ms) / 1000 if ms else 0.0


def _failover_under_load(h, commit, kill):
    need_tools("node")
    what = f"{'kill -9' if kill else 'SENTINEL FAILOVER'}, commit {commit}"
    with sentinel_deployment(h, password=PASSWORD) as dep:
        conf = {"eventlog": dep.url(), "commit": commit,
                "eventlog_outage_grace": GRACE}
        a = h.start(**conf)
        b = h.start(**conf)
        mode = "exact" if commit != "primary" else "exact-or-gone"
        sdk = _sdk(f"http://127.0.0.1:{a.port}/mcp", mode)
        clients = []
        for i in range(CLIENTS):
            ready = threading.Event()
            c = _Client(a, b, i, ready)
            c.start()
            clients.append(c)
        for c in clients:
            expect(c.ready.wait(tmo(30)), f"{c.token} never streamed")
        for c in clients:
            if c.failure is not None:
                raise c.failure
        old = dep.primary_port()
        t0 = time.monotonic()
        if kill:
            killed = dep.kill_primary()
        else:
            dep.failover()
        new = dep.wait_primary_not(old)
        switched = time.monotonic() - t0
        if kill and commit != "primary":
            # The new primary has no replica: commits wait for one.
            dep.rejoin(killed, new)
        for c in clients:
            c.join(tmo(GRACE + 60))
            expect(not c.is_alive(), f"{what}: {c.token} still reading: "
                   "silence")
            if c.failure is not None:
                raise c.failure
        sdk_outcome = _sdk_result(sdk, GRACE + 60)
        done = time.monotonic() - t0
        outcomes = {}
        for c in clients:
            if commit == "primary":
                o = _check_exact_or_gone(c, what)
            else:
                _check_exact(dep, c, what)
                o = "exact"
            outcomes[o] = outcomes.get(o, 0) + 1
        for d in (a, b):
            expect(d.alive(), f"{what}: an mcpd died")
            h_ = d.healthz()
            expect(h_["redis"]["server"] == f"127.0.0.1:{new}" and
                   h_["redis"]["role"] == "master" and
                   h_["redis"]["failovers"] >= 1,
                   f"{what}: /healthz says {h_['redis']!r}, the primary "
                   f"is 127.0.0.1:{new}")
            metrics = d.request("GET", path="/metrics").body.decode()
            expect(f'server="127.0.0.1:{new}",role="master"' in metrics and
                   "mcpd_eventlog_failovers_total 1" in metrics and
                   PASSWORD not in metrics,
                   f"{what}: /metrics does not name the new primary")
        print(f"  {what}: new primary named after {switched:.1f}s; mcpd "
              f"paused {max(_paused(a), _paused(b)):.1f}s at most; all "
              f"{CLIENTS + 1} clients done after {done:.1f}s; {outcomes}, "
              f"the SDK client: {sdk_outcome}")


def test_sentinel_failover_replicas1_loses_nothing(h):
    _failover_under_load(h, "replicas:1", kill=False)


test_sentinel_failover_replicas1_loses_nothing.timeout = 150


def test_sentinel_kill9_replicas1_loses_nothing(h):
    _failover_under_load(h, "replicas:1", kill=True)


test_sentinel_kill9_replicas1_loses_nothing.timeout = 150


def test_sentinel_failover_primary_exact_or_410(h):
    _failover_under_load(h, "primary", kill=False)


test_sentinel_failover_primary_exact_or_410.timeout = 150


def test_sentinel_kill9_primary_exact_or_410(h):
    _failover_under_load(h, "primary", kill=True)


test_sentinel_kill9_primary_exact_or_410.timeout = 150
