"""End-to-end tests of what mcpd processes sharing one Redis tell each other
(docs/architecture.md, "Messages between processes"): delivery progress
under the block policy, a session's deletion, and clients' answers to
server-to-client requests, each pushed on the session's channel.

Tests on the shared server (MCPD_TEST_REDIS_URL, as set by
scripts/with-redis) skip without one; tests that count Redis commands start
their own redis-server (`with private_redis(h) as rs:`) so that nothing else
is counted, and skip only when no redis-server binary is installed.
"""

from mcpd_harness import (LATEST, Timeout, assert_rpc_error, check_ids,
                          expect, is_progress, is_response, message_events,
                          need_shared_redis, parse_event_id, private_redis,
                          redis_calls, redis_command, redis_info,
                          result_text, rpc, tool_call)


def _adopt(d, other, sid):
    d.versions[sid] = other.versions.get(sid, LATEST)


# --------------------------------------------------------------------------
# 1. delivery progress under block


def test_redis_block_stream_resumed_on_another_process_completes(h):
    # A call on A produces 400 events under block (stream_window 256): A
    # may commit only 256 past what its client received. The client reads
    # 10 on A, cuts, and resumes on B: B's view tells A how far it got, so
    # the call goes on to its end, every event exactly once, in order.
    need_shared_redis()
    conf = {"backpressure_request": "block", "stream_window": 256}
    a = h.start(**conf)
    b = h.start(**conf)
    sid = a.initialize(LATEST)
    _adopt(b, a, sid)
    id, r = a.call_open(sid, "stream", {"n": 400}, "blk")
    expect(r.status == 200 and r.is_sse, f"stream on A -> HTTP {r.status}")
    got = r.next_messages(10)
    k, last = check_ids(got, 1, what="stream on A")
    r.cut()
    g = b.get_sse(sid, f"{k}-{last}")
    expect(g.status == 200 and g.is_sse, f"resume on B -> HTTP {g.status} "
           f"{'' if g.is_sse else g.body[:300]!r}")
    try:
        events = g.events_until_close(30)
    except Timeout:
        msgs = message_events(g.events)
        raise AssertionError(
            f"the resume on B stopped at "
            f"{msgs[-1].id if msgs else 'nothing'} and never ended: A's "
            f"producer never heard that B's client received its entries")
    msgs = message_events(events)
    _, head = check_ids(msgs, last + 1, k, "resume on B of A's block call")
    expect(head == 401, f"resume on B ended at {k}-{head}, expected "
           f"{k}-401 (400 progress notifications + the result)")
    for e in msgs[:-1]:
        expect(is_progress(e.json) and
               e.json["params"]["progress"] == parse_event_id(e.id)[1],
               f"{e.id} is not progress {parse_event_id(e.id)[1]}: "
               f"{e.data[:200]!r}")
    expect(is_response(msgs[-1].json, id) and
           result_text(msgs[-1].json) == "done 400",
           f"resume on B ended with {msgs[-1].data[:200]!r}")
    a.assert_alive(sid, "on A")
    b.assert_alive(sid, "on B")


def test_redis_block_standalone_stream_shown_on_another_process(h):
    # Every process holding the session may write its standalone stream;
    # under block (stream_window 4) A's notifications wait for a client to
    # receive them. The client's GET is on B: B's view tells A, so all 20
    # reach it, in order.
    need_shared_redis()
    conf = {"backpressure_standalone": "block", "stream_window": 4}
    a = h.start(**conf)
    b = h.start(**conf)
    sid = a.initialize(LATEST)
    _adopt(b, a, sid)
    s = b.get_sse(sid)
    expect(s.status == 200 and s.is_sse, f"GET on B -> HTTP {s.status}")
    prime = s.next_event(3)
    expect(prime.id is not None, f"standalone GET on B primed with "
           f"{prime!r}")
    sk, sn = parse_event_id(prime.id)
    msg, _ = a.call(sid, "notify", {"n": 20})
    expect(result_text(msg) == "queued 20", f"notify on A -> {msg!r}")
    for i in range(1, 21):
        m = s.next_message(5)
        expect(m is not None, f"B's standalone view ended after "
               f"{i - 1} of A's 20 notifications")
        expect(m[0].id == f"{sk}-{sn + i}" and
               m[1]["params"]["data"]["i"] == i,
               f"B's standalone view: expected notify {i} of A as "
               f"{sk}-{sn + i}, got {m[0]!r}")
    s.close()


# --------------------------------------------------------------------------
# 2. deletion


def _expect_404(r, what):
    expect(r.status == 404, f"{what} after DELETE through A -> HTTP "
           f"{r.status} {r.body[:200]!r}, expected 404")
    assert_rpc_error(r.json)


def test_redis_delete_through_one_process_is_404_on_every_other(h):
    # B holds the session (a standalone view open, a finished call whose
    # cursor a client could resume from). DELETE through A: B drops it at
    # once (its view ends) and answers 404 to everything about it; so does
    # C, which never held it, for a resume with a cursor.
    need_shared_redis()
    a = h.start()
    b = h.start()
    c = h.start()
    sid = a.initialize(LATEST)
    _adopt(b, a, sid)
    _adopt(c, a, sid)
    msg, rr = b.call(sid, "stream", {"n": 2})
    expect(result_text(msg) == "done 2", f"stream on B -> {msg!r}")
    cursor = message_events(rr.events)[0].id
    s = b.get_sse(sid)
    expect(s.status == 200 and s.is_sse, f"GET on B -> HTTP {s.status}")
    prime = s.next_event(3)
    expect(prime.id is not None, f"standalone GET on B primed with "
           f"{prime!r}")

    r = a.delete(sid)
    expect(r.status in (200, 204), f"DELETE through A -> HTTP {r.status}")
    try:
        rest = s.events_until_close(5)
    except Timeout:
        raise AssertionError("B's standalone view of the deleted session "
                             "stayed open: B never heard of the DELETE")
    expect(not message_events(rest), f"B's view after DELETE: {rest!r}")

    _expect_404(b.post(sid, rpc("ping", None, b.new_id())), "ping on B")
    _expect_404(b.post(sid, rpc("notifications/initialized")),
                "a notification on B")
    _expect_404(b.post(sid, {"jsonrpc": "2.0", "id": "mcpd-0123456789ab",
                             "result": {}}), "a response on B")
    _expect_404(b.get_sse(sid), "GET on B")
    _expect_404(b.get_sse(sid, cursor), f"GET Last-Event-ID {cursor} on B")
    _expect_404(b.delete(sid), "DELETE on B")
    _expect_404(c.get_sse(sid, cursor), f"GET Last-Event-ID {cursor} on C "
                "(never held it)")
    _expect_404(a.post(sid, rpc("ping", None, a.new_id())), "ping on A")
    b.wait_log(lambda t: "deleted through another process" in t,
               what="B's line saying why it dropped the session")


# --------------------------------------------------------------------------
# 3. answers pushed


def _get_calls(url):
    """How many GETs (note reads) Redis has served."""
    return redis_calls(redis_info(url), "get")


def _ask_on_a_answer_on_b(a, b, sid, tool, args, method, answer, what):
    id, r = a.call_open(sid, tool, args)
    expect(r.status == 200 and r.is_sse, f"{what}: tools/call on A -> "
           f"HTTP {r.status}")
    got = r.next_message(5)
    expect(got is not None, f"{what}: no request on A's stream")
    req = got[1]
    expect(req.get("method") == method, f"{what}: first message on A: "
           f"{req!r}")
    reply = b.post(sid, {"jsonrpc": "2.0", "id": req["id"],
                         "result": answer})
    expect(reply.status == 202, f"{what}: answer POSTed to B -> "
           f"HTTP {reply.status}")
    got = r.next_message(10)
    expect(got is not None, f"{what}: A's call never finished")
    res = got[1]
    expect(res.get("id") == id and "result" in res and
           not res["result"].get("isError"), f"{what}: A's result {res!r}")
    r.close()
    return result_text(res)


def test_redis_answers_through_another_process_are_pushed(h):
    # Sampling and elicitation asked by calls on A, answered through B:
    # B sends the answer to A on the session's channel, so A never reads
    # the answer's note (its slow fallback, OUTBOUND_POLL_MS): Redis
    # serves no GET at all meanwhile (before, A polled every 100 ms and
    # only a poll could complete the call).
    with private_redis(h) as rs:
        a = h.start(["fixtures conformance"], eventlog=rs.url)
        b = h.start(["fixtures conformance"], eventlog=rs.url)
        sid = a.initialize(LATEST)
        _adopt(b, a, sid)
        b.assert_alive(sid, "on B (B loads the session)")
        before = _get_calls(rs.url)
        text = _ask_on_a_answer_on_b(
            a, b, sid, "test_sampling", {"prompt": "across"},
            "sampling/createMessage", {"role": "assistant", "model": "m",
                                       "content": {"type": "text",
                                                   "text": "from B"}},
            "sampling")
        expect(text == "LLM response: from B", f"sampling: {text!r}")
        text = _ask_on_a_answer_on_b(
            a, b, sid, "test_elicitation", {"message": "who?"},
            "elicitation/create", {"action": "accept", "content": {
                "username": "u", "email": "u@example.com"}}, "elicitation")
        expect(text.startswith("User response: action=accept"),
               f"elicitation: {text!r}")
        gets = _get_calls(rs.url) - before
        expect(gets == 0, f"Redis served {gets} GET(s) while the answers "
               f"travelled: the asking process polled the answer's note "
               f"instead of being told")
        # A big answer does not travel in the message: A reads the note
        # at once when told.
        big = "x" * 40000
        text = _ask_on_a_answer_on_b(
            a, b, sid, "test_sampling", {"prompt": "big"},
            "sampling/createMessage", {"role": "assistant", "model": "m",
                                       "content": {"type": "text",
                                                   "text": big}},
            "big sampling answer")
        expect(text == "LLM response: " + big, "big sampling answer: "
               f"{len(text)} characters")
        a.assert_alive(sid, "on A")
