#!/usr/bin/env python3
"""
Cluster test runner (issue 12): nginx in front of three mcpd on one Redis.

    sh scripts/with-redis python3 tests/cluster/run.py --mcpd ./mcpd [-k PAT]

Discovers the plain functions named test_* in tests/cluster/test_*.py; each
takes one argument, a cluster.Cluster already started: three mcpd on the
redis-server of MCPD_TEST_REDIS_URL (without it, a private one started for
the run), nginx with conf/nginx.conf in front (Cluster.front). Every test
runs under a timeout (fn.timeout, default 60 s). After each test, whatever
happened, nginx and every mcpd are stopped; the test fails if an mcpd died
unexpectedly, exited non-zero, or left a sanitizer report.

The last line printed is exactly "N passed, N failed"; the exit status is
non-zero if any test failed or none ran.
"""

import argparse
import fnmatch
import importlib
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cluster  # noqa: E402
import mcpd_harness  # noqa: E402

DEFAULT_TIMEOUT = 60


class TestTimeout(BaseException):
    """Raised in the test by SIGALRM; BaseException so that no test's
    `except Exception` swallows it."""


def _alarm(signum, frame):
    raise TestTimeout()


def _terminate(signum, frame):
    # Killed (make interrupted, CI timeout): stop what the test started
    # on the way out, as Ctrl-C does.
    raise KeyboardInterrupt()


def discover():
    tests = []
    for fname in sorted(os.listdir(HERE)):
        if not (fname.startswith("test_") and fname.endswith(".py")):
            continue
        modname = fname[:-3]
        mod = importlib.import_module(modname)
        for name, obj in vars(mod).items():
            if name.startswith("test_") and callable(obj) and \
                    getattr(obj, "__module__", None) == modname:
                tests.append((f"{modname}::{name}", obj))
    return tests


def _matches(pattern, name):
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatch(name, pattern) or \
            fnmatch.fnmatch(name.split("::")[1], pattern)
    return pattern in name


def _short_traceback(exc):
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.endswith("run.py")
              and os.path.dirname(os.path.abspath(f.filename)) in
              (HERE, os.path.join(cluster.ROOT, "tests", "e2e"))]
    lines = [f"    {os.path.basename(f.filename)}:{f.lineno} in {f.name}: "
             f"{(f.line or '').strip()}" for f in frames[-6:]]
    msg = "".join(traceback.format_exception_only(type(exc), exc))
    return "\n".join(lines) + "\n    " + msg.strip().replace("\n", "\n    ")


def _indent(text):
    return "\n".join("    | " + line for line in text.splitlines())


def run_one(name, fn, args, workroot, redis_url):
    workdir = tempfile.mkdtemp(prefix=name.replace("::", ".") + ".",
                               dir=workroot)
    h = mcpd_harness.Harness(args.mcpd, args.sanitized, workdir)
    c = cluster.Cluster(h, redis_url)
    timeout = getattr(fn, "timeout", DEFAULT_TIMEOUT) * mcpd_harness.SLOW
    failure = None
    t0 = time.monotonic()
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        try:
            c.start()
            fn(c)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except TestTimeout:
        failure = f"    test timed out after {timeout:.0f}s"
    except KeyboardInterrupt:
        c.stop()
        raise
    except BaseException as e:  # noqa: B902 - report everything
        failure = _short_traceback(e)
        if args.verbose:
            failure += "\n" + "".join(traceback.format_exception(e))
    c.stop()
    problems = c.problems + h.teardown()
    elapsed = time.monotonic() - t0
    if problems:
        extra = "\n".join(f"    daemon: {p}" for p in problems)
        failure = extra if failure is None else failure + "\n" + extra
    if failure is not None:
        print(f"FAIL {name} ({elapsed:.1f}s)\n{failure}")
        print(_indent(c.stderr_tails(40 if problems else 20)))
    else:
        print(f"ok   {name} ({elapsed:.1f}s)")
        shutil.rmtree(workdir, ignore_errors=True)
    sys.stdout.flush()
    return failure is None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mcpd", required=True, help="the binary under test")
    ap.add_argument("--sanitized", action="store_true",
                    help="ASan/LSan/UBSan build: slower timeouts")
    ap.add_argument("-k", dest="pattern", action="append",
                    help="run tests whose module::name contains PATTERN "
                    "(or matches it as a glob); repeatable")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="full tracebacks")
    args = ap.parse_args()
    args.mcpd = os.path.abspath(args.mcpd)
    if args.sanitized:
        mcpd_harness.SLOW = 3.0

    signal.signal(signal.SIGTERM, _terminate)
    tests = discover()
    if args.pattern:
        tests = [t for t in tests
                 if any(_matches(p, t[0]) for p in args.pattern)]

    passed = failed = 0
    missing = None
    if not os.access(args.mcpd, os.X_OK):
        missing = f"mcpd binary {args.mcpd} is missing or not executable"
    elif cluster.nginx_path() is None:
        missing = "nginx is not installed (run scripts/install-deps)"
    elif mcpd_harness.redis_server_path() is None:
        missing = "redis-server is not installed (run scripts/install-deps)"
    if missing:
        print(f"FAIL {missing}")
        failed = max(1, len(tests))
        tests = []
    workroot = tempfile.mkdtemp(prefix="mcpd-cluster-")
    redis = None
    redis_url = mcpd_harness.REDIS_URL
    t0 = time.monotonic()
    try:
        if tests and redis_url is None:
            redis = mcpd_harness.RedisServer(workroot).start()
            redis_url = redis.url
            print(f"# private redis-server on {redis_url}")
        for name, fn in tests:
            if run_one(name, fn, args, workroot, redis_url):
                passed += 1
            else:
                failed += 1
    finally:
        if redis is not None:
            redis.stop()
        if failed == 0:
            shutil.rmtree(workroot, ignore_errors=True)
        else:
            print(f"(work files of failed tests kept in {workroot})")
    print(f"# {time.monotonic() - t0:.1f}s")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
