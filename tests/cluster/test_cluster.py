"""Issue 12's tests: many instances behind a load balancer (nginx with
conf/nginx.conf, three mcpd on one Redis). Any instance serves any session;
a call's stream resumes exactly once wherever the resume lands; a drain or a
crash loses nothing the contract promises (docs/protocol.md)."""

import json
import os
import random
import subprocess
import threading
import time

from cluster import ROOT
from mcpd_harness import (Skip, Timeout, assert_rpc_error, check_ids,
                          expect, is_progress, is_response, message_events,
                          parse_event_id, result_text, rpc, tmo, tool_call)


# --------------------------------------------------------------------------
# helpers

SIZE = 65536        # 400 such events: far beyond loopback's socket buffers


def _need_sdk(package):
    """tests/sdk/node_modules/@modelcontextprotocol/PACKAGE, which the
    node scripts import; Skip without it."""
    path = os.path.join(ROOT, "tests", "sdk", "node_modules",
                        "@modelcontextprotocol", package)
    if not os.path.isdir(path):
        raise Skip(f"{path} is missing: run `make deps` "
                   "(scripts/install-deps)")


def _check_stream_call(events, id, n, token, what):
    """The message events of a `stream` call (n, progress token) seen by a
    client across all its connections: ids K-1..K-(n+1) of one stream, each
    once, in order; progress i at K-i; the result `done n` once, last."""
    msgs = message_events(events)
    expect(msgs, f"{what}: no events")
    final = msgs[-1].json
    expect(not (is_response(final) and "error" in final), f"{what}: ended "
           f"at {msgs[-1].id} with an error: {json.dumps(final)[:300]}")
    k, last = check_ids(events, 1, what=what)
    expect(last == n + 1, f"{what}: the last id is {k}-{last}, expected "
           f"{k}-{n + 1} ({n} progress notifications and the result)")
    msgs = [e.json for e in msgs]
    for i, msg in enumerate(msgs[:-1], 1):
        expect(is_progress(msg) and msg["params"].get("progressToken") ==
               token and msg["params"].get("progress") == i,
               f"{what}: event {k}-{i} is {json.dumps(msg)[:200]}, expected "
               f"progress {i} of token {token!r}")
    expect(is_response(final, id), f"{what}: the last event is "
           f"{json.dumps(final)[:300]}, expected the response to id {id}")
    expect(result_text(final) == f"done {n}", f"{what}: result "
           f"{json.dumps(final)[:300]}, expected \"done {n}\"")


def _resume(front, sid, cursor, deadline, what):
    """GET with Last-Event-ID through nginx until a 200 SSE response
    (a refused connection or a 502/503 while an instance restarts is retried:
    a GET is safe to retry). Returns the open reply."""
    while True:
        try:
            g = front.get_sse(sid, cursor, timeout=5)
            if g.status == 200 and g.is_sse:
                return g
            expect(g.status in (502, 503), f"{what}: resume {cursor} -> HTTP "
                   f"{g.status} {g.body[:300]!r}")
            failure = f"HTTP {g.status}"
        except (OSError, Timeout) as e:
            failure = repr(e)
        expect(time.monotonic() < deadline, f"{what}: resume {cursor} kept "
               f"failing until the deadline (last: {failure})")
        time.sleep(0.1)


# --------------------------------------------------------------------------
# 1. the official SDK client, cut at 5 points, through nginx


def test_sdk_client_resumes_through_nginx_exactly_once(c):
    """tests/sdk/cluster_resume.mjs: the official TypeScript SDK client
    through a proxy in front of nginx; a `stream` call cut at 5 different
    points (RST in the middle of an event) resumes exactly once each time,
    wherever nginx sends the resume."""
    script = os.path.join(ROOT, "tests", "sdk", "cluster_resume.mjs")
    _need_sdk("sdk")
    url = f"http://127.0.0.1:{c.nginx_port}/mcp"
    env = dict(os.environ, TEST_TIMEOUT_MS=str(int(tmo(50) * 1000)))
    p = subprocess.run(["node", script, url], capture_output=True,
                       text=True, timeout=tmo(55), env=env)
    out = p.stdout + p.stderr
    print("\n".join("  " + line for line in out.splitlines()))
    counts = [line for line in out.splitlines()
              if line.startswith("cluster_resume: ")]
    expect(counts, f"cluster_resume.mjs printed no summary (exit "
           f"{p.returncode})")
    passed, failed = (int(w) for w in
                      counts[-1].split(": ")[1].split()[0:4:2])
    expect(failed == 0 and passed == 5 and p.returncode == 0,
           f"SDK resume through nginx: {passed} of 5 cut points passed")


test_sdk_client_resumes_through_nginx_exactly_once.timeout = 60


def test_sdk_v2_client_mrtr_rounds_through_nginx(c):
    """tests/sdk/client_v2_test.mjs through nginx: the official v2 client's
    elicitation through MRTR (2026-07-28), whose rounds nginx spreads over
    the instances; none has a state_key_file, so the requestState one seals
    opens on the others only with the key the log shares (issue 22)."""
    script = os.path.join(ROOT, "tests", "sdk", "client_v2_test.mjs")
    _need_sdk("client")
    url = f"http://127.0.0.1:{c.nginx_port}/mcp"
    env = dict(os.environ, TEST_TIMEOUT_MS=str(int(tmo(25) * 1000)))
    for attempt in range(3):    # round-robin: rounds land on 2 instances
        p = subprocess.run(["node", script, url], capture_output=True,
                           text=True, timeout=tmo(30), env=env)
        out = p.stdout + p.stderr
        print("\n".join("  " + line for line in out.splitlines()))
        expect(p.returncode == 0 and "FAIL" not in out,
               f"the v2 client through nginx (run {attempt + 1}) failed")


test_sdk_v2_client_mrtr_rounds_through_nginx.timeout = 100


# --------------------------------------------------------------------------
# 2. a 400-event call resumed on other instances (block, stream_window 256)


def test_400_event_call_cut_early_completes_on_other_instances(c):
    """A `stream` call of 400 big events on A (block policy, stream_window
    256) read slowly and cut after 10 events; resumed with a direct GET on
    B, cut again after 150 more; resumed on C to the end. A's producer must
    learn of the delivery on B and C (with only its own view to tell it, it
    stays paused 256 events past what that view wrote): every event
    arrives, exactly once, in order."""
    a, b, cc = c.instances
    sid = a.initialize()
    n = 400
    # A slow reader of big events: A's view cannot write far ahead of what
    # the client read (loopback's kernel buffers take megabytes).
    id = a.new_id()
    r = a.open_slow("POST", sid, tool_call("stream", {"n": n, "size": SIZE},
                                           id, "big"), chunk=4096,
                    pause=0.001)
    expect(r.status == 200 and r.is_sse, f"stream on A -> HTTP {r.status}")
    got = r.next_messages(10, timeout=10, what="on A")
    r.cut()
    for d, count in ((b, 150), (cc, None)):
        k, last = check_ids(got, 1, what="so far")
        cursor = f"{k}-{last}"
        g = d.get_sse(sid, cursor)
        expect(g.status == 200 and g.is_sse, f"resume {cursor} on {d.name} "
               f"-> HTTP {g.status} {'' if g.is_sse else g.body[:300]!r}")
        if count is not None:
            got += g.next_messages(count, timeout=10,
                              what=f"resumed from {cursor} on {d.name}")
            g.cut()
            continue
        try:
            got += message_events(g.events_until_close(20))
        except Timeout:
            seen = message_events(g.events)
            raise AssertionError(
                f"the call stalled: the resume from {cursor} on {d.name} "
                f"stopped at {seen[-1].id if seen else cursor} (of "
                f"{k}-{n + 1}) and stayed silent; {a.name} committed "
                f"{a.metric('events_committed')} events, paused its "
                f"producer {a.metric('producers_paused')} times") from None
    _check_stream_call(got, id, n, "big", "400 events over A, B, C")


test_400_event_call_cut_early_completes_on_other_instances.timeout = 60


# --------------------------------------------------------------------------
# 3. DELETE through one instance: 404 everywhere


def test_delete_through_one_instance_404_on_every_other(c):
    """DELETE through A. B, which has an open standalone GET of the
    session, and C, which runs a call of it, drop it at once (their
    responses end), and then every instance answers 404 to a request, a
    notification, a GET and a GET with a cursor (docs/protocol.md)."""
    a, b, cc = c.instances
    sid = a.initialize()
    for d in c.instances:
        d.assert_alive(sid, f"on {d.name} before the DELETE")
    id, r = b.call_open(sid, "stream", {"n": 3}, "before")
    events = r.events_until_close()
    _check_stream_call(events, id, 3, "before", "a call on B")
    cursor = message_events(events)[-1].id
    standalone = b.get_sse(sid)
    expect(standalone.status == 200 and standalone.is_sse,
           f"standalone GET on B -> HTTP {standalone.status}")
    _, running = cc.call_open(sid, "stream", {"n": 1000, "interval_ms": 50},
                              "running")
    expect(running.status == 200 and running.is_sse,
           f"stream on C -> HTTP {running.status}")
    running.next_messages(1, timeout=10, what="the call on C")

    r = a.delete(sid)
    expect(r.status in (200, 204), f"DELETE through A -> HTTP {r.status}")
    for what, reply in (("the standalone GET on B", standalone),
                        ("the call's response on C", running)):
        try:
            reply.events_until_close(3)
        except Timeout:
            raise AssertionError(f"{what} still open 3 s after the session "
                                 "was deleted through A") from None

    for d in c.instances:
        where = f"on {d.name} after DELETE through {a.name}"
        r = d.post(sid, rpc("ping", None, d.new_id()))
        expect(r.status == 404, f"POST ping {where} -> HTTP {r.status} "
               f"{r.body[:200]!r}")
        r = d.post(sid, rpc("notifications/initialized"))
        expect(r.status == 404, f"POST notification {where} -> HTTP "
               f"{r.status} {r.body[:200]!r}")
        r = d.get_sse(sid, timeout=5)
        if r.status == 200:
            r.close()
        expect(r.status == 404, f"GET {where} -> HTTP {r.status}")
        r = d.get_sse(sid, cursor, timeout=5)
        if r.status == 200:
            r.close()
        expect(r.status == 404, f"GET Last-Event-ID {cursor} {where} -> "
               f"HTTP {r.status}")


# --------------------------------------------------------------------------
# 3b. an instance that answers 503: retried where safe, and only there


def test_nginx_retries_a_503_only_where_nothing_was_done(c):
    """One instance is cut off from Redis (it listens, unready, and answers
    503 "Event log unavailable"). Through nginx, no GET of a session ever
    sees that 503 (retried on another instance: a GET changes nothing),
    while a POST's 503 reaches the client as it is, with its Retry-After
    (nginx never resends a POST that reached an instance)."""
    a = c.instances[0]
    sid = a.initialize()
    rc, _ = c.drain_stop(2)
    expect(rc == 0, f"exit status {rc} after SIGTERM")
    bad = c.restart_unready(2)
    r = bad.request("GET", path="/readyz", timeout=5)
    expect(r.status == 503, f"{bad.name}: /readyz -> HTTP {r.status}")
    r = bad.get_sse(sid, timeout=5)
    expect(r.status == 503, f"{bad.name}: GET directly -> HTTP {r.status}, "
           f"expected its 503")
    front = c.front
    gets, posts = [], []
    # Round robin per nginx worker over three instances: each worker
    # that gets three requests sends one to the unready instance.
    for i in range(12):
        g = front.get_sse(sid, timeout=10)
        gets.append(g.status)
        g.close()
        p = front.post(sid, rpc("ping", None, front.new_id()))
        posts.append((p.status, p.header("Retry-After")))
    expect(all(s == 200 for s in gets), f"GETs through nginx -> {gets}: a "
           f"GET's 503 was passed to the client instead of being retried")
    expect(all(s in (200, 503) for s, _ in posts), f"POSTs through nginx "
           f"-> {posts}")
    refused = [p for p in posts if p[0] == 503]
    expect(refused, f"no POST reached {bad.name} in 12 ({posts}): the test "
           "proves nothing about POSTs")
    expect(all(ra == "1" for _, ra in refused), f"POST 503s without their "
           f"Retry-After: {refused}")
    print(f"  {len(refused)} of 12 POSTs answered 503 by {bad.name}; "
          f"every GET retried elsewhere")


# --------------------------------------------------------------------------
# 4. elicitation and sampling answered through another instance


def _ask_and_answer_elsewhere(asker, answerer, sid, tool, args, method,
                              answer):
    id, r = asker.call_open(sid, tool, args)
    expect(r.status == 200 and r.is_sse, f"{tool} on {asker.name} -> HTTP "
           f"{r.status}")
    m = r.next_message(10)
    expect(m is not None, f"{tool}: no request on {asker.name}'s stream")
    req = m[1]
    expect(req.get("method") == method and "id" in req,
           f"{tool}: first message {json.dumps(req)[:300]}, expected a "
           f"{method} request")
    t0 = time.monotonic()
    p = answerer.post(sid, {"jsonrpc": "2.0", "id": req["id"],
                            "result": answer})
    expect(p.status == 202, f"the answer POSTed to {answerer.name} -> HTTP "
           f"{p.status} {p.body[:200]!r}")
    m = r.next_message(10)
    took = time.monotonic() - t0
    expect(m is not None, f"{tool}: {asker.name}'s stream ended without "
           "the result")
    res = m[1]
    expect(is_response(res, id) and "result" in res and
           not res["result"].get("isError"),
           f"{tool}: {json.dumps(res)[:300]}")
    print(f"  {tool}: answered through {answerer.name}, result on "
          f"{asker.name} {took * 1000:.1f} ms later")
    return result_text(res)


def test_elicitation_and_sampling_answered_through_another_instance(c):
    """A call on A asks the client (elicitation/create); the answer is
    POSTed to B; A's call ends with it. The same for sampling asked on B
    and answered through C."""
    a, b, cc = c.instances
    sid = a.initialize()
    content = {"username": "cluster", "email": "cluster@example.com"}
    text = _ask_and_answer_elsewhere(
        a, b, sid, "test_elicitation", {"message": "who are you?"},
        "elicitation/create",
        {"action": "accept", "content": content})
    expect("action=accept" in text and
           json.dumps(content, separators=(",", ":")) in text,
           f"elicitation result {text!r} does not carry the answer given "
           "through B")
    text = _ask_and_answer_elsewhere(
        b, cc, sid, "test_sampling", {"prompt": "across"},
        "sampling/createMessage",
        {"role": "assistant", "model": "m",
         "content": {"type": "text", "text": "from C"}})
    expect(text == "LLM response: from C", f"sampling result {text!r}, "
           "expected the answer given through C")


# --------------------------------------------------------------------------
# 5. rolling restart under load


class _LoadClient(threading.Thread):
    """One session through nginx, `stream` calls of a few hundred ms one
    after the other, every third call a `notify` to its standalone stream
    (kept open by a _Standalone). Half of the stream calls the client cuts
    itself after a few events; any response that ends without the result
    (a cut, a drain's end with retry:) is resumed with Last-Event-ID
    through nginx. Each call must end with every event once, in order, and
    its result once."""

    def __init__(self, c, idx, stop):
        super().__init__(daemon=True, name=f"load{idx}")
        self.front = c.new_front()
        self.front.cluster = c
        self.rng = random.Random(idx)
        self.idx = idx
        self.stop = stop
        self.calls = 0
        self.resumes = 0
        self.ended = 0          # responses the server ended without result
        self.notified = 0       # messages sent to the standalone stream
        self.standalone = None
        self.failures = []
        self.done = threading.Semaphore(0)

    def run(self):
        try:
            self.sid = self.front.initialize()
        except (AssertionError, OSError) as e:
            self.failures.append(f"initialize through nginx: {e}")
            return
        self.standalone = _Standalone(self)
        self.standalone.start()
        while not self.stop.is_set():
            try:
                if self.calls % 3 == 2:
                    self.notify()
                else:
                    self.one_call()
            except (AssertionError, OSError) as e:
                self.failures.append(f"call {self.calls + 1}: {e}")
            self.calls += 1
            self.done.release()

    def notify(self):
        """notify n=3: three log messages on the standalone stream (a POST
        answered by one instance, delivered wherever the GET is)."""
        f = self.front
        id = f.new_id()
        r = f.post(self.sid, tool_call("notify", {"n": 3}, id))
        expect(r.status == 200, f"notify: POST -> HTTP {r.status} "
               f"{r.body[:200]!r}")
        msg = r.rpc(id)
        expect(result_text(msg) == "queued 3", f"notify: {msg!r}")
        self.notified += 3

    def one_call(self):
        f = self.front
        # A few hundred ms; every fourth call 1.6 s, longer than
        # drain_delay, so that drains also wait for running calls and end
        # views of calls running elsewhere.
        if self.calls % 4 == 3:
            n, interval = 20, 80
        else:
            n, interval = self.rng.randint(6, 14), 40
        token = f"c{self.idx}.{self.calls}"
        cut_after = self.rng.choice([None, self.rng.randint(1, n)])
        id = f.new_id()
        what = f"client {self.idx} call {self.calls + 1} (n={n})"
        deadline = time.monotonic() + tmo(30)
        r = f.post_open(self.sid, tool_call("stream", {"n": n,
                        "interval_ms": interval}, id, token))
        expect(r.status == 200 and r.is_sse, f"{what}: POST -> HTTP "
               f"{r.status} {r.body[:200] if not r.is_sse else ''!r}")
        events = []
        cursor = None
        retry_ms = 1000
        while True:
            try:
                while True:
                    ev = r.next_event(10)
                    if ev is None:
                        self.ended += 1
                        break
                    if ev.retry is not None:
                        retry_ms = ev.retry
                    if ev.id:
                        cursor = ev.id
                    if ev.is_message:
                        events.append(ev)
                        if is_response(ev.json, id):
                            break
                        if len(events) == cut_after:
                            cut_after = None
                            r.cut()
                            break
            except Timeout:
                raise AssertionError(f"{what}: nothing for 10 s after "
                                     f"{cursor}") from None
            except OSError:
                pass            # torn by a dying connection: resume
            if events and is_response(events[-1].json, id):
                # The stream ends after the result: nothing else on it.
                try:
                    extra = message_events(r.events_until_close(5))
                except (Timeout, OSError):
                    extra = []
                r.close()
                expect(not extra, f"{what}: after the result: "
                       f"{[e.data[:100] for e in extra]}")
                break
            r.close()
            expect(cursor is not None, f"{what}: the response ended "
                   "before any event id")
            expect(time.monotonic() < deadline, f"{what}: not done in 30 s")
            self.resumes += 1
            time.sleep(min(retry_ms, 1000) / 1000)
            r = _resume(f, self.sid, cursor, deadline, what)
        _check_stream_call(events, id, n, token, what)


class _Standalone(threading.Thread):
    """The session's standalone GET stream through nginx, kept open as the
    SDK keeps it: reopened with Last-Event-ID whenever it ends (a drain
    ends it with retry:) or breaks. Collects the log messages that the load
    client's notify calls send there."""

    def __init__(self, client):
        super().__init__(daemon=True, name=f"standalone{client.idx}")
        self.client = client
        self.front = client.front.cluster.new_front()
        self.halt = threading.Event()
        self.cond = threading.Condition()
        self.events = []
        self.reopened = 0

    def count(self):
        with self.cond:
            return len(self.events)

    def run(self):
        what = f"client {self.client.idx} standalone stream"
        sid = self.client.sid
        cursor = None
        try:
            while not self.halt.is_set():
                g = _resume(self.front, sid, cursor,
                            time.monotonic() + tmo(15), what)
                try:
                    while not self.halt.is_set():
                        try:
                            ev = g.next_event(0.5)
                        except Timeout:
                            continue        # idle: look at halt again
                        if ev is None:
                            break
                        if ev.id:
                            cursor = ev.id
                        if ev.is_message:
                            with self.cond:
                                self.events.append(ev)
                                self.cond.notify_all()
                except OSError:
                    pass                    # torn: reopen
                g.close()
                if not self.halt.is_set():
                    self.reopened += 1
                    time.sleep(0.1)
        except AssertionError as e:
            self.client.failures.append(f"{what}: {e}")

    def check(self, notified, timeout):
        """Every notify message, once, in order, ids contiguous."""
        what = f"client {self.client.idx} standalone stream"
        end = time.monotonic() + tmo(timeout)
        with self.cond:
            while len(self.events) < notified and time.monotonic() < end:
                self.cond.wait(0.2)
            events = list(self.events)
        expect(len(events) == notified, f"{what}: {len(events)} messages "
               f"for {notified} sent by notify calls")
        if events:
            check_ids(events, parse_event_id(events[0].id)[1], what=what)
        got = [e.json.get("params", {}).get("data", {}).get("i")
               for e in events]
        expect(got == [1, 2, 3] * (notified // 3), f"{what}: messages "
               f"{got}, expected 1, 2, 3 per notify call, in order")


def test_rolling_restart_under_load_loses_nothing(c):
    """8 resuming clients through nginx while each instance in turn is
    drained (SIGTERM) and started again on its port: every call completes
    (0 failed), every event once and in order, every result once; every
    message sent to a standalone stream arrives once and in order, however
    often the drains ended the GET holding it."""
    delay, dtimeout = c.need("drain_delay", "drain_timeout")
    stop = threading.Event()
    clients = [_LoadClient(c, i, stop) for i in range(8)]
    for t in clients:
        t.start()

    def forget_done():
        # Calls done so far count for nothing after this point: the
        # semaphores keep every release since the start, so without this
        # calls_done would return at once after a restart.
        for t in clients:
            while t.done.acquire(blocking=False):
                pass

    def calls_done(count, timeout, what):
        for t in clients:
            end = time.monotonic() + tmo(timeout)
            for _ in range(count):
                if not t.done.acquire(timeout=max(0.0, end -
                                                  time.monotonic())):
                    raise AssertionError(
                        f"client {t.idx}: not {count} more calls done "
                        f"within {timeout}s {what}; failures: "
                        f"{t.failures[:3]}")

    try:
        calls_done(1, 15, "before the restarts")
        for i in range(len(c.instances)):
            name = c.instances[i].name
            rc, took = c.drain_stop(i)
            expect(rc == 0, f"{name}: exit status {rc} after SIGTERM")
            print(f"  {name} drained and exited in {took:.1f}s")
            forget_done()
            d = c.restart(i)
            c.wait_ready(d)
            # One at a time, as operators roll: the next instance is
            # drained only once this one serves calls through nginx again
            # (it committed events of a POST nginx sent it) and every
            # client got two more calls done. Draining the next while
            # nginx still counts this one as failed (max_fails=1
            # fail_timeout=2s, per worker) could leave nginx no live
            # upstream for a moment: 502 to a POST, nginx's, not mcpd's.
            d.wait_metric("events_committed", lambda v: v > 0, timeout=20,
                          what=f"{name} restarted serving a call")
            calls_done(2, 20, f"after {name} restarted")
    finally:
        stop.set()
        for t in clients:
            t.join(tmo(40))
        for t in clients:
            if t.standalone is not None:
                try:
                    t.standalone.check(t.notified, 10)
                except AssertionError as e:
                    t.failures.append(str(e))
                t.standalone.halt.set()
                t.standalone.join(tmo(10))
    calls = sum(t.calls for t in clients)
    resumes = sum(t.resumes for t in clients)
    ended = sum(t.ended for t in clients)
    reopened = sum(t.standalone.reopened for t in clients if t.standalone)
    failures = [f for t in clients for f in t.failures]
    print(f"  {calls} calls, {resumes} resumes ({ended} after a response "
          f"the server ended, the others after the client's own cuts), "
          f"standalone streams reopened {reopened} times, "
          f"{len(failures)} failed")
    expect(not any(t.is_alive() for t in clients), "a client is stuck")
    expect(not failures, f"{len(failures)} of {calls} calls failed during "
           f"the rolling restart:\n  " + "\n  ".join(failures[:10]) +
           f"\n{c.nginx_log()}")


test_rolling_restart_under_load_loses_nothing.timeout = 150


# --------------------------------------------------------------------------
# 6. kill -9 of the instance running a call


def test_kill9_of_the_running_instance_answers_within_lease_ttl(c):
    """A call runs on A; A is killed (-9). The client, cut, resumes through
    nginx (A refuses; nginx goes elsewhere): the rest of the events, then
    the JSON-RPC error for the call, within lease_ttl + 2 s of the kill."""
    (lease,) = c.need("lease_ttl")
    a = c.instances[0]
    sid = a.initialize()
    id, r = a.call_open(sid, "stream", {"n": 1000, "interval_ms": 50},
                        "k9")
    expect(r.status == 200 and r.is_sse, f"stream on A -> HTTP {r.status}")
    got = r.next_messages(5, timeout=10, what="on A")
    c.kill9(0)
    killed = time.monotonic()
    try:
        got += message_events(r.events_until_close(2))
    except (Timeout, OSError):
        pass
    bound = lease + 2
    deadline = killed + tmo(bound)
    final = None
    while final is None:
        k, last = check_ids(got, 1, what="before and after kill -9")
        g = _resume(c.front, sid, f"{k}-{last}", deadline,
                    "after kill -9")
        try:
            while True:
                m = g.next_message(max(0.05, deadline - time.monotonic()))
                if m is None:
                    break
                got.append(m[0])
                if is_response(m[1]):
                    final = m[1]
                    break
        except Timeout:
            raise AssertionError(
                f"no answer to the call {bound:.0f} s after kill -9 of the "
                f"instance running it (lease_ttl {lease:.0f} + 2 s); last "
                f"event {got[-1].id}") from None
        g.close()
    answered = time.monotonic() - killed
    check_ids(got, 1, what="the whole call")
    expect(is_response(final, id) and "error" in final,
           f"after kill -9 the call ended with {json.dumps(final)[:300]}, "
           f"expected a JSON-RPC error for id {id}")
    assert_rpc_error(final, id_null=False)
    print(f"  kill -9: the error {answered:.1f}s after the kill "
          f"(lease_ttl {lease:.0f})")
    expect(answered <= tmo(bound), f"the error came {answered:.1f}s after "
           f"kill -9, bound lease_ttl + 2 = {bound:.0f}s")


# --------------------------------------------------------------------------
# Issue 27: a call cut, its instance killed, resumed and answered elsewhere
# through nginx: one trace.


def test_call_resumed_and_answered_elsewhere_is_one_trace(c):
    """The three instances export spans (otel_endpoint) to a test
    receiver. A call on A carries the client's traceparent; A is killed
    (-9) mid-call; the client resumes through nginx with no trace context
    at all. The instance that serves the resume traces it into the call's
    trace (the call record t:K), under the call's span, and so does the
    one that answers the orphaned call (its "lease answer")."""
    from otlp_receiver import Receiver
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    rec = Receiver()
    try:
        c.conf.update({"otel_endpoint": rec.url, "otel_interval_ms": "50"})
        for i in range(len(c.instances)):
            c._stop_one(c.instances[i])
            c.wait_ready(c.restart(i))
        a = c.instances[0]
        sid = a.initialize()
        tp = f"00-{trace}-00f067aa0ba902b7-01"
        id, r = a.call_open(sid, "stream", {"n": 1000, "interval_ms": 50},
                            "tr", headers={"traceparent": tp})
        expect(r.status == 200 and r.is_sse, f"stream on A: {r.status}")
        got = r.next_messages(3, timeout=10, what="on A")
        c.kill9(0)
        deadline = time.monotonic() + tmo(20)
        final = None
        while final is None:
            k, last = check_ids(got, 1, what="before and after kill -9")
            g = _resume(c.front, sid, f"{k}-{last}", deadline, "traced")
            try:
                while final is None:
                    m = g.next_message(max(0.05,
                                           deadline - time.monotonic()))
                    if m is None:
                        break
                    got.append(m[0])
                    if is_response(m[1]):
                        final = m[1]
            except Timeout:
                raise AssertionError("no answer after kill -9") from None
            g.close()
        spans = rec.wait_spans(lambda s: {"stream resume", "lease answer"}
                               <= {x["name"] for x in s
                                   if x["traceId"] == trace},
                               timeout=tmo(15), what="resume and answer")
        mine = [s for s in spans if s["traceId"] == trace]
        resume = [s for s in mine if s["name"] == "stream resume"]
        answer = [s for s in mine if s["name"] == "lease answer"][0]
        # Both hang from the call's span (A's, never exported: killed).
        call = answer["parentSpanId"]
        expect(all(s["parentSpanId"] == call for s in resume),
               f"resume spans' parent {[s['parentSpanId'] for s in resume]}"
               f", the answer's {call}")
        # A, killed, never exported the call's span: the context came
        # from the call record.
        expect(not [s for s in spans if s["name"] == "tools/call stream"],
               "a span of the call exported")
        gets = {s["spanId"] for s in spans if s["name"] == "GET /mcp"}
        expect(any(link["spanId"] in gets for s in resume
                   for link in s.get("links", [])),
               "a resume span linked to its GET")
        expect(not rec.problems, f"OTLP mapping: {rec.problems[:3]}")
    finally:
        rec.close()


test_call_resumed_and_answered_elsewhere_is_one_trace.timeout = 90
