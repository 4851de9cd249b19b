#!/usr/bin/env python3
"""
Redis as operators run it (issue 24): runner of tests/redis/.

    python3 tests/redis/run.py --mcpd ./mcpd [--sanitized] [-k PATTERN] [-v]

Discovers the plain functions named test_* in tests/redis/test_*.py; each
takes one argument, a mcpd_harness.Harness, and starts the redis-servers
it needs (passwords, ACL users, TLS with certificates made by openssl,
unix sockets, a primary with a replica and three sentinels) and the
daemons, as tests/e2e does. Every test runs under a timeout (fn.timeout,
default 60 s); whatever happened, every daemon and server it started is
stopped after it.

The last line printed is exactly "N passed, N failed, N skipped"; the exit
status is non-zero if any test failed or none was found. A test skips
when redis-server, openssl or node is not installed; with
MCPD_TEST_NO_SKIP=1, as CI runs it, that is a failure.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))

import runner  # noqa: E402


class RedisOps:
    """Each test gets the harness and starts what it needs."""
    here = HERE
    prefix = "mcpd-redis-"
    timeout = 60

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
    sys.exit(runner.main(RedisOps(), __doc__))
