"""The conf file as seen from outside: `mcpd -t -c FILE` and start-up."""

import socket
import subprocess
import time

from mcpd_harness import expect, tmo

GOOD = """# a complete, valid conf
listen 127.0.0.1:0
endpoint /mcp
eventlog memory

stream_maxlen 1000      # entries per stream
stream_ttl 300
session_ttl 1800
sse_high_watermark 262144
backpressure_request block
backpressure_standalone close
builtin_tools on
allowed_origins http://a.example https://b.example
max_body 4194304
"""


def test_check_accepts_good_conf(h):
    path = h.write("good.conf", GOOD)
    t0 = time.monotonic()
    rc, out = h.run_mcpd("-t", "-c", path)
    expect(rc == 0, f"mcpd -t on a good conf exited {rc}:\n{out}")
    expect(time.monotonic() - t0 < tmo(5), "mcpd -t did not exit promptly")


def test_check_rejects_unknown_key_naming_file_and_line(h):
    lines = GOOD.splitlines()
    lines.insert(6, "no_such_directive 12")         # becomes line 7
    path = h.write("unknown.conf", "\n".join(lines) + "\n")
    rc, out = h.run_mcpd("-t", "-c", path)
    expect(rc != 0, f"mcpd -t accepted an unknown key:\n{out}")
    expect(f"{path}:7" in out, f"error does not name {path}:7:\n{out}")


def test_check_rejects_bad_values_naming_file_and_line(h):
    bad = [("stream_maxlen", "abc"), ("stream_maxlen", "-3"),
           ("stream_ttl", "soon"), ("session_ttl", "12x"),
           ("listen", "nonsense"), ("listen", "127.0.0.1:99999"),
           ("eventlog", "floppy"), ("builtin_tools", "perhaps"),
           ("backpressure_request", "evict"),
           ("backpressure_standalone", "drop"),
           ("sse_high_watermark", "lots"), ("max_body", "-1"),
           ("max_body", "99999999999999999999999")]
    for i, (key, value) in enumerate(bad):
        lines = ["# bad value below", "listen 127.0.0.1:0",
                 "endpoint /mcp", "eventlog memory"]
        lines = [ln for ln in lines if not ln.startswith(key + " ")]
        lines.append(f"{key} {value}")
        line_no = len(lines)
        path = h.write(f"bad{i}.conf", "\n".join(lines) + "\n")
        rc, out = h.run_mcpd("-t", "-c", path)
        expect(rc != 0, f"mcpd -t accepted '{key} {value}':\n{out}")
        expect(f"{path}:{line_no}" in out, f"'{key} {value}': error does not "
               f"name {path}:{line_no}:\n{out}")


def test_check_rejects_missing_file(h):
    rc, out = h.run_mcpd("-t", "-c", h.workdir + "/does-not-exist.conf")
    expect(rc != 0, f"mcpd -t on a missing file exited 0:\n{out}")


def test_start_with_bad_conf_fails_fast(h):
    path = h.write("bad.conf", "listen 127.0.0.1:0\nbogus_key 1\n")
    try:
        rc, out = h.run_mcpd("-c", path, timeout=5)
    except subprocess.TimeoutExpired:
        raise AssertionError("mcpd -c on a bad conf kept running") from None
    expect(rc != 0, f"mcpd -c on a bad conf exited 0:\n{out}")
    expect(f"{path}:2" in out, f"error does not name {path}:2:\n{out}")


def test_drain_and_lease_keys(h):
    """drain_delay, drain_timeout and lease_ttl (issue 12): times with the
    usual suffixes, within their ranges; anything else is refused naming
    file, line and key."""
    good = GOOD + "drain_delay 10s\ndrain_timeout 2m\nlease_ttl 2\n"
    rc, out = h.run_mcpd("-t", "-c", h.write("drain-good.conf", good))
    expect(rc == 0, f"mcpd -t refused good drain/lease keys:\n{out}")
    edges = GOOD + "drain_delay 0\ndrain_timeout 0\nlease_ttl 300\n"
    rc, out = h.run_mcpd("-t", "-c", h.write("drain-edges.conf", edges))
    expect(rc == 0, f"mcpd -t refused drain/lease keys at their bounds:\n"
           f"{out}")
    bad = [("drain_delay", "-1"), ("drain_delay", "3601"),
           ("drain_delay", "soon"), ("drain_timeout", "86401"),
           ("drain_timeout", "1x"), ("lease_ttl", "0"),
           ("lease_ttl", "301"), ("lease_ttl", "5ms")]
    for i, (key, value) in enumerate(bad):
        lines = ["listen 127.0.0.1:0", "eventlog memory", f"{key} {value}"]
        path = h.write(f"drain-bad{i}.conf", "\n".join(lines) + "\n")
        rc, out = h.run_mcpd("-t", "-c", path)
        expect(rc != 0, f"mcpd -t accepted '{key} {value}':\n{out}")
        expect(f"{path}:3" in out and key in out, f"'{key} {value}': the "
               f"error does not name {path}:3 and {key}:\n{out}")
    dup = GOOD + "lease_ttl 2\nlease_ttl 3\n"
    rc, out = h.run_mcpd("-t", "-c", h.write("drain-dup.conf", dup))
    expect(rc != 0, f"mcpd -t accepted lease_ttl twice:\n{out}")


def _start_fails(h, name, listen):
    """mcpd -c on a conf listening on `listen`: exits non-zero at once;
    returns its output."""
    path = h.write(name, f"listen {listen}\neventlog memory\n")
    try:
        rc, out = h.run_mcpd("-c", path, timeout=5)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"mcpd listening on {listen} kept running "
                             f"(it should not be able to)") from None
    expect(rc != 0, f"mcpd on {listen} exited 0:\n{out}")
    expect(f"cannot listen on {listen}" in out, f"no 'cannot listen on "
           f"{listen}' line:\n{out}")
    return out


def test_listen_failure_names_its_reason(h):
    # A port another process listens on: the line says it is in use, not
    # only that listening failed.
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        out = _start_fails(h, "inuse.conf", f"127.0.0.1:{port}")
        expect("in use" in out, f"port {port} in use: the error does not "
               f"say so:\n{out}")
    finally:
        s.close()
    # An address no interface of this host has (TEST-NET-1, RFC 5737).
    out = _start_fails(h, "notavail.conf", "192.0.2.1:8080")
    expect("not available" in out, f"192.0.2.1: the error does not say the "
           f"address is not available:\n{out}")
    # A name that does not resolve (.invalid, RFC 2606).
    out = _start_fails(h, "noname.conf", "mcpd-test.invalid:8080")
    expect("cannot be resolved" in out, f"mcpd-test.invalid: the error does "
           f"not say the name cannot be resolved:\n{out}")
