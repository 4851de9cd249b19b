"""The conf file as seen from outside: `mcpd -t -c FILE` and start-up."""

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
