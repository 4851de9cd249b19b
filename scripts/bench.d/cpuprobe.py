#!/usr/bin/env python3
"""How loaded the machine is, as the benchmarks see it: a fixed busy loop,
timed alone, then in two processes at once (one per core of a 2-core
machine). On an idle machine the three times are about equal; a core busy
with something else shows as a slower pair. Prints one line.

With --check (scripts/bench-all), it first watches /proc/stat for
--window seconds, while the probe itself runs nothing: the share of the
machine's CPU time that others spent then. It prints that too, and exits
1 when the machine is busy: others used more than --max-busy of it (0.25:
half a core of two), or the pair took more than --max-slow times as long
as the loop alone (1.3)."""
import argparse
import multiprocessing
import sys
import time


def spin(_=None):
    t = time.perf_counter()
    x = 0
    for i in range(3_000_000):
        x += i
    return time.perf_counter() - t


def cpu_times():
    """(busy, total) jiffies of all CPUs since boot."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)	# idle + iowait
    total = sum(v[:8])				# guest is in user already
    return total - idle, total


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--window", type=float, default=3.0)
    ap.add_argument("--max-busy", type=float, default=0.25)
    ap.add_argument("--max-slow", type=float, default=1.3)
    args = ap.parse_args()
    busy = None
    if args.check:
        b0, t0 = cpu_times()
        time.sleep(args.window)
        b1, t1 = cpu_times()
        busy = (b1 - b0) / max(1, t1 - t0)
    alone = spin()
    with multiprocessing.Pool(2) as pool:
        pair = pool.map(spin, [0, 1])
    print(f"cpu probe: a busy loop takes {alone:.2f} s alone, "
          f"{pair[0]:.2f} s and {pair[1]:.2f} s two at once "
          f"(equal times: both cores were free)"
          + ("" if busy is None else
             f"; others used {100 * busy:.0f}% of the CPU over "
             f"{args.window:.0f} s"))
    if args.check:
        slow = max(pair) / alone
        if busy > args.max_busy or slow > args.max_slow:
            print(f"cpu probe: busy (others {100 * busy:.0f}% > "
                  f"{100 * args.max_busy:.0f}%, or the pair {slow:.2f}x "
                  f"the loop alone > {args.max_slow:.2f}x)")
            sys.exit(1)
