"""
The test runner the black-box suites share (tests/e2e/run.py,
tests/cluster/run.py): discovery of test_* functions in a folder's
test_*.py, -k patterns, a SIGALRM timeout per test (fn.timeout overrides
the suite's default), a work directory per test kept only when it failed,
the daemons' stderr tails on failure, and the closing line
"N passed, N failed, N skipped". A test that cannot run here raises
mcpd_harness.Skip: it is listed as SKIP and counted apart, never as a
pass. With MCPD_TEST_NO_SKIP=1 (CI, where everything is installed) a test
that skips for want of something installed (a binary, node modules)
counts as a failure; one that needs another run of the suite (the shared
Redis of the run under scripts/with-redis) still skips. A suite says only
what it starts around each test:

    class Suite:
        here = "/path/of/the/tests"     # where test_*.py are
        prefix = "mcpd-e2e-"            # of the run's work directory
        timeout = 30                    # seconds a test, by default
        def missing(self, args): ...    # None, or what is not installed
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

# CI sets it: there everything is installed, and a test that skips for
# want of something is a test that did not run.
NO_SKIP = os.environ.get("MCPD_TEST_NO_SKIP", "") not in ("", "0")


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


def skipped(name, why, other_run=False):
    """A test that did not run: "skip", or "fail" under NO_SKIP unless
    another run of the suite runs it."""
    if NO_SKIP and not other_run:
        print(f"FAIL {name}: skipped, and MCPD_TEST_NO_SKIP is set: {why}")
        return "fail"
    print(f"SKIP {name}: {why}")
    return "skip"


def run_one(suite, name, fn, args, workroot):
    """Runs one test; returns "pass", "fail" or "skip", and whether its
    work directory is kept (it failed while it ran)."""
    workdir = tempfile.mkdtemp(prefix=name.replace("::", ".") + ".",
                               dir=workroot)
    h = mcpd_harness.Harness(args.mcpd, args.sanitized, workdir)
    obj = suite.make(h)
    timeout = getattr(fn, "timeout", suite.timeout) * mcpd_harness.SLOW
    failure = None
    skip = None
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
    except mcpd_harness.Skip as e:
        skip = e
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
        outcome = "fail"
    elif skip is not None:
        outcome = skipped(name, str(skip), skip.other_run)
    else:
        print(f"ok   {name} ({elapsed:.1f}s)")
        outcome = "pass"
    if failure is None:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.stdout.flush()
    return outcome, failure is not None


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

    count = {"pass": 0, "fail": 0, "skip": 0}
    skips = []
    kept = False
    if not os.access(args.mcpd, os.X_OK):
        print(f"FAIL mcpd binary {args.mcpd} is missing or not executable")
        count["fail"] = max(1, len(tests))
        tests = []
    else:
        missing = suite.missing(args)
        if missing:
            for name, _ in tests:
                outcome = skipped(name, missing)
                count[outcome] += 1
                if outcome == "skip":
                    skips.append(name)
            tests = []
    workroot = tempfile.mkdtemp(prefix=suite.prefix)
    t0 = time.monotonic()
    try:
        if tests:
            suite.begin_run(workroot)
        for name, fn in tests:
            outcome, failed = run_one(suite, name, fn, args, workroot)
            count[outcome] += 1
            kept = kept or failed
            if outcome == "skip":
                skips.append(name)
    finally:
        suite.end_run()
        if kept:
            print(f"(work files of failed tests kept in {workroot})")
        else:
            shutil.rmtree(workroot, ignore_errors=True)
    print(f"# {time.monotonic() - t0:.1f}s")
    if skips:
        print(f"# {len(skips)} skipped, not run here:")
        for name in skips:
            print(f"#   {name}")
    print(f"{count['pass']} passed, {count['fail']} failed, "
          f"{count['skip']} skipped")
    ran = count["pass"] + count["skip"]
    return 0 if count["fail"] == 0 and ran > 0 else 1
