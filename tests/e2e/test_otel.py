"""OpenTelemetry tracing (otel_endpoint; docs/operations.md, "Tracing"):
what mcpd exports to an OTLP/HTTP receiver of the test's own
(otlp_receiver.py, which checks every request against the OTLP JSON
mapping), the W3C trace context it takes from the client (traceparent
header, params._meta) and passes on (exec tools' TRACEPARENT, upstreams'
header and params._meta, jwks_uri's header), parent-based sampling, JSON
log lines that name the span, a receiver that is down or slow, the flush
at exit, tasks, MRTR rounds and resumes taken by another instance."""

import json
import os
import re
import sys
import time

from mcpd_harness import (LATEST, expect, need_shared_redis,
                          result_text, rpc, tmo, tool_call)
from otlp_receiver import Receiver, attr

import authkit

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "upstream_fake.py")

TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"
TP = f"00-{TRACE}-{PARENT}-01"
META_TRACE = "1bf7651916cd43dd8448eb211c80319d"
META_TP = f"00-{META_TRACE}-c7ad6b7169203332-01"


def start(h, r, extra_lines=(), **conf):
    conf.setdefault("otel_endpoint", r.url)
    conf.setdefault("otel_interval_ms", "50")
    return h.start(extra_lines=list(extra_lines), **conf)


def by_name(spans, name):
    found = [s for s in spans if s["name"] == name]
    expect(found, f"no span {name!r} among "
           f"{sorted(set(s['name'] for s in spans))}")
    return found[0]


def env_tool(path):
    return ["tool envtool {",
            f'    exec /bin/sh -c "env > {path}; echo ok"', "}"]


def read_env(path):
    with open(path) as f:
        return dict(ln.split("=", 1) for ln in f.read().splitlines()
                    if "=" in ln)


def receiver(h):
    return Receiver()


def instance_id(d):
    """The service.instance.id a daemon drew (its "tracing on" line)."""
    m = re.search(r"tracing on: .* instance (\S+)", d.stderr_text())
    expect(m is not None, "no \"tracing on\" line")
    return m.group(1)


def prom(d, name):
    """One sample of /metrics (Prometheus' text), by its full name."""
    r = d.request("GET", path="/metrics")
    expect(r.status == 200, f"/metrics HTTP {r.status}")
    for ln in r.body.decode().splitlines():
        if ln.startswith(name + " "):
            return float(ln.split()[-1])
    raise AssertionError(f"/metrics has no {name}")


def wait_prom(d, name, predicate, what):
    deadline = time.monotonic() + tmo(10)
    while not predicate(prom(d, name)):
        expect(time.monotonic() < deadline, f"{what}: {name} = "
               f"{prom(d, name)}")
        time.sleep(0.05)


def close(r):
    expect(not r.problems, f"OTLP mapping problems: {r.problems[:3]}")
    r.close()


# --------------------------------------------------------------------------


def test_otel_call_spans_one_trace_and_mapping(h):
    """A client's traceparent: every span of its call is in its trace,
    chained HTTP request -> message -> commit and exec process; the exec
    tool sees TRACEPARENT naming its own span; resource attributes; the
    JSON log lines name the span."""
    r = receiver(h)
    envf = os.path.join(h.workdir, "env.txt")
    d = start(h, r, env_tool(envf), log_format="json", access_log="on",
              otel_resource="deployment.environment.name=e2e")
    sid = d.initialize()
    id = d.new_id()
    reply = d.post(sid, tool_call("echo", {"text": "hi"}, id),
                   headers={"traceparent": TP, "tracestate": "k=v"})
    expect(result_text(reply.rpc(id)) == "hi", "echo")
    id2 = d.new_id()
    reply = d.post(sid, tool_call("envtool", {}, id2),
                   headers={"traceparent": TP})
    expect("ok" in result_text(reply.rpc(id2)), "envtool")

    spans = r.wait_spans(lambda s: sum(1 for x in s if x["traceId"] == TRACE
                                       and x["name"] == "exec envtool"),
                         what="the exec span")
    mine = r.trace(TRACE)
    http = [s for s in mine if s["name"] == "POST /mcp"]
    expect(len(http) == 2 and all(s.get("parentSpanId") == PARENT and
                                  s["kind"] == 2 for s in http),
           f"HTTP server spans: {http}")
    echo = by_name(mine, "tools/call echo")
    expect(echo["kind"] == 2 and echo["parentSpanId"] in
           [s["spanId"] for s in http], "the message's parent: its POST")
    expect(attr(echo, "mcp.method.name") == "tools/call" and
           attr(echo, "gen_ai.tool.name") == "echo" and
           attr(echo, "jsonrpc.request.id") == str(id) and
           attr(echo, "mcp.session.id") == sid and
           attr(echo, "mcp.protocol.version") == LATEST and
           attr(echo, "gen_ai.operation.name") == "execute_tool" and
           attr(echo, "network.transport") == "tcp", f"{echo}")
    expect(echo.get("traceState") == "k=v", "tracestate passed on")
    commits = [s for s in mine if s["name"] == "eventlog commit" and
               s.get("parentSpanId") == echo["spanId"]]
    expect(commits and attr(commits[0], "mcpd.eventlog.events") >= 1 and
           commits[0]["kind"] == 1, f"the commit batch: {commits}")
    call = by_name(mine, "tools/call envtool")
    exe = by_name(mine, "exec envtool")
    expect(exe["parentSpanId"] == call["spanId"] and
           attr(exe, "process.exit.code") == 0 and
           attr(exe, "process.pid") > 0, f"exec span {exe}")
    env = read_env(envf)
    expect(env.get("TRACEPARENT") == f"00-{TRACE}-{exe['spanId']}-01",
           f"TRACEPARENT {env.get('TRACEPARENT')!r}, exec span "
           f"{exe['spanId']}")
    res = echo["_resource"]
    expect(res.get("service.name") == "mcpd" and res.get("service.version")
           and len(res.get("service.instance.id", "")) == 36 and
           res.get("deployment.environment.name") == "e2e",
           f"resource {res}")
    # Every span of the trace hangs from the client's span.
    ids = {s["spanId"] for s in mine} | {PARENT}
    expect(all(s.get("parentSpanId") in ids for s in mine),
           "a span of the trace with a parent outside it")
    # The access line of the traced request names its HTTP span.
    lines = [json.loads(ln) for ln in d.stderr_text().splitlines()
             if ln.startswith("{")]
    traced = [ln for ln in lines if ln.get("trace_id") == TRACE and
              "access" in ln["msg"]]
    expect(traced and traced[0]["span_id"] in
           [s["spanId"] for s in http], f"access lines {traced}")
    # Counted once mcpd has read the receiver's answer.
    wait_prom(d, "mcpd_otel_spans_exported_total",
              lambda v: v >= len(mine), "exported counter")
    close(r)


def test_otel_meta_context_wins_and_links_the_request(h):
    """params._meta's traceparent is the message's parent; the HTTP
    request's span (the header's trace) is a link."""
    r = receiver(h)
    d = start(h, r)
    sid = d.initialize()
    id = d.new_id()
    msg = rpc("tools/call", {"name": "echo", "arguments": {"text": "m"},
                             "_meta": {"traceparent": META_TP}}, id)
    d.post(sid, msg, headers={"traceparent": TP}).rpc(id)
    r.wait_spans(lambda s: any(x["traceId"] == META_TRACE and
                               x["name"] == "eventlog commit" for x in s))
    echo = by_name(r.trace(META_TRACE), "tools/call echo")
    http = by_name(r.trace(TRACE), "POST /mcp")
    expect(echo["parentSpanId"] == "c7ad6b7169203332", f"{echo}")
    expect({"traceId": TRACE, "spanId": http["spanId"]}.items() <=
           echo["links"][0].items(), f"links {echo.get('links')}")
    close(r)


def test_otel_sampling_is_parent_based(h):
    """otel_sample 0: an untraced request exports nothing, a sampled
    parent is honoured; a parent that says not sampled is not traced but
    passed on (flags 00)."""
    r = receiver(h)
    envf = os.path.join(h.workdir, "env0.txt")
    d = start(h, r, env_tool(envf), otel_sample="0")
    sid = d.initialize()
    d.call(sid, "echo", {"text": "untraced"})
    unsampled = f"00-{META_TRACE}-c7ad6b7169203332-00"
    id = d.new_id()
    d.post(sid, tool_call("envtool", {}, id),
           headers={"traceparent": unsampled}).rpc(id)
    env = read_env(envf)
    expect(env.get("TRACEPARENT", "").startswith(f"00-{META_TRACE}-") and
           env["TRACEPARENT"].endswith("-00") and
           "c7ad6b7169203332" not in env["TRACEPARENT"],
           f"unsampled context passed on: {env.get('TRACEPARENT')!r}")
    id = d.new_id()
    d.post(sid, tool_call("echo", {"text": "t"}, id),
           headers={"traceparent": TP}).rpc(id)
    spans = r.wait_spans(lambda s: any(x["name"] == "eventlog commit" and
                                       x["traceId"] == TRACE for x in s))
    # Spans leave in the order they end: what came before is in already.
    expect({s["traceId"] for s in spans} == {TRACE},
           f"traces other than the sampled one: "
           f"{sorted({s['traceId'] for s in spans})}")
    close(r)


def test_otel_upstreams_carry_the_context(h):
    """A stdio and an HTTP upstream get params._meta.traceparent; the
    HTTP one also the traceparent header; each request is a CLIENT span
    under the call; a sampling request to the client is a CLIENT span
    with its round trip, carrying _meta.traceparent."""
    sys.path.insert(0, HERE)
    from test_upstream import HttpFake, http_upstream, upstream, wait_for
    r = receiver(h)
    f = HttpFake(h)
    try:
        lines = upstream("io", "prefix io_") + \
            http_upstream("web", f.url, "prefix web_")
        d = start(h, r, lines)
        sid = d.initialize()
        wait_for(lambda: _listed(d, sid, {"io_echo", "web_echo"}),
                 "both upstreams' tools")
        metas = {}
        for name in ("io_echo", "web_echo"):
            id = d.new_id()
            reply = d.post(sid, tool_call(name, {"meta": True}, id),
                           headers={"traceparent": TP})
            metas[name] = json.loads(result_text(reply.rpc(id)))
        spans = r.wait_spans(lambda s: sum(1 for x in s if x["kind"] == 3
                                           and x["traceId"] == TRACE) >= 2)
        clients = [s for s in r.trace(TRACE) if s["kind"] == 3 and
                   attr(s, "mcp.method.name") == "tools/call"]
        for name, transport in (("io_echo", "pipe"), ("web_echo", "tcp")):
            call = by_name(r.trace(TRACE), f"tools/call {name}")
            mine = [c for c in clients if c["parentSpanId"] ==
                    call["spanId"]]
            expect(len(mine) == 1 and
                   attr(mine[0], "network.transport") == transport,
                   f"{name}: upstream client span {mine}")
            tp = metas[name].get("traceparent", "")
            expect(tp == f"00-{TRACE}-{mine[0]['spanId']}-01",
                   f"{name}: _meta.traceparent {tp!r} for span "
                   f"{mine[0]['spanId']}")
        web = [ln for ln in f.log().splitlines() if "POST tools/call" in ln]
        want = metas["web_echo"]["traceparent"]
        expect(web and web[-1].endswith(f"traceparent={want}"),
               f"the HTTP upstream's header: {web[-1:]}")

        # sampling/createMessage from the upstream, answered by us.
        id = d.new_id()
        call = d.post_open(sid, tool_call("io_sample", {}, id),
                           headers={"traceparent": TP})
        req = None
        while req is None:
            m = call.next_message(tmo(10))
            expect(m is not None, "the sampling request")
            if m[1].get("method") == "sampling/createMessage":
                req = m[1]
        expect(req["params"]["_meta"]["traceparent"].startswith(
               f"00-{TRACE}-"), f"request to the client: {req['params']}")
        d.post(sid, {"jsonrpc": "2.0", "id": req["id"], "result": {
            "role": "assistant", "model": "m",
            "content": {"type": "text", "text": "t"}}})
        call.rpc(id)
        spans = r.wait_spans(lambda s: any(
            x["name"] == "sampling/createMessage" for x in s))
        s = by_name(spans, "sampling/createMessage")
        expect(s["kind"] == 3 and s["traceId"] == TRACE and
               req["params"]["_meta"]["traceparent"] ==
               f"00-{TRACE}-{s['spanId']}-01" and
               attr(s, "jsonrpc.request.id") == req["id"], f"{s}")
    finally:
        f.stop()
    close(r)


def _listed(d, sid, names):
    id = d.new_id()
    tools = d.post(sid, rpc("tools/list", {}, id)).rpc(id)["result"]
    return names <= {t["name"] for t in tools["tools"]}


def test_otel_token_check_and_key_set_fetch(h):
    """A token check is a span of the request; its jwks_uri fetch a
    CLIENT span under it, and the key server gets its traceparent."""
    sys.path.insert(0, HERE)
    from test_auth import auth_lines, bearer, key, token
    r = receiver(h)
    srv = authkit.JwksServer(authkit.jwks(key("rsa1").jwk()))
    try:
        d = start(h, r, auth_lines(jwks_uri=srv.url("/jwks")))
        srv.wait_fetches(1, tmo(10))
        # A rotated key: this token's check fetches the key set again.
        srv.set_keys(authkit.jwks(key("rot-otel").jwk()))
        tok = token(key("rot-otel"))
        reply = d.initialize_reply(headers={**bearer(tok),
                                            "traceparent": TP})
        expect(reply.status == 200, f"initialize HTTP {reply.status}")
        spans = r.wait_spans(lambda s: any(x["name"] == "GET" and
                                           x["traceId"] == TRACE
                                           for x in s))
        check = by_name(r.trace(TRACE), "token check")
        fetch = by_name(r.trace(TRACE), "GET")
        http = by_name(r.trace(TRACE), "POST /mcp")
        expect(check["parentSpanId"] == http["spanId"] and
               attr(check, "mcpd.auth.result") == "ok", f"{check}")
        expect(fetch["kind"] == 3 and
               fetch["parentSpanId"] == check["spanId"] and
               attr(fetch, "http.response.status_code") == 200 and
               attr(fetch, "url.full") == srv.url("/jwks"), f"{fetch}")
        expect(srv.traceparents[1:2] ==
               [f"00-{TRACE}-{fetch['spanId']}-01"] and
               srv.traceparents[0] is None,
               f"jwks_uri's traceparent {srv.traceparents}")
    finally:
        srv.close()
    close(r)


def test_otel_introspection_request_carries_the_context(h):
    """An opaque token's introspection is a CLIENT span under the token
    check, and the endpoint gets its traceparent."""
    sys.path.insert(0, HERE)
    from test_auth import _introspected, auth_lines, bearer, write
    r = receiver(h)
    srv = authkit.IntrospectionServer("mcpd-rs", "intro-secret")
    try:
        srv.answers = {"opaque-otel": _introspected()}
        secret = write(h, "client-secret", "intro-secret\n")
        d2 = start(h, r, auth_lines(scopes="mcp", introspection=(
            f"{srv.url('/introspect')} mcpd-rs {secret}")))
        reply = d2.initialize_reply(headers={**bearer("opaque-otel"),
                                             "traceparent": TP})
        expect(reply.status == 200, f"initialize HTTP {reply.status}")
        r.wait_spans(lambda s: any(x["name"] == "POST" and
                                   x["traceId"] == TRACE for x in s))
        check = by_name(r.trace(TRACE), "token check")
        post = by_name(r.trace(TRACE), "POST")
        expect(post["kind"] == 3 and post["parentSpanId"] ==
               check["spanId"] and srv.traceparents[-1] ==
               f"00-{TRACE}-{post['spanId']}-01",
               f"introspection span {post}, header {srv.traceparents}")
    finally:
        srv.close()
    close(r)


def test_otel_receiver_down_or_slow_serves_on(h):
    """No receiver: requests are served, spans past otel_queue are
    dropped and counted, the queue stays within its bound. A receiver
    that answers slowly holds nothing up either."""
    r = receiver(h)
    port = r.port
    r.close()                       # nothing listens there now
    d = h.start(otel_endpoint=f"http://127.0.0.1:{port}", otel_queue="16",
                otel_batch="4", otel_interval_ms="10", otel_timeout="1")
    sid = d.initialize()
    for i in range(40):
        d.call(sid, "echo", {"text": str(i)})
    wait_prom(d, 'mcpd_otel_spans_dropped_total{reason="queue_full"}',
              lambda v: v > 0, "spans dropped")
    expect(prom(d, "mcpd_otel_queue_spans") <= 16, "queue past its bound")
    d.assert_alive(sid, "with the receiver down")

    slow = Receiver()
    slow.delay = 3.0
    try:
        d2 = h.start(otel_endpoint=slow.url, otel_interval_ms="10",
                     otel_queue="32", otel_batch="8")
        sid2 = d2.initialize()
        for i in range(60):
            d2.call(sid2, "echo", {"text": str(i)})
        expect(prom(d2, "mcpd_otel_queue_spans") <= 32, "queue bound")
        wait_prom(d2, 'mcpd_otel_spans_dropped_total{reason="queue_full"}',
                  lambda v: v > 0, "spans dropped (slow)")
        d2.assert_alive(sid2, "with a slow receiver")
    finally:
        slow.close()


def test_otel_flush_at_exit(h):
    """Spans still queued at exit are sent: the interval is a minute, so
    they leave only with the flush on SIGTERM. They carry otel_header's
    value, read from its file, which no log line shows."""
    r = receiver(h)
    secret = h.write("otel-auth", "Bearer otel-s3cret\n")
    d = start(h, r, [f"otel_header Authorization {secret}"],
              otel_interval_ms="60000")
    sid = d.initialize()
    id = d.new_id()
    d.post(sid, tool_call("echo", {"text": "x"}, id),
           headers={"traceparent": TP}).rpc(id)
    expect(not r.spans, "sent before the interval")
    d.stop()
    r.wait_spans(lambda s: any(x["name"] == "tools/call echo" for x in s),
                 what="the spans flushed at exit")
    expect(all(hd.get("authorization") == "Bearer otel-s3cret"
               for hd, _ in r.requests), "otel_header on every export")
    expect("otel-s3cret" not in d.stderr_text(), "the header in the log")
    close(r)


def test_otel_task_polls_join_its_trace(h):
    """A task is a span of its tools/call's trace; a tasks/get without
    any trace context is traced into the task's trace (the record keeps
    it), linked to the request's own span."""
    from test_tasks import EXT, FIXTURES, _req, _terminal
    r = receiver(h)
    d = start(h, r, **FIXTURES)
    sid = d.initialize(LATEST)
    id = d.new_id()
    res = d.post(sid, rpc("tools/call", {
        "name": "slow_compute", "arguments": {"seconds": 0},
        "_meta": EXT}, id), headers={"traceparent": TP}).rpc(id)
    tid = res["result"]["taskId"]
    _terminal(d, sid, tid)
    spans = r.wait_spans(lambda s: any(x["name"] == "tasks/get" and
                                       x["traceId"] == TRACE for x in s))
    task = by_name(r.trace(TRACE), "task slow_compute")
    call = by_name(r.trace(TRACE), "tools/call slow_compute")
    poll = by_name(r.trace(TRACE), "tasks/get")
    expect(task["parentSpanId"] == call["spanId"] and
           poll["parentSpanId"] == task["spanId"] and
           attr(poll, "mcpd.task.handle") and
           tid not in json.dumps(spans), "task spans (and no task id)")
    # The poll's own request is another trace, linked.
    get = {s["spanId"] for s in spans if s["name"] == "tasks/get" and
           s["traceId"] != TRACE and s["kind"] == 2}
    expect(any(link["spanId"] in get for link in poll.get("links", [])),
           f"poll links {poll.get('links')}")
    close(r)


def test_otel_mrtr_round_on_another_instance_same_trace(h):
    """An MRTR round taken by another instance (same state key) goes on
    in the trace of the round that asked: requestState carries it."""
    from test_stateless import FIXTURES as SFIX, _round
    r = receiver(h)
    key = h.write("state.key", "k" * 64 + "\n")
    a = start(h, r, SFIX + (f"state_key_file {key}",))
    b = start(h, r, SFIX + (f"state_key_file {key}",))
    name = "test_input_required_result_elicitation"
    _, msg = _round(a, name)
    state = msg["result"]["requestState"]
    answer = {"user_name": {"action": "accept", "content": {"name": "Bo"}}}
    _, msg = _round(b, name, answer, state)
    expect(result_text(msg) == "Hello, Bo!", f"{msg!r}")
    spans = r.wait_spans(lambda s: len([x for x in s if x["name"] ==
                                        f"tools/call {name}"]) >= 2)
    rounds = [s for s in spans if s["name"] == f"tools/call {name}"]
    ra = [s for s in rounds if s["_resource"]["service.instance.id"] ==
          instance_id(a)]
    rb = [s for s in rounds if s["_resource"]["service.instance.id"] ==
          instance_id(b)]
    expect(len(ra) == 1 and len(rb) == 1, f"one round on each: {rounds}")
    ra, rb = ra[0], rb[0]
    expect(rb["traceId"] == ra["traceId"] and
           rb["parentSpanId"] == ra["spanId"],
           f"round 2 {rb['traceId']}/{rb.get('parentSpanId')} under "
           f"round 1 {ra['traceId']}/{ra['spanId']}")
    close(r)


def test_otel_task_polled_on_another_instance(h):
    """Redis: a task made on A (in the client's trace) and polled on B by
    a request with no trace context: B's poll is in the task's trace."""
    need_shared_redis()
    from test_tasks import EXT, FIXTURES, _get, _terminal
    r = receiver(h)
    a = start(h, r, **FIXTURES)
    b = start(h, r, **FIXTURES)
    sa, sb = a.initialize(LATEST), b.initialize(LATEST)
    id = a.new_id()
    res = a.post(sa, rpc("tools/call", {
        "name": "slow_compute", "arguments": {"seconds": 0},
        "_meta": EXT}, id), headers={"traceparent": TP}).rpc(id)
    tid = res["result"]["taskId"]
    _terminal(a, sa, tid)
    _get(b, sb, tid)

    def b_polled(spans):
        owner = {x["_resource"]["service.instance.id"] for x in spans
                 if x["name"] == "task slow_compute"}
        return owner and any(x["name"] == "tasks/get" and
                             x["traceId"] == TRACE and
                             x["_resource"]["service.instance.id"] not in
                             owner for x in spans)
    r.wait_spans(b_polled, what="B's poll in the task's trace")
    task = by_name(r.trace(TRACE), "task slow_compute")
    polls = [s for s in r.trace(TRACE) if s["name"] == "tasks/get" and
             s["_resource"]["service.instance.id"] !=
             task["_resource"]["service.instance.id"]]
    expect(polls and all(p["parentSpanId"] == task["spanId"]
                         for p in polls), f"B's polls {polls}")
    close(r)


def test_otel_resume_after_the_call_ended_same_trace(h):
    """A stream read again with Last-Event-ID once its call has ended (its
    stream object gone) is still traced into the call's trace."""
    r = receiver(h)
    d = start(h, r)
    sid = d.initialize()
    id = d.new_id()
    reply = d.post(sid, tool_call("stream", {"n": 3}, id),
                   headers={"traceparent": TP})
    first = [e for e in reply.events if e.data][0]
    again = d.get_sse(sid, last_event_id=first.id)
    expect(again.status == 200, f"resume: HTTP {again.status}")
    again.events_until_close(tmo(10))
    spans = r.wait_spans(lambda s: any(x["name"] == "stream resume"
                                       for x in s))
    res = by_name(spans, "stream resume")
    call = by_name(r.trace(TRACE), "tools/call stream")
    expect(res["traceId"] == TRACE and res["parentSpanId"] ==
           call["spanId"] and attr(res, "mcpd.last_event_id") == first.id,
           f"resume {res}")
    close(r)


def test_otel_resume_on_another_instance_same_trace(h):
    """Redis: a call begun on A, cut, resumed on B (with no trace context
    of its own): B's resume is a span of the call's trace (the call
    record t:K), linked to B's request span."""
    need_shared_redis()
    r = receiver(h)
    a = start(h, r)
    b = start(h, r)
    sid = a.initialize()
    id, call = a.call_open(sid, "stream", {"n": 6, "interval_ms": 100},
                           headers={"traceparent": TP})
    first = call.next_event(tmo(10))
    while first is not None and not first.data:
        first = call.next_event(tmo(10))
    expect(first is not None and first.id, "a first event with an id")
    call.cut()
    resumed = b.get_sse(sid, last_event_id=first.id)
    expect(resumed.status == 200, f"resume on B: HTTP {resumed.status}")
    resumed.events_until_close(tmo(15))
    # A's call span and B's resume span end about together, on two
    # instances that export each on its own timer: either comes first.
    spans = r.wait_spans(lambda s: {"stream resume", "tools/call stream"}
                         <= {x["name"] for x in s})
    res = by_name(spans, "stream resume")
    callspan = by_name(r.trace(TRACE), "tools/call stream")
    expect(res["traceId"] == TRACE and
           res["parentSpanId"] == callspan["spanId"],
           f"resume span {res['traceId']}/{res.get('parentSpanId')}, call "
           f"{callspan['spanId']}")
    expect(res["_resource"]["service.instance.id"] !=
           callspan["_resource"]["service.instance.id"],
           "the resume was B's")
    gets = [s for s in spans if s["name"] == "GET /mcp"]
    expect(any(link["spanId"] in {g["spanId"] for g in gets}
               for link in res.get("links", [])), "linked to B's request")
    close(r)


def test_otel_reload_turns_it_on_and_off(h):
    """otel_endpoint and otel_sample are taken up by SIGHUP."""
    from test_reload import _reload
    r = receiver(h)
    d = h.start()
    sid = d.initialize()
    _reload(d, [f"otel_endpoint {r.url}", "otel_interval_ms 50"])
    id = d.new_id()
    d.post(sid, tool_call("echo", {"text": "on"}, id),
           headers={"traceparent": TP}).rpc(id)
    r.wait_spans(lambda s: any(x["name"] == "tools/call echo" for x in s),
                 what="spans once tracing was turned on")
    # Sampling every root, then none: a root's spans stop.
    _reload(d, [f"otel_endpoint {r.url}", "otel_interval_ms 50",
                "otel_sample 0"])
    d.call(sid, "echo", {"text": "off"})
    id = d.new_id()
    d.post(sid, tool_call("echo", {"text": "parent"}, id),
           headers={"traceparent": f"00-{META_TRACE}-c7ad6b7169203332-01"}
           ).rpc(id)
    spans = r.wait_spans(lambda s: any(x["traceId"] == META_TRACE and
                                       x["name"] == "tools/call echo"
                                       for x in s))
    expect({s["traceId"] for s in spans} == {TRACE, META_TRACE},
           f"a root sampled at ratio 0: "
           f"{sorted({s['traceId'] for s in spans})}")
    close(r)
