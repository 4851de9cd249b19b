"""
The cluster fixture of tests/cluster/: one redis-server, three mcpd on it,
and a real nginx in front of them with conf/nginx.conf as operators get it
(rendered by scripts/nginx-conf: only the listen address, the upstream
servers and the paths change).

The mcpd processes are tests/e2e/mcpd_harness.py Daemons (every HTTP helper
of the end-to-end suite works on them, and on Cluster.front, which sends the
same requests to nginx). A session made through one of them can be used
through any other: they share the negotiated versions and one request id
counter.
"""

import itertools
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

import mcpd_harness  # noqa: E402
from mcpd_harness import Daemon, expect, free_port, tmo  # noqa: E402

INSTANCES = 3

# Short times, so a test waits seconds and not the defaults' minutes. The
# keys of issue 12 are only set when this mcpd knows them (conf_keys says
# which); a test that needs one fails saying so.
ISSUE12_KEYS = (("lease_ttl", "2"), ("drain_delay", "1"),
                ("drain_timeout", "5"))


def nginx_path():
    return shutil.which("nginx") or shutil.which(
        "nginx", path="/usr/sbin:/usr/local/sbin:/sbin")


class Instance(Daemon):
    """One mcpd of the cluster."""

    def __init__(self, cluster, conf, name):
        super().__init__(cluster.h.mcpd, cluster.h.workdir, conf,
                         cluster.extra_lines, cluster.h.sanitized, name)
        self.versions = cluster.versions
        self.ids = cluster.ids
        self.name = name

    def new_id(self):
        return next(self.ids)


class _Unready(Instance):
    """An instance whose Redis is never there: start() does not wait for
    its connection."""

    def _wait_redis_ready(self, timeout):
        pass


class Front(Daemon):
    """The harness's HTTP helpers bound to nginx instead of a daemon."""

    def __init__(self, port, versions, ids):
        # No process: only what the HTTP helpers read.
        self.mcpd = None
        self.sanitized = False
        self.conf = ""
        self.conf_path = "nginx"
        self.endpoint = "/mcp"
        self.proc = None
        self.host = "127.0.0.1"
        self.port = port
        self.versions = versions
        self.ids = ids
        self.conns = []
        self.stopped = True
        self.problems = []
        self.cond = threading.Condition()
        self.name = "nginx"

    def new_id(self):
        return next(self.ids)

    def alive(self):
        return True

    def stderr_tail(self, lines=40):
        return "(nginx: see its error log)"

    def close_all(self):
        for c in list(self.conns):
            c.close()


class Cluster:
    def __init__(self, h, redis_url):
        self.h = h
        self.redis_url = redis_url
        self.versions = {}
        self.ids = itertools.count(1)
        self.instances = []
        self.ports = []
        self.generation = [0] * INSTANCES
        self.extra_lines = ("fixtures conformance",)
        self.conf = {"eventlog": redis_url, "builtin_tools": "on"}
        self.conf_keys = {}
        self.nginx = None
        self.nginx_dir = None
        self.front = None
        self.problems = []
        self.fronts = []

    # start and stop

    def start(self):
        for key, value in ISSUE12_KEYS:
            if self.h.conf_accepts(f"{key} {value}"):
                self.conf_keys[key] = value
        self.conf.update(self.conf_keys)
        for i in range(INSTANCES):
            d = self._start_instance(i, 0)
            self.ports.append(d.port)
        self._start_nginx()
        self.front = self.new_front()

    def need(self, *keys):
        """The values of these conf keys; fails the test when this mcpd does
        not know one (issue 12's keys)."""
        missing = [k for k in keys if k not in self.conf_keys]
        expect(not missing, f"this mcpd does not accept the conf key(s) "
               f"{', '.join(missing)} (issue 12): the test needs them")
        return [float(self.conf_keys[k]) for k in keys]

    def _start_instance(self, i, port):
        conf = dict(self.conf)
        conf["listen"] = f"127.0.0.1:{port}"
        name = f"mcpd{i}" + (f".{self.generation[i]}"
                             if self.generation[i] else "")
        d = Instance(self, conf, name)
        self.h.daemons.append(d)
        d.start()
        if len(self.instances) > i:
            self.instances[i] = d
        else:
            self.instances.append(d)
        return d

    def new_front(self):
        """Another client of nginx (its own connections; the same
        sessions and request ids)."""
        f = Front(self.nginx_port, self.versions, self.ids)
        self.fronts.append(f)
        return f

    def _start_nginx(self):
        nginx = nginx_path()
        expect(nginx is not None, "nginx is not installed (scripts/"
               "install-deps installs nginx-light)")
        self.nginx_dir = os.path.join(self.h.workdir, "nginx")
        os.makedirs(self.nginx_dir)
        if os.geteuid() == 0:
            # nginx's workers run as another user: every directory up to
            # DIR must be traversable: DIR, the test's directory and the
            # run's (mkdtemp makes them 0700).
            d = self.nginx_dir
            for _ in range(3):
                os.chmod(d, 0o755)
                d = os.path.dirname(d)
        self.nginx_port = free_port()
        upstreams = [f"127.0.0.1:{p}" for p in self.ports]
        r = subprocess.run(["sh", os.path.join(ROOT, "scripts", "nginx-conf"),
                            self.nginx_dir, f"127.0.0.1:{self.nginx_port}",
                            *upstreams], capture_output=True, text=True)
        expect(r.returncode == 0, f"scripts/nginx-conf failed: {r.stderr}")
        conf = os.path.join(self.nginx_dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(r.stdout)
        self.nginx_stderr = open(os.path.join(self.nginx_dir, "stderr"), "w")
        self.nginx = subprocess.Popen(
            [nginx, "-p", self.nginx_dir + "/", "-c", conf,
             "-g", "daemon off;"], stdin=subprocess.DEVNULL,
            stdout=self.nginx_stderr, stderr=self.nginx_stderr,
            start_new_session=True)
        # Until nginx proxies: /healthz of one of the instances, 200.
        deadline = time.monotonic() + tmo(10)
        front = Front(self.nginx_port, self.versions, self.ids)
        while True:
            expect(self.nginx.poll() is None, f"nginx exited with status "
                   f"{self.nginx.returncode} at start:\n{self.nginx_log()}")
            try:
                r = front.request("GET", path="/healthz", timeout=2)
                if r.status == 200:
                    break
            except (OSError, AssertionError):
                pass
            expect(time.monotonic() < deadline, "nginx does not proxy "
                   f"/healthz within 10 s:\n{self.nginx_log()}")
            time.sleep(0.05)
        front.close_all()

    def nginx_log(self, lines=20):
        out = []
        for name in ("stderr", "error.log"):
            try:
                with open(os.path.join(self.nginx_dir, name),
                          errors="replace") as f:
                    text = f.read().splitlines()[-lines:]
            except OSError:
                continue
            if text:
                out.append(f"--- nginx {name}")
                out.extend(text)
        return "\n".join(out)

    def stop(self):
        """nginx, then every mcpd (in parallel: each drains for
        drain_delay), whatever state they are in."""
        for f in self.fronts:
            f.close_all()
        if self.nginx is not None and self.nginx.poll() is None:
            self.nginx.terminate()
            try:
                self.nginx.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.nginx.pid, signal.SIGKILL)
                self.nginx.wait()
                self.problems.append("nginx did not exit on SIGTERM")
        if self.nginx is not None:
            self.nginx_stderr.close()
        threads = [threading.Thread(target=self._stop_one, args=(d,))
                   for d in self.h.daemons]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def _stop_one(self, d):
        try:
            d.stop(timeout=15)
        except Exception as e:
            d.kill()
            d.problems.append(f"stopping: {e!r}")

    # what the tests do to instances

    def index(self, d):
        return self.instances.index(d)

    def drain_stop(self, i, timeout=None):
        """SIGTERM to instance i (a drain), and its exit awaited; returns
        (exit status, seconds it took)."""
        d = self.instances[i]
        if timeout is None:
            delay, dtimeout = self.need("drain_delay", "drain_timeout")
            timeout = delay + dtimeout + 10
        t0 = time.monotonic()
        d.signal(signal.SIGTERM)
        try:
            rc = d.proc.wait(tmo(timeout))
        except subprocess.TimeoutExpired:
            d.kill()
            raise AssertionError(f"{d.name} did not exit within "
                                 f"{timeout:.0f}s of SIGTERM (killed)")
        took = time.monotonic() - t0
        self._gone(d, rc)
        return rc, took

    def kill9(self, i):
        d = self.instances[i]
        os.kill(d.proc.pid, signal.SIGKILL)
        rc = d.proc.wait(tmo(5))
        expect(rc == -signal.SIGKILL, f"{d.name}: exit status {rc} after "
               "SIGKILL")
        self._gone(d, rc)

    def _gone(self, d, rc):
        for c in d.conns:
            c.close()
        d.stopped = True            # teardown: not "died unexpectedly"
        d.exit_status = rc
        d.err.join(tmo(5))
        d.out.join(tmo(5))
        for marker in mcpd_harness.SANITIZER_MARKERS:
            if marker in d.stderr_text():
                d.problems.append(f"stderr contains {marker!r}")

    def restart(self, i):
        """Instance i again, on the same port (nginx's upstream)."""
        self.generation[i] += 1
        return self._start_instance(i, self.ports[i])

    def restart_unready(self, i):
        """Instance i again on its port, with an event log nobody listens
        on and eventlog_wait 0: it listens at once, not ready, and answers
        503 to whatever needs the log (as one instance cut off from Redis
        would)."""
        self.generation[i] += 1
        conf = dict(self.conf)
        conf["listen"] = f"127.0.0.1:{self.ports[i]}"
        conf["eventlog"] = f"redis://127.0.0.1:{free_port()}"
        conf["eventlog_wait"] = "0"
        d = _Unready(self, conf, f"mcpd{i}.{self.generation[i]}.unready")
        self.h.daemons.append(d)
        d.start()
        self.instances[i] = d
        return d

    def wait_ready(self, d, timeout=10):
        """Until d's /readyz says 200 (or, without /readyz, /healthz)."""
        deadline = time.monotonic() + tmo(timeout)
        while True:
            try:
                r = d.request("GET", path="/readyz", timeout=2)
                if r.status == 200:
                    return
                if r.status == 404:
                    r = d.request("GET", path="/healthz", timeout=2)
                    if r.status == 200:
                        return
            except (OSError, AssertionError):
                pass
            expect(time.monotonic() < deadline, f"{d.name} not ready "
                   f"within {timeout}s:\n{d.stderr_tail(10)}")
            time.sleep(0.05)

    def stderr_tails(self, lines):
        return self.h.stderr_tails(lines) + "\n" + self.nginx_log(lines) \
            if self.nginx_dir else self.h.stderr_tails(lines)
