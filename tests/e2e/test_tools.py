"""The built-in diagnostic tools exactly as docs/protocol.md describes them."""

import time

from mcpd_harness import (LATEST, VERSIONS, check_ids, expect, is_log,
                          is_progress, is_response, parse_event_id,
                          result_text, rpc, stream_messages)


def test_echo_returns_text(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v)
        for text in ("hello", "", "héllo, мир ✓ \"quoted\"\n\ttab"):
            msg, _ = d.call(sid, "echo", {"text": text})
            content = msg["result"]["content"]
            expect(content == [{"type": "text", "text": text}],
                   f"{v} echo {text!r}: content {content!r}")
            expect(not msg["result"].get("isError"), f"{v} echo isError")


def _run_stream(d, sid, args, token):
    id, r = d.call_open(sid, "stream", args, token)
    expect(r.status == 200 and r.is_sse,
           f"tools/call stream -> HTTP {r.status} {r.content_type}")
    events = r.events_until_close(10)
    return id, events, stream_messages(events)


def test_stream_with_progress_token(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v)
        for token in ("tok-1", 4242):
            id, events, msgs = _run_stream(d, sid, {"n": 5}, token)
            prog = [m for m in msgs if is_progress(m)]
            expect(len(prog) == 5, f"{v}: {len(prog)} progress "
                   f"notifications, expected 5: {msgs!r}")
            for i, m in enumerate(prog, 1):
                p = m["params"]
                expect(p.get("progressToken") == token,
                       f"{v}: progressToken {p.get('progressToken')!r} != "
                       f"{token!r}")
                expect(p.get("progress") == i and p.get("total") == 5,
                       f"{v}: progress #{i}: {p!r}")
            expect(not any(is_log(m) for m in msgs),
                   f"{v}: notifications/message sent although a "
                   "progressToken was given")
            expect(is_response(msgs[-1], id),
                   f"{v}: last message is not the response: {msgs[-1]!r}")
            expect(result_text(msgs[-1]) == "done 5",
                   f"{v}: result {msgs[-1]!r}")
            expect(len(msgs) == 6, f"{v}: extra messages: {msgs!r}")
            check_ids(events, 1, what=f"{v} stream")


def test_stream_without_token_logs_info(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v)
        id, events, msgs = _run_stream(d, sid, {"n": 4, "interval_ms": 5},
                                       None)
        logs = [m for m in msgs if is_log(m)]
        expect(len(logs) == 4, f"{v}: {len(logs)} notifications/message, "
               f"expected 4: {msgs!r}")
        for i, m in enumerate(logs, 1):
            p = m["params"]
            expect(p.get("level") == "info", f"{v}: level {p!r}")
            data = p.get("data")
            expect(isinstance(data, dict) and data.get("i") == i and
                   data.get("n") == 4 and isinstance(data.get("pad"), str),
                   f"{v}: message #{i} data {data!r}, expected "
                   f"{{i: {i}, n: 4, pad: <string>}}")
        expect(not any(is_progress(m) for m in msgs),
               f"{v}: progress sent without a progressToken")
        expect(result_text(msgs[-1]) == "done 4", f"{v}: {msgs[-1]!r}")
        expect(len(msgs) == 5, f"{v}: extra messages: {msgs!r}")


def test_stream_size_pads_messages(h):
    d = h.start()
    sid = d.initialize(LATEST)
    _, _, msgs = _run_stream(d, sid, {"n": 2, "size": 300}, "pad")
    prog = [m for m in msgs if is_progress(m)]
    expect(len(prog) == 2, f"progress notifications: {msgs!r}")
    for m in prog:
        text = m["params"].get("message")
        expect(isinstance(text, str) and len(text.encode()) == 300,
               f"progress message must be padded to size=300 bytes, got "
               f"{len((text or '').encode())}: {text!r}")
    _, _, msgs = _run_stream(d, sid, {"n": 2, "size": 1000}, None)
    logs = [m for m in msgs if is_log(m)]
    expect(len(logs) == 2, f"log notifications: {msgs!r}")
    for m in logs:
        pad = m["params"]["data"].get("pad")
        expect(isinstance(pad, str) and 1000 - 128 <= len(pad) <= 1000,
               f"size=1000: pad of {len(pad or '')} bytes")
    _, _, msgs = _run_stream(d, sid, {"n": 1}, None)
    pad = [m for m in msgs if is_log(m)][0]["params"]["data"]["pad"]
    expect(len(pad) < 128, f"no size: pad of {len(pad)} bytes")


def test_stream_interval_paces_messages(h):
    d = h.start()
    sid = d.initialize(LATEST)
    t0 = time.monotonic()
    _, _, msgs = _run_stream(d, sid, {"n": 5, "interval_ms": 100}, "t")
    elapsed = time.monotonic() - t0
    expect(elapsed >= 0.35, f"n=5 interval_ms=100 took {elapsed:.2f}s")
    expect(result_text(msgs[-1]) == "done 5", f"{msgs[-1]!r}")


def test_notify_goes_to_standalone_stream(h):
    d = h.start()
    for v in ("2025-11-25", "2025-06-18", "2025-03-26"):
        sid = d.initialize(v)
        g = d.get_sse(sid)
        expect(g.status == 200 and g.is_sse, f"{v} GET -> HTTP {g.status}")
        if v == "2025-11-25":
            prime = g.next_event(3)
            expect(prime.id is not None and not prime.data,
                   f"{v}: standalone GET must prime with an id and empty "
                   f"data, got {prime!r}")
        msg, r = d.call(sid, "notify", {"n": 3})
        expect(result_text(msg) == "queued 3", f"{v} notify: {msg!r}")
        expect(not any(is_log(m) for m in r.messages()),
               f"{v}: notify sent its messages on the POST stream, not the "
               "standalone one")
        got = []
        while len(got) < 3:
            ev, m = g.next_message(5)
            expect(is_log(m), f"{v}: unexpected standalone message {m!r}")
            got.append((ev, m))
        k = None
        for i, (ev, m) in enumerate(got, 1):
            p = m["params"]
            expect(p.get("level") == "info" and p["data"].get("i") == i and
                   p["data"].get("n") == 3, f"{v}: standalone #{i}: {p!r}")
            ek, _ = parse_event_id(ev.id)
            expect(k is None or ek == k, f"{v}: standalone ids change K")
            k = ek
        check_ids([e for e, _ in got], parse_event_id(got[0][0].id)[1],
                  what=f"{v} standalone")
        g.close()


def test_unknown_tool_is_an_error(h):
    d = h.start()
    sid = d.initialize(LATEST)
    id = d.new_id()
    r = d.post(sid, rpc("tools/call", {"name": "no-such-tool",
                                       "arguments": {}}, id))
    expect(r.status == 200, f"unknown tool -> HTTP {r.status}")
    msg = r.rpc(id)
    expect("error" in msg or msg.get("result", {}).get("isError") is True,
           f"unknown tool answered as a success: {msg!r}")
    d.assert_alive(sid)


def test_stream_bad_arguments_is_an_error(h):
    d = h.start()
    sid = d.initialize(LATEST)
    for args in ({"n": "five"}, {}):
        id = d.new_id()
        r = d.post(sid, rpc("tools/call", {"name": "stream",
                                           "arguments": args}, id))
        expect(r.status == 200, f"stream {args} -> HTTP {r.status}")
        msg = r.rpc(id)
        expect("error" in msg or msg["result"].get("isError") is True,
               f"stream {args} answered as a success: {msg!r}")
    d.assert_alive(sid)


def test_stream_messages_stay_on_request_stream(h):
    d = h.start()
    for v in ("2025-11-25", "2025-03-26"):
        sid = d.initialize(v)
        g = d.get_sse(sid)
        expect(g.status == 200, f"{v}: GET -> HTTP {g.status}")
        msg, r = d.call(sid, "stream", {"n": 3})
        expect(len([m for m in r.messages() if is_log(m)]) == 3,
               f"{v}: stream messages missing from the POST stream")
        # a marker: the next standalone message must be notify's own
        d.call(sid, "notify", {"n": 1})
        ev, m = g.next_message(5)
        expect(is_log(m) and m["params"]["data"].get("n") == 1,
               f"{v}: the request stream's message leaked onto the "
               f"standalone stream: {m!r}")
        g.close()
