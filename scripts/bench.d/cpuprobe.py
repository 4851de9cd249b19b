#!/usr/bin/env python3
"""How loaded the machine is, as the benchmarks see it: a fixed busy loop,
timed alone, then in two processes at once (one per core of a 2-core
machine). On an idle machine the three times are about equal; a core busy
with something else shows as a slower pair. Prints one line."""
import multiprocessing
import time


def spin(_=None):
    t = time.perf_counter()
    x = 0
    for i in range(3_000_000):
        x += i
    return time.perf_counter() - t


if __name__ == "__main__":
    alone = spin()
    with multiprocessing.Pool(2) as pool:
        pair = pool.map(spin, [0, 1])
    print(f"cpu probe: a busy loop takes {alone:.2f} s alone, "
          f"{pair[0]:.2f} s and {pair[1]:.2f} s two at once "
          f"(equal times: both cores were free)")
