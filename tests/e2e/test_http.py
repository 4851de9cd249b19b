"""HTTP-level robustness: keep-alive reuse across JSON and SSE replies,
pipelining, client disconnects at awkward moments, concurrent streams, the
503s of the limits."""

import time

from mcpd_harness import (LATEST, VERSIONS, Reply, assert_rpc_error,
                          check_ids, expect, is_progress, is_response,
                          message_events, result_text, rpc, tmo, tool_call)


def _whole(d, r):
    return d.read_whole(r, 10)


def test_keepalive_reuse_across_json_and_sse(h):
    d = h.start()
    sid = d.initialize(LATEST)
    conn = d.connect()
    for i in range(4):
        id = d.new_id()
        r = _whole(d, d.open("POST", sid, rpc("ping", None, id), conn=conn))
        expect(r.status == 200 and r.rpc(id).get("result") == {},
               f"round {i}: ping on a reused connection -> {r.status}")
        id = d.new_id()
        r = _whole(d, d.open("POST", sid, tool_call(
            "stream", {"n": 3}, id, "ka"), conn=conn))
        expect(r.status == 200 and r.is_sse, f"round {i}: stream -> "
               f"HTTP {r.status}")
        expect(not r.reader.truncated, f"round {i}: SSE reply ended by a "
               "dropped connection, not by its chunked framing")
        expect(result_text(r.rpc(id)) == "done 3", f"round {i}")
        if conn.eof or (r.header("Connection") or "").lower() == "close":
            conn = d.connect()      # the server may close; not an error
    d.assert_alive(sid, "after keep-alive reuse")


def test_client_closes_after_finished_sse_reply(h):
    # the close of a keep-alive connection whose SSE reply has ended must
    # not reach the (freed) stream: run under --sanitized to see it
    d = h.start()
    sid = d.initialize(LATEST)
    for how in ("close", "cut", "close", "cut"):
        conn = d.connect()
        id = d.new_id()
        r = _whole(d, d.open("POST", sid, tool_call(
            "stream", {"n": 2}, id, "c"), conn=conn))
        expect(result_text(r.rpc(id)) == "done 2", f"{how}: {r.messages()}")
        g = d.get_sse(sid)              # a standalone view, then go away
        getattr(g.conn, how)()
        getattr(conn, how)()
        d.assert_alive(sid, f"after the client's {how} following an SSE "
                       "reply")
    time.sleep(0.2)                     # let the daemon see the closes
    d.assert_alive(sid, "after client closes")


def test_pipelined_request_behind_sse(h):
    d = h.start()
    sid = d.initialize(LATEST)
    for first in ("stream", "get"):
        conn = d.connect()
        id = d.new_id()
        if first == "stream":
            a = d.build_request("POST", sid, tool_call(
                "stream", {"n": 3, "interval_ms": 20}, id, "pl"))
        else:
            a = d.build_request("GET", sid, None,
                                {"Accept": "text/event-stream"})
        b = d.build_request("POST", sid, rpc("ping", None, id + 1000))
        conn.send(a + b)
        r = Reply(conn, "POST" if first == "stream" else "GET",
                  time.monotonic() + tmo(5))
        expect(r.status == 200 and r.is_sse, f"pipelined {first}: HTTP "
               f"{r.status}")
        if first == "stream":
            r.events_until_close(5)
            expect(result_text(r.rpc(id)) == "done 3", "pipelined stream")
            try:
                r2 = _whole(d, Reply(conn, "POST", time.monotonic() + tmo(5)))
                expect(r2.status == 200, f"pipelined ping -> {r2.status}")
            except AssertionError as e:
                # closing instead of answering the pipelined request is
                # acceptable; crashing or hanging is not
                expect("closed the connection" in str(e), str(e))
        else:
            r.next_event(2)
            conn.cut()
        d.assert_alive(sid, f"after a request pipelined behind {first}")


def test_concurrent_streams_do_not_mix(h):
    d = h.start()
    opened = []
    for v in VERSIONS:
        sid = d.initialize(v)
        for j in range(3):
            token = f"{v}/{j}"
            # the same JSON-RPC id in every session: ids are per session
            r = d.open("POST", sid, tool_call(
                "stream", {"n": 20, "interval_ms": 5}, 7 + j, token))
            expect(r.status == 200, f"{token}: HTTP {r.status}")
            opened.append((v, token, 7 + j, r))
    ks = set()
    for v, token, id, r in opened:
        events = r.events_until_close(10)
        k, last = check_ids(events, 1, what=token)
        expect(last == 21, f"{token}: ids end at {k}-{last}")
        expect(k not in ks, f"{token}: K={k} shared with another stream")
        ks.add(k)
        msgs = [e.json for e in message_events(events)]
        prog = [m["params"] for m in msgs if is_progress(m)]
        expect([p["progress"] for p in prog] == list(range(1, 21)) and
               all(p["progressToken"] == token for p in prog),
               f"{token}: foreign or missing progress: "
               f"{[(p['progressToken'], p['progress']) for p in prog]}")
        expect(len(msgs) == 21 and is_response(msgs[-1], id) and
               result_text(msgs[-1]) == "done 20", f"{token}: {msgs[-1]!r}")


def _expect_unavailable(r, retry_after, what):
    expect(r.status == 503, f"{what}: HTTP {r.status} {r.body[:200]!r}")
    expect(r.header("Retry-After") == retry_after, f"{what}: Retry-After "
           f"{r.header('Retry-After')!r}, expected {retry_after!r}")
    expect(r.is_json, f"{what}: Content-Type {r.header('Content-Type')!r}")
    assert_rpc_error(r.json, -32003)


def test_limits_answer_503_with_their_retry_after(h):
    # docs/protocol.md: max_sessions -> Retry-After: 5, max_views -> 1
    d = h.start(max_sessions=1, max_views=1)
    sid = d.initialize(LATEST)
    _expect_unavailable(d.initialize_reply(LATEST), "5",
                        "initialize beyond max_sessions")
    g = d.get_sse(sid)
    expect(g.status == 200 and g.is_sse, f"GET -> HTTP {g.status}")
    _expect_unavailable(d.get_sse(sid), "1", "a GET beyond max_views")
    _expect_unavailable(d.post(sid, tool_call("echo", {"text": "x"},
                                              d.new_id())),
                        "1", "a streaming POST beyond max_views")
    g.close()
    d.assert_alive(sid, "after the limits")
