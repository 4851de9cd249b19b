"""Bad inputs get a clear 4xx and the daemon keeps serving (a ping after
each)."""

import json
import time

from mcpd_harness import (LATEST, Conn, assert_rpc_error, expect,
                          result_text, rpc, tmo, tool_call)


def _check(d, sid, r, statuses, what, code=None):
    expect(r.status in statuses, f"{what} -> HTTP {r.status} "
           f"{r.body[:200]!r}, expected {' or '.join(map(str, statuses))}")
    if code is not None:
        assert_rpc_error(r.json, code=code, id_null=False)
    d.assert_alive(sid, f"after {what}")


def test_malformed_and_deep_json(h):
    d = h.start()
    sid = d.initialize(LATEST)
    _check(d, sid, d.post(sid, '{"jsonrpc":"2.0","id":1,"method":"ping"'),
           (400,), "truncated JSON", -32700)
    _check(d, sid, d.post(sid, "[" * 10000 + "]" * 10000), (400,),
           "10000-deep nested array")
    deep = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":' \
        '{"name":"echo","arguments":{"text":"x","deep":' + \
        "[" * 10000 + "]" * 10000 + "}}}"
    _check(d, sid, d.post(sid, deep), (400,), "10000-deep array in params")
    deep = '{"a":' * 10000 + "1" + "}" * 10000
    _check(d, sid, d.post(sid, deep), (400,), "10000-deep nested object")
    _check(d, sid, d.post(sid, '{"jsonrpc":"2.0","id":1,"method":"ping"} {}'),
           (400,), "trailing data after the JSON value", -32700)


def test_control_bytes_are_malformed_json(h):
    # RFC 8259: whitespace is only space, tab, LF and CR, and U+0000-U+001F
    # must be escaped inside strings; anything else is not JSON (-32700)
    d = h.start()
    sid = d.initialize(LATEST)
    for body, what in (
            (b'{"jsonrpc":"2.0","id":1,\x00"method":"ping"}',
             "NUL byte between members"),
            (b'{"jsonrpc":"2.0","id":1,"method":"ping"}\x00',
             "NUL byte after the value"),
            (b'\x0b{"jsonrpc":"2.0","id":1,"method":"ping"}',
             "vertical tab before the value"),
            (b'{"jsonrpc":"2.0","id":1,\x01"method":"ping"}',
             "0x01 between members"),
            (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":'
             b'{"name":"echo","arguments":{"text":"a\x01b"}}}',
             "raw 0x01 inside a string"),
            (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":'
             b'{"name":"echo","arguments":{"text":"a\nb"}}}',
             "raw newline inside a string")):
        _check(d, sid, d.post(sid, body), (400,), what, -32700)


def test_invalid_utf8_in_string(h):
    d = h.start()
    sid = d.initialize(LATEST)
    for bad in (b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xe2\x82"):
        body = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":' \
            b'{"name":"echo","arguments":{"text":"a' + bad + b'b"}}}'
        r = d.post(sid, body)
        _check(d, sid, r, (400,), f"invalid UTF-8 {bad!r} in a string")


def test_not_jsonrpc(h):
    d = h.start()
    sid = d.initialize(LATEST)
    for body in ("42", '"ping"', "null", "{}",
                 '{"jsonrpc":"1.0","id":1,"method":"ping"}',
                 '{"jsonrpc":"2.0","id":1,"method":5}',
                 '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}'):
        r = d.post(sid, body)
        expect(r.status in (400, 200), f"{body} -> HTTP {r.status}")
        if r.status == 200:
            err = assert_rpc_error(r.json, id_null=False)
            expect(err["code"] == -32600, f"{body} -> {r.json!r}, expected "
                   "-32600 Invalid Request")
        d.assert_alive(sid, f"after {body}")


def test_unknown_method_is_method_not_found(h):
    d = h.start()
    sid = d.initialize(LATEST)
    id = d.new_id()
    r = d.post(sid, rpc("no/such/method", {}, id))
    expect(r.status == 200, f"unknown method -> HTTP {r.status}")
    err = r.rpc(id).get("error")
    expect(err and err.get("code") == -32601, f"unknown method -> "
           f"{r.body[:200]!r}, expected error -32601")
    d.assert_alive(sid)


def test_oversized_body(h):
    d = h.start(max_body="64k")
    sid = d.initialize(LATEST)
    big = json.dumps(tool_call("echo", {"text": "z" * 200000}, 3))
    _check(d, sid, d.post(sid, big), (413,), "200 kB body, max_body 64k")
    _check(d, sid, d.post(None, big), (413,), "200 kB body without session")


def test_bad_last_event_id(h):
    d = h.start()
    sid = d.initialize(LATEST)
    for cursor in ("garbage", "1-", "-", "1-2-3", "x" * 5000,
                   "9" * 400 + "-1", "1-" + "9" * 400,
                   "18446744073709551616-1"):
        r = d.get_sse(sid, cursor)
        what = f"Last-Event-ID {cursor[:30]!r} ({len(cursor)} chars)"
        expect(r.status in (400, 410), f"{what} -> HTTP {r.status}")
        if r.status == 410:     # syntactically K-N, a stream never issued
            expect(r.json["error"]["data"]["reason"] == "unknown-stream",
                   f"{what} -> {r.json!r}")
        if not cursor[0].isdigit() or cursor.count("-") != 1 or \
                cursor.endswith("-"):
            expect(r.status == 400, f"{what} -> HTTP {r.status}, "
                   "expected 400")
        d.assert_alive(sid, f"after {what}")
    r = d.get_sse(sid, "1-" + "1" * 20000)
    expect(400 <= r.status < 500, f"20000-char Last-Event-ID -> HTTP "
           f"{r.status}")
    d.assert_alive(sid, "after a 20000-char Last-Event-ID")


def test_bad_origin(h):
    d = h.start(allowed_origins="http://good.example")
    sid = d.initialize(LATEST)
    for origin in ("http://evil.example", "null", "file://",
                   "http://good.example@evil.example"):
        _check(d, sid, d.ping(sid, {"Origin": origin}), (403,),
               f"Origin {origin!r}")


def test_bad_protocol_version_header(h):
    d = h.start()
    sid = d.initialize("2025-06-18")
    for bad in ("2030-01-01", "2025-06-18; x", "x" * 300):
        _check(d, sid, d.ping(sid, {"MCP-Protocol-Version": bad}), (400,),
               f"MCP-Protocol-Version {bad[:30]!r}")


def test_missing_accept(h):
    d = h.start()
    sid = d.initialize(LATEST)
    _check(d, sid, d.ping(sid, {"Accept": None}), (406, 400),
           "POST without Accept")
    _check(d, sid, d.ping(sid, {"Accept": "text/html"}), (406, 400),
           "POST with Accept: text/html")
    _check(d, sid, d.post(None, rpc("initialize", {
        "protocolVersion": LATEST, "capabilities": {},
        "clientInfo": {"name": "e", "version": "0"}}, 1), {"Accept": None}),
        (406, 400), "initialize without Accept")


def test_wrong_content_type(h):
    d = h.start()
    sid = d.initialize(LATEST)
    for ct in ("text/plain", "application/x-www-form-urlencoded", None):
        _check(d, sid, d.ping(sid, {"Content-Type": ct}), (415, 400),
               f"POST with Content-Type {ct!r}")


def test_foreign_host_header(h):
    d = h.start()
    sid = d.initialize(LATEST)
    for host in ("evil.example", "evil.example:80", "attacker.test:1234"):
        r = d.ping(sid, {"Host": host})
        _check(d, sid, r, (403, 421, 400), f"Host: {host}")
        r = d.initialize_reply(LATEST, headers={"Host": host})
        expect(r.status in (403, 421, 400), f"initialize with Host: {host} "
               f"-> HTTP {r.status}")
    ok = d.ping(sid, {"Host": f"localhost:{d.port}"})
    expect(ok.status == 200, f"Host: localhost:{d.port} -> HTTP {ok.status}")


def test_bad_session_id_header(h):
    d = h.start()
    sid = d.initialize(LATEST)
    for bad in ("", "short", "a" * 4000, "s\x7fid"):
        r = d.ping(sid, {"Mcp-Session-Id": bad})
        expect(r.status in (400, 404), f"Mcp-Session-Id {bad[:20]!r} -> "
               f"HTTP {r.status}")
        d.assert_alive(sid)


def test_garbage_http_and_half_requests(h):
    d = h.start()
    sid = d.initialize(LATEST)
    for raw in (b"GARBAGE\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\r\n\r\n",
                b"POST /mcp HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
                b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"zz\r\n"):
        try:
            r = d.open("POST", raw_head=raw, timeout=3)
            r.read_body(3)
            expect(400 <= r.status < 500, f"{raw[:30]!r} -> HTTP {r.status}")
        except AssertionError as e:
            # closing the connection without a reply is acceptable
            expect("closed the connection" in str(e), str(e))
        d.assert_alive(sid, f"after raw {raw[:30]!r}")
    # headers then half a body, then the client goes away
    conn = Conn(d.host, d.port, tmo(3))
    conn.send(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{d.port}\r\n"
              f"Content-Type: application/json\r\nAccept: application/json, "
              f"text/event-stream\r\nMcp-Session-Id: {sid}\r\n"
              f"Content-Length: 100\r\n\r\n{{\"jsonrpc\"".encode())
    time.sleep(0.05)
    conn.cut()
    d.assert_alive(sid, "after a half-sent body")


# --------------------------------------------------------------------------
# Pagination cursors, numbers and NULs in arguments: nothing a client puts
# in params reaches an integer conversion, an overflow or a cut string.


def _exec_tool(name, *lines):
    return [f"tool {name} {{"] + [f"    {ln}" for ln in lines] + ["}"]


def _rpc_error(d, sid, body, id, code, what):
    """POSTs body (a request with this id) and expects error `code`, on a
    JSON or an SSE answer; the daemon keeps serving."""
    r = d.post(sid, body if isinstance(body, str) else json.dumps(body))
    expect(r.status == 200, f"{what} -> HTTP {r.status} {r.body[:200]!r}")
    msg = r.rpc(id)
    expect("result" not in msg and msg.get("error", {}).get("code") == code,
           f"{what} -> {msg!r}, expected error {code}")
    d.assert_alive(sid, f"after {what}")
    return msg


BAD_CURSORS = ("9223372036854775800", "9223372036854775807",
               "18446744073709551616", "9" * 400, "-100", "+100", " 100",
               "100 ", "0100", "1e2", "0x64", "", "0", "-0", "50", "100000",
               "x", 100, 1e300, True, [], {})


def test_pagination_cursors(h):
    # 150 exec tools and the fixtures: the tools come in two pages; the
    # only cursor mcpd hands out is "100", and any other is -32602
    tools = []
    for i in range(150):
        tools += _exec_tool(f"t{i:03d}", "exec /bin/true")
    d = h.start(extra_lines=tools + ["fixtures conformance"])
    sid = d.initialize(LATEST)
    names, cursors, cursor = [], [], None
    while len(cursors) < 5:
        id = d.new_id()
        r = d.post(sid, rpc("tools/list", {} if cursor is None
                            else {"cursor": cursor}, id))
        res = r.rpc(id).get("result")
        expect(res is not None, f"tools/list cursor {cursor!r} -> "
               f"{r.body[:300]!r}")
        names += [t["name"] for t in res["tools"]]
        cursor = res.get("nextCursor")
        if cursor is None:
            break
        cursors.append(cursor)
    expect(cursors == ["100"], f"tools/list handed out cursors {cursors!r}")
    expect(len(names) == len(set(names)) and
           {f"t{i:03d}" for i in range(150)} <= set(names),
           f"tools/list pages: {len(names)} names, "
           f"{len(set(names))} distinct")
    for method in ("tools/list", "resources/list", "resources/templates/list",
                   "prompts/list"):
        for bad in BAD_CURSORS:
            id = d.new_id()
            _rpc_error(d, sid, rpc(method, {"cursor": bad}, id), id, -32602,
                       f"{method} cursor {str(bad)[:30]!r}")


def test_numeric_arguments_out_of_range(h):
    # far outside any integer type: refused by the range check on the
    # double (a sanitized build dies on a conversion made before it)
    d = h.start(extra_lines=_exec_tool(
        "nums", "param i integer", "param x number", "exec /bin/true"))
    sid = d.initialize(LATEST)
    huge = ("1e300", "-1e300", "1e19", "-9.3e18",
            "9223372036854775808", "18446744073709551616", "4294967296.5",
            "-1", "1.5", "2000000")
    for tool, arg in (("stream", "n"), ("stream", "size"),
                      ("stream", "interval_ms"), ("notify", "n"),
                      ("notify", "size")):
        for v in huge:
            id = d.new_id()
            args = '{"n":1,"' + arg + '":' + v + '}' if arg != "n" else \
                '{"n":' + v + '}'
            body = ('{"jsonrpc":"2.0","id":%d,"method":"tools/call",'
                    '"params":{"name":"%s","arguments":%s}}' %
                    (id, tool, args))
            r = d.post(sid, body)
            msg = r.rpc(id)
            res = msg.get("result") or {}
            expect(res.get("isError") is True and
                   f"argument '{arg}' must be an integer" in
                   result_text(msg), f"{tool} {arg}={v} -> {msg!r}")
            d.assert_alive(sid, f"after {tool} {arg}={v}")
    for arg, v, why in (("i", "1e300", "an integer"),
                        ("i", "9007199254740993e3", "an integer")):
        id = d.new_id()
        body = ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":'
                '{"name":"nums","arguments":{"%s":%s}}}' % (id, arg, v))
        msg = d.post(sid, body).rpc(id)
        expect((msg.get("result") or {}).get("isError") is True and
               f"must be {why}" in result_text(msg),
               f"nums {arg}={v} -> {msg!r}")
        d.assert_alive(sid, f"after nums {arg}={v}")
    # beyond the range of a double: cJSON would carry it as infinity and
    # print it back as null, so the body is refused as it is parsed
    for tool, arg, v in (("stream", "n", "1e400"), ("stream", "size", "-1e400"),
                         ("nums", "x", "1e400"), ("nums", "i", "-1e400")):
        id = d.new_id()
        body = ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":'
                '{"name":"%s","arguments":{"%s":%s}}}' % (id, tool, arg, v))
        r = d.post(sid, body)
        expect(r.status == 400 and r.is_json and
               r.json.get("error", {}).get("code") == -32700,
               f"{tool} {arg}={v} -> HTTP {r.status} {r.body[:200]!r}")
        d.assert_alive(sid, f"after {tool} {arg}={v}")


def test_nul_in_names_and_strings(h):
    # cJSON ends a string at a decoded \u0000: mcpd must neither serve
    # "ping\u0000x" as ping nor cut "a\u0000b" to "a"; names with a NUL
    # are invalid, text with one is refused whole
    d = h.start(extra_lines=_exec_tool("show", "param s string required",
                                       "exec /bin/echo {s}"))
    sid = d.initialize(LATEST)

    # the envelope: -32600 (HTTP 400), an id with a NUL is answered null
    for method in ("ping\x00x", "ping\x00", "\x00", "tools/list\x00",
                   "initialize\x00"):
        id = d.new_id()
        r = d.post(sid, json.dumps(rpc(method, None, id)))
        _check(d, sid, r, (400,), f"method {method!r}", -32600)
        expect(r.json.get("id") == id, f"method {method!r} -> {r.json!r}")
    for body, what in (
            ({"jsonrpc": "2.0", "id": "a\x00b", "method": "ping"},
             "id with a NUL"),
            ({"jsonrpc": "2.0", "id": 1, "method\x00x": "tools/list",
              "method": "ping"}, "member name with a NUL"),
            ({"jsonrpc": "2.0\x00", "id": 1, "method": "ping"},
             "jsonrpc with a NUL"),
            ({"jsonrpc": "2.0", "id": 1, "method": "ping", "x": ["\x00"]},
             "extra member with a NUL"),
            (rpc("notifications/cancelled", {"requestId": "r\x00"}),
             "notification whose params hold a NUL"),
            ({"jsonrpc": "2.0", "id": "mcpd-0", "result": {"t": "\x00"}},
             "response whose result holds a NUL")):
        r = d.post(sid, json.dumps(body))
        _check(d, sid, r, (400,), what, -32600)
        if what == "id with a NUL":
            expect(r.json.get("id") is None, f"{what} echoed: {r.json!r}")

    # params: -32602 with the request's id; nothing runs, nothing is cut
    for name, args in (("echo\x00zzz", {"text": "hi"}),
                       ("echo", {"text": "a\x00b"}),
                       ("echo", {"text": "\x00"}),
                       ("echo", {"text": "ab" * 1000 + "\x00"}),
                       ("echo", {"text\x00x": "hi"}),
                       ("echo", {"text": "hi", "more": {"k\x00": 1}}),
                       ("show", {"s": "a\x00b"}),
                       ("show\x00", {"s": "ab"})):
        id = d.new_id()
        _rpc_error(d, sid, tool_call(name, args, id), id, -32602,
                   f"tools/call {name!r} {str(args)[:40]}")
    id = d.new_id()
    _rpc_error(d, sid, tool_call("echo", {"text": "hi"}, id, "tok\x00"), id,
               -32602, "progressToken with a NUL")
    for method, params in (("logging/setLevel", {"level": "debug\x00"}),
                           ("tools/list", {"cursor": "100\x00"}),
                           ("ping", {"_meta": {"x": "\x00"}})):
        id = d.new_id()
        _rpc_error(d, sid, rpc(method, params, id), id, -32602,
                   f"{method} {params!r}")

    # an escaped backslash before u0000 is text, and comes back whole
    for text in ("a\\u0000b", "\\u0000", "\\\\u0000", "a\u00e9\\"):
        msg, _ = d.call(sid, "echo", {"text": text})
        expect(result_text(msg) == text, f"echo {text!r} -> {msg!r}")

    # initialize: no session for params with a NUL
    for params in ({"protocolVersion": LATEST + "\x00", "capabilities": {},
                    "clientInfo": {"name": "e", "version": "0"}},
                   {"protocolVersion": LATEST, "capabilities": {},
                    "clientInfo": {"name": "e\x00", "version": "0"}}):
        r = d.post(None, json.dumps(rpc("initialize", params, 1)))
        expect(r.status == 400 and r.session_id is None,
               f"initialize {params!r} -> HTTP {r.status} "
               f"{r.body[:200]!r}")
        assert_rpc_error(r.json, code=-32602, id_null=False)
    r = d.post(None, json.dumps({"jsonrpc": "2.0", "id": "i\x00",
                                 "method": "initialize", "params": {
                                     "protocolVersion": LATEST}}))
    expect(r.status == 400 and r.session_id is None,
           f"initialize with an id holding a NUL -> HTTP {r.status}")
    assert_rpc_error(r.json, code=-32600)
    d.assert_alive(sid, "after initialize with NULs")

    # a 2025-03-26 batch: the member with a NUL is invalid, the others run
    old = d.initialize("2025-03-26")
    r = d.post(old, json.dumps([rpc("ping\x00", None, 1), rpc("ping", None, 2),
                                rpc("tools/list", {"cursor": "\x00"}, 3)]))
    expect(r.status == 200, f"batch -> HTTP {r.status} {r.body[:200]!r}")
    expect(r.rpc(1).get("error", {}).get("code") == -32600 and
           r.rpc(2).get("result") == {} and
           r.rpc(3).get("error", {}).get("code") == -32602,
           f"batch -> {r.json!r}")
    d.assert_alive(old, "after a batch with NULs")
