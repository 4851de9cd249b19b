"""Where log lines go and how they look: log_format json, log_file, and
SIGUSR1 reopening the file after rotation."""

import json
import os
import signal
import subprocess
import time

from mcpd_harness import (conf_text, expect, free_port, result_text, rpc,
                          sanitizer_env, tmo)
from test_stateless import _headers, _meta


def test_json_format_every_line_is_an_object(h):
    d = h.start(log_format="json")
    s = d.initialize()
    d.ping(s)
    d.request("POST", session="0" * 32, body=b'{"jsonrpc":"2.0","id":1,'
              b'"method":"ping"}')                    # an unknown session
    lines = [ln for ln in d.stderr_text().splitlines() if ln.strip()]
    expect(len(lines) >= 2, f"too few log lines: {lines}")
    for ln in lines:
        try:
            obj = json.loads(ln)
        except ValueError:
            raise AssertionError(f"log line is not JSON: {ln!r}") from None
        expect(set(obj) == {"time", "level", "msg"}, f"keys: {ln!r}")
        expect(obj["level"] in ("debug", "info", "warn", "error"), ln)
    expect(any("listening on" in json.loads(ln)["msg"] for ln in lines),
           "no start-up line among the JSON lines")


def _wait_file(path, needle, timeout=10):
    deadline = time.monotonic() + tmo(timeout)
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                if needle in f.read():
                    return
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    raise AssertionError(f"{needle!r} never appeared in {path}")


def test_log_file_reopened_on_sigusr1(h):
    path = os.path.join(h.workdir, "mcpd.log")
    port = free_port()
    conf = h.write("logfile.conf", conf_text({"listen": f"127.0.0.1:{port}",
                                              "log_file": path}))
    env = os.environ.copy()
    if h.sanitized:
        sanitizer_env(env)
    p = subprocess.Popen([h.mcpd, "-c", conf], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, start_new_session=True)
    try:
        _wait_file(path, "listening on")
        expect(oct(os.stat(path).st_mode & 0o777) == "0o640",
               "log file mode is not 0640")
        os.rename(path, path + ".1")
        p.send_signal(signal.SIGUSR1)
        _wait_file(path, "reopened")
        expect(p.poll() is None, "SIGUSR1 stopped mcpd")
        with open(path + ".1") as f:
            expect("listening on" in f.read(), "rotated file lost lines")
    finally:
        p.send_signal(signal.SIGINT)
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=tmo(10))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    out = p.stderr.read().decode(errors="replace")
    expect(out == "" or h.sanitized, f"lines went to stderr too:\n{out}")
    expect(p.returncode == 0, f"mcpd exited {p.returncode}")


def test_bad_log_file_is_refused(h):
    rc, out = h.run_mcpd("-t", "-c", h.write("rel.conf", conf_text(
        {"log_file": "relative/path.log"})))
    expect(rc != 0 and "log_file" in out, f"relative path accepted:\n{out}")
    rc, out = h.run_mcpd("-c", h.write("nodir.conf", conf_text(
        {"log_file": "/nonexistent-dir/mcpd.log",
         "listen": "127.0.0.1:0"})), timeout=5)
    expect(rc == 1 and "/nonexistent-dir/mcpd.log" in out,
           f"an unopenable log file: exit {rc}:\n{out}")


def _access_lines(d):
    return [ln for ln in d.stderr_text().splitlines() if " access " in ln]


def _fields(line):
    return dict(w.split("=", 1) for w in line.split(" access ", 1)[1].split())


def test_access_log_one_line_per_request(h):
    d = h.start(access_log="on")
    s = d.initialize()
    msg, _ = d.call(s, "echo", {"text": "hi"})           # an SSE response
    r = d.request("GET", path="/no/such thing")          # 404, odd path
    expect(r.status == 404, f"404 expected, got {r.status}")
    d.request("GET", path="/healthz")
    d.delete(s)
    deadline = time.monotonic() + tmo(5)
    while len(_access_lines(d)) < 6 and time.monotonic() < deadline:
        time.sleep(0.02)
    lines = _access_lines(d)
    expect(len(lines) == 6, f"access lines: {lines}")
    init, initialized, call, missing, health, delete = map(_fields, lines)
    expect(initialized["status"] == "202", f"{initialized}")
    expect(init["method"] == "POST" and init["status"] == "200" and
           init["session"] == s and init["stream"] == "-", f"{init}")
    expect(call["status"] == "200" and call["session"] == s and
           call["stream"] != "-" and int(call["bytes"]) > 0, f"{call}")
    expect(missing["status"] == "404" and " " not in missing["path"] and
           missing["path"].startswith("/no/such"), f"{missing}")
    expect(health["path"] == "/healthz" and health["session"] == "-",
           f"{health}")
    expect(delete["method"] == "DELETE" and delete["session"] == s,
           f"{delete}")
    for f in (init, initialized, call, missing, health, delete):
        expect(float(f["ms"]) >= 0, f"duration: {f}")


def test_access_log_stateless_sse_response(h):
    # A 2026-07-28 request answered as SSE (its progress goes out before
    # its result) writes its line once its stream ends, as a session's
    # does; the JSON reply after it writes the next one.
    d = h.start(access_log="on")
    params = {"name": "stream", "arguments": {"n": 3},
              "_meta": _meta(progressToken="t")}
    r = d.post(None, rpc("tools/call", params, 1),
               _headers("tools/call", params))
    expect(r.status == 200 and r.is_sse and
           result_text(r.rpc(1)) == "done 3", f"stream: {r.body[:300]!r}")
    params = {"_meta": _meta()}
    r = d.post(None, rpc("tools/list", params, 2),
               _headers("tools/list", params))
    expect(r.status == 200 and r.is_json, f"tools/list: HTTP {r.status}")
    deadline = time.monotonic() + tmo(5)
    while len(_access_lines(d)) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    lines = _access_lines(d)
    expect(len(lines) == 2, f"access lines (the SSE one first): {lines}")
    sse, listed = map(_fields, lines)
    expect(sse["method"] == "POST" and sse["status"] == "200" and
           sse["session"] == "-" and sse["stream"] == "-" and
           int(sse["bytes"]) > 0 and float(sse["ms"]) >= 0, f"{sse}")
    expect(listed["status"] == "200" and int(listed["bytes"]) > 0,
           f"{listed}")


def test_access_log_off_by_default(h):
    d = h.start()
    d.ping(d.initialize())
    expect(_access_lines(d) == [], "access lines without access_log on")


def test_access_log_hides_query_values(h):
    # A client may put a bearer token in the query (?access_token=, RFC
    # 6750 2.3); mcpd ignores it, but its access log must not keep it.
    d = h.start(access_log="on")
    s = d.initialize()
    ping = b'{"jsonrpc":"2.0","id":7,"method":"ping"}'
    r = d.request("POST", session=s, body=ping,
                  path="/mcp?access_token=sekrit-post&x=1")
    expect(r.status == 200, f"POST with a query: HTTP {r.status}")
    r = d.open("GET", s, None, {"Accept": "text/event-stream"},
               path="/mcp?access_token=sekrit-get")
    expect(r.status == 200 and r.is_sse, f"GET with a query: {r.status}")
    r.close()
    r = d.request("GET", path="/nowhere?sekrit-bare")
    expect(r.status == 404, f"404 expected, got {r.status}")
    deadline = time.monotonic() + tmo(5)
    while len(_access_lines(d)) < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
    lines = _access_lines(d)
    paths = [_fields(ln)["path"] for ln in lines]
    expect("/mcp?access_token=-&x=-" in paths and
           "/mcp?access_token=-" in paths and "/nowhere?-" in paths,
           f"access paths: {paths}")
    expect("sekrit" not in d.stderr_text(), f"a query value logged: {lines}")
