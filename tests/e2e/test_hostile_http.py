"""Servers mcpd fetches from, turned hostile (hostile_http.py): an HTTP
upstream's POST answers and GET stream, jwks_uri and introspection answer
with a chunk announced as 600 MiB, a Content-Length of 600 MiB, or a body
that never ends. mcpd refuses each as it arrives, with a log line saying
why: its memory stays bounded far below what the peer sends (256 MiB
each), and it goes on serving. An upstream's GET stream on which nothing
arrives is ended after idle_timeout and opened again."""

import test_auth as ta
from hostile_http import HostileServer
from mcpd_harness import expect, rpc
from test_upstream import error_of, http_upstream, start_ready, wait_for

# Far below the 256 MiB a client that gathers would hold, far above what
# mcpd needs (its bounds are max_message or 64/256 KiB plus 64 KiB).
GROWTH_KIB = 64 * 1024


def _grown(d, before):
    return d.proc_status_kib("VmHWM") - before


def _bounded(d, before, what):
    grown = _grown(d, before)
    expect(grown < GROWTH_KIB, f"{what}: mcpd's peak memory grew by "
           f"{grown} KiB (bound {GROWTH_KIB} KiB)")


def test_hostile_upstream_post_answer_refused(h):
    for mode in ("chunk", "length"):
        srv = HostileServer(mcp=True)
        try:
            d, sid = start_ready(h, http_upstream("evil", srv.url("/mcp"),
                                                  "max_message 64k"),
                                 tool="boom")
            before = d.proc_status_kib("VmHWM")
            srv.modes["POST"] = mode
            msg, _ = d.call(sid, "boom", {}, timeout=30)
            _bounded(d, before, mode)
            err = error_of(msg)
            expect("larger than" in err["message"], f"{mode}: {err!r}")
            d.wait_log(lambda t: "upstream=evil" in t or "evil" in t,
                       what="a line naming the upstream")
            expect(d.post(sid, rpc("ping", None, 1)).status == 200,
                   f"{mode}: mcpd serves on")
            d.stop()
        finally:
            srv.close()


def test_hostile_upstream_get_stream_refused(h):
    srv = HostileServer(mcp=True)
    srv.modes["GET"] = "chunk"
    try:
        d = h.start(extra_lines=http_upstream("evil", srv.url("/mcp"),
                                              "max_message 64k"))
        before = d.proc_status_kib("VmHWM")
        d.wait_log(lambda t: "upstream=evil: the GET stream ended "
                   "(response body or chunk larger than" in t, timeout=30,
                   what="the GET stream refused")
        srv.modes["GET"] = "silent"
        _bounded(d, before, "GET stream")
        sid = d.initialize()
        expect(d.post(sid, rpc("ping", None, 1)).status == 200,
               "mcpd serves on")
    finally:
        srv.close()


def test_hostile_upstream_idle_get_stream_reopened(h):
    srv = HostileServer(mcp=True)
    srv.modes["GET"] = "silent"
    try:
        d = h.start(extra_lines=http_upstream("quiet", srv.url("/mcp"),
                                              "idle_timeout 1"))
        wait_for(lambda: srv.count("GET") >= 2, "the idle GET stream "
                 "opened again", timeout=30)
        d.wait_log(lambda t: "upstream=quiet: the GET stream ended (idle"
                   in t, what="the idle stream's log line")
    finally:
        srv.close()


def test_hostile_jwks_uri_refused(h):
    for mode in ("chunk", "length", "endless"):
        srv = HostileServer()
        srv.modes["GET"] = mode
        try:
            d = ta.start(h, keyset=None, jwks_uri=srv.url("/jwks"),
                         timeout=30)
            before = d.proc_status_kib("VmHWM")
            r = d.initialize_reply(headers=ta.bearer(ta.token()))
            _bounded(d, before, f"jwks_uri {mode}")
            expect(r.status == 503, f"{mode}: HTTP {r.status}")
            d.wait_log(lambda t: "jwks_uri" in t and "larger than" in t,
                       what=f"{mode}: the refusal's log line")
            _bounded(d, before, f"jwks_uri {mode}")
            expect(d.healthz()["status"] == "ok", f"{mode}: serves on")
            d.stop()
        finally:
            srv.close()


def test_hostile_introspection_refused(h):
    for mode in ("chunk", "length", "endless"):
        srv = HostileServer()
        srv.modes["POST"] = mode
        try:
            secret = ta.write(h, "client-secret", "s\n")
            d = ta.start(h, keyset=None, jwks_file=None, timeout=30,
                         introspection=f"{srv.url('/introspect')} c "
                         f"{secret}")
            before = d.proc_status_kib("VmHWM")
            r = d.initialize_reply(headers=ta.bearer("opaque"))
            _bounded(d, before, f"introspection {mode}")
            expect(r.status == 503, f"{mode}: HTTP {r.status}")
            d.wait_log(lambda t: "introspection" in t and "larger than" in t,
                       what=f"{mode}: the refusal's log line")
            _bounded(d, before, f"introspection {mode}")
            expect(d.healthz()["status"] == "ok", f"{mode}: serves on")
            d.stop()
        finally:
            srv.close()
