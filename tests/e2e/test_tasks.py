"""The tasks extension (io.modelcontextprotocol/tasks, docs/protocol.md
"Tasks"): a tools/call answered with a task handle, the task's state and
result kept in the event log, tasks/get, tasks/update and tasks/cancel;
retention; bad task ids; across two instances on one Redis, and an
instance killed with SIGKILL.

The requests here go through the session path (initialize first); each
declares the extension in its _meta, as the extension asks of every
request. Tests that need two instances on one Redis skip without
MCPD_TEST_REDIS_URL (scripts/with-redis).
"""

import hashlib
import re
import time

from mcpd_harness import (REDIS_URL, LATEST, expect, need_shared_redis,
                          private_redis, result_text, rpc, tmo)

EXT_NAME = "io.modelcontextprotocol/tasks"
EXT = {"io.modelcontextprotocol/clientCapabilities":
       {"elicitation": {}, "extensions": {EXT_NAME: {}}}}
ISO = re.compile(r"\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\Z")
TERMINAL = ("completed", "failed", "cancelled")
FIXTURES = {"fixtures": "conformance"}


def _req(d, sid, method, params, ext=True):
    """One request (the extension declared unless ext is False); returns
    the JSON-RPC response."""
    params = dict(params)
    if ext:
        params["_meta"] = EXT
    id = d.new_id()
    r = d.post(sid, rpc(method, params, id))
    expect(r.status == 200, f"{method} -> HTTP {r.status} {r.body[:300]!r}")
    return r.rpc(id)


def _result(msg, what):
    expect("result" in msg, f"{what}: an error, not a result: {msg!r}")
    return msg["result"]


def _error(msg, code, what):
    expect("error" in msg and msg["error"].get("code") == code,
           f"{what}: expected error {code}, got {msg!r}")
    return msg["error"]


def _start(d, sid, name, args, ext=True):
    """tools/call expected to create a task; returns the CreateTaskResult."""
    res = _result(_req(d, sid, "tools/call",
                       {"name": name, "arguments": args}, ext),
                  f"tools/call {name}")
    expect(res.get("resultType") == "task" and "taskId" in res,
           f"tools/call {name}: not a CreateTaskResult: {res!r}")
    return res


def _get(d, sid, tid):
    return _result(_req(d, sid, "tasks/get", {"taskId": tid}),
                   f"tasks/get {tid}")


def _wait(d, sid, tid, until, timeout=10, what="status"):
    """Polls tasks/get until until(task) holds; returns the task."""
    deadline = time.monotonic() + tmo(timeout)
    while True:
        t = _get(d, sid, tid)
        if until(t):
            return t
        expect(time.monotonic() < deadline,
               f"task {tid}: no {what} within {timeout} s; last {t!r}")
        time.sleep(0.05)


def _terminal(d, sid, tid, timeout=10):
    return _wait(d, sid, tid, lambda t: t["status"] in TERMINAL, timeout,
                 "terminal status")


def handle(tid):
    """How mcpd's log lines name a task: never its id (a bearer secret),
    the first 8 hex digits of the id's SHA-256."""
    return hashlib.sha256(tid.encode()).hexdigest()[:8]


def _check_task(t, what):
    expect(re.fullmatch(r"[0-9a-f]{32}", t.get("taskId", "")),
           f"{what}: taskId {t.get('taskId')!r} is not 128 bits of hex")
    expect(ISO.match(t.get("createdAt", "")) and
           ISO.match(t.get("lastUpdatedAt", "")),
           f"{what}: timestamps {t!r}")
    expect(isinstance(t.get("ttlMs"), int) and t["ttlMs"] > 0,
           f"{what}: ttlMs {t.get('ttlMs')!r}")
    expect(isinstance(t.get("pollIntervalMs"), int) and
           t["pollIntervalMs"] > 0, f"{what}: pollIntervalMs {t!r}")
    expect("mcpd" not in t and "requestState" not in t,
           f"{what}: internal fields leak: {t!r}")


# --------------------------------------------------------------------------
# One instance


def test_task_lifecycle(h):
    d = h.start(**FIXTURES)
    sid = d.initialize(LATEST)
    tools = _result(_req(d, sid, "tools/list", {}), "tools/list")["tools"]
    support = {t["name"]: t.get("execution", {}).get("taskSupport")
               for t in tools}
    expect(support.get("slow_compute") == "optional" and
           support.get("failing_job") == "required" and
           support.get("greet") is None and
           support.get("stream") == "optional",
           f"tools/list taskSupport {support!r}")

    # A tool without task support answers as a plain call.
    res = _result(_req(d, sid, "tools/call",
                       {"name": "greet", "arguments": {"name": "W"}}),
                  "greet")
    expect("taskId" not in res and res["content"][0]["text"] ==
           "Hello, W!", f"greet: {res!r}")

    created = _start(d, sid, "slow_compute", {"seconds": 1, "label": "lc"})
    _check_task(created, "CreateTaskResult")
    expect(created["status"] == "working", f"created {created!r}")
    for key in ("result", "error", "inputRequests", "task"):
        expect(key not in created, f"CreateTaskResult carries {key}")
    tid = created["taskId"]

    # Durable before it is reported: found at once.
    t = _get(d, sid, tid)
    expect(t["taskId"] == tid and t["status"] == "working" and
           t["resultType"] == "complete" and "result" not in t,
           f"tasks/get while working: {t!r}")
    t = _terminal(d, sid, tid)
    _check_task(t, "completed task")
    expect(t["status"] == "completed" and
           t["result"]["content"][0]["text"] ==
           "slow_compute lc: done after 1 s", f"completed: {t!r}")
    expect(t["createdAt"] == created["createdAt"], "createdAt changed")

    # Tool errors complete with isError; JSON-RPC errors fail.
    t = _terminal(d, sid, _start(d, sid, "failing_job", {})["taskId"])
    expect(t["status"] == "completed" and t["result"].get("isError") is
           True, f"failing_job: {t!r}")
    t = _terminal(d, sid, _start(d, sid, "protocol_error_job", {})["taskId"])
    expect(t["status"] == "failed" and "result" not in t and
           t["error"]["code"] == -32603 and
           isinstance(t["error"]["message"], str), f"protocol error: {t!r}")


def test_task_needs_the_extension(h):
    d = h.start(**FIXTURES)
    sid = d.initialize(LATEST)
    # Without it an optional tool runs as a plain call...
    msg = _req(d, sid, "tools/call",
               {"name": "slow_compute", "arguments": {"seconds": 0}},
               ext=False)
    res = _result(msg, "slow_compute without the extension")
    expect("taskId" not in res and res.get("content"),
           f"slow_compute without the extension: {res!r}")
    # ... a required one is refused, saying what is missing ...
    err = _error(_req(d, sid, "tools/call",
                      {"name": "failing_job", "arguments": {}}, ext=False),
                 -32021, "failing_job without the extension")
    expect(err["data"] == {"requiredCapabilities":
                           {"extensions": {EXT_NAME: {}}}},
           f"-32021 data {err!r}")
    # ... and so are the task methods, whatever the id.
    tid = _start(d, sid, "slow_compute", {"seconds": 60})["taskId"]
    for method, params in (("tasks/get", {"taskId": tid}),
                           ("tasks/cancel", {"taskId": tid}),
                           ("tasks/update", {"taskId": tid,
                                             "inputResponses": {}})):
        _error(_req(d, sid, method, params, ext=False), -32021, method)
    expect(_get(d, sid, tid)["status"] == "working",
           "a refused tasks/cancel cancelled the task")


def test_task_cancel(h):
    d = h.start(**FIXTURES)
    sid = d.initialize(LATEST)
    tid = _start(d, sid, "slow_compute", {"seconds": 60})["taskId"]
    ack = _result(_req(d, sid, "tasks/cancel", {"taskId": tid}), "cancel")
    expect(ack == {"resultType": "complete"}, f"cancel ack {ack!r}")
    t = _terminal(d, sid, tid)
    expect(t["status"] == "cancelled" and "result" not in t,
           f"after cancel: {t!r}")
    d.wait_log(lambda s: f"task={handle(tid)}" in s and "cancelled" in s,
               what="the task's call cancelled")
    # Idempotent on a terminal task, which stays as it was.
    ack = _result(_req(d, sid, "tasks/cancel", {"taskId": tid}), "cancel 2")
    expect(ack == {"resultType": "complete"}, f"second cancel {ack!r}")
    done = _terminal(d, sid, _start(d, sid, "slow_compute",
                                    {"seconds": 0})["taskId"])
    _result(_req(d, sid, "tasks/cancel", {"taskId": done["taskId"]}),
            "cancel of a completed task")
    t = _get(d, sid, done["taskId"])
    expect(t["status"] == "completed", f"cancel changed a completed task: "
           f"{t!r}")


def test_task_update(h):
    d = h.start(**FIXTURES)
    sid = d.initialize(LATEST)
    tid = _start(d, sid, "confirm_delete", {"filename": "a.txt"})["taskId"]
    t = _wait(d, sid, tid, lambda t: t["status"] != "working")
    expect(t["status"] == "input_required", f"confirm_delete: {t!r}")
    reqs = t["inputRequests"]
    expect(len(reqs) == 1, f"inputRequests {reqs!r}")
    key, ask = next(iter(reqs.items()))
    expect(ask["method"] == "elicitation/create" and
           ask["params"]["message"] == "Delete a.txt?", f"request {ask!r}")

    # Unknown keys are ignored (and acknowledged); a bad shape is refused.
    ack = _result(_req(d, sid, "tasks/update",
                       {"taskId": tid,
                        "inputResponses": {"nope": {"action": "accept"}}}),
                  "update with an unknown key")
    expect(ack == {"resultType": "complete"}, f"ack {ack!r}")
    _error(_req(d, sid, "tasks/update", {"taskId": tid,
                                         "inputResponses": [1]}),
           -32602, "inputResponses an array")
    expect(_get(d, sid, tid)["status"] == "input_required",
           "an ignored update moved the task on")

    _result(_req(d, sid, "tasks/update",
                 {"taskId": tid, "inputResponses": {
                     key: {"action": "accept",
                           "content": {"confirm": True}}}}), "update")
    t = _terminal(d, sid, tid)
    expect(t["status"] == "completed" and
           t["result"]["content"][0]["text"] == "confirm_delete a.txt: "
           "accept", f"after the answer: {t!r}")

    # Two questions at once, answered one at a time.
    tid = _start(d, sid, "multi_input", {})["taskId"]
    t = _wait(d, sid, tid, lambda t: len(t.get("inputRequests", {})) == 2,
              what="two input requests")
    first, second = sorted(t["inputRequests"])
    _req(d, sid, "tasks/update", {"taskId": tid, "inputResponses": {
        first: {"action": "accept", "content": {"name": "one"}}}})
    t = _get(d, sid, tid)
    expect(t["status"] == "input_required" and
           list(t["inputRequests"]) == [second],
           f"after a partial update: {t!r}")
    _req(d, sid, "tasks/update", {"taskId": tid, "inputResponses": {
        second: {"action": "accept", "content": {"name": "two"}}}})
    t = _terminal(d, sid, tid)
    expect(t["status"] == "completed" and
           t["result"]["content"][0]["text"] ==
           "multi_input: accept one; accept two", f"multi_input: {t!r}")


def test_task_outlives_its_connection_and_session(h):
    # The result is in the log, not in a stream: the POST's connection
    # ends, the session is deleted, and another session reads it.
    d = h.start(**FIXTURES)
    sid = d.initialize(LATEST)
    id = d.new_id()
    r = d.post_open(sid, rpc("tools/call", {
        "name": "stream", "arguments": {"n": 3, "interval_ms": 200},
        "_meta": EXT}, id))
    created = _result(r.rpc(id), "stream as a task")
    expect(created.get("resultType") == "task", f"stream: {created!r}")
    r.cut()
    tid = created["taskId"]
    expect(d.delete(sid).status in (200, 204), "DELETE session")
    other = d.initialize(LATEST)
    t = _terminal(d, other, tid)
    expect(t["status"] == "completed" and
           t["result"]["content"][0]["text"] == "done 3",
           f"stream task: {t!r}")


def test_task_bad_ids(h):
    d = h.start(**FIXTURES)
    sid = d.initialize(LATEST)
    real = _start(d, sid, "slow_compute", {"seconds": 60})["taskId"]
    for bad in ("nope", "0" * 32, real.upper(), real + "0", "../" + real,
                "tasks-conformance-nonexistent-12345", "", "x" * 5000):
        for method in ("tasks/get", "tasks/cancel", "tasks/update"):
            params = {"taskId": bad}
            if method == "tasks/update":
                params["inputResponses"] = {}
            err = _error(_req(d, sid, method, params), -32602,
                         f"{method} {bad[:40]!r}")
            expect(real not in err["message"] and "data" not in err,
                   f"{method}: the error tells too much: {err!r}")
    for params in ({}, {"taskId": 7}, {"taskId": None}):
        _error(_req(d, sid, "tasks/get", params), -32602, f"{params!r}")
    # The methods the extension removed are unknown.
    for method in ("tasks/result", "tasks/list"):
        _error(_req(d, sid, method, {"taskId": real}), -32601, method)
    expect(_get(d, sid, real)["status"] == "working",
           "the real task was touched")
    d.assert_alive(sid, "after bad task ids")
    # Left running and waiting for an answer at the stop: nothing leaks
    # (under --sanitized).
    asking = _start(d, sid, "multi_input", {})["taskId"]
    _wait(d, sid, asking, lambda t: t["status"] == "input_required")


def test_task_retention(h):
    # A task lives task_ttl from its creation (ttlMs), then is not found.
    d = h.start(task_ttl=10, task_poll_ms=50, **FIXTURES)
    sid = d.initialize(LATEST)
    created = _start(d, sid, "slow_compute", {"seconds": 0})
    expect(created["ttlMs"] == 10000 and created["pollIntervalMs"] == 50,
           f"ttlMs/pollIntervalMs {created!r}")
    tid = created["taskId"]
    expect(_terminal(d, sid, tid)["status"] == "completed", "completed")
    deadline = time.monotonic() + tmo(30)
    while True:
        msg = _req(d, sid, "tasks/get", {"taskId": tid})
        if "error" in msg:
            break
        expect(time.monotonic() < deadline, "task kept past its task_ttl")
        time.sleep(0.5)
    _error(msg, -32602, "tasks/get after task_ttl")


def test_task_limits(h):
    # max_tasks running at once; the memory log keeps as many records, and
    # makes room for a new task by forgetting the record finished longest
    # ago, never a running task's.
    d = h.start(max_tasks=3, **FIXTURES)
    sid = d.initialize(LATEST)
    a, b, c = (_start(d, sid, "slow_compute", {"seconds": 60})["taskId"]
               for _ in range(3))
    err = _error(_req(d, sid, "tools/call",
                      {"name": "slow_compute", "arguments": {"seconds": 1}}),
                 -32603, "a fourth task")
    expect("max_tasks" in err["message"], f"fourth task: {err!r}")
    # A plain call still runs.
    res = _result(_req(d, sid, "tools/call",
                       {"name": "slow_compute", "arguments": {"seconds": 0}},
                       ext=False), "plain call at max_tasks")
    expect(res.get("content"), f"plain call {res!r}")
    for tid in (a, b):
        _req(d, sid, "tasks/cancel", {"taskId": tid})
        _terminal(d, sid, tid)
    # Three records, a and b finished: a new task is admitted, and the
    # memory log forgets a for it (finished first); with Redis nothing
    # is counted, so nothing is forgotten.
    new = _start(d, sid, "slow_compute", {"seconds": 60})["taskId"]
    expect(_get(d, sid, c)["status"] == "working", "a running task lost")
    expect(_get(d, sid, b)["status"] == "cancelled", "b forgotten first")
    if REDIS_URL is None:
        _error(_req(d, sid, "tasks/get", {"taskId": a}), -32602,
               "a, the record finished longest ago, forgotten")
    else:
        expect(_get(d, sid, a)["status"] == "cancelled", "a kept")
    _start(d, sid, "slow_compute", {"seconds": 60})
    if REDIS_URL is None:
        _error(_req(d, sid, "tasks/get", {"taskId": b}), -32602,
               "b forgotten next")
    # Three running, no record finished: max_tasks refuses.
    err = _error(_req(d, sid, "tools/call",
                      {"name": "slow_compute", "arguments": {"seconds": 1}}),
                 -32603, "max_tasks running")
    expect("max_tasks" in err["message"], f"max_tasks running: {err!r}")
    expect(_get(d, sid, new)["status"] == "working", "the new task")
    d.assert_alive(sid, "at max_tasks")


def test_task_exec_tool(h):
    d = h.start(extra_lines=[
        "tool slow_echo {",
        "    task optional",
        "    param text string required",
        "    exec /bin/sh -c \"sleep 0.3; printf '%s' \\\"$1\\\"\" sh {text}",
        "}",
        "tool quick {",
        "    exec /bin/echo quick",
        "}"])
    sid = d.initialize(LATEST)
    tools = {t["name"]: t for t in
             _result(_req(d, sid, "tools/list", {}), "list")["tools"]}
    expect(tools["slow_echo"].get("execution") == {"taskSupport":
                                                   "optional"} and
           "execution" not in tools["quick"], f"tools {tools!r}")
    tid = _start(d, sid, "slow_echo", {"text": "from a task"})["taskId"]
    t = _terminal(d, sid, tid)
    expect(t["status"] == "completed" and
           t["result"]["content"][0]["text"].strip() == "from a task",
           f"exec task {t!r}")
    msg = _req(d, sid, "tools/call", {"name": "quick", "arguments": {}})
    expect(result_text(msg).strip() == "quick" and
           "taskId" not in msg["result"], f"quick {msg!r}")
    # Cancelled, its program is killed.
    tid = _start(d, sid, "slow_echo", {"text": "x"})["taskId"]
    _req(d, sid, "tasks/cancel", {"taskId": tid})
    expect(_terminal(d, sid, tid)["status"] == "cancelled", "cancel")


# --------------------------------------------------------------------------
# Two instances on one Redis


def test_task_across_instances(h):
    need_shared_redis()
    a = h.start(**FIXTURES)
    b = h.start(**FIXTURES)
    sa, sb = a.initialize(LATEST), b.initialize(LATEST)

    # Created on A, read on B, cancelled on B: A's call stops.
    tid = _start(a, sa, "slow_compute", {"seconds": 60})["taskId"]
    expect(_get(b, sb, tid)["status"] == "working", "B reads A's task")
    _result(_req(b, sb, "tasks/cancel", {"taskId": tid}), "cancel on B")
    expect(_terminal(a, sa, tid)["status"] == "cancelled",
           "A sees B's cancel")
    a.wait_log(lambda s: f"task={handle(tid)}" in s and "cancelled" in s,
               timeout=tmo(5), what="A's call cancelled")

    # Asked on A, answered on B, completed on A, read on B.
    tid = _start(a, sa, "confirm_delete", {"filename": "x"})["taskId"]
    t = _wait(b, sb, tid, lambda t: t["status"] == "input_required")
    key = next(iter(t["inputRequests"]))
    _req(b, sb, "tasks/update", {"taskId": tid, "inputResponses": {
        key: {"action": "decline"}}})
    t = _terminal(b, sb, tid)
    expect(t["status"] == "completed" and
           t["result"]["content"][0]["text"] == "confirm_delete x: decline",
           f"answered on B: {t!r}")

    # A result committed on A is B's to read, after A is gone.
    tid = _start(a, sa, "slow_compute", {"seconds": 0})["taskId"]
    _terminal(a, sa, tid)
    a.stop()
    expect(_get(b, sb, tid)["status"] == "completed", "result after A")


def test_task_owner_killed(h):
    # kill -9 of the instance running a task: its lease lapses, and the
    # next tasks/get on another instance ends it failed.
    need_shared_redis()
    a = h.start(lease_ttl=1, **FIXTURES)
    b = h.start(lease_ttl=1, **FIXTURES)
    sa, sb = a.initialize(LATEST), b.initialize(LATEST)
    tid = _start(a, sa, "slow_compute", {"seconds": 600})["taskId"]
    # Alive, it is not taken for dead: its lease is renewed, for longer
    # than one lease_ttl.
    until = time.monotonic() + 2.5
    while time.monotonic() < until:
        t = _get(b, sb, tid)
        expect(t["status"] == "working", f"a live owner's task: {t!r}")
        time.sleep(0.1)
    a.kill()
    a.stopped = True
    t = _wait(b, sb, tid, lambda t: t["status"] in TERMINAL, timeout=15,
              what="failed after its owner died")
    expect(t["status"] == "failed" and t["error"]["code"] == -32603 and
           "gone" in t["error"]["message"], f"after kill -9: {t!r}")
    # And it stays so.
    expect(_get(b, sb, tid)["status"] == "failed", "still failed")


# --------------------------------------------------------------------------
# The stateless path (2026-07-28)

V = "2026-07-28"


def _mmeta(ext=True):
    caps = {"elicitation": {}}
    if ext:
        caps["extensions"] = {EXT_NAME: {}}
    return {"io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientCapabilities": caps}


def _mpost(d, method, params, ext=True, name=True, headers=None):
    """A stateless request: returns (reply, its JSON-RPC response)."""
    params = dict(params)
    params["_meta"] = _mmeta(ext)
    h = {"MCP-Protocol-Version": V, "Mcp-Method": method}
    if name and method == "tools/call":
        h["Mcp-Name"] = params["name"]
    elif name and method.startswith("tasks/"):
        h["Mcp-Name"] = params["taskId"]
    h.update(headers or {})
    id = d.new_id()
    r = d.post(None, rpc(method, params, id), h)
    return r, (r.rpc(id) if r.is_sse else r.json)


def _mlisten(d, filt, id, ext=True, headers=None):
    params = {"notifications": filt, "_meta": _mmeta(ext)}
    h = {"MCP-Protocol-Version": V, "Mcp-Method": "subscriptions/listen"}
    h.update(headers or {})
    deadline = time.monotonic() + tmo(10)
    while True:
        r = d.post_open(None, rpc("subscriptions/listen", params, id), h)
        # With a shared log, 503 until the instance hears the others.
        if r.status != 503 or time.monotonic() > deadline:
            return r
        r.read_body()
        r.close()
        time.sleep(0.05)


def _next_task_note(r, tid, what, timeout=10):
    """The next notifications/tasks for tid on listen stream r."""
    deadline = time.monotonic() + tmo(timeout)
    while True:
        left = deadline - time.monotonic()
        expect(left > 0, f"{what}: no notifications/tasks for {tid}")
        m = r.next_message(left)
        expect(m is not None, f"{what}: the listen stream ended")
        msg = m[1]
        if msg.get("method") == "notifications/tasks" and \
                msg["params"].get("taskId") == tid:
            return msg


def test_task_stateless_path(h):
    d = h.start(**FIXTURES)
    r, msg = _mpost(d, "server/discover", {})
    caps = msg["result"]["capabilities"]
    expect(caps.get("extensions") == {EXT_NAME: {}} and "tasks" not in caps,
           f"server/discover capabilities {caps!r}")

    r, msg = _mpost(d, "tools/call", {"name": "slow_compute",
                                      "arguments": {"seconds": 60}})
    created = _result(msg, "stateless tools/call")
    expect(created["resultType"] == "task" and "requestState" not in
           created and created["_meta"][
               "io.modelcontextprotocol/serverInfo"]["name"] == "mcpd",
           f"CreateTaskResult {created!r}")
    _check_task(created, "stateless CreateTaskResult")
    tid = created["taskId"]
    r, msg = _mpost(d, "tasks/get", {"taskId": tid})
    expect(_result(msg, "tasks/get")["status"] == "working", f"{msg!r}")

    # Mcp-Name must be the taskId; the extension must be declared.
    r, msg = _mpost(d, "tasks/get", {"taskId": tid}, name=False)
    expect(r.status == 400, f"no Mcp-Name: HTTP {r.status}")
    _error(msg, -32020, "tasks/get without Mcp-Name")
    r, msg = _mpost(d, "tasks/get", {"taskId": tid},
                    headers={"Mcp-Name": "0" * 32})
    _error(msg, -32020, "tasks/get with another Mcp-Name")
    r, msg = _mpost(d, "tasks/cancel", {"taskId": tid}, ext=False)
    expect(r.status == 400, f"tasks/cancel without the extension: HTTP "
           f"{r.status}")
    _error(msg, -32021, "tasks/cancel without the extension")
    r, msg = _mpost(d, "tasks/result", {"taskId": tid})
    expect(r.status == 404, f"tasks/result: HTTP {r.status}")
    _error(msg, -32601, "tasks/result")

    r, msg = _mpost(d, "tasks/cancel", {"taskId": tid})
    expect(_result(msg, "tasks/cancel")["resultType"] == "complete",
           f"cancel {msg!r}")
    r, msg = _mpost(d, "tasks/get", {"taskId": tid})
    expect(msg["result"]["status"] == "cancelled", f"after cancel {msg!r}")

    # MRTR first, then the task: the rounds stay apart.
    r, msg = _mpost(d, "tools/call", {"name": "test_tool_with_task",
                                      "arguments": {}})
    first = msg["result"]
    expect(first["resultType"] == "input_required" and "taskId" not in
           first, f"round 1 {first!r}")
    key = next(iter(first["inputRequests"]))
    r, msg = _mpost(d, "tools/call", {
        "name": "test_tool_with_task", "arguments": {},
        "inputResponses": {key: {"action": "accept",
                                 "content": {"name": "Alice"}}},
        "requestState": first["requestState"]})
    second = msg["result"]
    expect(second["resultType"] == "task" and "requestState" not in second
           and "inputRequests" not in second, f"round 2 {second!r}")
    deadline = time.monotonic() + tmo(10)
    while True:
        r, msg = _mpost(d, "tasks/get", {"taskId": second["taskId"]})
        if msg["result"]["status"] in TERMINAL:
            break
        expect(time.monotonic() < deadline, "test_tool_with_task's task")
        time.sleep(0.05)
    expect(msg["result"]["result"]["content"][0]["text"] ==
           "Hello, Alice! (from a task)", f"the task's result {msg!r}")


def test_task_status_notifications(h):
    d = h.start(**FIXTURES)
    r, msg = _mpost(d, "tools/call", {"name": "confirm_delete",
                                      "arguments": {"filename": "n"}})
    tid = msg["result"]["taskId"]
    # Asking for task notifications needs the extension.
    r = _mlisten(d, {"taskIds": [tid]}, 70, ext=False)
    r.read_body()
    expect(r.status == 400, f"listen for tasks without the extension: "
           f"HTTP {r.status}")
    _error(r.json, -32021, "listen without the extension")

    r = _mlisten(d, {"taskIds": [tid, "0" * 32]}, 71)
    expect(r.status == 200 and r.is_sse, f"listen HTTP {r.status}")
    ack = r.next_message(5)[1]
    expect(ack["params"]["notifications"].get("taskIds") == [tid, "0" * 32],
           f"ack {ack!r}")
    # Changes after the listen are told: the answer, then the result.
    t = _wait_stateless(d, tid, lambda t: t["status"] == "input_required")
    key = next(iter(t["inputRequests"]))
    _mpost(d, "tasks/update", {"taskId": tid, "inputResponses": {
        key: {"action": "accept", "content": {"confirm": True}}}})
    note = _next_task_note(r, tid, "after the update")
    expect(note["params"]["_meta"][
        "io.modelcontextprotocol/subscriptionId"] == 71,
        f"notification not tagged: {note!r}")
    while note["params"]["status"] not in TERMINAL:
        note = _next_task_note(r, tid, "completed")
    p = note["params"]
    expect(p["status"] == "completed" and
           p["result"]["content"][0]["text"] == "confirm_delete n: accept"
           and "resultType" not in p, f"the last notification {note!r}")
    r.close()


def _wait_stateless(d, tid, until, timeout=10, what="status"):
    deadline = time.monotonic() + tmo(timeout)
    while True:
        r, msg = _mpost(d, "tasks/get", {"taskId": tid})
        t = _result(msg, "tasks/get")
        if until(t):
            return t
        expect(time.monotonic() < deadline, f"{tid}: no {what}: {t!r}")
        time.sleep(0.05)


def test_task_notifications_across_instances(h):
    # A listen on B hears of a task that A runs, through the shared log.
    need_shared_redis()
    a = h.start(**FIXTURES)
    b = h.start(**FIXTURES)
    r, msg = _mpost(a, "tools/call", {"name": "confirm_delete",
                                      "arguments": {"filename": "ab"}})
    tid = msg["result"]["taskId"]
    t = _wait_stateless(a, tid, lambda t: t["status"] == "input_required")
    r = _mlisten(b, {"taskIds": [tid]}, 80)
    expect(r.status == 200 and r.is_sse, f"listen on B: HTTP {r.status}")
    r.next_message(5)
    # Answered on A, completed on A: B's listener hears it.
    _mpost(a, "tasks/update", {"taskId": tid, "inputResponses": {
        next(iter(t["inputRequests"])): {"action": "accept",
                                         "content": {"confirm": True}}}})
    note = _next_task_note(r, tid, "a change on A")
    while note["params"]["status"] not in TERMINAL:
        note = _next_task_note(r, tid, "completed on A")
    expect(note["params"]["status"] == "completed" and
           note["params"]["result"]["content"][0]["text"] ==
           "confirm_delete ab: accept", f"B heard {note!r}")
    r.close()


def test_task_result_waits_for_redis(h):
    # Redis goes away while a task runs: its result is written once Redis
    # is back (AOF keeps the record), not lost; meanwhile the task stays
    # working, its owner alive. With no outage grace (eventlog_outage_grace
    # 0), so that the write fails and the task retries it: within the
    # grace the write itself would wait for Redis.
    with private_redis(h, aof=True) as rs:
        d = h.start(eventlog=rs.url, eventlog_outage_grace="0", **FIXTURES)
        sid = d.initialize(LATEST)
        tid = _start(d, sid, "slow_compute", {"seconds": 1})["taskId"]
        rs.shutdown()
        d.wait_log(lambda s: f"task={handle(tid)}: result not written yet"
                   in s,
                   timeout=tmo(10), what="the result waiting for Redis")
        rs.start()
        deadline = time.monotonic() + tmo(20)
        while True:
            id = d.new_id()
            r = d.post(sid, rpc("tasks/get", {"taskId": tid, "_meta": EXT},
                                id))
            msg = r.rpc(id) if r.status == 200 else {}
            if msg.get("result", {}).get("status") in TERMINAL:
                break
            expect(time.monotonic() < deadline, f"no result: {msg!r}")
            time.sleep(0.1)
        expect(msg["result"]["status"] == "completed" and
               msg["result"]["result"]["content"][0]["text"] ==
               "slow_compute -: done after 1 s", f"after Redis: {msg!r}")


# --------------------------------------------------------------------------
# Whose tasks, and what is logged of them


def test_task_ids_never_logged(h):
    # A task id is the bearer secret of its task: no log line carries it,
    # at the most verbose level either, through a task's whole life
    # (created, asking, answered, cancelled with its exec program killed,
    # completed, ids unknown); lines name a task by its handle.
    d = h.start(log_level="debug", extra_lines=[
        "fixtures conformance",
        "tool slow_echo {",
        "    task optional",
        "    exec /bin/sleep 30",
        "}"])
    sid = d.initialize(LATEST)
    asking = _start(d, sid, "confirm_delete", {"filename": "f"})["taskId"]
    t = _wait(d, sid, asking, lambda t: t["status"] == "input_required")
    _req(d, sid, "tasks/update", {"taskId": asking, "inputResponses": {
        next(iter(t["inputRequests"])): {"action": "decline"}}})
    _terminal(d, sid, asking)
    cancelled = _start(d, sid, "slow_echo", {})["taskId"]
    _req(d, sid, "tasks/cancel", {"taskId": cancelled})
    _terminal(d, sid, cancelled)
    d.wait_log(lambda s: "task=" in s and "cancelled:" in s,
               what="the exec task's call cancelled")
    done = _start(d, sid, "slow_compute", {"seconds": 0})["taskId"]
    _terminal(d, sid, done)
    _error(_req(d, sid, "tasks/get", {"taskId": "0" * 32}), -32602,
           "an unknown task")
    text = d.stderr_text()
    for tid in (asking, cancelled, done):
        expect(tid not in text, f"task id {tid} in the log:\n" +
               "\n".join(x for x in text.splitlines() if tid in x))
        expect(f"task={handle(tid)} tool=" in text,
               f"no creation line names task {handle(tid)}")
    expect("0" * 32 not in text, "an asked-for id is logged")


def _areq(d, sid, tok, method, params):
    """One request on the session path with tok's bearer token."""
    import test_auth
    params = dict(params, _meta=EXT)
    id = d.new_id()
    r = d.post(sid, rpc(method, params, id), test_auth.bearer(tok))
    expect(r.status == 200, f"{method} -> HTTP {r.status} {r.body[:300]!r}")
    return r.rpc(id)


def _astart(d, sid, tok, name, args):
    res = _result(_areq(d, sid, tok, "tools/call",
                        {"name": name, "arguments": args}), f"{name}")
    expect(res.get("resultType") == "task", f"{name}: {res!r}")
    return res["taskId"]


def _await(d, sid, tok, tid, until, what):
    deadline = time.monotonic() + tmo(10)
    while True:
        t = _result(_areq(d, sid, tok, "tasks/get", {"taskId": tid}),
                    f"tasks/get {tid}")
        if until(t):
            return t
        expect(time.monotonic() < deadline, f"{tid}: no {what}: {t!r}")
        time.sleep(0.05)


def test_task_bound_to_its_principal(h):
    # With auth a task is its creator's (issuer, subject, client id), as a
    # session is: the extension asks for an authorization check on every
    # task request. Another principal's tasks/get, tasks/update (answering
    # the creator's elicitation) and tasks/cancel, on the session path and
    # the stateless one, get exactly what an unknown task id gets, and
    # change nothing; its listen stream hears nothing of the task.
    import test_auth
    d = test_auth.start(h, extra=["fixtures conformance"])
    alice = test_auth.token(sub="alice", client_id="app")
    sa = test_auth.session(d, alice)
    tid = _astart(d, sa, alice, "confirm_delete", {"filename": "a"})
    t = _await(d, sa, alice, tid, lambda t: t["status"] == "input_required",
               "input_required")
    key = next(iter(t["inputRequests"]))
    answer = {key: {"action": "accept", "content": {"confirm": True}}}
    others = {"bob": test_auth.token(sub="bob", client_id="app"),
              "alice through another client":
              test_auth.token(sub="alice", client_id="other")}
    tries = (("tasks/get", {}), ("tasks/update", {"inputResponses": answer}),
             ("tasks/cancel", {}))
    for who, tok in others.items():
        so = test_auth.session(d, tok)
        for method, extra in tries:
            unknown = _areq(d, so, tok, method, dict(extra, taskId="0" * 32))
            msg = _areq(d, so, tok, method, dict(extra, taskId=tid))
            expect("error" in msg and msg["error"] == unknown["error"],
                   f"{who}: {method} of alice's task: {msg!r}, unknown: "
                   f"{unknown!r}")
            hdr = test_auth.bearer(tok)
            ru, unknown = _mpost(d, method, dict(extra, taskId="0" * 32),
                                 headers=hdr)
            r, msg = _mpost(d, method, dict(extra, taskId=tid), headers=hdr)
            expect(r.status == ru.status and "error" in msg and
                   msg["error"] == unknown["error"],
                   f"{who}: stateless {method}: HTTP {r.status} {msg!r}, "
                   f"unknown: HTTP {ru.status} {unknown!r}")
    t = _result(_areq(d, sa, alice, "tasks/get", {"taskId": tid}), "alice")
    expect(t["status"] == "input_required" and
           list(t["inputRequests"]) == [key],
           f"another principal changed alice's task: {t!r}")

    # Listen streams: bob's names alice's task and one of his own. Alice's
    # hears her task end; bob's hears his own task's changes, and none of
    # alice's, which all came before.
    bob = others["bob"]
    sb = test_auth.session(d, bob)
    mine = _astart(d, sb, bob, "confirm_delete", {"filename": "b"})
    t = _await(d, sb, bob, mine, lambda t: t["status"] == "input_required",
               "bob's input_required")
    la = _mlisten(d, {"taskIds": [tid]}, 90, headers=test_auth.bearer(alice))
    lb = _mlisten(d, {"taskIds": [tid, mine]}, 91,
                  headers=test_auth.bearer(bob))
    for r in (la, lb):
        expect(r.status == 200 and r.is_sse, f"listen: HTTP {r.status}")
        r.next_message(5)
    _areq(d, sa, alice, "tasks/update", {"taskId": tid,
                                         "inputResponses": answer})
    note = _next_task_note(la, tid, "alice's listen")
    while note["params"]["status"] not in TERMINAL:
        note = _next_task_note(la, tid, "alice's task ending")
    expect(note["params"]["status"] == "completed", f"alice's {note!r}")
    _areq(d, sb, bob, "tasks/update", {"taskId": mine, "inputResponses": {
        next(iter(t["inputRequests"])): {"action": "decline"}}})
    deadline = time.monotonic() + tmo(10)
    while True:
        m = lb.next_message(max(deadline - time.monotonic(), 0.1))
        expect(m is not None, "bob's listen: no word of his own task")
        p = m[1].get("params", {})
        expect(p.get("taskId") != tid, f"bob heard of alice's task: {m[1]!r}")
        if p.get("taskId") == mine and p.get("status") in TERMINAL:
            break
    la.close()
    lb.close()


def test_task_unbound_record_refused_under_auth(h):
    # A record that names no principal (made while auth was off, or by an
    # mcpd before tasks were bound) is nobody's once auth is on.
    need_shared_redis()
    import test_auth
    d = h.start(**FIXTURES)
    sid = d.initialize(LATEST)
    tid = _start(d, sid, "slow_compute", {"seconds": 0})["taskId"]
    _terminal(d, sid, tid)
    d.stop()
    d2 = test_auth.start(h, extra=["fixtures conformance"])
    alice = test_auth.token(sub="alice")
    sa = test_auth.session(d2, alice)
    _error(_areq(d2, sa, alice, "tasks/get", {"taskId": tid}), -32602,
           "an unbound task under auth")


def test_task_limit_per_principal(h):
    # max_tasks_per_principal: one principal at its limit is refused while
    # another still starts tasks; a task that ends frees its slot.
    import test_auth
    d = test_auth.start(h, extra=["fixtures conformance",
                                  "max_tasks_per_principal 2"])
    alice = test_auth.token(sub="alice")
    bob = test_auth.token(sub="bob")
    sa, sb = test_auth.session(d, alice), test_auth.session(d, bob)
    first = _astart(d, sa, alice, "slow_compute", {"seconds": 60})
    _astart(d, sa, alice, "slow_compute", {"seconds": 60})
    err = _error(_areq(d, sa, alice, "tools/call", {
        "name": "slow_compute", "arguments": {"seconds": 60}}), -32603,
        "alice's third task")
    expect("max_tasks_per_principal" in err["message"], f"{err!r}")
    _astart(d, sb, bob, "slow_compute", {"seconds": 60})
    _areq(d, sa, alice, "tasks/cancel", {"taskId": first})
    _await(d, sa, alice, first, lambda t: t["status"] in TERMINAL,
           "cancelled")
    _astart(d, sa, alice, "slow_compute", {"seconds": 60})
