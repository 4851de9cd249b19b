"""
The test runner the black-box suites share (tests/e2e/run.py,
tests/cluster/run.py): discovery of test_* functions in a folder's
test_*.py, -k patterns, a SIGALRM timeout per test (fn.timeout overrides
the suite's default), a work directory per test kept only when it failed,
the daemons' stderr tails on failure, and the closing line
"N passed, N failed". A suite says only what it starts around each test:

    class Suite:
        here = "/path/of/the/tests"     # where test_*.py are
        prefix = "mcpd-e2e-"            # of the run's work directory
        timeout = 30                    # seconds a test, by default
        def missing(self, args): ...    # None, or why nothing can run
        def begin_run(self, workroot): ...
        def end_run(self): ...
        def make(self, h): ...          # what the test function gets
        def start(self, obj): ...       # timed with the test itself
        def stop(self, obj): ...        # -> list of daemon problems
        def kill(self, obj): ...        # interrupted: stop at once
        def tails(self, obj, n): ...    # the daemons' last stderr lines

    sys.exit(runner.main(Suite(), __doc__))
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
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import mcpd_harness  # noqa: E402


class TestTimeout(BaseException):
    """Raised in the test by SIGALRM; BaseException so that no test's
    `except Exception` swallows it."""


def _alarm(signum, frame):
    raise TestTimeout()


def _terminate(signum, frame):
    # Killed (make interrupted, CI timeout): stop what the test started
    # on the way out, as Ctrl-C does.
    raise KeyboardInterrupt()


def discover(here):
    if here not in sys.path:
        sys.path.insert(0, here)
    tests = []
    for fname in sorted(os.listdir(here)):
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


def _short_traceback(exc, dirs):
    """The frames from the test files and the harness, then the error."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if os.path.dirname(os.path.abspath(f.filename)) in dirs
              and os.path.basename(f.filename) not in ("run.py",
                                                       "runner.py")]
    lines = [f"    {os.path.basename(f.filename)}:{f.lineno} in {f.name}: "
             f"{(f.line or '').strip()}" for f in frames[-6:]]
    msg = "".join(traceback.format_exception_only(type(exc), exc))
    return "\n".join(lines) + "\n    " + msg.strip().replace("\n", "\n    ")


def _indent(text):
    return "\n".join("    | " + line for line in text.splitlines())


def run_one(suite, name, fn, args, workroot):
    workdir = tempfile.mkdtemp(prefix=name.replace("::", ".") + ".",
                               dir=workroot)
    h = mcpd_harness.Harness(args.mcpd, args.sanitized, workdir)
    obj = suite.make(h)
    timeout = getattr(fn, "timeout", suite.timeout) * mcpd_harness.SLOW
    failure = None
    t0 = time.monotonic()
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        try:
            suite.start(obj)
            fn(obj)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except TestTimeout:
        failure = f"    test timed out after {timeout:.0f}s"
    except KeyboardInterrupt:
        suite.kill(obj)
        raise
    except BaseException as e:  # noqa: B902 - report everything
        failure = _short_traceback(e, (suite.here, HERE))
        if args.verbose:
            failure += "\n" + "".join(traceback.format_exception(e))
    problems = suite.stop(obj)
    elapsed = time.monotonic() - t0
    if problems:
        extra = "\n".join(f"    daemon: {p}" for p in problems)
        failure = extra if failure is None else failure + "\n" + extra
    if failure is not None:
        print(f"FAIL {name} ({elapsed:.1f}s)\n{failure}")
        print(_indent(suite.tails(obj, 40 if problems else 20)))
    else:
        print(f"ok   {name} ({elapsed:.1f}s)")
        shutil.rmtree(workdir, ignore_errors=True)
    sys.stdout.flush()
    return failure is None


def main(suite, doc):
    ap = argparse.ArgumentParser(description=doc.strip().split("\n\n")[0])
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
    tests = discover(suite.here)
    if args.pattern:
        tests = [t for t in tests
                 if any(_matches(p, t[0]) for p in args.pattern)]

    passed = failed = 0
    missing = None
    if not os.access(args.mcpd, os.X_OK):
        missing = f"mcpd binary {args.mcpd} is missing or not executable"
    else:
        missing = suite.missing(args)
    if missing:
        print(f"FAIL {missing}")
        failed = max(1, len(tests))
        tests = []
    workroot = tempfile.mkdtemp(prefix=suite.prefix)
    t0 = time.monotonic()
    try:
        if tests:
            suite.begin_run(workroot)
        for name, fn in tests:
            if run_one(suite, name, fn, args, workroot):
                passed += 1
            else:
                failed += 1
    finally:
        suite.end_run()
        if failed == 0:
            shutil.rmtree(workroot, ignore_errors=True)
        else:
            print(f"(work files of failed tests kept in {workroot})")
    print(f"# {time.monotonic() - t0:.1f}s")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1
