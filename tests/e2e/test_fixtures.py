"""The conformance fixtures (conf `fixtures conformance`): the exact outputs
of every tool, resource, prompt and completion the official MCP conformance
suite calls (its own checks are shallow), the sampling and elicitation round
trips with this test as the client, the routing of client responses, and
SEP-1699 polling (test_reconnection closes the POST's connection after the
priming event; the result comes on the resumed stream)."""

import base64
import io
import json
import struct
import time
import wave
import zlib

from mcpd_harness import (LATEST, VERSIONS, Timeout, assert_rpc_error,
                          cancelled, check_ids, expect, is_log, is_progress,
                          is_response, message_events, parse_event_id, rpc,
                          tmo)

FIXTURES = ("fixtures conformance",)

TOOLS = {
    "test_simple_text", "test_image_content", "test_audio_content",
    "test_embedded_resource", "test_multiple_content_types",
    "test_tool_with_logging", "test_tool_with_progress",
    "test_error_handling", "test_sampling", "test_elicitation",
    "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool", "test_reconnection",
    "test_update_watched_resource",
    # the 2026-07-28 scenarios' (MRTR, capabilities, listen triggers)
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities", "test_missing_capability",
    "test_streaming_elicitation", "test_logging_tool",
    "test_trigger_tool_change", "test_trigger_prompt_change",
    "test_mcp_header_param",
    # the tasks extension's scenarios (provider_taskfix.c)
    "greet", "slow_compute", "failing_job", "protocol_error_job",
    "confirm_delete", "multi_input", "test_tool_with_task",
}
BUILTIN = {"echo", "stream", "notify"}

SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                          "properties": {"street": {"type": "string"},
                                         "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"},
                   "address": {"$ref": "#/$defs/address"},
                   "contactMethod": {"type": "string",
                                     "enum": ["phone", "email"]},
                   "phone": {"type": "string"},
                   "email": {"type": "string"}},
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}},
           "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

ELICIT_SIMPLE = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}

ELICIT_DEFAULTS = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name",
                 "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score",
                  "default": 95.5},
        "status": {"type": "string", "description": "User status",
                   "enum": ["active", "inactive", "pending"],
                   "default": "active"},
        "verified": {"type": "boolean", "description": "Verification status",
                     "default": True},
    },
}

ELICIT_ENUMS = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string",
                           "description": "Select one option",
                           "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string",
                         "description": "Select one option with titles",
                         "oneOf": [
                             {"const": "value1", "title": "First Option"},
                             {"const": "value2", "title": "Second Option"},
                             {"const": "value3", "title": "Third Option"}]},
        "legacyEnum": {"type": "string",
                       "description": "Select one option (legacy)",
                       "enum": ["opt1", "opt2", "opt3"],
                       "enumNames": ["Option One", "Option Two",
                                     "Option Three"]},
        "untitledMulti": {"type": "array",
                          "description": "Select multiple options",
                          "items": {"type": "string",
                                    "enum": ["option1", "option2",
                                             "option3"]}},
        "titledMulti": {"type": "array",
                        "description": "Select multiple options with titles",
                        "items": {"anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"}]}},
    },
}


# --------------------------------------------------------------------------
# helpers


def _start(h, **conf):
    return h.start(extra_lines=FIXTURES, **conf)


def _request(d, sid, method, params=None):
    """A whole request (JSON or SSE answer); returns the response message."""
    id = d.new_id()
    r = d.post(sid, rpc(method, params, id))
    expect(r.status == 200, f"{method} -> HTTP {r.status} {r.body[:300]!r}")
    return r.rpc(id)


def _result(d, sid, method, params=None):
    msg = _request(d, sid, method, params)
    expect("result" in msg, f"{method} {params!r} -> error {msg!r}")
    return msg["result"]


def _error(d, sid, method, params, code):
    msg = _request(d, sid, method, params)
    expect("error" in msg, f"{method} {params!r} -> {msg!r}, expected an "
           f"error {code}")
    expect(msg["error"].get("code") == code, f"{method} {params!r} -> "
           f"error {msg['error']!r}, expected code {code}")
    return msg["error"]


def _tool(d, sid, name, arguments=None, token=None):
    """A whole tools/call; returns (result, every message of its stream)."""
    id, r = d.call_open(sid, name, arguments or {}, token)
    expect(r.status == 200 and r.is_sse,
           f"tools/call {name} -> HTTP {r.status} {r.content_type}")
    events = r.events_until_close(10)
    msgs = [e.json for e in message_events(events)]
    expect(msgs and is_response(msgs[-1], id), f"{name}: the stream does "
           f"not end with the response to {id}: {msgs!r}")
    expect("result" in msgs[-1], f"{name}: error response {msgs[-1]!r}")
    check_ids(events, 1, what=name)
    return msgs[-1]["result"], msgs


def _text_result(text, is_error=False):
    res = {"content": [{"type": "text", "text": text}]}
    if is_error:
        res["isError"] = True
    return res


def _quiet(r, seconds, what):
    """Nothing but comments or blocks without data for `seconds`."""
    deadline = time.monotonic() + tmo(seconds)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        try:
            ev = r.next_event(left / tmo(1))
        except Timeout:
            return
        expect(ev is None or not ev.is_message,
               f"{what}: unexpected message {ev.data!r}")
        if ev is None:
            return


def _ask(d, sid, name, arguments, method):
    """Starts a tool that asks the client; returns (call id, open reply,
    the server's request as read from the POST's stream)."""
    id, r = d.call_open(sid, name, arguments)
    expect(r.status == 200 and r.is_sse,
           f"tools/call {name} -> HTTP {r.status} {r.content_type}")
    got = r.next_message(5)
    expect(got is not None, f"{name}: stream ended before the server's "
           "request")
    _, req = got
    expect(req.get("jsonrpc") == "2.0" and req.get("method") == method,
           f"{name}: first message is not a {method} request: {req!r}")
    expect(isinstance(req.get("id"), str) and req["id"],
           f"{name}: the server's request has no string id: {req!r}")
    return id, r, req


def _answer(d, sid, req_id, result=None, error=None, status=202):
    body = {"jsonrpc": "2.0", "id": req_id}
    if error is not None:
        body["error"] = error
    else:
        body["result"] = result
    a = d.post(sid, body)
    expect(a.status == status, f"client response id={req_id!r} -> HTTP "
           f"{a.status} {a.body[:200]!r}, expected {status}")
    if status == 202:
        expect(a.body == b"", f"202 with a body: {a.body[:200]!r}")
    return a


def _finish(r, id, what):
    """The rest of a call's stream: exactly its response; returns result."""
    msgs = [e.json for e in message_events(r.events_until_close(10))]
    expect(len(msgs) == 1 and is_response(msgs[0], id),
           f"{what}: expected only the response to {id}, got {msgs!r}")
    expect("result" in msgs[0], f"{what}: error response {msgs[0]!r}")
    return msgs[0]["result"]


def _png_ok(b64, what):
    data = base64.b64decode(b64, validate=True)
    expect(data[:8] == b"\x89PNG\r\n\x1a\n", f"{what}: no PNG signature")
    pos, chunks = 8, []
    while pos < len(data):
        n, = struct.unpack(">I", data[pos:pos + 4])
        typ, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        crc, = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        expect(zlib.crc32(typ + body) == crc, f"{what}: bad CRC in {typ!r}")
        chunks.append((typ, body))
        pos += 12 + n
    expect(chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND",
           f"{what}: chunks {[c[0] for c in chunks]!r}")
    w, hgt, depth, color = struct.unpack(">IIBB", chunks[0][1][:10])
    expect((w, hgt, depth, color) == (1, 1, 8, 2), f"{what}: IHDR "
           f"{(w, hgt, depth, color)!r}, expected a 1x1 8-bit RGB image")
    raw = zlib.decompress(b"".join(b for t, b in chunks if t == b"IDAT"))
    expect(raw == b"\x00\xff\x00\x00", f"{what}: pixels {raw!r}, expected "
           "one red pixel")


def _wav_ok(b64, what):
    data = base64.b64decode(b64, validate=True)
    with wave.open(io.BytesIO(data)) as w:
        params = (w.getnchannels(), w.getsampwidth(), w.getframerate(),
                  w.getnframes())
        frames = w.readframes(w.getnframes())
    expect(params == (1, 1, 8000, 16), f"{what}: WAV {params!r}, expected "
           "mono 8-bit 8 kHz, 16 frames")
    expect(len(frames) == 16 and len(set(frames)) > 1,
           f"{what}: samples {frames!r}")


# --------------------------------------------------------------------------
# listing and capabilities


def test_fixtures_off_by_default(h):
    d = h.start()
    r = d.initialize_reply(LATEST)
    caps = r.json["result"]["capabilities"]
    for cap in ("resources", "prompts", "completions"):
        expect(cap not in caps, f"{cap} advertised without fixtures: {caps}")
    sid = r.session_id
    d.versions[sid] = LATEST
    names = {t["name"] for t in _result(d, sid, "tools/list")["tools"]}
    expect(names == BUILTIN, f"tools without fixtures: {sorted(names)}")
    res, _ = d.call(sid, "test_simple_text", {})
    expect("error" in res, f"a fixture answered with fixtures off: {res!r}")
    _error(d, sid, "resources/list", None, -32601)


def test_fixtures_capabilities_and_tools_list(h):
    d = _start(h)
    for v in VERSIONS:
        r = d.initialize_reply(v)
        caps = r.json["result"]["capabilities"]
        expect(caps.get("resources") == {"subscribe": True,
                                         "listChanged": False},
               f"{v}: resources capability {caps.get('resources')!r}")
        expect(caps.get("prompts") == {"listChanged": False},
               f"{v}: prompts capability {caps.get('prompts')!r}")
        expect(caps.get("completions") == {} and caps.get("logging") == {},
               f"{v}: capabilities {caps!r}")
        sid = r.session_id
        d.versions[sid] = r.json["result"]["protocolVersion"]
        tools = _result(d, sid, "tools/list")["tools"]
        names = [t["name"] for t in tools]
        expect(len(names) == len(set(names)), f"{v}: duplicate tools")
        expect(set(names) == TOOLS | BUILTIN, f"{v}: tools {sorted(names)}")
        for t in tools:
            expect(isinstance(t.get("description"), str) and
                   t["description"], f"{v}: {t['name']} has no description")
            schema = t.get("inputSchema")
            expect(isinstance(schema, dict) and
                   schema.get("type") == "object",
                   f"{v}: {t['name']} inputSchema {schema!r}")
        by = {t["name"]: t for t in tools}
        expect(by["json_schema_2020_12_tool"] == {
            "name": "json_schema_2020_12_tool",
            "description": "Tool with JSON Schema 2020-12 features",
            "inputSchema": SCHEMA_2020_12},
            f"{v}: {by['json_schema_2020_12_tool']!r}")
        expect(by["test_sampling"]["inputSchema"]["required"] == ["prompt"],
               f"{v}: {by['test_sampling']!r}")
        expect(by["test_elicitation"]["inputSchema"]["required"] ==
               ["message"], f"{v}: {by['test_elicitation']!r}")


# --------------------------------------------------------------------------
# tools answered at once


def test_fixtures_content_tools(h):
    d = _start(h)
    for v in VERSIONS:
        sid = d.initialize(v)
        res, _ = _tool(d, sid, "test_simple_text")
        expect(res == _text_result("This is a simple text response for "
                                   "testing."), f"{v}: simple {res!r}")

        res, _ = _tool(d, sid, "test_image_content")
        expect(len(res["content"]) == 1 and "isError" not in res,
               f"{v}: image {res!r}")
        img = res["content"][0]
        expect(set(img) == {"type", "data", "mimeType"} and
               img["type"] == "image" and img["mimeType"] == "image/png",
               f"{v}: image item {img!r}")
        _png_ok(img["data"], f"{v} test_image_content")

        res, _ = _tool(d, sid, "test_audio_content")
        aud = res["content"][0]
        expect(len(res["content"]) == 1 and
               set(aud) == {"type", "data", "mimeType"} and
               aud["type"] == "audio" and aud["mimeType"] == "audio/wav",
               f"{v}: audio {res!r}")
        _wav_ok(aud["data"], f"{v} test_audio_content")

        res, _ = _tool(d, sid, "test_embedded_resource")
        expect(res == {"content": [{"type": "resource", "resource": {
            "uri": "test://embedded-resource", "mimeType": "text/plain",
            "text": "This is an embedded resource content."}}]},
            f"{v}: embedded {res!r}")

        res, _ = _tool(d, sid, "test_multiple_content_types")
        c = res["content"]
        expect(len(c) == 3, f"{v}: mixed {res!r}")
        expect(c[0] == {"type": "text",
                        "text": "Multiple content types test:"},
               f"{v}: mixed[0] {c[0]!r}")
        expect(c[1]["type"] == "image" and c[1]["mimeType"] == "image/png",
               f"{v}: mixed[1] {c[1]!r}")
        _png_ok(c[1]["data"], f"{v} mixed image")
        expect(c[2] == {"type": "resource", "resource": {
            "uri": "test://mixed-content-resource",
            "mimeType": "application/json",
            "text": '{"test":"data","value":123}'}},
            f"{v}: mixed[2] {c[2]!r}")
        expect(json.loads(c[2]["resource"]["text"]) ==
               {"test": "data", "value": 123}, f"{v}: mixed JSON")

        res, _ = _tool(d, sid, "test_error_handling")
        expect(res == _text_result("This tool intentionally returns an "
                                   "error for testing", True),
               f"{v}: error {res!r}")

        res, _ = _tool(d, sid, "json_schema_2020_12_tool",
                       {"name": "n", "address": {"city": "c"}})
        expect(res == _text_result('json_schema_2020_12_tool received: '
                                   '{"name":"n","address":{"city":"c"}}'),
               f"{v}: 2020-12 tool {res!r}")


# --------------------------------------------------------------------------
# paced tools


def _timed_messages(r, id, what):
    """(arrival time, message) of every message until the response."""
    out = []
    while True:
        got = r.next_message(5)
        expect(got is not None, f"{what}: stream ended before the response")
        out.append((time.monotonic(), got[1]))
        if is_response(got[1], id):
            expect(r.next_message(2) is None, f"{what}: more after the "
                   "response")
            return out


def test_fixtures_logging_tool(h):
    d = _start(h)
    texts = ["Tool execution started", "Tool processing data",
             "Tool execution completed"]
    for v in VERSIONS:
        sid = d.initialize(v)
        expect(_result(d, sid, "logging/setLevel", {"level": "debug"}) == {},
               f"{v}: setLevel")
        id, r = d.call_open(sid, "test_tool_with_logging", {})
        got = _timed_messages(r, id, f"{v} logging")
        msgs = [m for _, m in got]
        expect(len(msgs) == 4 and all(is_log(m) for m in msgs[:3]),
               f"{v}: expected 3 log messages then the result: {msgs!r}")
        for m, text in zip(msgs, texts):
            expect(m["params"] == {"level": "info",
                                   "logger": "test_tool_with_logging",
                                   "data": text}, f"{v}: {m!r}")
        expect(msgs[3]["result"] == _text_result(
            "Tool with logging executed successfully"), f"{v}: {msgs[3]!r}")
        # ~50 ms between the messages (timers never fire early)
        expect(got[2][0] - got[0][0] >= 0.08, f"{v}: three messages in "
               f"{got[2][0] - got[0][0]:.3f}s, expected ~0.1s")
        check_ids(r.events, 1, what=f"{v} logging")

        # above info: no messages, the result all the same
        _result(d, sid, "logging/setLevel", {"level": "warning"})
        res, msgs = _tool(d, sid, "test_tool_with_logging")
        expect(len(msgs) == 1 and res == _text_result(
            "Tool with logging executed successfully"),
            f"{v}: at level warning: {msgs!r}")


def test_fixtures_progress_tool(h):
    d = _start(h)
    texts = ["Tool execution started", "Tool processing data",
             "Tool execution completed"]
    for v in VERSIONS:
        sid = d.initialize(v)
        id, r = d.call_open(sid, "test_tool_with_progress", {},
                            "progress-test-1")
        got = _timed_messages(r, id, f"{v} progress")
        msgs = [m for _, m in got]
        expect(len(msgs) == 4 and all(is_progress(m) for m in msgs[:3]),
               f"{v}: expected 3 progress then the result: {msgs!r}")
        for m, p, text in zip(msgs, (0, 50, 100), texts):
            expect(m["params"] == {"progressToken": "progress-test-1",
                                   "progress": p, "total": 100,
                                   "message": text}, f"{v}: {m!r}")
        expect(msgs[3]["result"] == _text_result(
            "Tool with progress executed successfully"), f"{v}: {msgs[3]!r}")
        expect(got[2][0] - got[0][0] >= 0.08, f"{v}: three progress in "
               f"{got[2][0] - got[0][0]:.3f}s, expected ~0.1s")

        res, msgs = _tool(d, sid, "test_tool_with_progress", {}, 77)
        expect([m["params"]["progressToken"] for m in msgs[:3]] ==
               [77, 77, 77], f"{v}: numeric token {msgs!r}")
        res, msgs = _tool(d, sid, "test_tool_with_progress")
        expect(len(msgs) == 1 and res == _text_result(
            "Tool with progress executed successfully"),
            f"{v}: without a token: {msgs!r}")


# --------------------------------------------------------------------------
# sampling and elicitation, this test playing the client


def test_fixtures_sampling_round_trip(h):
    d = _start(h)
    for v in VERSIONS:
        sid = d.initialize(v)
        id, r, req = _ask(d, sid, "test_sampling",
                          {"prompt": "Test prompt for sampling"},
                          "sampling/createMessage")
        expect(req["params"] == {
            "messages": [{"role": "user", "content": {
                "type": "text", "text": "Test prompt for sampling"}}],
            "maxTokens": 100}, f"{v}: sampling params {req['params']!r}")
        _answer(d, sid, req["id"], {
            "role": "assistant", "model": "test-model",
            "stopReason": "endTurn",
            "content": {"type": "text",
                        "text": "This is a test response from the client"}})
        res = _finish(r, id, f"{v} sampling")
        expect(res == _text_result("LLM response: This is a test response "
                                   "from the client"), f"{v}: {res!r}")

        # the client refuses: the tool reports it
        id, r, req = _ask(d, sid, "test_sampling", {"prompt": "p"},
                          "sampling/createMessage")
        _answer(d, sid, req["id"], error={"code": -32601,
                                          "message": "Method not found"})
        res = _finish(r, id, f"{v} sampling refused")
        expect(res == _text_result("Sampling failed: Method not found",
                                   True), f"{v}: {res!r}")

        # bad arguments never reach the client
        res, msgs = _tool(d, sid, "test_sampling", {"prompt": 5})
        expect(len(msgs) == 1 and res == _text_result(
            "invalid arguments: argument 'prompt' must be a string", True),
            f"{v}: {msgs!r}")


def test_fixtures_elicitation_round_trip(h):
    d = _start(h)
    for v in VERSIONS:
        sid = d.initialize(v)
        id, r, req = _ask(d, sid, "test_elicitation",
                          {"message": "Please provide your information"},
                          "elicitation/create")
        want = {"message": "Please provide your information",
                "requestedSchema": ELICIT_SIMPLE}
        if v >= "2025-11-25":
            want["mode"] = "form"
        expect(req["params"] == want, f"{v}: params {req['params']!r}")
        _answer(d, sid, req["id"], {"action": "accept", "content": {
            "username": "testuser", "email": "test@example.com"}})
        res = _finish(r, id, f"{v} elicitation")
        expect(res == _text_result(
            'User response: action=accept, content={"username":"testuser",'
            '"email":"test@example.com"}'), f"{v}: {res!r}")

        id, r, req = _ask(d, sid, "test_elicitation", {"message": "m"},
                          "elicitation/create")
        _answer(d, sid, req["id"], {"action": "decline"})
        res = _finish(r, id, f"{v} decline")
        expect(res == _text_result("User response: action=decline"),
               f"{v}: {res!r}")

        id, r, req = _ask(d, sid, "test_elicitation", {"message": "m"},
                          "elicitation/create")
        _answer(d, sid, req["id"], {"content": {}})
        res = _finish(r, id, f"{v} no action")
        expect(res == _text_result("Elicitation failed: the client's result "
                                   "has no action", True), f"{v}: {res!r}")

        res, msgs = _tool(d, sid, "test_elicitation", {})
        expect(len(msgs) == 1 and res == _text_result(
            "invalid arguments: argument 'message' must be a string", True),
            f"{v}: {msgs!r}")


def test_fixtures_elicitation_schemas(h):
    d = _start(h)
    sid = d.initialize(LATEST)
    id, r, req = _ask(d, sid, "test_elicitation_sep1034_defaults", {},
                      "elicitation/create")
    expect(req["params"] == {
        "mode": "form",
        "message": "Please review and update the form fields with defaults",
        "requestedSchema": ELICIT_DEFAULTS}, f"sep1034: {req['params']!r}")
    _answer(d, sid, req["id"], {"action": "accept", "content": {
        "name": "Jane Smith", "age": 25, "score": 88, "status": "inactive",
        "verified": False}})
    res = _finish(r, id, "sep1034")
    expect(res == _text_result(
        'Elicitation completed: action=accept, content={"name":"Jane Smith",'
        '"age":25,"score":88,"status":"inactive","verified":false}'),
        f"sep1034: {res!r}")

    id, r, req = _ask(d, sid, "test_elicitation_sep1330_enums", {},
                      "elicitation/create")
    expect(req["params"] == {
        "mode": "form",
        "message": "Please select options from the enum fields",
        "requestedSchema": ELICIT_ENUMS}, f"sep1330: {req['params']!r}")
    props = req["params"]["requestedSchema"]["properties"]
    expect("oneOf" not in props["untitledSingle"] and
           "enumNames" not in props["untitledSingle"] and
           "enum" not in props["titledSingle"] and
           "enum" not in props["titledMulti"]["items"] and
           len(props["legacyEnum"]["enum"]) ==
           len(props["legacyEnum"]["enumNames"]), "sep1330 variants mixed")
    _answer(d, sid, req["id"], {"action": "cancel"})
    res = _finish(r, id, "sep1330")
    expect(res == _text_result("Elicitation completed: action=cancel"),
           f"sep1330: {res!r}")


def test_fixtures_client_response_routing(h):
    d = _start(h)
    sid = d.initialize(LATEST)
    other = d.initialize(LATEST)

    # unknown ids, and a real id posted on another session: 202, no effect
    id, r, req = _ask(d, sid, "test_elicitation", {"message": "m"},
                      "elicitation/create")
    for bogus in ("mcpd-00000000000000000", "x" * 200, 424242, None):
        _answer(d, sid, bogus, {"action": "accept"})
    _answer(d, other, req["id"], {"action": "accept", "content": {"a": 1}})
    _quiet(r, 0.3, "after unknown answers")
    # the first answer counts, a duplicate is ignored
    _answer(d, sid, req["id"], {"action": "accept", "content": {"n": 1}})
    _answer(d, sid, req["id"], {"action": "decline"})
    res = _finish(r, id, "duplicate answer")
    expect(res == _text_result('User response: action=accept, '
                               'content={"n":1}'), f"duplicate: {res!r}")
    d.wait_log(lambda line: "matches no pending request" in line and
               req["id"] in line, what="the duplicate answer logged")

    # an answer from a terminated session: 404, the call ended with it
    gone = d.initialize(LATEST)
    id, r, req = _ask(d, gone, "test_sampling", {"prompt": "p"},
                      "sampling/createMessage")
    x = d.delete(gone)
    expect(x.status in (200, 204), f"DELETE -> HTTP {x.status}")
    tail = [e.json for e in message_events(r.events_until_close(3))]
    expect(not any(is_response(m) for m in tail),
           f"a response after DELETE: {tail!r}")
    a = _answer(d, gone, req["id"], {"role": "assistant", "content": {
        "type": "text", "text": "late"}, "model": "m"}, status=404)
    assert_rpc_error(a.json, -32001)

    # a cancelled call's request is no longer awaited
    id, r, req = _ask(d, sid, "test_elicitation", {"message": "m"},
                      "elicitation/create")
    c = d.post(sid, cancelled(id))
    expect(c.status == 202, f"cancel -> HTTP {c.status}")
    tail = [e.json for e in message_events(r.events_until_close(3))]
    expect(not any(is_response(m) for m in tail),
           f"a response after cancel: {tail!r}")
    _answer(d, sid, req["id"], {"action": "accept"})

    # the session still works, the other one too
    for s in (sid, other):
        d.assert_alive(s, "after the routing cases")
        res, _ = _tool(d, s, "test_simple_text")


def test_fixtures_late_answer_after_timeout(h):
    d = _start(h, request_timeout=1)
    sid = d.initialize(LATEST)
    for name, args, method, word in (
            ("test_elicitation", {"message": "m"}, "elicitation/create",
             "Elicitation"),
            ("test_sampling", {"prompt": "p"}, "sampling/createMessage",
             "Sampling")):
        t0 = time.monotonic()
        id, r, req = _ask(d, sid, name, args, method)
        res = _finish(r, id, f"{name} timeout")
        expect(res == _text_result(f"{word} failed: The client did not "
                                   "answer the request in time", True),
               f"{name}: {res!r}")
        took = time.monotonic() - t0
        expect(0.9 <= took <= tmo(4), f"{name}: the deadline of 1 s took "
               f"{took:.2f}s")
        _answer(d, sid, req["id"], {"action": "accept"})
        d.wait_log(lambda line: "matches no pending request" in line and
                   req["id"] in line, what="the late answer logged")
    d.assert_alive(sid, "after late answers")


def test_fixtures_delete_and_cancel_running_tools(h):
    d = _start(h)
    for name, token in (("test_tool_with_logging", None),
                        ("test_tool_with_progress", "t"),
                        ("test_reconnection", None)):
        sid = d.initialize(LATEST)
        id, r = d.call_open(sid, name, {}, token)
        expect(r.status == 200, f"{name} -> HTTP {r.status}")
        x = d.delete(sid)
        expect(x.status in (200, 204), f"{name}: DELETE -> HTTP {x.status}")
        r.events_until_close(3)
        sid = d.initialize(LATEST)
        id, r = d.call_open(sid, name, {}, token)
        c = d.post(sid, cancelled(id))
        expect(c.status == 202, f"{name}: cancel -> HTTP {c.status}")
        r.events_until_close(3)
        time.sleep(0.2)             # past every timer of the tool
        d.assert_alive(sid, f"after cancelling {name}")


# --------------------------------------------------------------------------
# SEP-1699 polling


def test_fixtures_reconnection_polling(h):
    d = _start(h)
    for wait in (0, 0.4):           # resume before / after the answer
        sid = d.initialize(LATEST)
        id, r = d.call_open(sid, "test_reconnection", {})
        expect(r.status == 200 and r.is_sse, f"POST -> HTTP {r.status}")
        events = r.events_until_close(5)
        expect(not r.reader.truncated, "the POST stream was cut, not ended")
        expect(len(events) == 1, f"POST stream: {events!r}, expected only "
               "the priming event")
        prime = events[0]
        k, n = parse_event_id(prime.id)
        expect(n == 0 and prime.data == "" and prime.retry is not None,
               f"first event {prime!r} is not a priming event with retry")
        time.sleep(wait)
        g = d.get_sse(sid, prime.id)
        expect(g.status == 200 and g.is_sse, f"resume {prime.id} -> HTTP "
               f"{g.status}")
        more = g.events_until_close(5)
        msgs = message_events(more)
        expect(len(msgs) == 1 and msgs[0].id == f"{k}-1",
               f"resumed stream: {more!r}")
        expect(all(e.id is None for e in more if not e.is_message),
               f"resume sent a priming event with an id: {more!r}")
        m = msgs[0].json
        expect(is_response(m, id) and
               m["result"] == _text_result("Reconnection test completed"),
               f"resumed: {m!r}")
        d.assert_alive(sid, "after the polling resume")

    # clients before 2025-11-25 have no priming event: no polling close
    for v in ("2025-03-26", "2025-06-18"):
        sid = d.initialize(v)
        res, msgs = _tool(d, sid, "test_reconnection")
        expect(res == _text_result("Reconnection test completed"),
               f"{v}: {msgs!r}")


# --------------------------------------------------------------------------
# resources


def test_fixtures_resources(h):
    d = _start(h)
    for v in VERSIONS:
        sid = d.initialize(v)
        res = _result(d, sid, "resources/list")
        expect(res == {"resources": [
            {"uri": "test://static-text", "name": "static-text",
             "description": "A static text resource.",
             "mimeType": "text/plain"},
            {"uri": "test://static-binary", "name": "static-binary",
             "description": "A static binary resource (a PNG image).",
             "mimeType": "image/png"},
            {"uri": "test://watched-resource", "name": "watched-resource",
             "description": "A resource to subscribe to; "
             "test_update_watched_resource changes it.",
             "mimeType": "text/plain"}]}, f"{v}: {res!r}")
        res = _result(d, sid, "resources/templates/list")
        expect(res == {"resourceTemplates": [
            {"uriTemplate": "test://template/{id}/data",
             "name": "template-data",
             "description": "JSON data for the given id.",
             "mimeType": "application/json"}]}, f"{v}: {res!r}")

        res = _result(d, sid, "resources/read", {"uri": "test://static-text"})
        expect(res == {"contents": [{
            "uri": "test://static-text", "mimeType": "text/plain",
            "text": "This is the content of the static text resource."}]},
            f"{v}: {res!r}")
        res = _result(d, sid, "resources/read",
                      {"uri": "test://static-binary"})
        item = res["contents"][0]
        expect(len(res["contents"]) == 1 and set(item) ==
               {"uri", "mimeType", "blob"} and
               item["uri"] == "test://static-binary" and
               item["mimeType"] == "image/png", f"{v}: {res!r}")
        _png_ok(item["blob"], f"{v} static-binary")
        for id_ in ("123", "abc-9"):
            uri = f"test://template/{id_}/data"
            res = _result(d, sid, "resources/read", {"uri": uri})
            expect(res == {"contents": [{
                "uri": uri, "mimeType": "application/json",
                "text": json.dumps({"id": id_, "templateTest": True,
                                    "data": f"Data for ID: {id_}"},
                                   separators=(",", ":"))}]},
                f"{v}: {uri}: {res!r}")
        for bad in ("test://nope", "test://template//data",
                    "test://template/1/2/data", "test://template/1/dat",
                    "test://template/" + "9" * 65 + "/data"):
            _error(d, sid, "resources/read", {"uri": bad}, -32002)


def test_fixtures_subscribe_and_updates(h):
    d = _start(h)
    watched = "test://watched-resource"
    sub = d.initialize(LATEST)
    other = d.initialize(LATEST)
    old = d.initialize("2025-06-18")
    for s in (sub, old):
        expect(_result(d, s, "resources/subscribe", {"uri": watched}) == {},
               "subscribe")
    _error(d, sub, "resources/subscribe", {"uri": "test://nope"}, -32002)
    streams = {s: d.get_sse(s) for s in (sub, other, old)}
    for s, g in streams.items():
        expect(g.status == 200 and g.is_sse, f"GET -> HTTP {g.status}")

    def update(rev):
        res, _ = _tool(d, other, "test_update_watched_resource")
        expect(res == _text_result(f"Updated {watched} to revision {rev}"),
               f"update: {res!r}")
        res = _result(d, other, "resources/read", {"uri": watched})
        expect(res == {"contents": [{
            "uri": watched, "mimeType": "text/plain",
            "text": f"This is a watched resource, revision {rev}."}]},
            f"read after update: {res!r}")

    res = _result(d, other, "resources/read", {"uri": watched})
    expect(res["contents"][0]["text"] == "This is a watched resource, "
           "revision 1.", f"initial: {res!r}")
    update(2)
    for s in (sub, old):
        got = streams[s].next_message(5)
        expect(got is not None and got[1] == {
            "jsonrpc": "2.0", "method": "notifications/resources/updated",
            "params": {"uri": watched}}, f"standalone stream: {got!r}")
    _quiet(streams[other], 0.3, "unsubscribed session")

    expect(_result(d, sub, "resources/unsubscribe", {"uri": watched}) == {},
           "unsubscribe")
    update(3)
    got = streams[old].next_message(5)
    expect(got is not None and got[1]["params"] == {"uri": watched},
           f"still subscribed: {got!r}")
    _quiet(streams[sub], 0.3, "after unsubscribe")


# --------------------------------------------------------------------------
# prompts and completion


def test_fixtures_prompts(h):
    d = _start(h)
    for v in VERSIONS:
        sid = d.initialize(v)
        res = _result(d, sid, "prompts/list")
        expect(res == {"prompts": [
            {"name": "test_simple_prompt",
             "description": "A simple prompt without arguments."},
            {"name": "test_prompt_with_arguments",
             "description": "A prompt with two arguments.",
             "arguments": [
                 {"name": "arg1", "description": "First test argument",
                  "required": True},
                 {"name": "arg2", "description": "Second test argument",
                  "required": True}]},
            {"name": "test_prompt_with_embedded_resource",
             "description": "A prompt that embeds a resource.",
             "arguments": [{"name": "resourceUri",
                            "description": "URI of the resource to embed",
                            "required": True}]},
            {"name": "test_prompt_with_image",
             "description": "A prompt that includes an image."},
            {"name": "test_input_required_result_prompt",
             "description": "A prompt built from an elicited context "
                            "(input_required)."}]},
            f"{v}: {res!r}")

        def get(name, arguments=None):
            params = {"name": name}
            if arguments is not None:
                params["arguments"] = arguments
            return _result(d, sid, "prompts/get", params)

        def user(content):
            return {"role": "user", "content": content}

        def text(t):
            return {"type": "text", "text": t}

        res = get("test_simple_prompt")
        expect(res == {"messages": [user(text(
            "This is a simple prompt for testing."))]}, f"{v}: {res!r}")
        res = get("test_prompt_with_arguments",
                  {"arg1": "hello", "arg2": "world"})
        expect(res == {"messages": [user(text(
            "Prompt with arguments: arg1='hello', arg2='world'"))]},
            f"{v}: {res!r}")
        res = get("test_prompt_with_embedded_resource",
                  {"resourceUri": "test://example-resource"})
        expect(res == {"messages": [
            user({"type": "resource", "resource": {
                "uri": "test://example-resource", "mimeType": "text/plain",
                "text": "Embedded resource content for testing."}}),
            user(text("Please process the embedded resource above."))]},
            f"{v}: {res!r}")
        res = get("test_prompt_with_image")
        msgs = res["messages"]
        expect(len(msgs) == 2 and msgs[1] == user(text(
            "Please analyze the image above.")), f"{v}: {res!r}")
        img = msgs[0]["content"]
        expect(msgs[0]["role"] == "user" and img["type"] == "image" and
               img["mimeType"] == "image/png", f"{v}: {msgs[0]!r}")
        _png_ok(img["data"], f"{v} prompt image")

        for args in (None, {"arg1": "x"}, {"arg1": "x", "arg2": 2}):
            params = {"name": "test_prompt_with_arguments"}
            if args is not None:
                params["arguments"] = args
            _error(d, sid, "prompts/get", params, -32602)
        _error(d, sid, "prompts/get",
               {"name": "test_prompt_with_embedded_resource"}, -32602)
        _error(d, sid, "prompts/get", {"name": "no_such_prompt"}, -32602)


def test_fixtures_completion(h):
    d = _start(h)
    sid = d.initialize(LATEST)

    def complete(ref, name, value):
        return _result(d, sid, "completion/complete", {
            "ref": ref, "argument": {"name": name, "value": value}})

    def values(vals):
        return {"completion": {"values": vals, "total": len(vals),
                               "hasMore": False}}

    prompt = {"type": "ref/prompt", "name": "test_prompt_with_arguments"}
    for arg in ("arg1", "arg2"):
        expect(complete(prompt, arg, "test") ==
               values(["test", "testValue1", "testValue2"]), f"{arg} test")
        expect(complete(prompt, arg, "") == values(
            ["hello", "test", "testValue1", "testValue2", "world"]),
            f"{arg} empty")
        expect(complete(prompt, arg, "zzz") == values([]), f"{arg} zzz")
    expect(complete({"type": "ref/prompt",
                     "name": "test_prompt_with_embedded_resource"},
                    "resourceUri", "test://s") ==
           values(["test://static-binary", "test://static-text"]),
           "resourceUri")
    expect(complete({"type": "ref/resource",
                     "uri": "test://template/{id}/data"}, "id", "4") ==
           values(["456"]), "template id")
    # not a fixture's argument: an empty completion
    expect(complete(prompt, "arg3", "") == values([]), "unknown argument")
    expect(complete({"type": "ref/prompt", "name": "nope"}, "arg1", "") ==
           values([]), "unknown prompt")
