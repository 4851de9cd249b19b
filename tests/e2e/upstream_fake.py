#!/usr/bin/env python3
"""A small stdio MCP server for tests/e2e/test_upstream.py: newline-delimited
JSON-RPC on stdin and stdout, one thread per request. Its tools misbehave on
purpose (exit mid-call, garbage, oversized lines, stderr floods, never
answering, server-to-client requests) so every failure path of mcpd's
upstream code can be tested without npm.

Options (argv): --tools-prefix P names every tool P+name (a second upstream
with colliding names); --no-resources; --pidfile PATH appends its pid;
--many N adds tools many00000... (N of them, in pages of 1000); --bad-names
adds tools whose names hold CR/LF, an escape sequence, a NUL, or nothing.
"""

import json
import os
import sys
import threading
import time

OUT = threading.Lock()
PENDING = {}            # our request id -> [event, response]
PENDING_LOCK = threading.Lock()
STATE = {"next_id": 0, "extra_tool": False, "initialized": False,
         "roots": None, "roots_done": threading.Event()}

ARGS = sys.argv[1:] if __name__ == "__main__" else []
PREFIX = ARGS[ARGS.index("--tools-prefix") + 1] if "--tools-prefix" in ARGS \
    else ""
RESOURCES = "--no-resources" not in ARGS
MANY = int(ARGS[ARGS.index("--many") + 1]) if "--many" in ARGS else 0
BAD_NAMES = [
    "evil\r\n2026-01-01T00:00:00.000Z error forged line",
    "esc\x1b[31mred",
    "nul\x00x",
    "",
]
def answered(msg):
    """A response of the client to one of our requests."""
    with PENDING_LOCK:
        p = PENDING.get(msg.get("id"))
        if p is not None:
            p[1] = msg
            p[0].set()


if "--pidfile" in ARGS:
    with open(ARGS[ARGS.index("--pidfile") + 1], "a") as f:
        f.write(f"{os.getpid()}\n")
if "--start-delay" in ARGS:
    time.sleep(1)
if "--fail-init" in ARGS:
    sys.stderr.write("fake: refusing to start\n")
    sys.exit(3)


# Where the current thread's messages go: stdout, or (upstream_fake_http)
# the SSE stream of the HTTP request being served.
SINK = threading.local()


def send(msg):
    sink = getattr(SINK, "send", None)
    if sink is not None:
        return sink(msg)
    data = json.dumps(msg, separators=(",", ":")) + "\n"
    with OUT:
        sys.stdout.write(data)
        sys.stdout.flush()


def send_raw(text):
    with OUT:
        sys.stdout.write(text)
        sys.stdout.flush()


def result(id, res):
    send({"jsonrpc": "2.0", "id": id, "result": res})


def error(id, code, message):
    send({"jsonrpc": "2.0", "id": id,
          "error": {"code": code, "message": message}})


def text(t, is_error=False):
    r = {"content": [{"type": "text", "text": t}]}
    if is_error:
        r["isError"] = True
    return r


def ask(method, params, timeout=30):
    """A request to the client (through mcpd); its response message."""
    with PENDING_LOCK:
        STATE["next_id"] += 1
        rid = f"fake-{STATE['next_id']}"
        ev = threading.Event()
        PENDING[rid] = [ev, None]
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    ev.wait(timeout)
    with PENDING_LOCK:
        return PENDING.pop(rid)[1]


def notify(method, params):
    send({"jsonrpc": "2.0", "method": method, "params": params})


TOOLS = [
    {"name": "echo", "description": "Echo text",
     "inputSchema": {"type": "object",
                     "properties": {"text": {"type": "string"}}}},
    {"name": "slow", "description": "n progress notifications",
     "inputSchema": {"type": "object"}},
    {"name": "log", "description": "n log messages", "inputSchema":
     {"type": "object"}},
    {"name": "exit", "description": "exit mid-call", "inputSchema":
     {"type": "object"}},
    {"name": "garbage", "description": "a garbage line, then the answer",
     "inputSchema": {"type": "object"}},
    {"name": "huge", "description": "an answer of size bytes",
     "inputSchema": {"type": "object"}},
    {"name": "stderr", "description": "n lines on stderr",
     "inputSchema": {"type": "object"}},
    {"name": "change", "description": "adds tool extra, list_changed",
     "inputSchema": {"type": "object"}},
    {"name": "sample", "description": "sampling/createMessage",
     "inputSchema": {"type": "object"}},
    {"name": "elicit", "description": "elicitation/create",
     "inputSchema": {"type": "object"}},
    {"name": "roots", "description": "roots/list",
     "inputSchema": {"type": "object"}},
    {"name": "hang", "description": "never answers",
     "inputSchema": {"type": "object"}},
    {"name": "pid", "description": "its pid", "inputSchema":
     {"type": "object"}},
    {"name": "log_later", "description": "n log messages after the answer",
     "inputSchema": {"type": "object"}},
    {"name": "roots_at_start", "description": "the answer to the "
     "roots/list asked right after initialized (--ask-roots)",
     "inputSchema": {"type": "object"}},
    {"name": "error", "description": "a JSON-RPC error",
     "inputSchema": {"type": "object"}},

    # Served by upstream_fake_http.py only.
    {"name": "drop", "description": "HTTP: cut the stream mid-call",
     "inputSchema": {"type": "object"}},
    {"name": "forget", "description": "HTTP: forget the session",
     "inputSchema": {"type": "object"}},
]


def tool_list():
    tools = [dict(t, name=PREFIX + t["name"]) for t in TOOLS]
    if STATE["extra_tool"]:
        tools.append({"name": PREFIX + "extra", "inputSchema":
                      {"type": "object"}})
    if "--bad-names" in ARGS:
        tools += [{"name": n, "inputSchema": {"type": "object"}}
                  for n in BAD_NAMES]
    return tools


def call_tool(id, name, args, meta):
    token = (meta or {}).get("progressToken")
    name = name[len(PREFIX):] if name.startswith(PREFIX) else name
    if name == "echo":
        if args.get("meta"):
            # The request's params._meta, as JSON (tracing tests).
            return result(id, text(json.dumps(meta or {}, sort_keys=True)))
        return result(id, text(args.get("text", "")))
    if name == "slow":
        n = int(args.get("n", 3))
        for i in range(1, n + 1):
            if token is not None:
                notify("notifications/progress", {
                    "progressToken": token, "progress": i, "total": n,
                    "message": f"step {i}" + "." * int(args.get("pad", 0))})
            time.sleep(args.get("interval_ms", 10) / 1000)
        return result(id, text(f"slow done {n}"))
    if name == "log":
        n = int(args.get("n", 2))
        for i in range(n):
            notify("notifications/message", {
                "level": args.get("level", "info"), "logger": "fake",
                "data": {"i": i}})
        return result(id, text(f"logged {n}"))
    if name == "exit":
        sys.stdout.flush()
        os._exit(int(args.get("code", 7)))
    if name == "garbage":
        send_raw("this is not json\n")
        send_raw("{\"jsonrpc\": \"2.0\", \"broken\n")
        return result(id, text("after garbage"))
    if name == "huge":
        return result(id, text("x" * int(args.get("size", 100))))
    if name == "stderr":
        n = int(args.get("n", 5))
        for i in range(n):
            sys.stderr.write(f"fake stderr line {i}\n")
        sys.stderr.flush()
        return result(id, text(f"wrote {n}"))
    if name == "change":
        STATE["extra_tool"] = True
        notify("notifications/tools/list_changed", {})
        return result(id, text("changed"))
    if name == "sample":
        r = ask("sampling/createMessage", {
            "messages": [{"role": "user", "content": {
                "type": "text", "text": args.get("prompt", "hi")}}],
            "maxTokens": 10})
        if r is None:
            return result(id, text("sample: no answer", True))
        if "error" in r:
            return result(id, text("sample error: " +
                                   r["error"].get("message", ""), True))
        return result(id, text("sampled: " +
                               r["result"]["content"]["text"]))
    if name == "elicit":
        r = ask("elicitation/create", {
            "message": "Your name?", "requestedSchema": {
                "type": "object", "properties": {
                    "name": {"type": "string"}}}})
        if r is None or "error" in r:
            return result(id, text(f"elicit failed: {r!r}", True))
        return result(id, text("elicited: " + json.dumps(r["result"])))
    if name == "roots":
        r = ask("roots/list", {})
        if r is None or "error" in r:
            return result(id, text(f"roots failed: {r!r}", True))
        return result(id, text("roots: " + json.dumps(r["result"])))
    if name == "hang":
        return None
    if name == "pid":
        return result(id, text(str(os.getpid())))
    if name == "log_later":
        def later(n):
            time.sleep(0.2)
            for i in range(n):
                notify("notifications/message", {
                    "level": "warning", "logger": "fake",
                    "data": {"later": i}})
        threading.Thread(target=later, args=(int(args.get("n", 2)),),
                         daemon=True).start()
        return result(id, text("later"))
    if name == "roots_at_start":
        STATE["roots_done"].wait(10)
        return result(id, text(json.dumps(STATE["roots"])))
    if name == "error":
        return error(id, -32099, "fake failure")
    if name == "extra" and STATE["extra_tool"]:
        return result(id, text("extra"))
    return error(id, -32602, f"Unknown tool: {name}")


def handle(msg):
    method = msg.get("method")
    id = msg.get("id")
    params = msg.get("params") or {}
    if method == "initialize":
        caps = {"tools": {"listChanged": True}, "logging": {},
                "prompts": {}, "completions": {}}
        if RESOURCES:
            caps["resources"] = {"subscribe": True}
        return result(id, {"protocolVersion": params.get(
            "protocolVersion"), "capabilities": caps,
            "serverInfo": {"name": "fake", "version": "1"}})
    if method == "tools/list":
        if MANY:
            start = int(params.get("cursor") or 0)
            tools = tool_list() if start == 0 else []
            tools += [{"name": f"many{i:05d}", "inputSchema":
                       {"type": "object"}}
                      for i in range(start, min(start + 1000, MANY))]
            res = {"tools": tools}
            if start + 1000 < MANY:
                res["nextCursor"] = str(start + 1000)
            return result(id, res)
        return result(id, {"tools": tool_list()})
    if method == "tools/call":
        return call_tool(id, params.get("name", ""),
                         params.get("arguments") or {}, params.get("_meta"))
    if method == "resources/list":
        # Two pages, to check that mcpd follows nextCursor.
        if params.get("cursor") == "page2":
            return result(id, {"resources": [
                {"uri": "fake://two", "name": "two"}]})
        return result(id, {"resources": [
            {"uri": "fake://hello", "name": "hello"}],
            "nextCursor": "page2"})
    if method == "resources/templates/list":
        return result(id, {"resourceTemplates": [
            {"uriTemplate": "fake://item/{id}", "name": "item"}]})
    if method == "resources/read":
        uri = params.get("uri")
        if uri in ("fake://hello", "fake://two") or \
                uri.startswith("fake://item/"):
            return result(id, {"contents": [
                {"uri": uri, "text": "content of " + uri}]})
        return error(id, -32002, "Resource not found")
    if method == "resources/subscribe":
        uri = params.get("uri")
        result(id, {})
        notify("notifications/resources/updated", {"uri": uri})
        return
    if method == "prompts/list":
        return result(id, {"prompts": [{"name": PREFIX + "greet",
                                        "arguments": [{"name": "who"}]}]})
    if method == "prompts/get":
        who = (params.get("arguments") or {}).get("who", "nobody")
        return result(id, {"messages": [{"role": "user", "content": {
            "type": "text", "text": f"hello {who}"}}]})
    if method == "completion/complete":
        v = params.get("argument", {}).get("value", "")
        return result(id, {"completion": {
            "values": [v + "a", v + "b"], "total": 2, "hasMore": False}})
    if method == "logging/setLevel":
        return result(id, {})
    if method == "ping":
        return result(id, {})
    if id is not None:
        return error(id, -32601, "Method not found")


def ask_roots():
    if "--ask-roots-after" in ARGS:
        time.sleep(int(ARGS[ARGS.index("--ask-roots-after") + 1]) / 1000)
    r = ask("roots/list", {})
    STATE["roots"] = r.get("result") if r is not None else None
    if r is not None and "error" in r:
        STATE["roots"] = {"error": r["error"].get("message")}
    STATE["roots_done"].set()


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        if "method" not in msg:
            answered(msg)
            continue
        if msg["method"] == "notifications/cancelled":
            sys.stderr.write("fake cancelled " +
                             json.dumps(msg["params"]) + "\n")
            sys.stderr.flush()
            continue
        if msg["method"] == "notifications/initialized" and \
                ("--ask-roots" in ARGS or "--ask-roots-after" in ARGS):
            threading.Thread(target=ask_roots, daemon=True).start()
        if "id" not in msg:
            continue
        threading.Thread(target=handle, args=(msg,), daemon=True).start()


if __name__ == "__main__":
    main()
