"""
What the tests of tests/redis/ share: certificates made with openssl, the
ACL rules of docs/deployment.md, a Sentinel deployment (a primary, one
replica and three sentinels, each a redis-server on loopback), and a
proxy in front of a redis-server that answers -LOADING, -TRYAGAIN or
-READONLY for a while.
"""

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

from mcpd_harness import (RedisError, RedisServer, Skip, check_ids, expect,
                          free_port, is_progress, is_response,
                          message_events, parse_event_id, redis_command,
                          redis_server_path, result_text, tmo)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def need_tools(*names):
    for name in names:
        if shutil.which(name) is None:
            raise Skip(f"{name} is not installed (scripts/install-deps)")
    if redis_server_path() is None:
        raise Skip("no redis-server binary installed (scripts/install-deps)")


def acl_rules(password):
    """The rules of the ACL user mcpd, as docs/deployment.md has them (its
    line "ACL SETUSER mcpd reset ..."), with the password filled in."""
    with open(os.path.join(ROOT, "docs", "deployment.md")) as f:
        m = re.search(r"^ACL SETUSER mcpd reset (.*)$", f.read(), re.M)
    expect(m is not None, "docs/deployment.md has no line "
           "\"ACL SETUSER mcpd reset ...\"")
    return [w.replace(">PASSWORD", f">{password}")
            for w in m.group(1).split()]


def _openssl(*args):
    subprocess.run(["openssl", *args], check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


class Certs:
    """A CA, a server certificate it signed (for 127.0.0.1 and localhost),
    a client certificate it signed, and another CA that signed nothing of
    these: files in dir."""

    def __init__(self, workdir):
        need_tools("openssl")
        self.dir = tempfile.mkdtemp(prefix="certs-", dir=workdir)
        p = lambda name: os.path.join(self.dir, name)  # noqa: E731
        self.ca, self.ca_key = p("ca.crt"), p("ca.key")
        self.other_ca = p("other-ca.crt")
        self.server, self.server_key = p("server.crt"), p("server.key")
        self.client, self.client_key = p("client.crt"), p("client.key")
        for crt, key, cn in ((self.ca, self.ca_key, "mcpd test CA"),
                             (self.other_ca, p("other-ca.key"),
                              "another CA")):
            _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes",
                     "-days", "2", "-subj", f"/CN={cn}", "-keyout", key,
                     "-out", crt)
        for crt, key, cn, ext in (
                (self.server, self.server_key, "localhost",
                 "subjectAltName=IP:127.0.0.1,DNS:localhost"),
                (self.client, self.client_key, "mcpd",
                 "extendedKeyUsage=clientAuth")):
            csr = key + ".csr"
            _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj",
                     f"/CN={cn}", "-addext", ext, "-keyout", key, "-out",
                     csr)
            _openssl("x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey",
                     self.ca_key, "-CAcreateserial", "-days", "2",
                     "-copy_extensions", "copy", "-out", crt)

    @property
    def server_files(self):
        """(certificate, key, CA) as RedisServer's tls= takes them."""
        return (self.server, self.server_key, self.ca)


@contextlib.contextmanager
def redis(h, *args, **kwargs):
    """A RedisServer of the test's own (as mcpd_harness.private_redis,
    with password=, tls=, unix=), stopped after every daemon."""
    need_tools()
    rs = RedisServer(h.workdir, *args, **kwargs)
    try:
        rs.start()
        yield rs
    finally:
        h.stop_all()
        rs.stop()


# --------------------------------------------------------------------------
# Sentinel


class _Sentinel:
    """One redis-server --sentinel on a conf file of its own."""

    def __init__(self, workdir, name, primary_port, password, tls=None,
                 own_password=None):
        self.port = free_port()
        self.tls = tls
        self.dir = tempfile.mkdtemp(prefix="sentinel-", dir=workdir)
        self.conf = os.path.join(self.dir, "sentinel.conf")
        self.logfile = os.path.join(self.dir, "sentinel.log")
        lines = [f"port {self.port}", "bind 127.0.0.1", f"dir {self.dir}",
                 f"logfile {self.logfile}",
                 f"sentinel monitor {name} 127.0.0.1 {primary_port} 2",
                 f"sentinel down-after-milliseconds {name} 1000",
                 f"sentinel failover-timeout {name} 5000",
                 f"sentinel parallel-syncs {name} 1",
                 "sentinel resolve-hostnames no",
                 "sentinel announce-hostnames no"]
        if password is not None:
            lines.append(f"sentinel auth-pass {name} {password}")
        if own_password or password:
            lines.append(f"requirepass {own_password or password}")
        if tls is not None:
            lines[0] = "port 0"
            lines += [f"tls-port {self.port}", f"tls-cert-file {tls[0]}",
                      f"tls-key-file {tls[1]}", f"tls-ca-cert-file {tls[2]}",
                      "tls-auth-clients no", "tls-replication yes"]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.password = own_password or password
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(
            [redis_server_path(), self.conf, "--sentinel"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)

    def cmd(self, *args, timeout=5):
        scheme = "rediss" if self.tls else "redis"
        return redis_command(f"{scheme}://127.0.0.1:{self.port}", *args,
                             timeout=timeout, password=self.password,
                             ca=self.tls[2] if self.tls else None)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Deployment:
    """A primary and one replica (requirepass and masterauth password, if
    given) and three sentinels monitoring them as NAME (quorum 2, down
    after 1 s), on loopback. The servers keep their objects across
    failovers: primary() asks the sentinels which one is the primary.
    With tls (certificate, key and CA files, as Certs.server_files), every
    server and sentinel listens over TLS only, and replicates over it.
    With sentinel_password, the sentinels require that password instead
    of the servers'."""

    def __init__(self, h, name="mymaster", password=None, tls=None,
                 sentinel_password=None):
        self.h = h
        self.name = name
        self.password = password
        self.tls = tls
        auth = ["--masterauth", password] if password else []
        fast = ["--repl-diskless-sync-delay", "0"]
        if tls is not None:
            fast += ["--tls-replication", "yes"]
        self.servers = [RedisServer(h.workdir, *fast, *auth,
                                    password=password, tls=tls)]
        self.servers.append(RedisServer(
            h.workdir, *fast, *auth, "--replicaof", "127.0.0.1",
            self.servers[0].port, password=password, tls=tls))
        self.sentinels = [_Sentinel(h.workdir, name, self.servers[0].port,
                                    password, tls, sentinel_password)
                          for _ in range(3)]

    def url(self, creds=True, db=None):
        """redis-sentinel://[:PASSWORD@]S1,S2,S3/NAME[/DB]."""
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        auth = f":{self.password}@" if creds and self.password else ""
        return f"redis-sentinel://{auth}{hosts}/{self.name}" + \
            (f"/{db}" if db is not None else "")

    def start(self, timeout=30):
        for s in self.servers:
            s.start()
        for s in self.sentinels:
            s.start()
        self.wait_settled(timeout, "at start")
        return self

    def primary_port(self, sentinel=0):
        host, port = self.sentinels[sentinel].cmd(
            "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.name)
        return int(port)

    def server(self, port):
        return next(s for s in self.servers if s.port == port)

    def primary(self):
        return self.server(self.primary_port())

    def replica(self):
        p = self.primary_port()
        return next(s for s in self.servers if s.port != p)

    def _settled(self):
        """The sentinels agree on the primary, each knows the others and
        the replica, and the replica is in sync."""
        p = self.primary_port()
        for s in self.sentinels:
            if int(s.cmd("SENTINEL", "GET-MASTER-ADDR-BY-NAME",
                         self.name)[1]) != p:
                return False
            if len(s.cmd("SENTINEL", "SENTINELS", self.name)) != 2:
                return False
            reps = s.cmd("SENTINEL", "REPLICAS", self.name)
            if len(reps) != 1 or "s_down" in dict(
                    zip(reps[0][::2], reps[0][1::2])).get("flags", ""):
                return False
        info = self.server(p).cmd("INFO", "replication")
        return "state=online" in info

    def wait_settled(self, timeout, what):
        deadline = time.monotonic() + tmo(timeout)
        while True:
            try:
                if self._settled():
                    return
            except (OSError, AssertionError, RedisError, StopIteration):
                pass
            expect(time.monotonic() < deadline,
                   f"Sentinel deployment not settled within "
                   f"{tmo(timeout):.0f}s {what}; sentinel log:\n"
                   f"{self.log_tail(0)}")
            time.sleep(0.1)

    def wait_primary_not(self, port, timeout=30):
        """Until the sentinels name a primary other than port; its port."""
        deadline = time.monotonic() + tmo(timeout)
        while True:
            try:
                p = self.primary_port()
                if p != port:
                    return p
            except (OSError, AssertionError, RedisError):
                pass
            expect(time.monotonic() < deadline,
                   f"no failover within {tmo(timeout):.0f}s; sentinel "
                   f"log:\n{self.log_tail(0)}")
            time.sleep(0.05)

    def failover(self):
        """SENTINEL FAILOVER: the old primary is demoted (a replica of
        the new one, once a sentinel sees it again)."""
        self.sentinels[0].cmd("SENTINEL", "FAILOVER", self.name)

    def kill_primary(self):
        """kill -9 of the primary; the killed server's object."""
        s = self.primary()
        s.proc.send_signal(signal.SIGKILL)
        s.proc.wait()
        return s

    def rejoin(self, server, primary_port):
        """Starts a killed server again as a replica of primary_port,
        empty (as after a disk loss), so that the new primary has a
        replica again."""
        for name in os.listdir(server.dir):
            if name.endswith(".rdb"):
                os.unlink(os.path.join(server.dir, name))
        i = server.args.index("--replicaof") if "--replicaof" in \
            server.args else None
        if i is not None:
            del server.args[i:i + 3]
        server.args += ["--replicaof", "127.0.0.1", str(primary_port)]
        server.start()

    def failovers(self):
        """[("HOST:PORT", "HOST:PORT")], old and new primary, of every
        failover the sentinels made, in the order made: each one's leader
        logs +failover-end, then +switch-master (the others log theirs on
        hearing of it, or not at all if they missed one)."""
        made = []
        pat = re.compile(r"^\d+:X (\d\d \w\w\w \d{4} [\d:.]+) # "
                         r"\+switch-master " + re.escape(self.name) +
                         r" (\S+) (\d+) (\S+) (\d+)$")
        for s in self.sentinels:
            ended = False
            with open(s.logfile, errors="replace") as f:
                for line in f:
                    if re.search(r"# \+failover-end master " +
                                 re.escape(self.name) + " ", line):
                        ended = True
                    m = pat.match(line.rstrip("\n"))
                    if m is not None and ended:
                        made.append((time.strptime(m.group(1)[:20],
                                                   "%d %b %Y %H:%M:%S"),
                                     m.group(1), f"{m.group(2)}:"
                                     f"{m.group(3)}", f"{m.group(4)}:"
                                     f"{m.group(5)}"))
                        ended = False
        made.sort(key=lambda x: (x[0], x[1]))
        return [(old, new) for _, _, old, new in made]

    def log_tail(self, i, lines=15):
        try:
            with open(self.sentinels[i].logfile, errors="replace") as f:
                return "\n".join(f.read().splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self):
        for s in self.sentinels:
            s.stop()
        for s in self.servers:
            s.stop()


@contextlib.contextmanager
def sentinel_deployment(h, **kwargs):
    """A started Deployment, stopped (after every daemon) on the way out."""
    need_tools()
    d = Deployment(h, **kwargs)
    try:
        d.start()
        yield d
    finally:
        h.stop_all()
        d.stop()


# --------------------------------------------------------------------------
# A proxy that answers for a loading, busy or demoted Redis


class RefusingProxy:
    """A TCP proxy on loopback in front of a real redis-server. While
    refuse(ERROR) holds, it answers each data command with "-ERROR"
    itself, as Redis answers while it loads its data (-LOADING), while a
    cluster slot moves (-TRYAGAIN) or once it is a replica (-READONLY);
    the commands Redis runs while loading (AUTH, HELLO, SELECT, INFO,
    ROLE, CLIENT and the subscription commands) still reach the server,
    and so does all of a connection once it subscribed. refuse(None)
    lets everything through again. Replies keep the order of their
    commands. Counts the commands it refused (refused)."""

    PASS = {b"AUTH", b"HELLO", b"SELECT", b"INFO", b"ROLE", b"CLIENT",
            b"QUIT", b"SUBSCRIBE", b"PSUBSCRIBE", b"UNSUBSCRIBE",
            b"PUNSUBSCRIBE"}
    SUBSCRIBE = {b"SUBSCRIBE", b"PSUBSCRIBE"}

    def __init__(self, upstream_port):
        self.upstream = upstream_port
        self.port = free_port()
        self.error = None
        self.refused = 0
        self.lock = threading.Lock()
        self.conns = []
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", self.port))
        self.sock.listen(64)
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}"

    def refuse(self, error):
        """Answer "-error" to data commands from now on (None: stop)."""
        with self.lock:
            self.error = error

    def close(self):
        self.closed = True
        self.sock.close()
        with self.lock:
            conns, self.conns = self.conns, []
        for c in conns:
            c.close()

    def _accept(self):
        while not self.closed:
            try:
                s, _ = self.sock.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(("127.0.0.1", self.upstream),
                                             5)
                u.settimeout(None)
            except OSError:
                s.close()
                continue
            c = _ProxyConn(self, s, u)
            with self.lock:
                self.conns.append(c)
            c.start()


class _Reader:
    """Whole RESP values (requests or replies) off a socket, as bytes."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError
        self.buf += data

    def _line(self, at):
        while True:
            i = self.buf.find(b"\r\n", at)
            if i >= 0:
                return i
            self._fill()

    def _value(self, at):
        """The end of the value that starts at at."""
        eol = self._line(at)
        kind, head = self.buf[at:at + 1], self.buf[at + 1:eol]
        end = eol + 2
        if kind in (b"+", b"-", b":"):
            return end
        n = int(head)
        if kind == b"$":
            if n < 0:
                return end
            while len(self.buf) < end + n + 2:
                self._fill()
            return end + n + 2
        if kind == b"*":
            for _ in range(max(n, 0)):
                end = self._value(end)
            return end
        raise ValueError(f"RESP type {kind!r} unknown to the proxy")

    def value(self):
        """The next value's bytes, and its first word if an array of
        bulk strings (a command)."""
        end = self._value(0)
        raw, self.buf = self.buf[:end], self.buf[end:]
        word = None
        if raw[:1] == b"*":
            parts = raw.split(b"\r\n")
            if len(parts) > 2:
                word = parts[2].upper()
        return raw, word


class _ProxyConn:
    def __init__(self, proxy, client, upstream):
        self.proxy, self.c, self.u = proxy, client, upstream
        self.slots = []         # per command awaiting its turn: None
        self.raw = False        # (forwarded) or the error to answer

    def start(self):
        threading.Thread(target=self._requests, daemon=True).start()
        threading.Thread(target=self._replies, daemon=True).start()

    def close(self):
        for s in (self.c, self.u):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _requests(self):
        r = _Reader(self.c)
        try:
            while True:
                raw, word = r.value()
                p = self.proxy
                with p.lock:
                    if word in RefusingProxy.SUBSCRIBE:
                        self.raw = True
                    err = p.error if not self.raw and word not in \
                        RefusingProxy.PASS else None
                    if err is not None:
                        p.refused += 1
                        if not self.slots:
                            self.c.sendall(b"-" + err.encode() + b"\r\n")
                        else:
                            self.slots.append(err)
                        continue
                    self.slots.append(None)
                self.u.sendall(raw)
        except (OSError, EOFError, ValueError):
            self.close()

    def _replies(self):
        r = _Reader(self.u)
        try:
            while True:
                raw, _ = r.value()
                with self.proxy.lock:
                    if self.slots:
                        self.slots.pop(0)
                    self.c.sendall(raw)
                    while self.slots and self.slots[0] is not None:
                        err = self.slots.pop(0)
                        self.c.sendall(b"-" + err.encode() + b"\r\n")
        except (OSError, EOFError, ValueError):
            self.close()


# What the failover tests (test_sentinel, test_cluster) ask of each
# client's call of `stream` with n progress notifications.


def stream_in_redis(url, sid, k, password=None):
    """[(N, data)] of stream K of session sid in the Redis at url."""
    out = []
    for eid, fields in redis_command(url, "XRANGE", f"mcpd:{{{sid}}}:s:{k}",
                                     "-", "+", password=password):
        f = dict(zip(fields[::2], fields[1::2]))
        out.append((parse_event_id(eid)[1], f.get("d")))
    return out


def check_exact(c, n, what, stored, holder):
    """c's call completed exactly: progress 1..n then the result, ids
    K-1..K-(n+1) across its cuts, and stored(K), what holder (a name for
    the message) keeps of the stream, is just those."""
    k, head = check_ids(c.msgs, 1, what=f"{what}: {c.token}")
    expect(head == n + 1, f"{what}: {c.token} ended at {k}-{head} "
           f"({c.resumes!r})")
    last = c.msgs[-1].json
    expect(is_response(last, c.id) and result_text(last) == f"done {n}",
           f"{what}: {c.token} ended with {c.msgs[-1].data[:200]!r}")
    for e in c.msgs[:-1]:
        expect(is_progress(e.json) and e.json["params"]["progress"] ==
               parse_event_id(e.id)[1], f"{what}: {c.token}: {e.id} is "
               f"{e.data[:100]!r}")
    log = stored(k)
    expect([i for i, _ in log] == list(range(n + 2)), f"{what}: "
           f"{c.token}: {holder} holds {[i for i, _ in log]}")
    got = {parse_event_id(e.id)[1]: e.data for e in c.msgs}
    for i, data in log[1:]:
        expect(got.get(i) == data, f"{what}: {c.token}: {k}-{i} differs "
               "between Redis and the client")


def check_exact_or_gone(c, n, what):
    """commit primary: what c got is unbroken; it ends with the result,
    with the documented error, or with a 410 that has a reason. Returns
    which: "exact", "error" or "gone"."""
    msgs = message_events(c.msgs)
    if msgs:
        k, head = check_ids(msgs, 1, what=f"{what}: {c.token}")
    if c.gone is not None:
        err = c.gone.get("error", {})
        expect(err.get("data", {}).get("reason") in ("ahead", "trimmed",
                                                     "expired"),
               f"{what}: {c.token}: 410 without a reason: {c.gone!r}")
        return "gone"
    last = msgs[-1].json
    expect(is_response(last, c.id), f"{what}: {c.token} ended with "
           f"{msgs[-1].data[:200]!r}, not its response")
    if "result" in last:
        expect(result_text(last) == f"done {n}" and head == n + 1,
               f"{what}: {c.token}: {last!r} at {head}")
        return "exact"
    expect("interrupted" in last["error"]["message"] or "event log" in
           last["error"]["message"], f"{what}: {c.token}: not the "
           f"documented error: {last!r}")
    return "error"
