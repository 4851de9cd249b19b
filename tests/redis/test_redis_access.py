"""Reaching Redis as operators run it (issue 24): passwords and ACL users,
TLS, and the mistakes operators make. Each mistake must be a clear error
line naming what was refused, /readyz 503 with that reason, retried with a
backoff (never a crash, never a loop that floods the log), and recovery
once it is fixed: a reload for a password file, the ACL put right, the
right CA, the server put right. A password never shows: not in the log,
not in /healthz, /metrics or /readyz, not in `mcpd -t`.

Every test starts its own redis-server (and certificates, made here with
openssl).
"""

import signal
import threading
import time

from mcpd_harness import (LATEST, Daemon, RedisServer, expect,
                          redis_command, result_text, rpc, tmo, tool_call)
from redisops import Certs, acl_rules, redis

ADMIN = "admin-pw-4f1c"        # requirepass of the servers: the tests' own


class _Unready(Daemon):
    """A daemon whose start() does not wait for its event log."""

    def _wait_redis_ready(self, timeout):
        pass


def _start(h, extra_lines=(), **conf):
    conf.setdefault("eventlog_wait", 0)
    d = _Unready(h.mcpd, h.workdir, conf, extra_lines, h.sanitized,
                 f"mcpd{len(h.daemons)}")
    h.daemons.append(d)
    d.start()
    return d


def _get(d, path):
    r = d.request("GET", path=path, timeout=5)
    return r.status, r.body.decode("utf-8", errors="replace")


def _ready(d, want, timeout, what, reason=None):
    """Polls /readyz until it answers want (and, for 503, a reason that
    contains `reason`); its JSON. Bounded; the state changes inside mcpd,
    there is nothing to wait on from here."""
    deadline = time.monotonic() + tmo(timeout)
    while True:
        r = d.request("GET", path="/readyz", timeout=5)
        body = r.json
        if r.status == want and (reason is None or
                                 reason in body.get("reason", "")):
            return body
        expect(time.monotonic() < deadline, f"{what}: /readyz still "
               f"answers {r.status} {body!r} after {tmo(timeout):.0f}s")
        time.sleep(0.05)


def _echo(d, text="hi"):
    sid = d.initialize(LATEST)
    id = d.new_id()
    r = d.post(sid, tool_call("echo", {"text": text}, id), timeout=15)
    msg = r.rpc(id)
    expect("result" in msg and result_text(msg) == text,
           f"echo -> {msg!r}")
    return sid


def _never_shown(d, secrets, also=()):
    """No secret in mcpd's stderr, /healthz, /metrics, /readyz, or the
    texts given."""
    texts = [("stderr", d.stderr_text())]
    for path in ("/healthz", "/metrics", "/readyz"):
        texts.append((path, _get(d, path)[1]))
    texts += list(also)
    for name, text in texts:
        for s in secrets:
            expect(s not in text, f"a password shows in {name}")


def _refusals(rs, n, timeout=20):
    """Until Redis has refused n AUTHs (the counts of its ACL LOG): mcpd
    has retried that often."""
    deadline = time.monotonic() + tmo(timeout)
    while True:
        seen = 0
        for entry in rs.cmd("ACL", "LOG"):
            e = dict(zip(entry[::2], entry[1::2]))
            if e.get("reason") == "auth":
                seen += int(e.get("count", 0))
        if seen >= n:
            return seen
        expect(time.monotonic() < deadline, f"only {seen} AUTH refused "
               f"in {tmo(timeout):.0f}s: mcpd does not retry")
        time.sleep(0.05)


def _count(d, needle):
    return sum(needle in line for line in d.stderr_text().splitlines())


def test_password_wrong_then_reload_of_the_password_file(h):
    # requirepass; mcpd reads a wrong password from redis_password_file:
    # one error line naming AUTH, /readyz 503 with that reason, both
    # connections retried. The right password in the file and a SIGHUP:
    # it connects at once (no backoff to wait out), and serves.
    with redis(h, password=ADMIN) as rs:
        pwfile = h.write("redis.password", "wrong-pw-a5e0\n")
        d = _start(h, [f"redis_password_file {pwfile}"], eventlog=rs.url)
        body = _ready(d, 503, 10, "a wrong password", "WRONGPASS")
        expect(body["reason"].startswith("AUTH refused: WRONGPASS"),
               f"/readyz reason: {body!r}")
        line = d.wait_log(lambda l: " error " in l and "command "
                          "connection failed (AUTH refused: WRONGPASS" in l,
                          5, "an error line naming AUTH")
        status, health = _get(d, "/healthz")
        expect(status == 503 and "AUTH refused" in health,
               f"/healthz: {status} {health}")
        # Retried with a backoff, said once: nothing floods the log.
        _refusals(rs, 6)
        expect(_count(d, "command connection failed (AUTH refused") == 1,
               f"the refusal is logged again and again:\n"
               f"{d.stderr_tail(20)}")
        _never_shown(d, ["wrong-pw-a5e0", ADMIN], [("the error line",
                                                   line)])

        h.write("redis.password", ADMIN + "\n")
        d.signal(signal.SIGHUP)
        _ready(d, 200, 5, "after the reload with the right password")
        d.wait_log(lambda l: "new credentials: connecting again now" in l,
                   5, "the reload's reconnect")
        _echo(d)
        _never_shown(d, ["wrong-pw-a5e0", ADMIN])

        # A password in the URL: masked wherever the URL shows.
        e = _start(h, eventlog=rs.url.replace("redis://",
                                              f"redis://:{ADMIN}@"))
        _ready(e, 200, 10, "the URL's password")
        _echo(e)
        expect("redis://:***@127.0.0.1" in e.stderr_text(),
               "the URL is not logged with its password masked")
        conf = h.write("bad.conf", f"eventlog redis://:{ADMIN}@h:0\n")
        rc, out = h.run_mcpd("-t", "-c", conf)
        expect(rc != 0 and "redis://***@h:0" in out,
               f"mcpd -t on a bad URL: {rc} {out!r}")
        _never_shown(e, [ADMIN], [("mcpd -t", out)])


def test_acl_exactly_the_documented_rules_then_evalsha_and_xadd_refused(h):
    # The ACL user mcpd with exactly docs/deployment.md's rules serves
    # (a second instance follows the first: SUBSCRIBE and PUBLISH are
    # granted too). Without EVALSHA it is not ready, saying so; granted
    # again, it recovers. XADD taken away while it runs: the call in
    # flight waits (eventlog_outage_grace), the reconnection's check finds
    # XADD refused and /readyz says so, and once XADD is granted again
    # the call completes.
    pw = "mcpd-pw-71d2"
    with redis(h, password=ADMIN) as rs:
        rules = acl_rules(pw)
        rs.cmd("ACL", "SETUSER", "mcpd", "reset",
               *[w for w in rules if w != "+evalsha"])
        url = rs.url.replace("redis://", f"redis://mcpd:{pw}@")
        d = _start(h, eventlog=url)
        body = _ready(d, 503, 10, "an ACL without EVALSHA", "evalsha")
        expect("EVALSHA refused: NOPERM" in body["reason"] and
               "docs/deployment.md" in body["reason"],
               f"/readyz reason: {body!r}")
        d.wait_log(lambda l: " error " in l and "EVALSHA refused" in l, 5,
                   "an error line naming EVALSHA")
        rs.cmd("ACL", "SETUSER", "mcpd", "reset", *rules)
        _ready(d, 200, 15, "EVALSHA granted again")

        e = _start(h, eventlog=url)
        _ready(e, 200, 10, "a second instance")
        sid = _echo(d)
        e.versions[sid] = LATEST
        s = e.get_sse(sid)
        expect(s.status == 200 and s.is_sse, f"GET on B: {s.status}")
        id = d.new_id()
        r = d.post(sid, tool_call("notify", {"n": 3}, id))
        expect("result" in r.rpc(id), "notify on A")
        got = s.next_messages(3, 10, "A's notifications shown on B")
        expect(len(got) == 3, "B did not follow A")
        s.close()

        rs.cmd("ACL", "SETUSER", "mcpd", "-xadd")
        out = {}

        def call():
            try:
                out["msg"] = d.post(sid, tool_call("echo", {"text": "x"},
                                                   7001), timeout=30).rpc(
                    7001)
            except BaseException as ex:     # reported below
                out["error"] = ex
        t = threading.Thread(target=call)
        t.start()
        try:
            # The script's XADD refused (the line names it), then the
            # check of every reconnection (the ACL forbids XADD).
            d.wait_log(lambda l: "the ACL forbids XADD inside the "
                       "event-log script" in l, 10, "the line saying the "
                       "script's XADD is refused")
            _ready(d, 503, 10, "XADD refused", "the ACL forbids XADD to "
                   "this user")
        finally:
            rs.cmd("ACL", "SETUSER", "mcpd", "reset", *rules)
            t.join(tmo(30))
        expect("msg" in out and "result" in out["msg"] and
               result_text(out["msg"]) == "x", f"the call while XADD was "
               f"refused, then granted: {out!r}")
        _ready(d, 200, 10, "XADD granted again")
        # The default user may do nothing: mcpd never used it.
        rs.cmd("ACL", "SETUSER", "default", "resetkeys", "-@all",
               "+auth")
        _echo(d, "still")


def test_tls_right_ca_wrong_ca_reload_verify_off_client_certificate(h):
    # rediss:// with the CA: served, /healthz and /metrics say TLS. The
    # wrong CA: the certificate is refused, said on /readyz; a reload with
    # the right CA file mends it. redis_tls_verify off takes any
    # certificate, with a warning. A server that asks for a client
    # certificate refuses mcpd without one, and takes it with one.
    certs = Certs(h.workdir)
    with redis(h, password=ADMIN, tls=certs.server_files) as rs:
        url = rs.url.replace("rediss://", f"rediss://:{ADMIN}@")
        d = _start(h, [f"redis_tls_ca_file {certs.ca}"], eventlog=url)
        _ready(d, 200, 10, "TLS with the right CA")
        _echo(d)
        status, health = _get(d, "/healthz")
        expect('"tls":{"enabled":true,"verify":true,"version":"TLSv1.'
               in health, f"/healthz says nothing of TLS: {health}")
        status, metrics = _get(d, "/metrics")
        expect('tls="on",tls_version="TLSv1.' in metrics, "/metrics "
               "says nothing of TLS")

        e = _start(h, [f"redis_tls_ca_file {certs.other_ca}"], eventlog=url)
        body = _ready(e, 503, 10, "the wrong CA", "certificate is refused")
        expect("TLS handshake with 127.0.0.1" in body["reason"],
               f"/readyz reason: {body!r}")
        with open(e.conf_path) as f:
            text = f.read()
        with open(e.conf_path, "w") as f:
            f.write(text.replace(certs.other_ca, certs.ca))
        e.signal(signal.SIGHUP)
        _ready(e, 200, 15, "reloaded with the right CA")

        f_ = _start(h, [f"redis_tls_ca_file {certs.other_ca}",
                        "redis_tls_verify off"], eventlog=url)
        _ready(f_, 200, 10, "redis_tls_verify off")
        f_.wait_log(lambda l: " warn " in l and "redis_tls_verify off" in l,
                    5, "the warning of redis_tls_verify off")

        rs.cmd("CONFIG", "SET", "tls-auth-clients", "yes")
        g = _start(h, [f"redis_tls_ca_file {certs.ca}"], eventlog=url)
        body = _ready(g, 503, 10, "no client certificate", "TLS")
        g2 = _start(h, [f"redis_tls_ca_file {certs.ca}",
                        f"redis_tls_cert_file {certs.client}",
                        f"redis_tls_key_file {certs.client_key}"],
                    eventlog=url)
        _ready(g2, 200, 10, "with the client certificate")
        _echo(g2)


def test_plaintext_against_a_tls_port_and_tls_against_a_plaintext_one(h):
    # redis:// to a TLS-only port: the server drops the connection, and
    # the reason says it may be a TLS port. Once the server listens in
    # plaintext on that port instead, mcpd connects. rediss:// to a
    # plaintext port: the handshake gets no answer, and the reason says
    # it may be a plaintext port.
    certs = Certs(h.workdir)
    with redis(h, password=ADMIN, tls=certs.server_files) as rs:
        plain = f"redis://:{ADMIN}@127.0.0.1:{rs.port}"
        d = _start(h, eventlog=plain)
        body = _ready(d, 503, 10, "plaintext to a TLS port",
                      "a TLS port? then use rediss://")
        _never_shown(d, [ADMIN])
        # One CONFIG SET: the TLS port closes, the plaintext one opens.
        rs.cmd("CONFIG", "SET", "tls-port", "0", "port", str(rs.port))
        rs.tls = None
        _ready(d, 200, 15, "the port in plaintext now")
        _echo(d)

        e = _start(h, [f"redis_tls_ca_file {certs.ca}"],
                   eventlog=f"rediss://:{ADMIN}@127.0.0.1:{rs.port}")
        body = _ready(e, 503, 10, "TLS to a plaintext port",
                      "plaintext port? then use redis://")
        expect("TLS handshake" in body["reason"], f"{body!r}")


def test_unix_socket_with_a_password(h):
    # unix:///PATH: no TCP keepalive on a unix socket (it failed every
    # write before), a password, a database.
    with redis(h, password=ADMIN, unix=True) as rs:
        d = _start(h, eventlog=f"{rs.url}?db=3",
                   extra_lines=[f"redis_password_file "
                                f"{h.write('pw', ADMIN)}"])
        _ready(d, 200, 10, "a unix socket")
        sid = _echo(d)
        keys = redis_command(f"{rs.url}?db=3", "KEYS", "*", password=ADMIN)
        expect(any(sid in k for k in keys), f"nothing of session {sid} in "
               f"database 3: {keys!r}")


def test_readonly_is_an_outage_until_the_server_is_a_primary_again(h):
    # The server mcpd writes to becomes a replica (REPLICAOF: what a
    # failover does to the old primary behind a name that did not move):
    # READONLY is an outage with its reason, not a data error; once the
    # server is a primary again, mcpd serves again by itself.
    with redis(h) as rs:
        other = RedisServer(h.workdir)
        try:
            other.start()
            d = _start(h, eventlog=rs.url, eventlog_outage_grace=0)
            _ready(d, 200, 10, "a primary")
            _echo(d)
            rs.cmd("REPLICAOF", "127.0.0.1", str(other.port))
            deadline = time.monotonic() + tmo(20)
            while True:
                # Writes meet READONLY (or, reconnected, ROLE says
                # replica): answered 503, never a crash.
                r = d.post(None, rpc("initialize", {
                    "protocolVersion": LATEST, "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}},
                    d.new_id()), timeout=15)
                if r.status == 503:
                    break
                expect(time.monotonic() < deadline, "writes to a replica "
                       f"still answered HTTP {r.status}")
                time.sleep(0.1)
            body = _ready(d, 503, 20, "a replica", reason="replica")
            expect(d.alive(), "mcpd died on READONLY")
            rs.cmd("REPLICAOF", "NO", "ONE")
            _ready(d, 200, 20, "a primary again")
            _echo(d)
            print(f"  /readyz while a replica: {body!r}")
        finally:
            h.stop_all()
            other.stop()
