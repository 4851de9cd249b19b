"""The audit trail (conf audit_log, docs/audit.md) on one instance: a
scripted mixed run where every audited request has exactly one line with
the right outcome (ok, error, cancelled, limited, interrupted by a
shutdown; a task's creation and its cancel; a stateless call), the
arguments only as their SHA-256 unless audit_arguments is on, lines that
survive a rotation (rename, SIGUSR1), and a destination that fails every
write (/dev/full) counted while the daemon serves on, and the principal
(subject, issuer, client id of a JWT) on both revisions. Interrupted by
kill -9 of the instance is tests/cluster/test_governance.py's (another
instance answers the call, and writes its line). audit_log syslog is
checked against a socket the test binds at /dev/log, where syslog(3)
sends."""

import fcntl
import hashlib
import json
import os
import signal
import socket
import tempfile
import time

from mcpd_harness import Skip, expect, rpc, tmo, tool_call

FIELDS = ("time", "instance", "method", "principal", "issuer", "client_id",
          "session", "request_id", "endpoint", "protocol",
          "arguments_sha256", "outcome", "duration_ms", "response_bytes")
EXT_NAME = "io.modelcontextprotocol/tasks"
EXT = {"io.modelcontextprotocol/clientCapabilities":
       {"elicitation": {}, "extensions": {EXT_NAME: {}}}}


def read_lines(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def wait_lines(path, count, timeout=10):
    """The file's lines once it has count of them (the writer is a thread
    of its own: lines land shortly after their outcome)."""
    deadline = time.monotonic() + tmo(timeout)
    while True:
        lines = read_lines(path)
        if len(lines) >= count:
            return lines
        expect(time.monotonic() < deadline, f"{path}: {len(lines)} audit "
               f"lines, waited for {count}: {lines!r}")
        time.sleep(0.02)


def sha(args):
    return hashlib.sha256(json.dumps(args, separators=(",", ":"))
                          .encode()).hexdigest()


def by_id(lines):
    out = {}
    for line in lines:
        out.setdefault(json.dumps(line.get("request_id")), []).append(line)
    return out


def req(d, sid, method, params, id=None):
    id = d.new_id() if id is None else id
    r = d.post(sid, rpc(method, params, id))
    return id, r


def test_audit_mixed_run_has_one_line_per_call(h):
    path = os.path.join(h.workdir, "audit.log")
    d = h.start(extra_lines=[
        f"audit_log {path}", "fixtures conformance",
        "limit notify-once {", "    key principal", "    rate 1/h",
        "    burst 1", "    tools notify", "}"])
    sid = d.initialize()
    want = {}           # request id -> (method, outcome, extra checks)

    args = {"text": "hi"}
    id, r = req(d, sid, "tools/call", {"name": "echo", "arguments": args})
    expect(r.status == 200, f"echo -> HTTP {r.status}")
    want[id] = ("tools/call", "ok", {"tool": "echo",
                                     "arguments_sha256": sha(args)})

    id, r = req(d, sid, "tools/call", {"name": "nosuch", "arguments": {}})
    want[id] = ("tools/call", "error", {"code": -32602})

    id, r = req(d, sid, "resources/read", {"uri": "test://nosuch"})
    want[id] = ("resources/read", "error", {"resource": "test://nosuch"})

    id, r = req(d, sid, "prompts/get", {"name": "test_simple_prompt"})
    want[id] = ("prompts/get", "ok", {"prompt": "test_simple_prompt"})

    id, r = req(d, sid, "tools/call", {"name": "notify",
                                       "arguments": {"n": 1}})
    want[id] = ("tools/call", "ok", {})
    id, r = req(d, sid, "tools/call", {"name": "notify",
                                       "arguments": {"n": 1}})
    expect(r.status == 429, f"notify over its limit -> HTTP {r.status}")
    want[id] = ("tools/call", "limited", {"code": -32023,
                                          "limit": "notify-once"})

    cid, long = d.call_open(sid, "stream", {"n": 500, "interval_ms": 20})
    long.next_message(timeout=10)
    d.post(sid, rpc("notifications/cancelled", {"requestId": cid}))
    long.close()
    want[cid] = ("tools/call", "cancelled", {})

    id, r = req(d, sid, "tools/call", {"name": "slow_compute", "arguments":
                                       {"seconds": 60}, "_meta": EXT})
    task = r.rpc(id)["result"]["taskId"]
    want[id] = ("tools/call", "ok", {"task": task})
    id, r = req(d, sid, "tasks/cancel", {"taskId": task, "_meta": EXT})
    want[id] = ("tasks/cancel", "ok", {"task": task})

    sid_id = d.new_id()
    params = {"name": "echo", "arguments": args, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}
    r = d.post(None, rpc("tools/call", params, sid_id), {
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
        "Mcp-Name": "echo"})
    expect(r.status == 200, f"stateless echo -> HTTP {r.status}")
    want[sid_id] = ("tools/call", "ok", {"session": None,
                                         "protocol": "2026-07-28"})

    # Running when the instance stops (drain_timeout 0): interrupted.
    iid, last = d.call_open(sid, "stream", {"n": 500, "interval_ms": 20})
    last.next_message(timeout=10)
    want[iid] = ("tools/call", "interrupted", {"code": -32603})
    d.stop()

    lines = read_lines(path)
    got = by_id(lines)
    for id, (method, outcome, extra) in want.items():
        mine = got.get(json.dumps(id), [])
        expect(len(mine) == 1, f"request {id} ({method}, {outcome}): "
               f"{len(mine)} audit lines: {mine!r}")
        line = mine[0]
        missing = [f for f in FIELDS if f not in line]
        expect(not missing, f"request {id}: fields {missing} missing from "
               f"{line!r}")
        expect(line["method"] == method and line["outcome"] == outcome,
               f"request {id}: wanted {method} {outcome}, got {line!r}")
        expect(line["session"] == (sid if id != sid_id else None) or
               "session" in extra, f"request {id}: session {line!r}")
        for k, v in extra.items():
            expect(line.get(k) == v, f"request {id}: {k} {line.get(k)!r}, "
                   f"wanted {v!r}: {line!r}")
        expect("arguments" not in line, f"request {id}: arguments given "
               f"without audit_arguments: {line!r}")
        expect(line["endpoint"] == "/mcp", f"endpoint {line['endpoint']!r}")
    expect(len(lines) == len(want), f"{len(lines)} lines for {len(want)} "
           f"audited requests: {[l['request_id'] for l in lines]}")


def test_audit_arguments_only_when_enabled(h):
    path = os.path.join(h.workdir, "audit.log")
    d = h.start(extra_lines=[f"audit_log {path}", "audit_arguments on"])
    sid = d.initialize()
    args = {"text": "kept"}
    msg, _ = d.call(sid, "echo", args)
    (line,) = wait_lines(path, 1)
    expect(line.get("arguments") == args and
           line.get("arguments_sha256") == sha(args),
           f"with audit_arguments on: {line!r}")


def test_audit_lines_survive_rotation(h):
    """Lines before a rotation are in the moved file, lines after it in
    the new one: none lost, none twice."""
    path = os.path.join(h.workdir, "audit.log")
    d = h.start(extra_lines=[f"audit_log {path}"])
    sid = d.initialize()
    for i in range(3):
        d.call(sid, "echo", {"text": f"before {i}"})
    wait_lines(path, 3)
    os.rename(path, path + ".1")
    d.signal(signal.SIGUSR1)
    deadline = time.monotonic() + tmo(10)
    while not os.path.exists(path):
        expect(time.monotonic() < deadline, "audit_log not reopened 10 s "
               "after SIGUSR1")
        time.sleep(0.02)
    for i in range(2):
        d.call(sid, "echo", {"text": f"after {i}"})
    after = wait_lines(path, 2)
    before = read_lines(path + ".1")
    expect(len(before) == 3 and len(after) == 2, f"{len(before)} lines "
           f"before the rotation, {len(after)} after (wanted 3 and 2)")
    ids = [l["request_id"] for l in before + after]
    expect(len(set(ids)) == 5, f"request ids {ids}")


def test_audit_write_failure_counted_daemon_serves_on(h):
    """Every write fails (ENOSPC: /dev/full): the lines are counted as
    failed in /metrics, logged (limited), and calls go on."""
    d = h.start(extra_lines=["audit_log /dev/full"])
    sid = d.initialize()
    for i in range(5):
        msg, _ = d.call(sid, "echo", {"text": str(i)})
        expect("result" in msg, f"call {i} with a failing audit log: "
               f"{msg!r}")
    deadline = time.monotonic() + tmo(10)
    while True:
        r = d.request("GET", path="/metrics")
        failed = [line for line in r.body.decode().splitlines()
                  if line.startswith('mcpd_audit_lines_total{result='
                                     '"failed"}')]
        if failed and float(failed[0].split()[-1]) >= 5:
            break
        expect(time.monotonic() < deadline, f"failed lines not counted: "
               f"{failed!r}")
        time.sleep(0.05)
    d.wait_log(lambda t: "audit_log /dev/full" in t and "could not be "
               "written" in t, timeout=10, what="the write failure logged")
    d.assert_alive(sid, "after audit writes failed")


def test_audit_names_the_principal(h):
    """With auth (a JWT from the test's key): the line of a session's call
    and of a 2026-07-28 call carry the token's subject, issuer and
    client id, and the session (null on the stateless path)."""
    import test_auth
    path = os.path.join(h.workdir, "audit.log")
    d = test_auth.start(h, extra=[f"audit_log {path}"])
    tok = test_auth.token(sub="carol", client_id="ci-runner")
    hdr = test_auth.bearer(tok)
    sid = test_auth.session(d, tok)
    id = d.new_id()
    r = d.post(sid, tool_call("echo", {"text": "who"}, id), hdr)
    expect(r.status == 200 and "result" in r.rpc(id), f"echo -> HTTP "
           f"{r.status} {r.body[:200]!r}")
    sl_id = d.new_id()
    params = {"name": "echo", "arguments": {"text": "who"}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}
    r = d.post(None, rpc("tools/call", params, sl_id), {
        **hdr, "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call", "Mcp-Name": "echo"})
    expect(r.status == 200, f"stateless echo -> HTTP {r.status} "
           f"{r.body[:200]!r}")
    lines = by_id(wait_lines(path, 2))
    for rid, session in ((id, sid), (sl_id, None)):
        (line,) = lines.get(json.dumps(rid), [None])
        expect(line is not None and line["principal"] == "carol" and
               line["issuer"] == test_auth.ISSUER and
               line["client_id"] == "ci-runner" and
               line["session"] == session and line["outcome"] == "ok",
               f"request {rid}: {line!r}")


def test_audit_to_syslog(h):
    """audit_log syslog: each audited call is one datagram to /dev/log,
    facility authpriv, severity info, tagged mcpd-audit, its message the
    JSON line. The test stands in for the syslog daemon: it binds
    /dev/log itself, so it needs that path free and writable (root on a
    machine without a syslog daemon, as CI's). `make check` runs the
    suite on both event logs at once: a lock held for the whole test
    makes the two runs take /dev/log in turn."""
    lock = open(os.path.join(tempfile.gettempdir(), "mcpd-test-dev-log.lock"),
                "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _audit_to_syslog(h)
    finally:
        lock.close()


def _audit_to_syslog(h):
    if os.path.exists("/dev/log"):
        raise Skip("/dev/log exists (a syslog daemon): the test cannot "
                   "stand in for it", other_run=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.bind("/dev/log")
    except OSError as e:
        sock.close()
        raise Skip(f"cannot bind /dev/log: {e}")
    try:
        d = h.start(extra_lines=["audit_log syslog"])
        sid = d.initialize()
        for i in range(2):
            d.call(sid, "echo", {"text": f"syslog {i}"})
        sock.settimeout(tmo(10))
        lines = []
        while len(lines) < 2:
            try:
                data = sock.recv(65536).decode()
            except socket.timeout:
                break
            if "mcpd-audit[" in data:
                lines.append(data)
        expect(len(lines) == 2, f"{len(lines)} audit datagrams on /dev/log, "
               f"wanted 2: {lines!r}")
        for line in lines:
            # <86>: LOG_AUTHPRIV (10 << 3) | LOG_INFO (6).
            expect(line.startswith("<86>"), f"priority of {line!r}")
            rec = json.loads(line[line.index("{"):])
            expect(rec["method"] == "tools/call" and rec["outcome"] == "ok"
                   and rec["tool"] == "echo", f"record {rec!r}")
    finally:
        sock.close()
        os.unlink("/dev/log")
