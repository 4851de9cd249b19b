#!/usr/bin/env python3
"""
End-to-end test runner for mcpd.

    python3 tests/e2e/run.py --mcpd ./mcpd [--sanitized] [-k PATTERN] [-v]

Discovers the plain functions named test_* in tests/e2e/test_*.py; each takes
one argument, a mcpd_harness.Harness, and starts the daemons it needs with
h.start(**conf). Every test runs under a timeout (SIGALRM; a test may set
fn.timeout). After each test every daemon it started is stopped with SIGTERM;
the test fails if a daemon died unexpectedly, exited non-zero, or (always,
and what matters with --sanitized) left an AddressSanitizer/LeakSanitizer/
UBSan report on stderr.

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

import mcpd_harness  # noqa: E402

DEFAULT_TIMEOUT = 30


class TestTimeout(BaseException):
    """Raised in the test by SIGALRM; BaseException so that no test's
    `except Exception` swallows it."""


def _alarm(signum, frame):
    raise TestTimeout()


def discover(pattern):
    tests = []
    for fname in sorted(os.listdir(HERE)):
        if not (fname.startswith("test_") and fname.endswith(".py")):
            continue
        modname = fname[:-3]
        mod = importlib.import_module(modname)
        for name, obj in vars(mod).items():
            if name.startswith("test_") and callable(obj) and \
                    getattr(obj, "__module__", None) == modname:
                full = f"{modname}::{name}"
                if pattern and not _matches(pattern, full):
                    continue
                tests.append((full, obj))
    return tests


def _matches(pattern, name):
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatch(name, pattern) or \
            fnmatch.fnmatch(name.split("::")[1], pattern)
    return pattern in name


def _short_traceback(tb_exc):
    """The frames from the test files and the harness, then the error."""
    frames = [f for f in traceback.extract_tb(tb_exc.__traceback__)
              if os.path.dirname(os.path.abspath(f.filename)) == HERE
              and not f.filename.endswith("run.py")]
    lines = [f"    {os.path.basename(f.filename)}:{f.lineno} in {f.name}: "
             f"{(f.line or '').strip()}" for f in frames[-6:]]
    msg = "".join(traceback.format_exception_only(type(tb_exc), tb_exc))
    return "\n".join(lines) + "\n    " + msg.strip().replace("\n", "\n    ")


def run_one(name, fn, args, workroot):
    workdir = tempfile.mkdtemp(prefix=name.replace("::", ".") + ".",
                               dir=workroot)
    h = mcpd_harness.Harness(args.mcpd, args.sanitized, workdir)
    timeout = getattr(fn, "timeout", DEFAULT_TIMEOUT) * mcpd_harness.SLOW
    failure = None
    t0 = time.monotonic()
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        try:
            fn(h)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except TestTimeout:
        failure = f"    test timed out after {timeout:.0f}s"
    except KeyboardInterrupt:
        for d in h.daemons:
            d.kill()
        raise
    except BaseException as e:  # noqa: B902 - report everything
        failure = _short_traceback(e)
        if args.verbose:
            failure += "\n" + "".join(traceback.format_exception(e))
    problems = h.teardown()
    elapsed = time.monotonic() - t0
    if problems:
        extra = "\n".join(f"    daemon: {p}" for p in problems)
        failure = extra if failure is None else failure + "\n" + extra
    if failure is not None:
        print(f"FAIL {name} ({elapsed:.1f}s)\n{failure}")
        print(_indent(h.stderr_tails(40 if problems else 20)))
    else:
        print(f"ok   {name} ({elapsed:.1f}s)")
        shutil.rmtree(workdir, ignore_errors=True)
    sys.stdout.flush()
    return failure is None


def _indent(text):
    return "\n".join("    | " + line for line in text.splitlines())


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

    tests = discover(None)
    if args.pattern:
        tests = [t for t in tests
                 if any(_matches(p, t[0]) for p in args.pattern)]

    passed = failed = 0
    if not os.access(args.mcpd, os.X_OK):
        print(f"mcpd binary {args.mcpd} is missing or not executable")
        failed = len(tests)
        tests = []
    workroot = tempfile.mkdtemp(prefix="mcpd-e2e-")
    t0 = time.monotonic()
    try:
        for name, fn in tests:
            if run_one(name, fn, args, workroot):
                passed += 1
            else:
                failed += 1
    finally:
        if failed == 0:
            shutil.rmtree(workroot, ignore_errors=True)
        else:
            print(f"(work files of failed tests kept in {workroot})")
    print(f"# {time.monotonic() - t0:.1f}s")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
