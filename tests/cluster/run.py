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

import cluster  # noqa: E402
import mcpd_harness  # noqa: E402
import runner  # noqa: E402  (tests/e2e, on the path through cluster)


class ClusterSuite:
    """Each test gets a cluster.Cluster, started on the run's redis-server."""
    here = HERE
    prefix = "mcpd-cluster-"
    timeout = 60

    def __init__(self):
        self.redis = None
        self.redis_url = mcpd_harness.REDIS_URL

    def missing(self, args):
        if cluster.nginx_path() is None:
            return "nginx is not installed (run scripts/install-deps)"
        if mcpd_harness.redis_server_path() is None:
            return "redis-server is not installed (run scripts/install-deps)"
        return None

    def begin_run(self, workroot):
        if self.redis_url is None:
            self.redis = mcpd_harness.RedisServer(workroot).start()
            self.redis_url = self.redis.url
            print(f"# private redis-server on {self.redis_url}")

    def end_run(self):
        if self.redis is not None:
            self.redis.stop()

    def make(self, h):
        return cluster.Cluster(h, self.redis_url)

    def start(self, c):
        c.start()

    def stop(self, c):
        c.stop()
        return c.problems + c.h.teardown()

    def kill(self, c):
        c.stop()

    def tails(self, c, n):
        return c.stderr_tails(n)


if __name__ == "__main__":
    sys.exit(runner.main(ClusterSuite(), __doc__))
