"""The stateless path (MCP 2026-07-28) beside the legacy one on the same
endpoint: classification, the request-metadata checks in the binding's
order, every method of the revision, JSON and request-scoped SSE
responses, subscriptions/listen, and MRTR rounds (input_required results
with a sealed requestState that another instance holding the key can
continue, a changed one refused)."""

import base64
import hashlib
import hmac
import json
import signal
import time

from mcpd_harness import (LATEST, REDIS_URL, expect, is_response,
                          need_shared_redis, redis_command, redis_node_urls,
                          result_text, rpc, tmo)

V = "2026-07-28"
FIXTURES = ("fixtures conformance",)


def _meta(caps=None, **extra):
    m = {"io.modelcontextprotocol/protocolVersion": V,
         "io.modelcontextprotocol/clientInfo": {"name": "e2e",
                                                "version": "1"},
         "io.modelcontextprotocol/clientCapabilities": caps or {}}
    m.update(extra)
    return m


def _headers(method, params):
    h = {"MCP-Protocol-Version": V, "Mcp-Method": method}
    if method in ("tools/call", "prompts/get") and "name" in params:
        h["Mcp-Name"] = params["name"]
    if method == "resources/read" and "uri" in params:
        h["Mcp-Name"] = params["uri"]
    return h


def _post(d, method, params=None, id=None, headers=None, meta=True,
          caps=None, timeout=10):
    """One stateless (2026-07-28) request; returns (reply, its JSON-RPC response)."""
    params = dict(params or {})
    if meta is True:
        params["_meta"] = _meta(caps)
    elif meta is not None:
        params["_meta"] = meta
    id = d.new_id() if id is None else id
    h = _headers(method, params)
    h.update(headers or {})
    r = d.post(None, rpc(method, params, id), h, timeout=timeout)
    return r, (r.rpc(id) if r.is_sse else r.json)


def _error(r, msg, status, code, id, what):
    expect(r.status == status, f"{what}: HTTP {r.status}, wanted {status}: "
           f"{r.body[:300]!r}")
    expect(isinstance(msg, dict) and msg.get("id") == id and
           msg.get("error", {}).get("code") == code,
           f"{what}: wanted error {code} with id {id}, got {msg!r}")
    return msg["error"]


def _result(msg, what):
    expect(isinstance(msg, dict) and "result" in msg,
           f"{what}: no result: {msg!r}")
    res = msg["result"]
    expect(res.get("resultType") in ("complete", "input_required"),
           f"{what}: resultType {res.get('resultType')!r}")
    info = res.get("_meta", {}).get("io.modelcontextprotocol/serverInfo")
    expect(isinstance(info, dict) and info.get("name") == "mcpd",
           f"{what}: serverInfo in _meta {res.get('_meta')!r}")
    return res


def _b64(s):
    return "=?base64?" + base64.b64encode(s.encode()).decode() + "?="


# --------------------------------------------------------------------------
# validation, in the binding's order


def test_stateless_missing_meta_fields_are_32602_400(h):
    d = h.start()
    for what, meta in (("no _meta", None),
                       ("no protocolVersion", {
                           "io.modelcontextprotocol/clientCapabilities": {}}),
                       ("no clientCapabilities", {
                           "io.modelcontextprotocol/protocolVersion": V})):
        r, msg = _post(d, "tools/list", meta=meta, id=41)
        _error(r, msg, 400, -32602, 41, what)


def test_stateless_protocol_version_header_absent_or_different(h):
    d = h.start()
    # no header, the body's _meta says 2026-07-28: stateless, and refused
    r, msg = _post(d, "tools/list", id=5,
                   headers={"MCP-Protocol-Version": None})
    _error(r, msg, 400, -32020, 5, "header absent")
    r, msg = _post(d, "tools/list", id=6, meta=_meta() | {
        "io.modelcontextprotocol/protocolVersion": "2099-01-01"})
    _error(r, msg, 400, -32020, 6, "header differs from the body")


def test_stateless_mcp_method_and_name_checked_after_trim_and_decoding(h):
    d = h.start()
    r, msg = _post(d, "tools/list", id=7, headers={"Mcp-Method": None})
    _error(r, msg, 400, -32020, 7, "Mcp-Method absent")
    r, msg = _post(d, "tools/list", id=8,
                   headers={"Mcp-Method": "prompts/list"})
    _error(r, msg, 400, -32020, 8, "Mcp-Method differs")
    r, msg = _post(d, "tools/list", id=9,
                   headers={"Mcp-Method": "  tools/list\t"})
    _result(msg, "Mcp-Method with surrounding whitespace")
    args = {"name": "echo", "arguments": {"text": "hi"}}
    r, msg = _post(d, "tools/call", args, id=10,
                   headers={"Mcp-Name": None})
    _error(r, msg, 400, -32020, 10, "Mcp-Name absent")
    r, msg = _post(d, "tools/call", args, id=11,
                   headers={"Mcp-Name": "stream"})
    _error(r, msg, 400, -32020, 11, "Mcp-Name differs")
    r, msg = _post(d, "tools/call", args, id=12,
                   headers={"Mcp-Name": _b64("echo")})
    expect(result_text(msg) == "hi", f"Mcp-Name in base64: {msg!r}")
    r, msg = _post(d, "tools/call", args, id=13,
                   headers={"Mcp-Name": "=?base64?ZWNo!!!?="})
    _error(r, msg, 400, -32020, 13, "Mcp-Name with broken base64")


def test_stateless_unsupported_version_lists_the_supported(h):
    d = h.start()
    meta = _meta() | {"io.modelcontextprotocol/protocolVersion": "1900-01-01"}
    r, msg = _post(d, "server/discover", id=14, meta=meta,
                   headers={"MCP-Protocol-Version": "1900-01-01"})
    err = _error(r, msg, 400, -32022, 14, "unsupported version")
    data = err.get("data", {})
    expect(data.get("requested") == "1900-01-01" and V in
           data.get("supported", []) and LATEST in data["supported"],
           f"data {data!r}")


def test_stateless_unknown_and_removed_methods_are_404(h):
    d = h.start()
    for i, m in enumerate(("no/such", "initialize", "ping",
                           "logging/setLevel", "resources/subscribe",
                           "resources/unsubscribe")):
        r, msg = _post(d, m, id=100 + i)
        _error(r, msg, 404, -32601, 100 + i, m)


def test_stateless_undeclared_capability_is_32021(h):
    d = h.start(extra_lines=FIXTURES)
    args = {"name": "test_missing_capability", "arguments": {}}
    r, msg = _post(d, "tools/call", args, id=15)
    err = _error(r, msg, 400, -32021, 15, "sampling not declared")
    expect(err.get("data", {}).get("requiredCapabilities") ==
           {"sampling": {}}, f"data {err.get('data')!r}")
    r, msg = _post(d, "tools/call", args, id=16, caps={"sampling": {}})
    expect(result_text(msg) == "sampling declared", f"declared: {msg!r}")


def test_stateless_mcp_param_headers_validated(h):
    d = h.start(extra_lines=FIXTURES)
    args = {"name": "test_mcp_header_param",
            "arguments": {"region": "us-west1", "query": "q"}}
    r, msg = _post(d, "tools/call", args, id=17,
                   headers={"Mcp-Param-Region": "us-west1"})
    _result(msg, "Mcp-Param-Region matching")
    r, msg = _post(d, "tools/call", args, id=18)
    _error(r, msg, 400, -32020, 18, "Mcp-Param-Region missing")
    r, msg = _post(d, "tools/call", args, id=19,
                   headers={"Mcp-Param-Region": "eu-west1"})
    _error(r, msg, 400, -32020, 19, "Mcp-Param-Region differs")
    r, msg = _post(d, "tools/call", args, id=20,
                   headers={"Mcp-Param-Region": _b64("us-west1")})
    _result(msg, "Mcp-Param-Region in base64")
    r, msg = _post(d, "tools/call", args, id=21,
                   headers={"Mcp-Param-Region": "=?base64?dXMtd2VzdDE?="})
    _error(r, msg, 400, -32020, 21, "Mcp-Param-Region with bad padding")
    # no value in the body: no header expected
    r, msg = _post(d, "tools/call", {"name": "test_mcp_header_param",
                                     "arguments": {"query": "q"}}, id=22)
    _result(msg, "no region in the body")


# --------------------------------------------------------------------------
# methods


def test_stateless_discover_and_lists(h):
    d = h.start(extra_lines=FIXTURES)
    r, msg = _post(d, "server/discover", id=23)
    res = _result(msg, "server/discover")
    expect(r.status == 200 and r.is_json, f"discover HTTP {r.status}")
    expect(res["supportedVersions"][0] == V and
           isinstance(res.get("capabilities", {}).get("tools"), dict),
           f"discover {res!r}")
    for m, key in (("tools/list", "tools"), ("resources/list", "resources"),
                   ("resources/templates/list", "resourceTemplates"),
                   ("prompts/list", "prompts")):
        _, one = _post(d, m)
        res = _result(one, m)
        expect(isinstance(res.get(key), list) and res[key],
               f"{m}: {res!r}")
        expect(res.get("ttlMs") == 0 and res.get("cacheScope") == "public",
               f"{m}: caching hints {res.get('ttlMs')!r} "
               f"{res.get('cacheScope')!r}")
        _, two = _post(d, m)
        expect([x.get("name") for x in one["result"][key]] ==
               [x.get("name") for x in two["result"][key]],
               f"{m}: order changed between two lists")


def test_stateless_resources_prompts_completion(h):
    d = h.start(extra_lines=FIXTURES)
    _, msg = _post(d, "resources/read", {"uri": "test://static-text"})
    res = _result(msg, "resources/read")
    expect(res["contents"][0]["uri"] == "test://static-text" and
           "ttlMs" in res, f"read {res!r}")
    r, msg = _post(d, "resources/read", {"uri": "test://nope"}, id=24)
    err = _error(r, msg, 200, -32602, 24, "resource not found")
    expect(err.get("data") == {"uri": "test://nope"}, f"data {err!r}")
    _, msg = _post(d, "prompts/get", {"name": "test_simple_prompt"})
    res = _result(msg, "prompts/get")
    expect(res["messages"][0]["content"]["text"] ==
           "This is a simple prompt for testing.", f"prompt {res!r}")
    _, msg = _post(d, "completion/complete", {
        "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
        "argument": {"name": "arg1", "value": "te"}})
    res = _result(msg, "completion/complete")
    expect(isinstance(res.get("completion", {}).get("values"), list),
           f"complete {res!r}")


def test_stateless_tools_call_json_and_sse(h):
    d = h.start()
    r, msg = _post(d, "tools/call", {"name": "echo",
                                     "arguments": {"text": "x"}})
    expect(r.is_json and result_text(msg) == "x", f"echo {msg!r}")
    # notifications/message only when the request sets a log level
    r, msg = _post(d, "tools/call", {"name": "stream",
                                     "arguments": {"n": 3}})
    expect(result_text(msg) == "done 3", f"stream {msg!r}")
    logs = [m for m in r.messages() if m.get("method") ==
            "notifications/message"] if r.is_sse else []
    expect(logs == [], f"log messages without a logLevel: {logs!r}")
    id = d.new_id()
    params = {"name": "stream", "arguments": {"n": 3},
              "_meta": _meta(**{"io.modelcontextprotocol/logLevel": "info"})}
    r = d.post(None, rpc("tools/call", params, id),
               _headers("tools/call", params))
    expect(r.is_sse, f"stream with a log level: {r.content_type}")
    msgs = r.messages()
    expect([m.get("method") for m in msgs[:-1]] ==
           ["notifications/message"] * 3 and is_response(msgs[-1], id),
           f"stream's messages {msgs!r}")
    expect(r.header("Mcp-Session-Id") is None, "a session id was minted")
    # progress, with a token
    params = {"name": "stream", "arguments": {"n": 2},
              "_meta": _meta(progressToken="t")}
    r = d.post(None, rpc("tools/call", params, id + 1),
               _headers("tools/call", params))
    msgs = r.messages()
    expect([m.get("method") for m in msgs[:-1]] ==
           ["notifications/progress"] * 2 and
           result_text(msgs[-1]) == "done 2", f"progress {msgs!r}")


def test_stateless_slow_client_pauses_the_call_and_loses_nothing(h):
    # Past sse_high_watermark queued, the call's next message waits for
    # the client to drain: all of them arrive, in order, then the result
    d = h.start(sse_high_watermark=8192)
    params = {"name": "stream", "arguments": {"n": 200, "size": 2000},
              "_meta": _meta(progressToken="s")}
    r = d.open("POST", None, rpc("tools/call", params, 33),
               _headers("tools/call", params), rcvbuf=4096, timeout=30)
    expect(r.status == 200 and r.is_sse, f"HTTP {r.status}")
    msg = r.rpc(33)
    progress = [m["params"]["progress"] for m in r.messages()
                if m.get("method") == "notifications/progress"]
    expect(progress == list(range(1, 201)) and
           result_text(msg) == "done 200",
           f"{len(progress)} progress notifications, then {msg!r}")


def test_stateless_notify_needs_a_session(h):
    d = h.start()
    _, msg = _post(d, "tools/call", {"name": "notify",
                                     "arguments": {"n": 1}})
    res = _result(msg, "notify")
    expect(res.get("isError") is True and "session" in result_text(msg),
           f"notify on the stateless path {msg!r}")


def test_stateless_client_disconnect_cancels_the_call(h):
    d = h.start()
    params = {"name": "stream", "arguments": {"n": 50, "interval_ms": 100},
              "_meta": _meta(progressToken="c")}
    r = d.post_open(None, rpc("tools/call", params, 30),
                    _headers("tools/call", params))
    expect(r.status == 200 and r.is_sse, f"HTTP {r.status}")
    r.next_message(5)
    r.cut()
    d.wait_log(lambda line: "cancelled: the client closed the response "
               "stream" in line, 5, "the call cancelled on disconnect")
    _, msg = _post(d, "tools/call", {"name": "echo",
                                     "arguments": {"text": "on"}})
    expect(result_text(msg) == "on", "serving after the disconnect")


def test_stateless_exec_tool_killed_when_the_client_leaves(h):
    from test_exec import PIDSLEEP, first_progress, wait_gone
    d = h.start(extra_lines=PIDSLEEP)
    params = {"name": "pidsleep", "arguments": {},
              "_meta": _meta(progressToken="x")}
    r = d.post_open(None, rpc("tools/call", params, 31),
                    _headers("tools/call", params))
    expect(r.status == 200 and r.is_sse, f"HTTP {r.status}")
    pid = int(first_progress(r))
    r.cut()
    wait_gone(pid, "the program of a stateless call whose client left")


def test_stateless_drain_lets_a_stateless_call_finish(h):
    # SIGTERM: the listener closes, and a running stateless call is waited
    # for (drain_timeout) as a session's is; its client gets its result
    import signal
    d = h.start(drain_delay=0, drain_timeout=20)
    params = {"name": "stream", "arguments": {"n": 5, "interval_ms": 100},
              "_meta": _meta(progressToken="d")}
    r = d.post_open(None, rpc("tools/call", params, 32),
                    _headers("tools/call", params))
    r.next_message(5)
    d.signal(signal.SIGTERM)
    d.wait_log(lambda line: "1 call(s) running" in line, 5,
               "the drain counting the stateless call")
    msg = r.rpc(32)
    expect(result_text(msg) == "done 5", f"after the drain: {msg!r}")


def test_stateless_exec_tool(h):
    d = h.start(extra_lines=("tool greet {", "    exec /bin/echo hello",
                             "}"))
    _, msg = _post(d, "tools/call", {"name": "greet", "arguments": {}})
    expect("hello" in (result_text(msg) or ""), f"exec tool {msg!r}")


# --------------------------------------------------------------------------
# the legacy path stays as it was


def test_stateless_legacy_requests_keep_their_path(h):
    d = h.start()
    sid = d.initialize(LATEST)
    r = d.post(sid, rpc("ping", None, 40))
    expect(r.status == 200 and r.json.get("result") == {},
           f"legacy ping {r.status} {r.body[:200]!r}")
    # a session header with 2026-07-28 is a legacy request with a version
    # the legacy path does not serve
    r = d.post(sid, rpc("ping", None, 41), {"MCP-Protocol-Version": V})
    expect(r.status == 400 and r.json["error"]["code"] == -32600,
           f"session + {V}: {r.status} {r.body[:200]!r}")
    # no session, a 2025 header, not initialize: 400 with id null
    r = d.post(None, rpc("tools/list", None, 42),
               {"MCP-Protocol-Version": LATEST})
    expect(r.status == 400 and r.json.get("id") is None,
           f"no session: {r.status} {r.body[:200]!r}")
    # initialize without a header stays legacy
    r = d.initialize_reply(LATEST)
    expect(r.status == 200 and r.header("Mcp-Session-Id"),
           f"initialize {r.status}")


# --------------------------------------------------------------------------
# subscriptions/listen


def _listen(d, filt, id):
    """A listen stream, after its acknowledgement. With a shared log an
    instance takes listens once its subscription to the others is live
    (503 until then): polled, with a deadline."""
    params = {"notifications": filt, "_meta": _meta()}
    deadline = time.monotonic() + tmo(10)
    while True:
        r = d.post_open(None, rpc("subscriptions/listen", params, id),
                        _headers("subscriptions/listen", params))
        if r.status != 503 or time.monotonic() > deadline:
            break
        r.read_body()
        r.close()
        time.sleep(0.05)
    expect(r.status == 200 and r.is_sse, f"listen HTTP {r.status}")
    ack = r.next_message(5)[1]
    expect(ack.get("method") == "notifications/subscriptions/acknowledged"
           and ack["params"]["_meta"][
               "io.modelcontextprotocol/subscriptionId"] == id,
           f"first message {ack!r}")
    return r, ack


def test_stateless_listen_ack_tag_and_filter(h):
    d = h.start(extra_lines=FIXTURES)
    tools, ack = _listen(d, {"toolsListChanged": True}, 50)
    expect(ack["params"]["notifications"] == {"toolsListChanged": True},
           f"ack {ack!r}")
    prompts, _ = _listen(d, {"promptsListChanged": True}, 51)
    watched, ack = _listen(d, {"resourceSubscriptions": [
        "test://watched-resource"]}, 52)
    _post(d, "tools/call", {"name": "test_trigger_tool_change",
                            "arguments": {}})
    _post(d, "tools/call", {"name": "test_trigger_prompt_change",
                            "arguments": {}})
    _post(d, "tools/call", {"name": "test_update_watched_resource",
                            "arguments": {}})
    m = tools.next_message(5)[1]
    expect(m.get("method") == "notifications/tools/list_changed" and
           m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
           == 50, f"tools stream {m!r}")
    m = prompts.next_message(5)[1]
    expect(m.get("method") == "notifications/prompts/list_changed",
           f"the prompts-only stream got {m!r} first (the tools change "
           "must not reach it)")
    m = watched.next_message(5)[1]
    expect(m.get("method") == "notifications/resources/updated" and
           m["params"]["uri"] == "test://watched-resource",
           f"watched stream {m!r}")


def test_stateless_streams_count_against_max_views(h):
    d = h.start(max_views=2)
    a, _ = _listen(d, {"toolsListChanged": True}, 53)
    b, _ = _listen(d, {"toolsListChanged": True}, 54)
    r, msg = _post(d, "tools/call", {"name": "echo",
                                     "arguments": {"text": "x"}}, id=55)
    expect(r.status == 503 and r.header("Retry-After"),
           f"a call past max_views: HTTP {r.status} {r.body[:200]!r}")
    _, msg = _post(d, "tools/list")
    _result(msg, "a quick method past max_views")
    a.cut()
    deadline = time.monotonic() + tmo(5)
    while True:
        r, msg = _post(d, "tools/call", {"name": "echo",
                                         "arguments": {"text": "y"}})
        if r.status != 503 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    expect(result_text(msg) == "y", f"once a stream closed: {msg!r}")
    b.close()


def test_listen_streams_count_against_max_views_for_sessions(h):
    # Session views and listen streams share max_views both ways, and
    # /healthz counts listens among its open streams.
    d = h.start(max_views=3)
    s = d.initialize()
    a, _ = _listen(d, {"toolsListChanged": True}, 56)
    b, _ = _listen(d, {"toolsListChanged": True}, 57)
    health = d.healthz()
    expect(health["streams"] == 2 and health["listens"] == 2,
           f"/healthz with two listens: {health!r}")
    v = d.get_sse(s)
    expect(v.status == 200, f"the third stream: HTTP {v.status}")
    health = d.healthz()
    expect(health["streams"] == 3 and health["listens"] == 2,
           f"/healthz with two listens and a view: {health!r}")
    params = {"notifications": {"toolsListChanged": True}, "_meta": _meta()}
    r = d.post(None, rpc("subscriptions/listen", params, 58),
               _headers("subscriptions/listen", params))
    expect(r.status == 503 and r.header("Retry-After") and
           r.json["error"]["code"] == -32003,
           f"a listen past max_views: HTTP {r.status} {r.body!r}")
    v.close()
    deadline = time.monotonic() + tmo(5)
    while d.healthz()["streams"] != 2:
        expect(time.monotonic() < deadline, "the view never closed")
        time.sleep(0.02)
    c, _ = _listen(d, {"toolsListChanged": True}, 59)
    # Three listens: a session's GET and its streaming call are refused
    # as a view past max_views is (503, -32003, Retry-After).
    r = d.get_sse(s)
    expect(r.status == 503 and r.header("Retry-After") and
           r.json["error"]["code"] == -32003,
           f"a session view past max_views: HTTP {r.status} {r.body!r}")
    r = d.post(s, rpc("tools/call", {"name": "stream",
                                     "arguments": {"n": 1}}, 60))
    expect(r.status == 503 and r.json["error"]["code"] == -32003,
           f"a session call past max_views: HTTP {r.status} {r.body!r}")
    for x in (a, b, c):
        x.close()


def test_stateless_listen_across_instances_on_redis(h):
    need_shared_redis()
    a = h.start(extra_lines=FIXTURES)
    b = h.start(extra_lines=FIXTURES)
    r, _ = _listen(b, {"toolsListChanged": True}, 60)
    _post(a, "tools/call", {"name": "test_trigger_tool_change",
                            "arguments": {}})
    m = r.next_message(10)[1]
    expect(m.get("method") == "notifications/tools/list_changed" and
           m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
           == 60, f"B's listen stream got {m!r} for a change raised on A")
    # and A's own listeners hear it once, through the same channel
    ra, _ = _listen(a, {"toolsListChanged": True}, 61)
    _post(b, "tools/call", {"name": "test_trigger_tool_change",
                            "arguments": {}})
    m = ra.next_message(10)[1]
    expect(m.get("method") == "notifications/tools/list_changed",
           f"A's listen stream got {m!r} for a change raised on B")


def test_stateless_listen_ends_when_the_subscription_is_lost(h):
    # Listen streams are not resumable: an instance that may have missed
    # a change ends them (with their result), and clients listen again
    need_shared_redis()
    d = h.start(extra_lines=FIXTURES)
    r, _ = _listen(d, {"toolsListChanged": True}, 62)
    # On a cluster, the channel's node is one of them: each.
    for url in redis_node_urls(REDIS_URL):
        redis_command(url, "CLIENT", "KILL", "TYPE", "pubsub")
    m = r.next_message(15)
    expect(m is not None and is_response(m[1], 62) and
           m[1]["result"]["_meta"][
               "io.modelcontextprotocol/subscriptionId"] == 62,
           f"after the subscription was cut: {m!r}")
    expect(r.next_event(10) is None, "the listen stream did not end")
    r2, _ = _listen(d, {"toolsListChanged": True}, 63)
    _post(d, "tools/call", {"name": "test_trigger_tool_change",
                            "arguments": {}})
    m = r2.next_message(10)[1]
    expect(m.get("method") == "notifications/tools/list_changed",
           f"a new listen after the loss got {m!r}")


# --------------------------------------------------------------------------
# MRTR


def _round(d, name, inputs=None, state=None, caps=None, id=None,
           method="tools/call"):
    params = {"name": name}
    if method == "tools/call":
        params["arguments"] = {}
    if inputs is not None:
        params["inputResponses"] = inputs
    if state is not None:
        params["requestState"] = state
    return _post(d, method, params, id=id,
                 caps=caps or {"elicitation": {}, "sampling": {},
                               "roots": {}})


def test_stateless_mrtr_elicitation_round_trip(h):
    d = h.start(extra_lines=FIXTURES)
    name = "test_input_required_result_elicitation"
    r, msg = _round(d, name, id=70)
    res = _result(msg, "round 1")
    expect(res["resultType"] == "input_required" and
           res["inputRequests"]["user_name"]["method"] ==
           "elicitation/create" and isinstance(res.get("requestState"),
                                               str), f"round 1 {res!r}")
    answer = {"user_name": {"action": "accept",
                            "content": {"name": "Ada"}}}
    r, msg = _round(d, name, answer, res["requestState"], id=71)
    expect(result_text(msg) == "Hello, Ada!", f"round 2 {msg!r}")
    # without the answer it is asked again, not an error
    r, msg = _round(d, name, {"wrong": {}}, res["requestState"], id=72)
    expect(_result(msg, "wrong key")["resultType"] == "input_required",
           f"wrong key {msg!r}")


def test_stateless_mrtr_multi_round_carries_earlier_answers(h):
    d = h.start(extra_lines=FIXTURES)
    name = "test_input_required_result_multi_round"
    _, msg = _round(d, name)
    one = _result(msg, "round 1")
    expect(list(one["inputRequests"]) == ["step1"], f"round 1 {one!r}")
    _, msg = _round(d, name, {"step1": {"action": "accept",
                                        "content": {"name": "Ada"}}},
                    one["requestState"])
    two = _result(msg, "round 2")
    expect(list(two["inputRequests"]) == ["step2"], f"round 2 {two!r}")
    _, msg = _round(d, name, {"step2": {"action": "accept",
                                        "content": {"color": "red"}}},
                    two["requestState"])
    text = result_text(msg) or ""
    expect("Ada" in text and "red" in text, f"round 3 {msg!r}")


def test_stateless_mrtr_tampered_state_refused(h):
    d = h.start(extra_lines=FIXTURES)
    name = "test_input_required_result_tampered_state"
    _, msg = _round(d, name)
    state = _result(msg, "round 1")["requestState"]
    body, sealed_at, mac = state.split(".")
    text = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    text["a"] = {"confirm": {"action": "accept", "content": {"ok": True}}}
    forged = base64.urlsafe_b64encode(json.dumps(text).encode()).decode()
    forged = forged.rstrip("=") + "." + sealed_at + "." + mac
    for i, bad in enumerate((forged, state[:-2] + "xx", "garbage")):
        r, msg = _round(d, name, {}, bad, id=80 + i)
        _error(r, msg, 400, -32602, 80 + i, f"tampered state {i}")
    # a state of another request is refused too
    _, other = _round(d, "test_input_required_result_elicitation")
    r, msg = _round(d, name, {}, other["result"]["requestState"], id=84)
    _error(r, msg, 400, -32602, 84, "another request's state")


ELICIT = "test_input_required_result_elicitation"
BO = {"user_name": {"action": "accept", "content": {"name": "Bo"}}}


def _forge(key, state, sealed_at_ms):
    """A requestState as docs/protocol.md describes it, sealed with key at
    the wall-clock time sealed_at_ms."""
    b64 = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")
    stamped = b64(json.dumps(state).encode()) + "." + str(sealed_at_ms)
    mac = hmac.new(key.encode(), stamped.encode(), hashlib.sha256).digest()
    return stamped + "." + b64(mac)


def _state_lifetime_checks(instances, key):
    """States sealed with key at several wall-clock times, brought to each
    instance: 1 s old and 29 s ahead open; past 15 minutes, or more than
    30 s ahead, are refused with the reason."""
    now = int(time.time() * 1000)
    state = {"m": "tools/call", "n": ELICIT, "a": {}}
    for i, d in enumerate(instances):
        for j, (at, ok, why) in enumerate((
                (now - 1000, True, None),
                (now + 29000, True, None),
                (now - 15 * 60 * 1000 - 60000, False, "expired"),
                (now - 24 * 3600 * 1000, False, "expired"),
                (now + 5 * 60 * 1000, False, "future"))):
            id = 300 + 10 * i + j
            r, msg = _round(d, ELICIT, BO, _forge(key, state, at), id=id)
            what = f"instance {i}: a state sealed {now - at} ms ago"
            if ok:
                expect(result_text(msg) == "Hello, Bo!", f"{what}: {msg!r}")
            else:
                err = _error(r, msg, 400, -32602, id, what)
                expect(why in err["message"], f"{what}: {err!r}")


def test_stateless_mrtr_state_lifetime_is_wall_clock(h):
    # The sealing time is the wall clock's (an instance on another host
    # compares it with its own), with a bounded skew.
    key = "w" * 64
    path = h.write("state.key", key + "\n")
    d = h.start(extra_lines=FIXTURES + (f"state_key_file {path}",))
    _state_lifetime_checks([d], key)


def _keyring():
    ring = redis_command(REDIS_URL, "HGETALL", "mcpd:{keyring}:keys")
    return dict(zip(ring[::2], ring[1::2]))


def test_stateless_mrtr_state_key_shared_on_redis(h):
    # Without state_key_file, instances sharing a Redis share the key that
    # seals requestState (the log's keyring): a round begun on one is
    # answered through another, both ways, and the key is never logged.
    need_shared_redis()
    a = h.start(extra_lines=FIXTURES)
    b = h.start(extra_lines=FIXTURES)
    for first, second, what in ((a, b, "A to B"), (b, a, "B to A")):
        _, msg = _round(first, ELICIT)
        state = _result(msg, f"{what}: round 1")["requestState"]
        _, msg = _round(second, ELICIT, BO, state)
        expect(result_text(msg) == "Hello, Bo!", f"{what}: {msg!r}")
    ring = _keyring()
    expect(len(ring.get("c", "")) == 64 and len(ring.get("n", "")) == 64,
           f"the keyring in Redis: fields {sorted(ring)}")
    for d in (a, b):
        expect(all(ring[f] not in d.stderr_text() for f in "cn"),
               "a key of the keyring is in the log")
    # Both instances refuse a state 16 minutes old, and take a fresh one,
    # by their wall clocks.
    _state_lifetime_checks([a, b], ring["c"])


def test_stateless_mrtr_state_key_rotation_keeps_rounds(h):
    # A rotation (forced here: its mark deleted, then a reload) refuses no
    # state in flight: A signs with the ring's next key at once, which B,
    # not yet told, already opens; what A and B sealed before still opens
    # on both.
    need_shared_redis()
    a = h.start(extra_lines=FIXTURES)
    b = h.start(extra_lines=FIXTURES)
    before = _keyring()
    _, msg = _round(a, ELICIT)
    old_a = _result(msg, "A before")["requestState"]
    _, msg = _round(b, ELICIT)
    old_b = _result(msg, "B before")["requestState"]

    redis_command(REDIS_URL, "DEL", "mcpd:{keyring}:rotated")
    gen = int(before["g"]) + 1
    a.signal(signal.SIGHUP)
    a.wait_log(lambda line: f"keyring generation {gen} " in line, 10,
               f"A reading generation {gen}")
    after = _keyring()
    expect(after["g"] == str(gen) and after["p"] == before["c"] and
           after["c"] == before["n"], "the ring did not rotate as it should")
    b_told = f"keyring generation {gen} " in b.stderr_text()
    _, msg = _round(a, ELICIT)
    new_a = _result(msg, "A after")["requestState"]
    for d, state, what in ((b, new_a, "A's new state on B"),
                           (a, old_a, "A's old state on A"),
                           (b, old_a, "A's old state on B"),
                           (a, old_b, "B's old state on A")):
        _, msg = _round(d, ELICIT, BO, state)
        expect(result_text(msg) == "Hello, Bo!", f"{what}: {msg!r}")
    if b_told:
        print("NOTE B re-read the ring by itself meanwhile: the stale "
              "instance's side was not exercised")


def test_stateless_mrtr_no_state_without_the_keyring(h):
    # An instance that cannot read the log's keyring issues no state that
    # others could not open: /readyz says so, and a round is 503 until it
    # can; then it serves.
    need_shared_redis()
    saved = _keyring()
    redis_command(REDIS_URL, "DEL", "mcpd:{keyring}:keys")
    redis_command(REDIS_URL, "SET", "mcpd:{keyring}:keys", "not a hash")
    try:
        d = h.start(extra_lines=FIXTURES)
        d.wait_log(lambda line: "keyring could not be read" in line, 10,
                   "the failed reading")
        r = d.request("GET", path="/readyz")
        expect(r.status == 503 and r.json["status"] ==
               "state key unavailable", f"/readyz: {r.status} {r.body!r}")
        r, msg = _round(d, ELICIT, id=400)
        _error(r, msg, 503, -32003, 400, "a round without the keyring")
        expect(r.header("Retry-After"), "no Retry-After")
        _, msg = _post(d, "tools/call", {"name": "echo",
                                         "arguments": {"text": "x"}})
        expect(result_text(msg) == "x", f"a call needing no state: {msg!r}")
    finally:
        redis_command(REDIS_URL, "DEL", "mcpd:{keyring}:keys")
        if saved:
            redis_command(REDIS_URL, "HSET", "mcpd:{keyring}:keys",
                          *[x for kv in saved.items() for x in kv])
    deadline = time.monotonic() + tmo(10)
    while d.request("GET", path="/readyz").status != 200:
        expect(time.monotonic() < deadline, "never ready with the keyring")
        time.sleep(0.05)
    _, msg = _round(d, ELICIT)
    _result(msg, "once the keyring is read")


def test_stateless_mrtr_prompt_and_capabilities(h):
    d = h.start(extra_lines=FIXTURES)
    _, msg = _round(d, "test_input_required_result_prompt",
                    method="prompts/get")
    res = _result(msg, "prompt round 1")
    expect("user_context" in res.get("inputRequests", {}),
           f"prompt round 1 {res!r}")
    _, msg = _round(d, "test_input_required_result_prompt",
                    {"user_context": {"action": "accept",
                                      "content": {"context": "c"}}},
                    res["requestState"], method="prompts/get")
    expect(_result(msg, "prompt round 2").get("messages"),
           f"prompt round 2 {msg!r}")
    _, msg = _round(d, "test_input_required_result_capabilities",
                    caps={"sampling": {}})
    res = _result(msg, "capabilities")
    expect([q["method"] for q in res["inputRequests"].values()] ==
           ["sampling/createMessage"], f"only sampling asked: {res!r}")


def test_stateless_mrtr_round_continued_on_another_instance(h):
    # The state travels with the client: B, holding A's key, takes the
    # round A began; C holds a new key with A's as previous (a rotation)
    key = h.write("state.key", "k" * 64 + "\n")
    new = h.write("state2.key", "n" * 64 + "\n")
    a = h.start(extra_lines=FIXTURES + (f"state_key_file {key}",))
    b = h.start(extra_lines=FIXTURES + (f"state_key_file {key}",))
    c = h.start(extra_lines=FIXTURES + (f"state_key_file {new}",
                                        f"state_key_previous_file {key}"))
    other = h.start(extra_lines=FIXTURES)
    name = "test_input_required_result_elicitation"
    _, msg = _round(a, name)
    state = msg["result"]["requestState"]
    answer = {"user_name": {"action": "accept", "content": {"name": "Bo"}}}
    for d, what in ((b, "B (same key)"), (c, "C (previous key)")):
        _, msg = _round(d, name, answer, state)
        expect(result_text(msg) == "Hello, Bo!", f"{what}: {msg!r}")
    r, msg = _round(other, name, answer, state, id=90)
    _error(r, msg, 400, -32602, 90, "an instance with another key")
