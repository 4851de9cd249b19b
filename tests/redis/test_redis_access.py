"""Reaching Redis as operators run it (issue 24): passwords and ACL users,
TLS, and the mistakes operators make. Each mistake must be a clear error
line naming what was refused, /readyz 503 with that reason, retried with a
backoff (never a crash, never a loop that floods the log), and recovery
once it is fixed: a reload for a password file, the ACL put right, the
right CA, the server put right. A password never shows: not in the log,
not in /healthz, /metrics or /readyz, not in `mcpd -t`. A server
answering -LOADING, -TRYAGAIN or -READONLY (a proxy stands in for it) is
an outage too: 503 while it lasts, calls within eventlog_outage_grace
complete exactly.

Every test starts its own redis-server (and certificates, made here with
openssl).
"""

import signal
import socket
import ssl
import threading
import time

from mcpd_harness import (LATEST, Daemon, RedisServer, check_ids, expect,
                          message_events, parse_event_id, redis_command,
                          result_text, rpc, tmo, tool_call)
from redisops import Certs, RefusingProxy, acl_rules, redis

ADMIN = "admin-pw-4f1c"        # requirepass of the servers: the tests' own


class _Unready(Daemon):
    """A daemon whose start() does not wait for its event log."""

    def _wait_redis_ready(self, timeout):
        pass


def _start(h, extra_lines=(), env=None, **conf):
    conf.setdefault("eventlog_wait", 0)
    d = _Unready(h.mcpd, h.workdir, conf, extra_lines, h.sanitized,
                 f"mcpd{len(h.daemons)}")
    d.env.update(env or {})
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


def _ended_stream(d, rs, sid, n):
    """Runs stream n on sid to its end; returns (its key, MEMORY USAGE,
    {N: data} as delivered)."""
    id, r = d.call_open(sid, "stream", {"n": n}, "p")
    expect(r.status == 200 and r.is_sse, f"stream -> HTTP {r.status}")
    events = r.events_until_close(15)
    k, head = check_ids(events, 1)
    expect(head == n + 1, f"stream n={n}: head {k}-{head}")
    key = f"mcpd:{{{sid}}}:s:{k}"
    raw = {parse_event_id(e.id)[1]: e.data for e in message_events(events)}
    return key, k, rs.cmd("MEMORY", "USAGE", key), raw


def test_acl_without_copy_and_rename_streams_end_uncompacted(h):
    # docs/deployment.md calls +copy +rename optional: they let the script
    # compact a stream as it ends. With the documented rules a short
    # stream ends compacted; without those two the same call ends the
    # same way, its stream kept whole (Redis's 4 KB first node) and
    # resumable byte for byte, with no error and /readyz 200.
    pw = "mcpd-pw-c0e1"
    with redis(h, password=ADMIN) as rs:
        rules = acl_rules(pw)
        expect("+copy" in rules and "+rename" in rules, "docs/deployment.md's "
               f"ACL line lacks +copy +rename: {rules!r}")
        rs.cmd("ACL", "SETUSER", "mcpd", "reset", *rules)
        url = rs.url.replace("redis://", f"redis://mcpd:{pw}@")
        d = _start(h, eventlog=url)
        _ready(d, 200, 10, "the documented rules")
        sid = d.initialize(LATEST)
        key, _, small, _ = _ended_stream(d, rs, sid, 5)
        expect(small < 3000, f"documented rules: {key} holds {small} "
               "bytes, not compacted")

        rs.cmd("ACL", "SETUSER", "mcpd", "reset",
               *[w for w in rules if w not in ("+copy", "+rename")])
        key, k, size, raw = _ended_stream(d, rs, sid, 5)
        expect(size > 4096, f"without COPY and RENAME: {key} holds {size} "
               "bytes: compacted all the same?")
        expect(rs.cmd("EXISTS", key + ":c") == 0, "a copy left behind")
        print(f"  compacted {small} bytes, without COPY and RENAME {size}")
        ttl = rs.cmd("PTTL", key)
        expect(isinstance(ttl, int) and ttl > 0, f"{key}'s lifetime {ttl!r}")
        g = d.get_sse(sid, f"{k}-0")
        expect(g.status == 200 and g.is_sse, f"resume -> HTTP {g.status}")
        got = {parse_event_id(e.id)[1]: e.data
               for e in message_events(g.events_until_close(10))}
        expect(got == {n: v for n, v in raw.items() if n > 0},
               f"resume of the uncompacted stream: {sorted(got)} against "
               f"{sorted(raw)}")
        _ready(d, 200, 5, "an ACL without COPY and RENAME")
        expect("NOPERM" not in d.stderr_text() and
               " error " not in d.stderr_text(), "an error logged for "
               "a compaction the ACL does not allow:\n" + d.stderr_text())


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


REFUSALS = (
    ("LOADING", "LOADING Redis is loading the dataset in memory"),
    ("TRYAGAIN", "TRYAGAIN Multiple keys request during rehashing of slot"),
    ("READONLY", "READONLY You can't write against a read only replica."),
)


def test_loading_tryagain_readonly_replies_are_an_outage(h):
    # A proxy in front of Redis answers mcpd's data commands -LOADING (a
    # server loading its data), then -TRYAGAIN, then -READONLY, each
    # for a while, as those servers do. Each is an outage with its
    # reason, not a data error: new work and resumes are answered 503
    # while it lasts (eventlog_outage_grace 0: no waiting it out),
    # /readyz 503 says which reply, the daemon keeps answering; once
    # the proxy lets the commands through, mcpd serves again by itself,
    # and everything committed before is there, resumed exactly.
    with redis(h) as rs:
        proxy = RefusingProxy(rs.port)
        try:
            d = _start(h, eventlog=proxy.url, eventlog_outage_grace=0)
            _ready(d, 200, 10, "through the proxy")
            for word, error in REFUSALS:
                _refused_for_a_while(d, rs, proxy, word, error)
        finally:
            h.stop_all()
            proxy.close()


test_loading_tryagain_readonly_replies_are_an_outage.timeout = 120


def _wait_refused(proxy, n, word, timeout=20):
    """Until the proxy has refused n commands in all."""
    deadline = time.monotonic() + tmo(timeout)
    while proxy.refused < n:
        expect(time.monotonic() < deadline, f"{word}: mcpd stopped trying "
               f"({proxy.refused} commands refused, waited for {n})")
        time.sleep(0.05)


def _refused_for_a_while(d, rs, proxy, word, error):
    sid = d.initialize(LATEST)
    msg, r = d.call(sid, "stream", {"n": 5}, f"p-{word}", timeout=15)
    events = message_events(r.events)
    k, head = check_ids(events, 1, what=f"before {word}")
    expect(head == 6 and result_text(msg) == "done 5",
           f"before {word}: the call ended at {head} with {msg!r}")

    proxy.refuse(error)
    before = proxy.refused
    deadline = time.monotonic() + tmo(20)
    while True:
        # New work meets the refusal: 503, never a 500 or a crash.
        i = d.new_id()
        r = d.post(None, rpc("initialize", {
            "protocolVersion": LATEST, "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}, i), timeout=15)
        if r.status == 503:
            break
        expect(r.status == 200, f"{word}: initialize -> HTTP {r.status} "
               f"{r.body[:200]!r}")
        expect(time.monotonic() < deadline, f"{word}: new work still "
               "answered 200")
        time.sleep(0.1)
    expect(proxy.refused > before, f"{word}: the proxy refused nothing")
    body = _ready(d, 503, 20, f"-{word}", reason=word)
    g = d.get_sse(sid, events[0].id, timeout=15)
    expect(g.status == 503, f"{word}: a resume -> HTTP {g.status} "
           f"{g.body[:200]!r}, expected 503 while Redis refuses")
    status, _ = _get(d, "/metrics")
    expect(d.alive() and status == 200, f"{word}: mcpd stopped serving "
           f"(/metrics {status})")
    # While it lasts mcpd tries again (set-up commands refused each
    # time, with the backoff), and stays 503 with the reason.
    _wait_refused(proxy, proxy.refused + 3, word)
    _ready(d, 503, 5, f"-{word}, retried", reason=word)
    errors = [line for line in d.stderr_text().splitlines()
              if "not committed" in line or "violation" in line]
    expect(not errors, f"{word}: taken for a data error: {errors[:3]!r}")

    proxy.refuse(None)
    _ready(d, 200, 20, f"after -{word}")
    g = d.get_sse(sid, events[0].id, timeout=15)
    expect(g.status == 200 and g.is_sse, f"after {word}: resume -> HTTP "
           f"{g.status} {None if g.is_sse else g.body[:200]!r}")
    again = message_events(g.events_until_close(15))
    expect([(e.id, e.data) for e in again] ==
           [(e.id, e.data) for e in events[1:]],
           f"after {word}: resumed {[e.id for e in again]}, committed "
           f"{[e.id for e in events]}")
    log = redis_command(rs.url, "XRANGE", f"mcpd:{{{sid}}}:s:{k}", "-", "+")
    expect([parse_event_id(eid)[1] for eid, _ in log] == list(range(7)),
           f"after {word}: Redis holds {[eid for eid, _ in log]}")
    _echo(d, f"after {word}")
    print(f"  -{word}: /readyz said {body.get('reason')!r}; "
          f"{proxy.refused - before} commands refused")


def test_loading_within_the_grace_every_call_completes(h):
    # The same -LOADING for a while, with eventlog_outage_grace: ten
    # calls streaming across it pause and complete exactly (ids
    # contiguous, nothing lost or repeated, Redis holding what each
    # client got), as in any outage (tests/e2e/test_redis_outage.py).
    from test_redis_outage import (N, _check_complete,
                                   _expect_no_failure_logged, _read_all,
                                   _start_calls)
    with redis(h) as rs:
        proxy = RefusingProxy(rs.port)
        try:
            d = _start(h, eventlog=proxy.url, eventlog_outage_grace=30)
            _ready(d, 200, 10, "through the proxy")
            calls = _start_calls(d, 10)
            proxy.refuse(REFUSALS[0][1])
            _wait_refused(proxy, 6, "LOADING")
            proxy.refuse(None)
            _read_all(calls, 60)
            for c in calls:
                _check_complete(rs, c, N, "-LOADING within the grace")
            expect(d.alive(), "mcpd died")
            d.wait_log(lambda line: "connection lost (LOADING" in line, 1,
                       "the connection dropped on -LOADING")
            _expect_no_failure_logged(d, "-LOADING within the grace")
            print(f"  {proxy.refused} commands refused -LOADING; "
                  f"{len(calls)} calls complete")
        finally:
            h.stop_all()
            proxy.close()


test_loading_within_the_grace_every_call_completes.timeout = 120


class _SniRecorder:
    """A TLS listener on loopback with the test's server certificate: it
    records the server name (SNI) of each handshake, then hangs up."""

    def __init__(self, certs):
        self.names = []
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(certs.server, certs.server_key)
        self.ctx.sni_callback = lambda s, name, c: self.names.append(name)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            try:
                c.settimeout(5)
                self.ctx.wrap_socket(c, server_side=True).close()
            except (OSError, ssl.SSLError):
                c.close()

    def close(self):
        self.sock.close()


def test_tls_host_name_checked_and_sent_as_sni(h):
    # The server's certificate names 127.0.0.1 and localhost. A name it
    # does not carry (redis_tls_server_name) is refused at the handshake,
    # said on /readyz; one it carries is served. The name goes out as SNI
    # (a listener of the test's records it).
    certs = Certs(h.workdir)
    with redis(h, password=ADMIN, tls=certs.server_files) as rs:
        url = rs.url.replace("rediss://", f"rediss://:{ADMIN}@")
        d = _start(h, [f"redis_tls_ca_file {certs.ca}",
                       "redis_tls_server_name wrong.example"], eventlog=url)
        body = _ready(d, 503, 10, "a name the certificate lacks", "TLS")
        expect("TLS handshake with 127.0.0.1" in body["reason"] and
               "hostname mismatch" in body["reason"],
               f"/readyz reason: {body!r}")
        e = _start(h, [f"redis_tls_ca_file {certs.ca}",
                       "redis_tls_server_name localhost"], eventlog=url)
        _ready(e, 200, 10, "a name the certificate carries")
        _echo(e)
        rec = _SniRecorder(certs)
        try:
            _start(h, [f"redis_tls_ca_file {certs.ca}",
                       "redis_tls_server_name localhost"],
                   eventlog=f"rediss://127.0.0.1:{rec.port}")
            deadline = time.monotonic() + tmo(10)
            while not rec.names:
                expect(time.monotonic() < deadline, "no TLS handshake "
                       "reached the recording listener")
                time.sleep(0.05)
            expect(rec.names[0] == "localhost", f"SNI sent: {rec.names!r}")
        finally:
            h.stop_all()
            rec.close()
        print(f"  a name the certificate lacks: {body['reason']!r}")


def test_tls_system_store_by_default(h):
    # Without redis_tls_ca_file the server's certificate is verified
    # against OpenSSL's default store: refused while the test's CA is
    # not in it; taken once it is (SSL_CERT_FILE names the store's file,
    # as OpenSSL documents, standing in for a CA the system trusts).
    certs = Certs(h.workdir)
    with redis(h, password=ADMIN, tls=certs.server_files) as rs:
        url = rs.url.replace("rediss://", f"rediss://:{ADMIN}@")
        d = _start(h, eventlog=url)
        body = _ready(d, 503, 10, "a CA the system does not trust",
                      "certificate is refused")
        e = _start(h, env={"SSL_CERT_FILE": certs.ca}, eventlog=url)
        _ready(e, 200, 10, "the CA in the default store")
        _echo(e)
        print(f"  not in the store: {body['reason']!r}")
