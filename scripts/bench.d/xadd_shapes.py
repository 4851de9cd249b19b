#!/usr/bin/env python3
"""Redis's own CPU per stream entry, appended five ways: what bounds
`stream n=100` against `redis-benchmark -P 16 XADD` (scripts/bench-redis).

    xadd_shapes.py PORT [BATCHES]

On the Redis at 127.0.0.1:PORT (flushed: a bench server only), BATCHES
[300] sends of 16 streams x 102 entries each way, pipelined in one write
per send; INFO's used_cpu (user + system) over the entries written:

  1. XADD, a 16-byte value, `*` id: redis-benchmark's shape, the reference;
  2. the same with the 115-byte progress notification mcpd stores;
  3. that with explicit ids K-N, as mcpd writes them;
  4. one EVAL per stream looping over its 102 XADDs (the loop alone, none
     of the append script's checks): what Lua adds;
  5. MULTI, the 102 XADDs, EXEC: what a transaction adds instead.

Twice over, each way's median printed (us per entry). The client's own
speed does not enter: only Redis's CPU is counted.
"""

import socket
import statistics
import sys

PROGRESS = (b'{"jsonrpc":"2.0","method":"notifications/progress","params":'
            b'{"progressToken":"tok-0001","progress":57,"total":100}}')
SMALL = b"0123456789abcdef"
LOOP = (b"for j = 1, #ARGV, 2 do redis.call('XADD', KEYS[1], ARGV[j], 'd', "
        b"ARGV[j + 1]) end return 1")
STREAMS, ENTRIES = 16, 102


def enc(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Redis:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.f = self.sock.makefile("rb")

    def reply(self):
        line = self.f.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"-":
            raise SystemExit(f"xadd_shapes: redis said {rest.decode()}")
        if kind in (b"+", b":"):
            return rest
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2]
        if kind == b"*":
            return [self.reply() for _ in range(max(int(rest), 0))]
        raise SystemExit(f"xadd_shapes: bad reply {line!r}")

    def send(self, data, replies):
        self.sock.sendall(data)
        for _ in range(replies):
            self.reply()

    def cmd(self, *args):
        self.sock.sendall(enc(*args))
        return self.reply()

    def cpu(self):
        info = self.cmd("INFO", "cpu").decode()
        f = dict(l.split(":", 1) for l in info.split("\r\n") if ":" in l)
        return float(f["used_cpu_user"]) + float(f["used_cpu_sys"])


def ids(n, s):
    return [b"%d-%d" % (n * STREAMS + s + 1, i + 1) for i in range(ENTRIES)]


def reference(value):
    def send(n):
        one = enc("XADD", "mcpd:shapes:%d" % (n % 64), "*", "d", value)
        return one * (STREAMS * ENTRIES), STREAMS * ENTRIES
    return send


def explicit(n):
    out = [enc("XADD", "mcpd:shapes:%d" % s, i, "d", PROGRESS)
           for s in range(STREAMS) for i in ids(n, s)]
    return b"".join(out), len(out)


def loop(sha):
    def send(n):
        out = []
        for s in range(STREAMS):
            args = [a for i in ids(n, s) for a in (i, PROGRESS)]
            out.append(enc("EVALSHA", sha, 1, "mcpd:shapes:%d" % s, *args))
        return b"".join(out), STREAMS
    return send


def multi(n):
    out = []
    for s in range(STREAMS):
        out.append(enc("MULTI"))
        out += [enc("XADD", "mcpd:shapes:%d" % s, i, "d", PROGRESS)
                for i in ids(n, s)]
        out.append(enc("EXEC"))
    return b"".join(out), len(out)


def measure(r, build, batches):
    r.cmd("FLUSHALL")
    before = r.cpu()
    for n in range(batches):
        data, replies = build(n)
        r.send(data, replies)
    used = r.cpu() - before
    r.cmd("FLUSHALL")
    return used * 1e6 / (batches * STREAMS * ENTRIES)


def main():
    port = int(sys.argv[1])
    batches = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    r = Redis(port)
    sha = r.cmd("SCRIPT", "LOAD", LOOP)
    ways = [
        ("XADD, 16-byte value, * id (redis-benchmark's)", reference(SMALL)),
        ("XADD, mcpd's %d-byte progress message" % len(PROGRESS),
         reference(PROGRESS)),
        ("  the same with explicit ids K-N", explicit),
        ("  one EVAL looping over 102 XADDs", loop(sha)),
        ("  MULTI, 102 XADDs, EXEC", multi),
    ]
    got = {name: [] for name, _ in ways}
    for _ in range(2):
        for name, build in ways:
            got[name].append(measure(r, build, batches))
    print("Redis CPU per stream entry (us), %d sends of %d streams x %d "
          "entries:" % (batches, STREAMS, ENTRIES))
    for name, _ in ways:
        print("  %-50s %5.2f" % (name, statistics.median(got[name])))


if __name__ == "__main__":
    main()
