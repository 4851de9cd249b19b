"""docs/protocol.md, Requests and statuses: row by row, for every revision."""

import json

from mcpd_harness import (LATEST, VERSIONS, assert_rpc_error,
                          expect, random_session_id, result_text, rpc,
                          tool_call)


def _visible_ascii(s):
    return all(0x21 <= ord(c) <= 0x7E for c in s)


def test_initialize_returns_session_and_echoes_version(h):
    d = h.start()
    seen = set()
    for v in VERSIONS:
        id = d.new_id()
        r = d.initialize_reply(v, id=id)
        expect(r.status == 200, f"initialize {v} -> HTTP {r.status}")
        sid = r.session_id
        expect(sid, f"initialize {v}: no Mcp-Session-Id header")
        expect(len(sid) >= 22, f"session id {sid!r} too short for 128 bits")
        expect(_visible_ascii(sid),
               f"session id {sid!r} has characters outside 0x21-0x7E")
        expect(sid not in seen, f"session id {sid!r} handed out twice")
        seen.add(sid)
        msg = r.rpc(id)
        res = msg.get("result")
        expect(isinstance(res, dict), f"initialize {v}: {msg!r}")
        expect(res.get("protocolVersion") == v,
               f"requested supported {v}, got {res.get('protocolVersion')!r}")
        expect(isinstance(res.get("capabilities"), dict) and
               "tools" in res["capabilities"],
               f"initialize {v}: no tools capability: {res!r}")
        expect(isinstance(res.get("serverInfo"), dict) and
               res["serverInfo"].get("name"),
               f"initialize {v}: no serverInfo.name: {res!r}")


def test_session_ids_look_random(h):
    d = h.start()
    ids = [d.initialize_reply(LATEST).session_id for _ in range(12)]
    expect(len(set(ids)) == len(ids), f"duplicate session ids: {ids}")
    for a in ids:
        for b in ids:
            if a is b or len(a) != len(b):
                continue
            diff = sum(x != y for x, y in zip(a, b))
            expect(diff >= 8, f"session ids {a!r} and {b!r} differ in only "
                   f"{diff} positions: not >=128 random bits")


def test_version_negotiation_unsupported_gets_latest(h):
    d = h.start()
    for asked in ("2024-11-05", "2099-12-31", "not-a-version"):
        id = d.new_id()
        r = d.initialize_reply(asked, id=id)
        expect(r.status == 200, f"initialize {asked} -> HTTP {r.status}")
        expect(r.session_id, f"initialize {asked}: no Mcp-Session-Id")
        got = r.rpc(id)["result"].get("protocolVersion")
        expect(got == LATEST, f"unsupported {asked} requested: expected the "
               f"latest supported {LATEST}, got {got!r}")
        sid = r.session_id
        d.versions[sid] = got
        d.assert_alive(sid, f"after negotiating {asked} -> {got}")


def test_post_without_session_is_400_with_null_id(h):
    d = h.start()
    bodies = [rpc("ping", None, 5), rpc("tools/list", {}, 6),
              tool_call("echo", {"text": "x"}, 7),
              rpc("notifications/initialized")]
    for body in bodies:
        for hdrs in ({}, {"MCP-Protocol-Version": LATEST}):
            r = d.post(None, body, hdrs)
            expect(r.status == 400, f"{body['method']} without session "
                   f"-> HTTP {r.status}, expected 400")
            expect(r.is_json, f"400 body Content-Type "
                   f"{r.header('Content-Type')!r}, expected application/json")
            b = r.json
            expect("id" in b and b["id"] is None,
                   f"400 body must carry id null: {b!r}")
            assert_rpc_error(b)


def test_unknown_session_is_404_json(h):
    d = h.start()
    real = d.initialize(LATEST)
    bogus = random_session_id()
    hv = {"MCP-Protocol-Version": LATEST}
    cases = [
        ("POST ping", lambda: d.post(bogus, rpc("ping", None, 1), hv)),
        ("POST notification",
         lambda: d.post(bogus, rpc("notifications/initialized"), hv)),
        ("POST tools/call",
         lambda: d.post(bogus, tool_call("echo", {"text": "x"}, 2), hv)),
        ("GET", lambda: d.get_sse(bogus, None, hv)),
        ("GET Last-Event-ID", lambda: d.get_sse(bogus, "1-1", hv)),
        ("DELETE", lambda: d.delete(bogus, hv)),
    ]
    for what, fn in cases:
        r = fn()
        expect(r.status == 404, f"{what} with unknown session -> HTTP "
               f"{r.status}, expected 404")
        expect(r.is_json, f"{what} 404: Content-Type "
               f"{r.header('Content-Type')!r}, expected application/json")
        assert_rpc_error(r.json, id_null=False)
    d.assert_alive(real, "after unknown-session requests")


def test_notification_and_response_get_202_empty(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v, initialized=False)
        for body in (rpc("notifications/initialized"),
                     rpc("notifications/roots/list_changed"),
                     {"jsonrpc": "2.0", "id": "srv-1", "result": {}},
                     {"jsonrpc": "2.0", "id": "srv-2",
                      "error": {"code": -32601, "message": "nope"}}):
            r = d.post(sid, body)
            expect(r.status == 202, f"{v}: {json.dumps(body)} -> HTTP "
                   f"{r.status}, expected 202")
            expect(r.body == b"", f"{v}: 202 must have no body, got "
                   f"{r.body[:200]!r}")
        d.assert_alive(sid, f"{v} after notifications")


def test_ping_is_json_empty_result(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v)
        id = d.new_id()
        r = d.post(sid, rpc("ping", None, id))
        expect(r.status == 200, f"{v} ping -> HTTP {r.status}")
        expect(r.is_json, f"{v} ping: Content-Type "
               f"{r.header('Content-Type')!r}, expected application/json")
        expect(r.json == {"jsonrpc": "2.0", "id": id, "result": {}},
               f"{v} ping body {r.json!r}")
        # string ids are echoed as strings
        r = d.post(sid, rpc("ping", {}, "p-1"))
        expect(r.status == 200 and r.json.get("id") == "p-1" and
               r.json.get("result") == {}, f"{v} ping id 'p-1': {r.body!r}")


def test_tools_list_has_builtin_tools(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v)
        id = d.new_id()
        r = d.post(sid, rpc("tools/list", {}, id))
        expect(r.status == 200, f"{v} tools/list -> HTTP {r.status}")
        expect(r.is_json, f"{v} tools/list: Content-Type "
               f"{r.header('Content-Type')!r}, expected application/json")
        tools = r.rpc(id)["result"]["tools"]
        names = {t.get("name") for t in tools}
        for want in ("echo", "stream", "notify"):
            expect(want in names, f"{v} tools/list lacks {want}: {names}")
        for t in tools:
            expect(isinstance(t.get("inputSchema"), dict) and
                   t["inputSchema"].get("type") == "object",
                   f"tool {t.get('name')} inputSchema: {t!r}")


def test_builtin_tools_off_lists_none(h):
    d = h.start(builtin_tools="off")
    sid = d.initialize(LATEST)
    id = d.new_id()
    r = d.post(sid, rpc("tools/list", {}, id))
    expect(r.status == 200, f"tools/list -> HTTP {r.status}")
    names = {t.get("name") for t in r.rpc(id)["result"].get("tools", [])}
    expect(not names & {"echo", "stream", "notify"},
           f"builtin_tools off still lists {names}")


def test_tools_call_answers_sse(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v)
        msg, r = d.call(sid, "echo", {"text": f"hi {v}"})
        expect(r.is_sse, f"{v} tools/call Content-Type "
               f"{r.header('Content-Type')!r}, expected text/event-stream")
        expect(result_text(msg) == f"hi {v}", f"{v} echo: {msg!r}")


def test_origin_not_allowed_is_403(h):
    d = h.start(allowed_origins="http://good.example")
    evil = {"Origin": "http://evil.example"}
    r = d.initialize_reply(LATEST, headers=evil)
    expect(r.status == 403, f"initialize with Origin http://evil.example "
           f"-> HTTP {r.status}, expected 403")
    expect(r.session_id is None, "403 initialize still created a session")
    for origin in ("null", "http://good.example.evil.example",
                   "https://good.example", "http://good.example:8080"):
        r = d.initialize_reply(LATEST, headers={"Origin": origin})
        expect(r.status == 403, f"Origin {origin!r} -> HTTP {r.status}, "
               "expected 403 (allowed is http://good.example)")
    good = d.initialize(LATEST, headers={"Origin": "http://good.example"})
    sid = d.initialize(LATEST)      # no Origin at all is fine
    r = d.ping(sid, evil)
    expect(r.status == 403, f"ping with bad Origin -> HTTP {r.status}")
    r = d.get_sse(sid, None, evil)
    expect(r.status == 403, f"GET with bad Origin -> HTTP {r.status}")
    r = d.delete(sid, evil)
    expect(r.status == 403, f"DELETE with bad Origin -> HTTP {r.status}")
    d.assert_alive(sid, "after a 403 DELETE (the session must survive)")
    r = d.ping(good, {"Origin": "http://good.example"})
    expect(r.status == 200, f"ping with allowed Origin -> HTTP {r.status}")


def test_unsupported_protocol_version_header_is_400(h):
    d = h.start()
    sid = d.initialize("2025-06-18")
    for bad in ("1999-01-01", "2024-11-05", "2025-13-45", "latest"):
        hv = {"MCP-Protocol-Version": bad}
        r = d.ping(sid, hv)
        expect(r.status == 400, f"ping with MCP-Protocol-Version {bad!r} "
               f"-> HTTP {r.status}, expected 400")
        r = d.get_sse(sid, None, hv)
        expect(r.status == 400, f"GET with MCP-Protocol-Version {bad!r} "
               f"-> HTTP {r.status}, expected 400")
    d.assert_alive(sid, "after bad MCP-Protocol-Version")
    # absent header: the negotiated version applies
    r = d.ping(sid, {"MCP-Protocol-Version": None})
    expect(r.status == 200, f"ping without MCP-Protocol-Version -> HTTP "
           f"{r.status}, expected 200")


def test_body_too_large_is_413(h):
    d = h.start(max_body="64k")
    sid = d.initialize(LATEST)
    # just under the limit is served (64k means 65536 bytes)
    text = "a" * 60000
    msg, _ = d.call(sid, "echo", {"text": text})
    expect(result_text(msg) == text, "60000-byte echo under max_body 64k")
    big = json.dumps(tool_call("echo", {"text": "b" * 100000}, 9))
    r = d.post(sid, big)
    expect(r.status == 413, f"100 kB body with max_body 64k -> HTTP "
           f"{r.status}, expected 413")
    assert_rpc_error(r.json, code=-32600)
    d.assert_alive(sid, "after a 413")
    init = json.dumps(rpc("initialize", {
        "protocolVersion": LATEST, "capabilities": {"x": "y" * 70000},
        "clientInfo": {"name": "e2e", "version": "0"}}, 1))
    r = d.post(None, init)
    expect(r.status == 413, f"oversized initialize -> HTTP {r.status}")
    d.assert_alive(sid, "after an oversized initialize")


def test_body_too_large_by_content_length_is_413_at_once(h):
    d = h.start(max_body="64k")
    sid = d.initialize(LATEST)
    # announce 50 MB and send nothing: the answer must come from the
    # headers alone, not after waiting for the body
    r = d.post(sid, None, {"Content-Type": "application/json",
                           "Content-Length": "50000000"}, timeout=5)
    expect(r.status == 413, f"Content-Length 50000000 -> HTTP {r.status}")
    d.assert_alive(sid, "after Content-Length 50000000")


def test_malformed_json_is_400_parse_error(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v)
        for body in ('{"jsonrpc": "2.0", "id": 1, "method": "ping"',
                     "not json at all", '{"jsonrpc": "2.0",, }', ""):
            r = d.post(sid, body)
            expect(r.status == 400, f"{v} malformed {body!r} -> HTTP "
                   f"{r.status}, expected 400")
            if body:
                assert_rpc_error(r.json, code=-32700)
            d.assert_alive(sid, f"after malformed body {body!r}")


def test_batch_rejected_from_2025_06_18(h):
    d = h.start()
    for v in ("2025-06-18", "2025-11-25"):
        sid = d.initialize(v)
        r = d.post(sid, [rpc("ping", None, 1), rpc("ping", None, 2)])
        expect(r.status == 400, f"{v} batch -> HTTP {r.status}, expected 400")
        r = d.post(sid, [rpc("notifications/initialized")])
        expect(r.status == 400, f"{v} batch of one notification -> HTTP "
               f"{r.status}, expected 400")
        d.assert_alive(sid, f"{v} after a batch")


def test_batch_accepted_on_2025_03_26(h):
    d = h.start()
    sid = d.initialize("2025-03-26")
    r = d.post(sid, [rpc("ping", None, 101), rpc("ping", None, 102)])
    expect(r.status == 200, f"2025-03-26 batch of two pings -> HTTP "
           f"{r.status} {r.body[:200]!r}, expected 200")
    msgs = []
    for m in r.messages():
        msgs.extend(m if isinstance(m, list) else [m])
    got = {m.get("id"): m for m in msgs if "result" in m or "error" in m}
    for id in (101, 102):
        expect(id in got and got[id].get("result") == {},
               f"batch response lacks ping {id}: {msgs!r}")
    r = d.post(sid, [rpc("notifications/initialized"),
                     rpc("notifications/roots/list_changed")])
    expect(r.status == 202, f"2025-03-26 batch of notifications -> HTTP "
           f"{r.status}, expected 202")


def test_batch_answers_every_call(h):
    # A call answered at once (echo) must not end the batch's stream
    # before the calls after it have run: every id gets its response.
    d = h.start()
    sid = d.initialize("2025-03-26")
    r = d.post(sid, [tool_call("echo", {"text": "a"}, 201),
                     tool_call("stream", {"n": 2}, 202),
                     tool_call("echo", {"text": "b"}, 203)])
    expect(r.status == 200, f"batch of calls -> HTTP {r.status} "
           f"{r.body[:200]!r}")
    for id, text in ((201, "a"), (202, "done 2"), (203, "b")):
        msg = r.rpc(id)
        expect(msg is not None and
               msg.get("result", {}).get("content", [{}])[0].get("text")
               == text, f"batch call {id} -> {msg!r}")
    d.assert_alive(sid)


def test_get_without_last_event_id_is_sse(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v)
        g = d.get_sse(sid)
        expect(g.status == 200, f"{v} GET -> HTTP {g.status}")
        expect(g.is_sse, f"{v} GET Content-Type {g.header('Content-Type')!r}")
        g.close()


def test_get_requires_event_stream_accept(h):
    d = h.start()
    sid = d.initialize(LATEST)
    r = d.get_sse(sid, None, {"Accept": "application/json"})
    expect(r.status in (400, 406), f"GET with Accept: application/json "
           f"-> HTTP {r.status}, expected 406 (or 400)")
    d.assert_alive(sid)


def test_delete_ends_session(h):
    d = h.start()
    for v in VERSIONS:
        sid = d.initialize(v)
        r = d.delete(sid)
        expect(r.status in (200, 204), f"{v} DELETE -> HTTP {r.status}")
        r = d.ping(sid)
        expect(r.status == 404, f"{v} ping after DELETE -> HTTP {r.status}")
        assert_rpc_error(r.json, id_null=False)
        r = d.get_sse(sid)
        expect(r.status == 404, f"{v} GET after DELETE -> HTTP {r.status}")
        r = d.delete(sid)
        expect(r.status == 404, f"{v} second DELETE -> HTTP {r.status}")


def test_wrong_endpoint_is_404(h):
    d = h.start()
    sid = d.initialize(LATEST)
    r = d.request("POST", sid, rpc("ping", None, 1), path="/other")
    expect(r.status == 404, f"POST /other -> HTTP {r.status}")
    r = d.request("PUT", sid, rpc("ping", None, 1))
    expect(r.status in (405, 400), f"PUT {d.endpoint} -> HTTP {r.status}, "
           "expected 405")
    d.assert_alive(sid)
