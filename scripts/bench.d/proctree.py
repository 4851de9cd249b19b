#!/usr/bin/env python3
"""A process and everything under it, from /proc, in one pass:

    proctree.py pids PID   every pid of the tree, one a line
    proctree.py mem PID    "PROCESSES RSS_KIB PSS_KIB", summed over the tree
    proctree.py cpu PID    "TREE ROOT": utime+stime of the tree's live
                           processes and of PID alone (clock ticks)

RSS counts a shared page once per process that maps it; PSS divides it
among them, so the PSS sum is what the tree costs the machine."""
import os
import sys


def stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    return s[s.rindex(")") + 2:].split()


def tree(root):
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                children.setdefault(int(stat(name)[1]), []).append(int(name))
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def field(path, key):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def main():
    what, root = sys.argv[1], int(sys.argv[2])
    pids = tree(root)
    if what == "pids":
        print("\n".join(map(str, pids)))
    elif what == "mem":
        n = rss = pss = 0
        for p in pids:
            r = field(f"/proc/{p}/status", "VmRSS:")
            if r is None:
                continue
            n += 1
            rss += r
            pss += field(f"/proc/{p}/smaps_rollup", "Pss:") or 0
        print(n, rss, pss)
    elif what == "cpu":
        t = own = 0
        for p in pids:
            try:
                s = stat(p)
                c = int(s[11]) + int(s[12])
            except (OSError, IndexError, ValueError):
                continue
            t += c
            if p == root:
                own = c
        print(t, own)


if __name__ == "__main__":
    main()
