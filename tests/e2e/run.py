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

The last line printed is exactly "N passed, N failed, N skipped"; the
exit status is non-zero if any test failed or no test was found. A test
skips (it is listed as SKIP and counted apart, never as passed) when
something it needs is not installed, or when it needs the shared Redis of
scripts/with-redis and the run has none; with MCPD_TEST_NO_SKIP=1, as CI
runs it, the first kind is a failure.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import runner  # noqa: E402


class E2E:
    """Each test gets the harness itself and starts what it needs."""
    here = HERE
    prefix = "mcpd-e2e-"
    timeout = 30

    def missing(self, args):
        return None

    def begin_run(self, workroot):
        pass

    def end_run(self):
        pass

    def make(self, h):
        return h

    def start(self, h):
        pass

    def stop(self, h):
        return h.teardown()

    def kill(self, h):
        for d in h.daemons:
            d.kill()

    def tails(self, h, n):
        return h.stderr_tails(n)


if __name__ == "__main__":
    sys.exit(runner.main(E2E(), __doc__))
