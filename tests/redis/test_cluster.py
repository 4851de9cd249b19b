"""Redis Cluster (issue 25; docs/protocol.md, "Placement in Redis
Cluster"): mcpd on redis-cluster://, on the cluster scripts/with-redis
--cluster makes (three primaries, three replicas, on loopback), shared by
the tests of one run (make redis-cluster-test); in order:

- sessions spread over the primaries: of 1,000, each primary holds 25 to
  40 %;
- resharding under load: redis-cli --cluster reshard moves the slots of
  sessions whose calls stream (two mcpd, each client cut and resumed on
  the other): every call completes with its ids contiguous, nothing lost
  or repeated, and the slots' new node holds exactly what the clients
  got;
- the ACL user of docs/deployment.md with its cluster line serves;
- a write while its session's slot is half moved: the script's calls on
  keys it does not declare come first, so it answers TRYAGAIN having
  written nothing, is sent again after a back-off and lands once the
  slot has moved, while the node serves its other slots;
- a primary's failover under load (CLUSTER FAILOVER on its replica, and
  kill -9 of the primary, which then comes back as a replica) with commit
  replicas:1: the same; with commit primary, every client
  resumes exactly (its ids unbroken, the call ending with its result or
  the documented error) or is answered 410 with a reason: never a gap, a
  repeat or silence; after a failover the old primary's connections
  close and /healthz and /metrics name each node's role, slots and
  state;
- a node answering CLUSTERDOWN (a slot of the cluster unserved): an
  outage of that node, waited out, another node serving meanwhile;
- batching kept: calls streaming at once on sessions of one primary cost
  that node a script call and a read per many events, and the other
  primaries nothing.

Without that cluster (MCPD_TEST_REDIS_CLUSTER) the tests skip as tests
of another run.
"""

import os
import re
import signal
import subprocess
import threading
import time

from mcpd_harness import (LATEST, Skip, check_ids, expect, is_response,
                          parse_redis_address, redis_calls, redis_command,
                          redis_info, result_text, rpc, tmo)
from redisops import check_exact, check_exact_or_gone, stream_in_redis

URL = os.environ.get("MCPD_TEST_REDIS_URL") or ""
PORTS = [int(p) for p in
         (os.environ.get("MCPD_TEST_REDIS_CLUSTER") or "").split()]
N = 30                  # progress notifications per call
INTERVAL_MS = 100
CUTS = (3, 15)          # each client cuts after these many messages
GRACE = 45              # eventlog_outage_grace: above a reshard's pauses
SESSIONS = 1000
# The cluster's password (with-redis --cluster sets one on every node).
PASSWORD = parse_redis_address(URL)["password"] \
    if URL.startswith("redis-cluster://") else None


def _need_cluster():
    if not PORTS or not URL.startswith("redis-cluster://"):
        raise Skip("needs the cluster of scripts/with-redis --cluster "
                   "(make redis-cluster-test)", other_run=True)


def _node(port, *args):
    return redis_command(f"redis://127.0.0.1:{port}", *args,
                         password=PASSWORD)


def _shards():
    """{primary port: (node id, [(first, last) slot ranges], [replica
    ports])} as the cluster says now."""
    out = {}
    for shard in _node(PORTS[0], "CLUSTER", "SHARDS"):
        s = dict(zip(shard[::2], shard[1::2]))
        nodes = [dict(zip(n[::2], n[1::2])) for n in s["nodes"]]
        primary = [n for n in nodes if n["role"] == "master"]
        if not primary or not s["slots"]:
            continue
        p = primary[0]
        ranges = list(zip(s["slots"][::2], s["slots"][1::2]))
        out[int(p["port"])] = (p["id"], [(int(a), int(b)) for a, b in
                                          ranges],
                               [int(n["port"]) for n in nodes
                                if n["role"] == "replica"])
    return out


def _owner(slot):
    for port, (_, ranges, _) in _shards().items():
        if any(a <= slot <= b for a, b in ranges):
            return port
    return None


def _slot(sid):
    return _node(PORTS[0], "CLUSTER", "KEYSLOT", sid)


class _Client(threading.Thread):
    """One client on session sid: a stream call on A, cut after CUTS[0]
    messages and resumed on B, cut again after CUTS[1] and resumed on A,
    read to its end."""

    def __init__(self, a, b, sid, i):
        super().__init__(daemon=True)
        self.a, self.b, self.sid = a, b, sid
        self.token = f"c{i}"
        self.ready = threading.Event()
        self.msgs = []
        self.resumes = []
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
        while until is None or len(self.msgs) < until:
            m = r.next_message(GRACE + 15)
            if m is None:
                return
            self.msgs.append(m[0])
        r.cut()

    def _done(self):
        return self.msgs and is_response(self.msgs[-1].json, self.id)

    def _run(self):
        a, b = self.a, self.b
        b.versions[self.sid] = LATEST
        self.id, r = a.call_open(self.sid, "stream", {
            "n": N, "interval_ms": INTERVAL_MS}, self.token)
        expect(r.status == 200 and r.is_sse, f"{self.token}: stream -> "
               f"HTTP {r.status}")
        self._read(r, CUTS[0])
        self.ready.set()
        cut_at = [CUTS[1]]
        d = b
        while not self._done():
            expect(len(self.resumes) < 8, f"{self.token}: resumed "
                   f"{len(self.resumes)} times: {self.resumes!r}")
            last = self.msgs[-1].id
            g = d.get_sse(self.sid, last, timeout=GRACE + 15)
            self.resumes.append((g.status, None if g.is_sse else
                                 g.body[:300]))
            if g.status == 410:
                self.gone = g.json
                return
            expect(g.status == 200 and g.is_sse, f"{self.token}: resume "
                   f"after {last} -> HTTP {g.status} "
                   f"{self.resumes[-1][1]!r}")
            self._read(g, cut_at.pop() if cut_at else None)
            d = a if d is b else b


def _kill9(port):
    """kill -9 of the node on port; returns how to start it again (it
    rejoins the cluster as it was: its nodes.conf is kept)."""
    info = _node(port, "INFO", "server")
    pid = int(re.search(r"^process_id:(\d+)", info, re.M).group(1))
    d = _node(port, "CONFIG", "GET", "dir")[1]
    os.kill(pid, signal.SIGKILL)
    argv = ["redis-server", "--bind", "127.0.0.1", "--port", str(port),
            "--dir", d, "--save", "", "--appendonly", "no",
            "--maxmemory-policy", "noeviction", "--daemonize", "yes",
            "--pidfile", os.path.join(d, "redis.pid"), "--logfile",
            os.path.join(d, "redis.log"), "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", "2000", "--requirepass", PASSWORD,
            "--masterauth", PASSWORD]
    return argv


def _sessions_in(a, want, count, tries=2000):
    """count new sessions whose slot want(slot) accepts."""
    sids = []
    for _ in range(tries):
        sid = a.initialize(LATEST)
        if want(_slot(sid)):
            sids.append(sid)
            if len(sids) == count:
                return sids
    raise AssertionError(f"only {len(sids)} of {count} sessions in the "
                         f"slots wanted after {tries} tries")


def _under_load(h, commit, sids_of, act, what, exact=True):
    """Clients stream on sessions sids_of(a) while act() runs; every call
    must complete exactly (exact=False: or end as commit primary may)."""
    conf = {"commit": commit, "eventlog_outage_grace": GRACE}
    a = h.start(**conf)
    b = h.start(**conf)
    sids = sids_of(a)
    clients = [_Client(a, b, sid, i) for i, sid in enumerate(sids)]
    for c in clients:
        c.start()
    for c in clients:
        expect(c.ready.wait(tmo(30)), f"{c.token} never streamed")
        if c.failure is not None:
            raise c.failure
    t0 = time.monotonic()
    act()
    acted = time.monotonic() - t0
    for c in clients:
        c.join(tmo(GRACE + 60))
        expect(not c.is_alive(), f"{what}: {c.token} still reading: "
               "silence")
        if c.failure is not None:
            # What both instances said of Redis, not only their last lines.
            for d in (a, b):
                print(f"  --- {d.conf_path}: warnings")
                for line in d.stderr_text().splitlines():
                    if " warn " in line or " error " in line:
                        print(f"  {line[:300]}")
            raise c.failure
    outcomes = {}
    for c in clients:
        if exact:
            check_exact(c, N, what, lambda k: stream_in_redis(
                URL, c.sid, k), "the cluster")
            o = "exact"
        else:
            o = check_exact_or_gone(c, N, what)
        outcomes[o] = outcomes.get(o, 0) + 1
    for d in (a, b):
        expect(d.alive(), f"{what}: an mcpd died")
        expect(d.healthz()["redis"]["role"] == "cluster",
               f"{what}: /healthz says {d.healthz()['redis']!r}")
    resumes = sum(len(c.resumes) for c in clients)
    print(f"  {what}: {len(clients)} calls {outcomes}, {resumes} resumes; "
          f"the change took {acted:.1f}s")
    return a, b


def test_cluster_sessions_spread(h):
    _need_cluster()
    a = h.start()
    sids = {a.initialize(LATEST) for _ in range(SESSIONS)}
    counts = {}
    for port in _shards():
        n = 0
        cursor = "0"
        while True:
            cursor, keys = _node(port, "SCAN", cursor, "MATCH",
                                 "mcpd:{*}:meta", "COUNT", "1000")
            n += sum(1 for k in keys if k[6:-6] in sids)
            if cursor == "0":
                break
        counts[port] = n
    expect(sum(counts.values()) == SESSIONS, f"sessions found on the "
           f"primaries: {counts}, of {SESSIONS}")
    for port, n in counts.items():
        expect(0.25 * SESSIONS <= n <= 0.40 * SESSIONS, f"primary {port} "
               f"holds {n} of {SESSIONS} sessions: {counts}")
    print(f"  {SESSIONS} sessions on the primaries: "
          f"{sorted(counts.values())}")


test_cluster_sessions_spread.timeout = 120


def test_cluster_reshard_under_load(h):
    _need_cluster()
    need = 1000                 # slots moved
    shards = _shards()
    src = max(shards, key=lambda p: sum(b - a + 1 for a, b in
                                        shards[p][1]))
    dst = next(p for p in shards if p != src)
    first, last = shards[src][1][0]
    moved = range(first, min(last, first + need - 1) + 1)

    def act():
        # redis-cli moves the source's lowest slots first.
        r = subprocess.run(
            ["redis-cli", "--no-auth-warning", "-a", PASSWORD,
             "--cluster", "reshard", f"127.0.0.1:{src}",
             "--cluster-from", shards[src][0], "--cluster-to",
             shards[dst][0], "--cluster-slots", str(need),
             "--cluster-yes"], stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=tmo(120))
        expect(r.returncode == 0, f"redis-cli --cluster reshard: "
               f"{r.stdout[-2000:]}{r.stderr[-2000:]}")

    sids = []
    a, b = _under_load(h, "primary", lambda a: sids.extend(
        _sessions_in(a, lambda s: s in moved, 8)) or sids, act,
        f"reshard of {need} slots from {src} to {dst}")
    # Both instances followed the slots (MOVED, then a new map).
    for d in (a, b):
        expect(len(re.findall(r"slot map from ", d.stderr_text())) >= 2,
               f"{d.conf_path}: the slot map never changed")
    for sid in sids:
        expect(_owner(_slot(sid)) == dst, f"session {sid}'s slot "
               f"{_slot(sid)} did not move to {dst}")


test_cluster_reshard_under_load.timeout = 240


def _manual_failover(replica):
    """CLUSTER FAILOVER on replica until it is a master. Redis abandons a
    manual failover not done within its own limit (5 s: the primary holds
    its clients while the replica catches up and wins the primaries'
    votes, which a loaded machine can make slower), so it is asked again,
    as Redis's documentation says to."""
    deadline = time.monotonic() + tmo(60)
    while True:
        expect(_node(replica, "CLUSTER", "FAILOVER") == "OK",
               "CLUSTER FAILOVER refused")
        again = time.monotonic() + 10
        while time.monotonic() < again:
            if _node(replica, "ROLE")[0] == "master":
                return
            time.sleep(0.1)
        expect(time.monotonic() < deadline, f"{replica} never took over")


def test_cluster_failover_replicas1_loses_nothing(h):
    _need_cluster()
    shards = _shards()
    port = next(p for p in shards if shards[p][2])
    replica = shards[port][2][0]
    ranges = shards[port][1]

    def act():
        _manual_failover(replica)

    a, b = _under_load(h, "replicas:1", lambda a: _sessions_in(
        a, lambda s: any(x <= s <= y for x, y in ranges), 8), act,
        f"CLUSTER FAILOVER of {port} to {replica}, commit replicas:1")
    # The old primary is out of the map: its connections close, and
    # /healthz and /metrics say so; the new one serves its slots.
    nslots = sum(y - x + 1 for x, y in ranges)
    for d in (a, b):
        old = _node_state(d, port, lambda n: n["state"] == "closed",
                          f"{port} out of the map after its failover")
        expect(old["slots"] == 0 and "role" not in old, f"{port}: {old!r}")
        new = _node_state(d, replica, lambda n: n["state"] == "ready",
                          f"{replica} serving")
        expect(new["role"] == "master" and new["slots"] == nslots,
               f"{replica}: {new!r}, expected master of {nslots} slots")
        expect(_connections(d, port) == 0, f"{d.conf_path}: connections "
               f"to {port} open after it left the map")
        text = d.request("GET", path="/metrics").body.decode()
        for line in (f'mcpd_eventlog_node_info{{server="127.0.0.1:{port}",'
                     f'role="",state="closed"}} 1',
                     f'mcpd_eventlog_node_info{{server="127.0.0.1:'
                     f'{replica}",role="master",state="ready"}} 1',
                     f'mcpd_eventlog_node_slots{{server="127.0.0.1:'
                     f'{replica}"}} {nslots}'):
            expect(line in text.splitlines(), f"/metrics has no {line}")
    # Back as it was: the old primary is in the map again, connected.
    _manual_failover(port)
    for d in (a, b):
        back = _node_state(d, port, lambda n: n["state"] == "ready" and
                           n["slots"] == nslots, f"{port} serving again")
        expect(back["role"] == "master", f"{port}: {back!r}")
        expect(_connections(d, port) > 0, f"{d.conf_path}: no connection "
               f"to {port} once it serves again")


test_cluster_failover_replicas1_loses_nothing.timeout = 240


def _node_state(d, port, want, what):
    """The entry of /healthz's redis.nodes for port once want(entry):
    the map is read again every 10 s at least."""
    deadline = time.monotonic() + tmo(30)
    while True:
        nodes = d.healthz()["redis"].get("nodes", [])
        n = next((n for n in nodes
                  if n["server"] == f"127.0.0.1:{port}"), None)
        if n is not None and want(n):
            return n
        expect(time.monotonic() < deadline, f"{d.conf_path}: {what}: "
               f"/healthz nodes {nodes!r}")
        time.sleep(0.1)


def _connections(d, port):
    """TCP connections of d's process to 127.0.0.1:port, established."""
    pid = d.proc.pid
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    n = 0
    with open(f"/proc/{pid}/net/tcp") as f:
        for line in f.read().splitlines()[1:]:
            fields = line.split()
            remote, state, inode = fields[2], fields[3], fields[9]
            if (inode in inodes and state == "01" and
                    int(remote.split(":")[1], 16) == port):
                n += 1
    return n


def test_cluster_failover_primary_exact_or_410(h):
    """CLUSTER FAILOVER waits for the replica to catch up: with commit
    primary too, clients resume exactly (or, were a commit lost, 410)."""
    _need_cluster()
    shards = _shards()
    port = next(p for p in shards if shards[p][2])
    replica = shards[port][2][0]
    ranges = shards[port][1]

    def act():
        _manual_failover(replica)

    _under_load(h, "primary", lambda a: _sessions_in(
        a, lambda s: any(x <= s <= y for x, y in ranges), 8), act,
        f"CLUSTER FAILOVER of {port} to {replica}, commit primary",
        exact=False)


test_cluster_failover_primary_exact_or_410.timeout = 180


def _failover_by_kill(h, commit):
    _need_cluster()
    shards = _shards()
    port = next(p for p in shards if shards[p][2])
    replica = shards[port][2][0]
    ranges = shards[port][1]
    what = f"kill -9 of {port} ({replica} takes over), commit {commit}"

    def act():
        argv = _kill9(port)
        deadline = time.monotonic() + tmo(60)
        while _node(replica, "ROLE")[0] != "master":
            expect(time.monotonic() < deadline, f"{replica} never took "
                   "over")
            time.sleep(0.1)
        # Back, as the new primary's replica: commit replicas:1 can be
        # met again.
        subprocess.run(argv, check=True, stdin=subprocess.DEVNULL,
                       timeout=tmo(10))
        while True:
            try:
                if _node(port, "ROLE")[0] == "slave":
                    break
            except (OSError, AssertionError):
                pass
            expect(time.monotonic() < deadline, f"{port} never came back "
                   "as a replica")
            time.sleep(0.1)

    _under_load(h, commit, lambda a: _sessions_in(
        a, lambda s: any(x <= s <= y for x, y in ranges), 8), act, what,
        exact=commit != "primary")


def test_cluster_kill9_replicas1_loses_nothing(h):
    _failover_by_kill(h, "replicas:1")


test_cluster_kill9_replicas1_loses_nothing.timeout = 180


def test_cluster_kill9_primary_exact_or_410(h):
    _failover_by_kill(h, "primary")


test_cluster_kill9_primary_exact_or_410.timeout = 180


def test_cluster_acl_documented_rules(h):
    """The ACL user of docs/deployment.md, with the line its Redis
    Cluster section adds, on every node: two mcpd on it serve a streamed
    call and its resume on the other instance exactly."""
    _need_cluster()
    from redisops import ROOT, acl_rules
    with open(os.path.join(ROOT, "docs", "deployment.md")) as f:
        m = re.search(r"^ACL SETUSER mcpd (\+spublish .*)$", f.read(), re.M)
    expect(m is not None, "docs/deployment.md has no cluster line "
           "\"ACL SETUSER mcpd +spublish ...\"")
    pw = "acl-" + os.urandom(8).hex()
    try:
        for port in PORTS:
            _node(port, "ACL", "SETUSER", "mcpd", *acl_rules(pw))
            _node(port, "ACL", "SETUSER", "mcpd", *m.group(1).split())
        nodes = parse_redis_address(URL)["nodes"]
        url = f"redis-cluster://mcpd:{pw}@" + ",".join(
            f"{host}:{port}" for host, port in nodes)
        a = h.start(eventlog=url)
        b = h.start(eventlog=url)
        for d in (a, b):
            expect(d.request("GET", path="/readyz").status == 200,
                   f"not ready as the documented ACL user:\n"
                   f"{d.stderr_tail(10)}")
        sid = a.initialize(LATEST)
        b.versions[sid] = LATEST
        id, r = a.call_open(sid, "stream", {"n": 6, "interval_ms": 50},
                            "acl")
        first = r.next_message(10)
        r.cut()
        g = b.get_sse(sid, first[0].id)
        expect(g.status == 200 and g.is_sse, f"resume -> HTTP {g.status}")
        msgs = [first[0]]
        while True:
            m2 = g.next_message(10)
            if m2 is None:
                break
            msgs.append(m2[0])
        k, head = check_ids(msgs, 1, what="as the ACL user")
        expect(head == 7 and is_response(msgs[-1].json, id) and
               result_text(msgs[-1].json) == "done 6",
               f"as the ACL user: ended at {head} with "
               f"{msgs[-1].data[:200]!r}")
    finally:
        h.stop_all()
        for port in PORTS:
            _node(port, "ACL", "DELUSER", "mcpd")


test_cluster_acl_documented_rules.timeout = 60



def test_cluster_store_while_its_slot_moves(h):
    """The script reaches keys it does not declare (a session's other
    streams, whose lifetimes a write renews) only before writing, with
    pcall: while the session's slot is half moved (its open standalone
    stream on the new node already), a logging/setLevel's store answers
    TRYAGAIN from the script and writes nothing; mcpd sends that store
    again after a back-off, and once the slot has moved the store lands
    there and is answered. Only that slot waits: a session of another slot
    on the same node is served meanwhile, on the same connection (a
    TRYAGAIN is not an outage of the node)."""
    _need_cluster()
    # session_ttl 10: a write renews open streams when the last renewal
    # is 5 s old.
    a = h.start(eventlog_outage_grace=GRACE, session_ttl=10)
    sid = a.initialize(LATEST)
    g = a.get_sse(sid)
    expect(g.status == 200 and g.is_sse, f"GET -> HTTP {g.status}")
    slot = _slot(sid)
    shards = _shards()
    src = _owner(slot)
    # Another session whose slot is on the same node (one in three is).
    for _ in range(100):
        other = a.initialize(LATEST)
        if _owner(_slot(other)) == src and _slot(other) != slot:
            break
    else:
        raise AssertionError(f"no session of 100 on node {src}")
    dst = next(p for p in shards if p != src)
    src_id, dst_id = shards[src][0], shards[dst][0]
    meta = f"mcpd:{{{sid}}}:meta"
    deadline = time.monotonic() + tmo(10)
    while True:
        streams = [k for k in _node(src, "CLUSTER", "GETKEYSINSLOT", slot,
                                    100) if ":s:" in k]
        if streams:
            break
        expect(time.monotonic() < deadline, "no standalone stream")
        time.sleep(0.05)
    renewed = int(_node(src, "HGET", meta, "t"))
    time.sleep(5.5)     # the renewal is due (on Redis's data, not a race)
    before = _node(src, "HGET", meta, "m")

    def migrate(key):
        r = _node(src, "MIGRATE", "127.0.0.1", dst, "", 0, 5000, "AUTH",
                  PASSWORD, "KEYS", key)
        expect(r == "OK", f"MIGRATE {key}: {r!r}")

    _node(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
    _node(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
    migrate(streams[0])
    out = {}
    t = threading.Thread(target=lambda: out.update(r=a.post(
        sid, rpc("logging/setLevel", {"level": "error"}, 9),
        timeout=GRACE)), daemon=True)
    t.start()
    a.wait_log(lambda line: "the session's keys are moving" in line, 15,
               "the script's TRYAGAIN")
    expect(_node(src, "HGET", meta, "m") == before and
           int(_node(src, "HGET", meta, "t")) == renewed,
           "the store wrote before it could renew every stream")
    # The store waits; the node serves another slot's session meanwhile.
    r = a.post(other, rpc("tools/call", {"name": "echo", "arguments": {
        "text": "meanwhile"}}, 10), timeout=10)
    expect(r.status == 200 and result_text(r.rpc(10)) == "meanwhile",
           f"echo on {src} while a slot there waits: HTTP {r.status} "
           f"{r.body[:200]!r}")
    expect(_node(src, "HGET", meta, "m") == before,
           "the store wrote while its slot was half moved")
    expect(f"127.0.0.1:{src}: command connection lost" not in
           a.stderr_text(), "TRYAGAIN took the node's connection down:\n"
           + a.stderr_tail())
    for key in _node(src, "CLUSTER", "GETKEYSINSLOT", slot, 100):
        migrate(key)
    for port in (dst, src):
        _node(port, "CLUSTER", "SETSLOT", slot, "NODE", dst_id)
    t.join(tmo(GRACE + 5))
    expect("r" in out and out["r"].status == 200, f"setLevel -> "
           f"{out.get('r') and out['r'].status}")
    # The record is stored after the answer: it lands on the new node.
    deadline = time.monotonic() + tmo(15)
    while '"error"' not in (_node(dst, "HGET", meta, "m") or ""):
        expect(time.monotonic() < deadline, f"the new node holds "
               f"{_node(dst, 'HGET', meta, 'm')!r}")
        time.sleep(0.05)
    expect(int(_node(dst, "HGET", meta, "t")) > renewed,
           "the store landed without renewing the streams")
    g.close()


test_cluster_store_while_its_slot_moves.timeout = 90


def test_cluster_clusterdown_waited_out(h):
    """-CLUSTERDOWN (a node that finds a slot of the cluster unserved
    answers it to every command with a key) is an outage of that node:
    a call on a session there waits within eventlog_outage_grace, a
    session on another node is served meanwhile, and once the slot is
    served again the call completes."""
    _need_cluster()
    a = h.start(eventlog_outage_grace=GRACE)
    shards = _shards()
    src = next(iter(shards))
    ranges = shards[src][1]

    def on_src(s):
        return any(x <= s <= y for x, y in ranges)

    sid = _sessions_in(a, on_src, 1)[0]
    other = _sessions_in(a, lambda s: not on_src(s), 1)[0]
    gone = ranges[0][0] if ranges[0][0] != _slot(sid) else ranges[0][0] + 1
    expect(_node(src, "CLUSTER", "DELSLOTS", gone) == "OK",
           "CLUSTER DELSLOTS refused")
    out = {}
    try:
        deadline = time.monotonic() + tmo(15)
        while "cluster_state:fail" not in _node(src, "CLUSTER", "INFO"):
            expect(time.monotonic() < deadline, f"{src} never down")
            time.sleep(0.05)
        t = threading.Thread(target=lambda: out.update(r=a.post(
            sid, rpc("tools/call", {"name": "echo", "arguments": {
                "text": "down"}}, 5), timeout=GRACE)), daemon=True)
        t.start()
        a.wait_log(lambda line: "CLUSTERDOWN" in line, 15,
                   "the node's CLUSTERDOWN")
        r = a.post(other, rpc("tools/call", {"name": "echo", "arguments": {
            "text": "elsewhere"}}, 6), timeout=10)
        expect(r.status == 200 and result_text(r.rpc(6)) == "elsewhere",
               f"echo on another node: HTTP {r.status} {r.body[:200]!r}")
        expect(t.is_alive(), "the call was answered while its node was "
               "down")
    finally:
        _node(src, "CLUSTER", "ADDSLOTS", gone)
    t.join(tmo(GRACE + 5))
    expect("r" in out and out["r"].status == 200 and
           result_text(out["r"].rpc(5)) == "down",
           f"the call after the node came back: "
           f"{out.get('r') and out['r'].status}")
    deadline = time.monotonic() + tmo(15)
    while "cluster_state:ok" not in _node(src, "CLUSTER", "INFO"):
        expect(time.monotonic() < deadline, f"{src} never back")
        time.sleep(0.05)


test_cluster_clusterdown_waited_out.timeout = 90


def _node_work(port):
    """(script calls, reads) a node has served: INFO's EVALSHA calls and
    total_reads_processed (each read one batch a client wrote)."""
    info = redis_info(f"redis://127.0.0.1:{port}", password=PASSWORD)
    return (redis_calls(info, "evalsha"),
            int(info["total_reads_processed"]))


def test_cluster_appends_batched_per_node(h):
    """Batching kept on the cluster path (issue 25): calls streaming at
    once on sessions of one primary have their appends of a loop turn go
    to that node together: one script call per stream per turn, one write
    per node per turn, so the node runs far fewer scripts and reads than
    the events it stores (a round trip per event would be at least one of
    each per event), and the other primaries store none of them."""
    _need_cluster()
    a = h.start()
    shards = _shards()
    port = sorted(shards)[0]
    ranges = shards[port][1]
    sids = _sessions_in(a, lambda s: any(x <= s <= y for x, y in ranges), 4)
    n = 200
    events = n * len(sids)
    before = {p: _node_work(p) for p in shards}
    out = [None] * len(sids)

    def run(i):
        try:
            out[i] = a.call(sids[i], "stream", {"n": n}, f"b{i}",
                            timeout=60)
        except BaseException as e:      # reported below
            out[i] = e

    threads = [threading.Thread(target=run, args=(i,), daemon=True)
               for i in range(len(sids))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(tmo(90))
    after = {p: _node_work(p) for p in shards}
    for i, got in enumerate(out):
        expect(isinstance(got, tuple), f"call {i}: {got!r}")
        msg, r = got
        progress = [m for m in r.messages() if m.get("method") ==
                    "notifications/progress"]
        expect(len(progress) == n and result_text(msg) == f"done {n}",
               f"call {i}: {len(progress)} progress, {msg!r}")
    calls = after[port][0] - before[port][0]
    reads = after[port][1] - before[port][1]
    print(f"  {events} events on primary {port}: {calls} script calls, "
          f"{reads} reads")
    # What else reached the node meanwhile (session reads, INFO, a map
    # refresh) is a handful; a round trip per event would be `events`.
    expect(calls <= events // 8, f"{calls} script calls on {port} for "
           f"{events} events: appends not batched per stream")
    expect(reads <= events // 8, f"{reads} reads on {port} for {events} "
           f"events: a round trip per append")
    for p in shards:
        if p != port:
            c = after[p][0] - before[p][0]
            expect(c <= 4, f"primary {p} ran {c} scripts for calls on "
                   f"{port}'s sessions")


test_cluster_appends_batched_per_node.timeout = 120
