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

Each mcpd must have followed exactly the failovers the sentinels made
(/healthz, /metrics' mcpd_eventlog_failovers_total and its log lines
against the leaders' +switch-master in the sentinels' logs): one, or
more when Sentinel fails back (a new primary too busy to answer its
pings within down-after-milliseconds, on a loaded machine).

Each test prints how long the failover took and how long mcpd paused.

Over TLS with a password (the servers and the sentinels on TLS ports
only): mcpd asks and watches the sentinels and reaches the primary over
TLS, and follows a SENTINEL FAILOVER. Sentinels with a password of their
own (redis_sentinel_password_file): a wrong one is an error and 503 with
its reason, the right one taken up by a reload.
"""

import os
import re
import shutil
import signal
import subprocess
import threading
import time

from mcpd_harness import (LATEST, Skip, Timeout, expect, is_response,
                          result_text, tmo)
from redisops import (Certs, ROOT, check_exact, check_exact_or_gone,
                      need_tools, sentinel_deployment, stream_in_redis)

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
    rest = p.stdout.read() if p.poll() is not None else ""
    expect(line.strip() == "started", f"failover_resume.mjs did not start "
           f"its call: {line!r}{rest}")
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


def _paused(d):
    """The longest 'Redis answers again after N ms' of d, in seconds."""
    ms = [int(x) for x in re.findall(r"Redis answers again after (\d+) ms",
                                     d.stderr_text())]
    return max(ms) / 1000 if ms else 0.0


def _followed(d):
    """[(old, new)] of every change of primary d followed, in order."""
    return [(o, n) for n, o in re.findall(
        r"the primary is now (\S+), was (\S+) \(failover \d+ seen\)",
        d.stderr_text())]


def _followed_by_all(dep, daemons, what):
    """Each daemon is on the primary the sentinels all name, and has
    followed exactly the failovers they made (one, or more: a failover
    sometimes fails back, a busy new primary having missed its pings);
    those, as dep.failovers() has them."""
    deadline = time.monotonic() + tmo(30)
    while True:
        made = dep.failovers()
        ports = {dep.primary_port(i) for i in range(len(dep.sentinels))}
        primary = f"127.0.0.1:{min(ports)}"
        seen = [(d.healthz()["redis"], _followed(d)) for d in daemons]
        if len(ports) == 1 and made and all(
                r["server"] == primary and r["role"] == "master" and
                f == made for r, f in seen):
            break
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    expect(len(made) >= 1, f"{what}: the sentinels made no failover")
    expect(len(ports) == 1, f"{what}: the sentinels name {ports} as the "
           "primary")
    for d, (r, followed) in zip(daemons, seen):
        expect(d.alive(), f"{what}: an mcpd died")
        expect(followed == made, f"{what}: an mcpd followed {followed}, "
               f"the sentinels made {made}")
        expect(r["server"] == primary and r["role"] == "master" and
               r["failovers"] == len(made), f"{what}: /healthz says "
               f"{r!r}, the primary is {primary} after {len(made)} "
               "failover(s)")
        metrics = d.request("GET", path="/metrics").body.decode()
        expect(f'server="{primary}",role="master"' in metrics and
               f"\nmcpd_eventlog_failovers_total {len(made)}\n" in
               metrics and PASSWORD not in metrics, f"{what}: /metrics "
               f"does not name the primary {primary} and its "
               f"{len(made)} failover(s)")
    return made


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
        made = _followed_by_all(dep, (a, b), what)
        expect(made[0][0] == f"127.0.0.1:{old}", f"{what}: the sentinels' "
               f"first failover was {made[0]}, the primary was {old}")
        outcomes = {}
        for c in clients:
            if commit == "primary":
                o = check_exact_or_gone(c, N, what)
            else:
                check_exact(c, N, what, lambda k: stream_in_redis(
                    f"redis://127.0.0.1:{dep.primary_port()}", c.sid, k,
                    PASSWORD), "the new primary")
                o = "exact"
            outcomes[o] = outcomes.get(o, 0) + 1
        print(f"  {what}: new primary named after {switched:.1f}s; mcpd "
              f"paused {max(_paused(a), _paused(b)):.1f}s at most; all "
              f"{CLIENTS + 1} clients done after {done:.1f}s; {outcomes}, "
              f"the SDK client: {sdk_outcome}; Sentinel failed over "
              f"{len(made)} time{'s' if len(made) > 1 else ''}")


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


def test_sentinel_over_tls_follows_a_failover(h):
    # Sentinel with TLS and a password, as for one server: the servers
    # and the sentinels listen over TLS only (certificates made with
    # openssl), so mcpd asks the sentinels, watches them and reaches the
    # primary over TLS, verified against redis_tls_ca_file. SENTINEL
    # FAILOVER: it follows, still over TLS; the session goes on.
    certs = Certs(h.workdir)
    what = "SENTINEL FAILOVER over TLS"
    with sentinel_deployment(h, password=PASSWORD,
                             tls=certs.server_files) as dep:
        d = h.start(eventlog=dep.url(), redis_tls="on",
                    redis_tls_ca_file=certs.ca)
        sid = d.initialize(LATEST)
        msg, _ = d.call(sid, "echo", {"text": "before"}, timeout=15)
        expect(result_text(msg) == "before", f"echo -> {msg!r}")
        r = d.healthz()["redis"]
        old = dep.primary_port()
        expect(r["server"] == f"127.0.0.1:{old}" and r["tls"]["enabled"]
               and r["tls"]["verify"], f"/healthz says {r!r}")
        dep.failover()
        dep.wait_primary_not(old)
        made = _followed_by_all(dep, (d,), what)
        r = d.healthz()["redis"]
        expect(r["tls"]["enabled"] and r["tls"]["verify"] and
               r["tls"]["version"].startswith("TLSv1."),
               f"{what}: /healthz says {r!r}")
        metrics = d.request("GET", path="/metrics").body.decode()
        expect('tls="on",tls_version="TLSv1.' in metrics, f"{what}: "
               "/metrics says nothing of TLS")
        msg, _ = d.call(sid, "echo", {"text": "after"}, timeout=30)
        expect(result_text(msg) == "after", f"{what}: echo -> {msg!r}")
        print(f"  {what}: followed {made}")


test_sentinel_over_tls_follows_a_failover.timeout = 90


def test_sentinel_own_password_file_wrong_then_reloaded(h):
    # The sentinels have a password of their own (not the servers'):
    # redis_sentinel_password_file. A wrong one is a clear error naming
    # the sentinel's AUTH, /readyz 503 with that reason, never shown;
    # the right one in the file and a reload (SIGHUP): mcpd asks the
    # sentinels, reaches the primary and serves.
    from test_redis_access import _never_shown, _ready, _start
    own = "sentinels-own-pw-9d2c"
    with sentinel_deployment(h, password=PASSWORD,
                             sentinel_password=own) as dep:
        pwfile = h.write("sentinel.password", "wrong-sentinel-pw-71e4\n")
        d = _start(h, [f"redis_sentinel_password_file {pwfile}"],
                   eventlog=dep.url())
        body = _ready(d, 503, 15, "a wrong sentinel password",
                      "AUTH refused")
        expect("sentinel 127.0.0.1:" in body["reason"] and
               "redis_sentinel_password_file" in body["reason"],
               f"/readyz does not name the sentinels' AUTH: {body!r}")
        d.wait_log(lambda line: ("error" in line or "warn" in line) and
                   "AUTH refused: WRONGPASS" in line and "sentinel" in line,
                   5, "a line naming the sentinels' AUTH")
        _never_shown(d, ["wrong-sentinel-pw-71e4", own, PASSWORD])
        h.write("sentinel.password", own + "\n")
        d.signal(signal.SIGHUP)
        _ready(d, 200, 20, "the sentinels' password reloaded")
        r = d.healthz()["redis"]
        expect(r["server"] == f"127.0.0.1:{dep.primary_port()}" and
               r["role"] == "master", f"/healthz says {r!r}")
        sid = d.initialize(LATEST)
        msg, _ = d.call(sid, "echo", {"text": "hi"}, timeout=15)
        expect(result_text(msg) == "hi", f"echo -> {msg!r}")
        _never_shown(d, ["wrong-sentinel-pw-71e4", own, PASSWORD])
        print(f"  /readyz said {body['reason']!r}")


test_sentinel_own_password_file_wrong_then_reloaded.timeout = 90
