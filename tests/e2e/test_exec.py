"""Exec tools (conf `tool NAME { }` blocks) against real programs: output
streaming and the result, argument checks, exit status, timeout,
cancellation, DELETE and shutdown killing the process group, limits,
backpressure down to the program's pipe, and no zombies left behind."""

import os
import stat
import time

from mcpd_harness import (LATEST, Timeout, cancelled, check_ids, conf_text,
                          expect, is_progress, is_response, message_events,
                          result_text, rpc, tmo, tool_call)


# --------------------------------------------------------------------------
# Helpers


def q(word):
    """A conf word in double quotes."""
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


def tool(name, *lines):
    return [f"tool {name} {{"] + [f"    {ln}" for ln in lines] + ["}"]


def sh(script, *args):
    """An exec line running script with /bin/sh; args follow $0."""
    return "exec /bin/sh -c " + q(script) + "".join(" " + a for a in args)


def proc_status(pid):
    """/proc/PID/status as a dict, None if the process does not exist."""
    try:
        with open(f"/proc/{pid}/status") as f:
            text = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


def children(pid):
    """(pid, state) of every process whose parent is pid."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = proc_status(name)
        if st is not None and st.get("PPid") == str(pid):
            out.append((int(name), st.get("State", "?")))
    return out


def gone(pid, d=None):
    """Exited: no such process, or a zombie that is not mcpd's to reap
    (an orphan waits for init, which is not under test)."""
    st = proc_status(pid)
    if st is None:
        return True
    return st.get("State", "").startswith("Z") and d is not None and \
        st.get("PPid") != str(d.proc.pid)


def wait_gone(pid, what, d=None, timeout=5):
    """The process has exited (and, if it was mcpd's child, been reaped)."""
    deadline = time.monotonic() + tmo(timeout)
    while not gone(pid, d):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} (pid {pid}) still exists: "
                                 f"{proc_status(pid)}")
        time.sleep(0.05)


def assert_no_children(d, timeout=5):
    """mcpd has no child left: no program running, no zombie."""
    deadline = time.monotonic() + tmo(timeout)
    while True:
        kids = children(d.proc.pid)
        if not kids:
            return
        if time.monotonic() > deadline:
            zombies = [p for p, s in kids if s.startswith("Z")]
            raise AssertionError(f"mcpd still has children {kids} "
                                 f"(zombies: {zombies})")
        time.sleep(0.05)


def vm_rss_kb(pid):
    return int(proc_status(pid)["VmRSS"].split()[0])


def call_result(d, sid, name, args, token=None, timeout=10):
    msg, r = d.call(sid, name, args, token, timeout=timeout)
    expect(is_response(msg) and "result" in msg,
           f"{name} {args}: not a result: {msg!r}")
    return msg["result"], r


def texts(result):
    return [c["text"] for c in result["content"] if c.get("type") == "text"]


COUNT = tool("count_lines",
             'description "Print n numbered lines"',
             'param n integer required "How many lines"',
             sh("i=1; while [ $i -le $0 ]; do echo line $i; i=$((i+1)); "
                "done", "{n}"),
             "timeout 10")

# Prints its pid as the first line, then waits.
PIDSLEEP = tool("pidsleep", sh("echo $$; exec sleep 60"), "timeout 60")
# The same, ignoring SIGTERM (sleep inherits the ignored disposition).
STUBBORN = tool("stubborn", sh("trap '' TERM; echo $$; exec sleep 60"),
                "timeout 60")


def first_progress(r):
    """The message of the first progress notification on an open call."""
    while True:
        m = r.next_message(10)
        expect(m is not None, "call stream ended before its first line")
        ev, msg = m
        if is_progress(msg):
            return msg["params"]["message"]


# --------------------------------------------------------------------------
# Listing and results


def test_exec_tool_listed_with_schema(h):
    d = h.start(extra_lines=COUNT + tool(
        "typed", 'description "All the types"',
        'param s string required "A string"', "param i integer",
        'param x number "A number"', "param b boolean required",
        "exec /bin/true {s} {i} {x} {b}"))
    sid = d.initialize()
    id = d.new_id()
    r = d.post(sid, rpc("tools/list", {}, id))
    tools = {t["name"]: t for t in r.rpc(id)["result"]["tools"]}
    expect("echo" in tools, f"built-in tools lost: {sorted(tools)}")
    t = tools.get("count_lines")
    expect(t is not None, f"count_lines not listed: {sorted(tools)}")
    expect(t.get("description") == "Print n numbered lines", f"{t!r}")
    expect(t["inputSchema"] == {
        "type": "object",
        "properties": {"n": {"type": "integer",
                             "description": "How many lines"}},
        "required": ["n"], "additionalProperties": False},
        f"count_lines inputSchema {t['inputSchema']!r}")
    s = tools["typed"]["inputSchema"]
    expect(s["properties"] == {
        "s": {"type": "string", "description": "A string"},
        "i": {"type": "integer"},
        "x": {"type": "number", "description": "A number"},
        "b": {"type": "boolean"}} and s["required"] == ["s", "b"],
        f"typed inputSchema {s!r}")


def test_exec_lines_stream_as_progress_then_result(h):
    d = h.start(extra_lines=COUNT)
    for v in ("2025-03-26", LATEST):
        sid = d.initialize(v)
        for token in ("tok", 77):
            msg, r = d.call(sid, "count_lines", {"n": 5}, token)
            events = r.events
            msgs = [e.json for e in message_events(events)]
            prog = [m for m in msgs if is_progress(m)]
            expect(len(prog) == 5, f"{v}: {len(prog)} progress "
                   f"notifications, expected 5: {msgs!r}")
            for i, m in enumerate(prog, 1):
                p = m["params"]
                expect(p.get("progressToken") == token and
                       p.get("progress") == i and
                       p.get("message") == f"line {i}",
                       f"{v}: progress #{i}: {p!r}")
            expect(is_response(msgs[-1]) and len(msgs) == 6,
                   f"{v}: the response must come last, once: {msgs!r}")
            check_ids(events, 1, what=f"{v} exec call")
            res = msg["result"]
            expect(texts(res) == ["".join(f"line {i}\n"
                                          for i in range(1, 6))],
                   f"{v}: result {res!r}")
            expect(not res.get("isError"), f"{v}: isError set: {res!r}")
        # Without a progressToken: no notifications, same result.
        msg, r = d.call(sid, "count_lines", {"n": 3})
        expect(not any(is_progress(m) for m in r.messages()),
               f"{v}: progress sent without a progressToken")
        expect(result_text(msg) == "line 1\nline 2\nline 3\n", f"{msg!r}")
    msg, _ = d.call(sid, "count_lines", {"n": 0}, "z")
    expect(result_text(msg) == "", f"n=0: {msg!r}")
    assert_no_children(d)


def test_exec_arguments_are_single_words(h):
    d = h.start(extra_lines=tool(
        "args", "param s string required", "param i integer",
        "param x number", "param b boolean",
        "exec /usr/bin/printf " + q("[%s]\\n") + " {s} {i} {x} {b} {s}"))
    sid = d.initialize()
    nasty = "$(touch pwned) `id` * ; | & \"' \\ $HOME\n{s}"
    res, _ = call_result(d, sid, "args", {"s": nasty, "i": -42, "x": 0.5,
                                          "b": True})
    expect(texts(res)[0] == f"[{nasty}]\n[-42]\n[0.5]\n[true]\n[{nasty}]\n",
           f"arguments were not passed verbatim as one word each: {res!r}")
    expect(not os.path.exists(os.path.join(h.workdir, "pwned")),
           "an argument was run by a shell")
    # Optional arguments left out are empty words; 2.0 is an integer.
    res, _ = call_result(d, sid, "args", {"s": "", "i": 2.0, "b": False})
    expect(texts(res)[0] == "[]\n[2]\n[]\n[false]\n[]\n", f"{res!r}")
    res, _ = call_result(d, sid, "args", {"s": "x", "x": 1e21})
    expect(texts(res)[0] == "[x]\n[]\n[1e+21]\n[]\n[x]\n", f"{res!r}")


def test_exec_invalid_arguments_start_nothing(h):
    marker = os.path.join(h.workdir, "ran")
    d = h.start(extra_lines=tool(
        "marker", "param n integer required", "param s string",
        "param b boolean", "exec /usr/bin/touch " + q(marker)))
    sid = d.initialize()
    bad = [({}, "missing required argument 'n'"),
           ({"n": "5"}, "argument 'n' must be an integer"),
           ({"n": 1.5}, "argument 'n' must be an integer"),
           ({"n": True}, "argument 'n' must be an integer"),
           ({"n": None}, "argument 'n' must be an integer"),
           ({"n": 1, "s": 3}, "argument 's' must be a string"),
           ({"n": 1, "b": "true"}, "argument 'b' must be a boolean"),
           ({"n": 1, "extra": 1}, "unknown argument 'extra'"),
           ({"n": 1, "N": 1}, "unknown argument 'N'")]
    for args, want in bad:
        res, _ = call_result(d, sid, "marker", args)
        expect(res.get("isError") is True, f"{args}: not isError: {res!r}")
        text = " ".join(texts(res))
        expect("invalid arguments" in text and want in text,
               f"{args}: expected {want!r} in {text!r}")
    time.sleep(0.2)
    expect(not os.path.exists(marker),
           "a program was started for invalid arguments")
    res, _ = call_result(d, sid, "marker", {"n": 1})
    expect(not res.get("isError") and os.path.exists(marker),
           f"the valid call did not run: {res!r}")
    assert_no_children(d)


def test_exec_nonzero_exit_and_signal_are_errors(h):
    d = h.start(extra_lines=tool(
        "fail", sh("echo out; echo oops >&2; exit 3")) + tool(
        "selfkill", sh("echo before; kill -9 $$")) + tool(
        "noisy", sh("head -c 100000 /dev/zero | tr -c a b >&2; exit 1")) +
        tool("quiet_ok", sh("echo fine; echo warning >&2")))
    sid = d.initialize()
    res, _ = call_result(d, sid, "fail", {})
    t = texts(res)
    expect(res.get("isError") is True, f"exit 3: not isError: {res!r}")
    expect(t[0] == "out\n", f"exit 3: stdout {t!r}")
    expect("exit status 3" in t[-1] and "oops" in t[-1],
           f"exit 3: status and stderr missing: {t!r}")
    res, _ = call_result(d, sid, "selfkill", {})
    t = texts(res)
    expect(res.get("isError") is True and t[0] == "before\n" and
           "signal 9" in t[-1] and "SIGKILL" in t[-1],
           f"killed by a signal: {res!r}")
    res, _ = call_result(d, sid, "noisy", {})
    t = texts(res)
    expect(res.get("isError") is True and "exit status 1" in t[-1] and
           "100000" in t[-1] and len(t[-1]) < 20000,
           f"long stderr must be cut and say so: {t[-1][:300]!r} "
           f"({len(t[-1])} chars)")
    res, _ = call_result(d, sid, "quiet_ok", {})
    expect(not res.get("isError") and texts(res) == ["fine\n"],
           f"exit 0 with stderr is a success: {res!r}")
    assert_no_children(d)


def test_exec_clean_environment_and_cwd(h):
    d = h.start(extra_lines=tool(
        "env", "exec /usr/bin/env", "env A=1", 'env "B=two words"',
        "env EMPTY=") + tool("pwd", "exec /bin/pwd", f"cwd {q(h.workdir)}")
        + tool("stdin", sh("cat; echo done")))
    sid = d.initialize()
    res, _ = call_result(d, sid, "env", {})
    expect(texts(res) == ["A=1\nB=two words\nEMPTY=\n"],
           f"environment must hold exactly the env lines: {res!r}")
    res, _ = call_result(d, sid, "pwd", {})
    expect(texts(res) == [os.path.realpath(h.workdir) + "\n"],
           f"cwd: {res!r}")
    res, _ = call_result(d, sid, "stdin", {})
    expect(texts(res) == ["done\n"], f"stdin is not /dev/null: {res!r}")


def test_exec_output_details(h):
    d = h.start(extra_lines=tool(
        "longline", sh("head -c 200000 /dev/zero | tr -c a a; echo; "
                       "printf tail")) + tool(
        "bytes", "exec /usr/bin/printf " +
        q("caf\\303\\251 \\377 nul:\\000: crlf\\r\\n")) + tool(
        "big", sh("seq 1 $0", "{n}"), "param n integer required",
        "max_output 1k"))
    sid = d.initialize()
    msg, r = d.call(sid, "longline", {}, "L")
    prog = [m["params"]["message"] for m in r.messages() if is_progress(m)]
    expect([len(p) for p in prog] == [65536, 65536, 65536, 3392, 4],
           f"a 200000-byte line must come in 64 KiB pieces: "
           f"{[len(p) for p in prog]}")
    expect("".join(prog[:4]) == "a" * 200000 and prog[4] == "tail",
           "pieces do not add up to the line")
    expect(result_text(msg) == "a" * 200000 + "\ntail", "result differs")
    msg, r = d.call(sid, "bytes", {}, "B")
    prog = [m["params"]["message"] for m in r.messages() if is_progress(m)]
    expect(prog == ["caf\u00e9 \ufffd nul:\ufffd: crlf"],
           f"bad UTF-8 and NUL must become U+FFFD, CR dropped: {prog!r}")
    expect(result_text(msg) == "caf\u00e9 \ufffd nul:\ufffd: crlf\r\n",
           f"{msg!r}")
    res, _ = call_result(d, sid, "big", {"n": 2000})
    t = texts(res)
    full = "".join(f"{i}\n" for i in range(1, 2001))
    expect(t[0] == full[:1024], f"max_output 1k: kept {len(t[0])} bytes")
    expect(len(t) == 2 and "1024" in t[1] and str(len(full)) in t[1],
           f"the cut must be stated: {t[1:]!r}")
    expect(not res.get("isError"), f"{res!r}")


# --------------------------------------------------------------------------
# Ending calls


def test_exec_timeout_kills_the_process_group(h):
    d = h.start(extra_lines=tool("slow", sh("echo $$; sleep 60 & "
                                            "echo $!; wait"),
                                 "timeout 1") +
                tool("stubborn", sh("trap '' TERM; echo $$; exec sleep 60"),
                     "timeout 1"))
    sid = d.initialize()
    t0 = time.monotonic()
    res, _ = call_result(d, sid, "slow", {}, timeout=10)
    elapsed = time.monotonic() - t0
    t = texts(res)
    expect(res.get("isError") is True and "timed out after 1 s" in t[-1],
           f"timeout: {res!r}")
    expect(0.8 <= elapsed < tmo(4), f"timeout 1 took {elapsed:.1f}s")
    shell, sleeper = (int(x) for x in t[0].split())
    wait_gone(shell, "the timed out program")
    wait_gone(sleeper, "a process the timed out program started", d)
    # SIGTERM ignored: SIGKILL follows after the grace period.
    t0 = time.monotonic()
    res, _ = call_result(d, sid, "stubborn", {}, timeout=15)
    elapsed = time.monotonic() - t0
    t = texts(res)
    expect(res.get("isError") and "timed out" in t[-1] and
           "SIGKILL" in t[-1], f"stubborn: {res!r}")
    expect(2.5 <= elapsed < tmo(6), f"SIGKILL came after {elapsed:.1f}s")
    wait_gone(int(t[0]), "the program that ignored SIGTERM")
    assert_no_children(d)


def test_exec_cancel_kills_the_program(h):
    d = h.start(extra_lines=PIDSLEEP + STUBBORN)
    sid = d.initialize()
    for name in ("pidsleep", "stubborn"):
        id, r = d.call_open(sid, name, {}, "c")
        expect(r.status == 200 and r.is_sse, f"HTTP {r.status}")
        pid = int(first_progress(r))
        expect(proc_status(pid) is not None, "program not running")
        n = d.post(sid, cancelled(id))
        expect(n.status == 202, f"notifications/cancelled -> {n.status}")
        events = r.events_until_close(10)
        expect(not any(is_response(e.json) for e in message_events(events)),
               f"{name}: a cancelled call must not be answered")
        wait_gone(pid, f"{name} after notifications/cancelled")
    d.assert_alive(sid)
    assert_no_children(d)


def test_exec_delete_session_kills_its_programs(h):
    d = h.start(extra_lines=PIDSLEEP)
    sid = d.initialize()
    other = d.initialize()
    pids = []
    for _ in range(3):
        id, r = d.call_open(sid, "pidsleep", {}, "d")
        pids.append((int(first_progress(r)), r))
    _, keep = d.call_open(other, "pidsleep", {}, "k")
    kept = int(first_progress(keep))
    r = d.delete(sid)
    expect(r.status in (200, 204), f"DELETE -> HTTP {r.status}")
    for pid, _ in pids:
        wait_gone(pid, "a program of the deleted session")
    expect(proc_status(kept) is not None,
           "a program of another session was killed")
    d.assert_alive(other)


def test_exec_shutdown_waits_for_children(h):
    d = h.start(extra_lines=PIDSLEEP + STUBBORN)
    sid = d.initialize()
    pids = []
    for name in ("pidsleep", "stubborn"):
        _, r = d.call_open(sid, name, {}, "s")
        pids.append(int(first_progress(r)))
    daemon = d.proc.pid
    t0 = time.monotonic()
    problems = d.stop()
    elapsed = time.monotonic() - t0
    expect(not problems, f"shutdown: {problems}")
    expect(d.exit_status == 0, f"exit status {d.exit_status}")
    expect(1.5 <= elapsed < tmo(5), f"shutdown took {elapsed:.1f}s: it must "
           "wait for the SIGTERM-ignoring program, boundedly")
    for pid in pids:
        expect(gone(pid, d), f"pid {pid} survived mcpd's shutdown: "
               f"{proc_status(pid)}")
    expect("left behind" not in d.stderr_text(),
           f"a program was not reaped:\n{d.stderr_tail(10)}")
    expect("waiting for 2 programs" in d.stderr_text(),
           f"shutdown wait not logged:\n{d.stderr_tail(10)}")
    expect(not children(daemon), "children left after shutdown")


def test_exec_leftovers_in_the_group_are_killed(h):
    d = h.start(extra_lines=tool("bg", sh("sleep 60 & echo $!")))
    sid = d.initialize()
    t0 = time.monotonic()
    res, _ = call_result(d, sid, "bg", {})
    expect(time.monotonic() - t0 < tmo(2),
           "the result waited for a background process")
    expect(not res.get("isError"), f"{res!r}")
    wait_gone(int(texts(res)[0]), "the background process left behind", d)
    assert_no_children(d)


# --------------------------------------------------------------------------
# Limits


def test_exec_busy_limits(h):
    d = h.start(extra_lines=tool("one", "exec /bin/sleep 30",
                                 "max_concurrency 1") +
                tool("other", "exec /bin/sleep 30") +
                ["max_children 2"])
    sid = d.initialize()
    _, r1 = d.call_open(sid, "one", {})
    time.sleep(0.3)
    res, _ = call_result(d, sid, "one", {})
    t = " ".join(texts(res))
    expect(res.get("isError") is True and t.startswith("tool busy") and
           "max_concurrency" in t, f"max_concurrency 1: {res!r}")
    id2, r2 = d.call_open(sid, "other", {})
    time.sleep(0.3)
    res, _ = call_result(d, sid, "other", {})
    t = " ".join(texts(res))
    expect(res.get("isError") is True and t.startswith("tool busy") and
           "max_children" in t, f"max_children 2: {res!r}")
    # A slot frees once the program is gone (reaped).
    d.post(sid, cancelled(id2))
    r2.events_until_close(10)
    deadline = time.monotonic() + tmo(5)
    while len(children(d.proc.pid)) > 1:
        expect(time.monotonic() < deadline, "cancelled program not reaped")
        time.sleep(0.05)
    _, r3 = d.call_open(sid, "other", {})
    try:
        m = r3.next_message(1)
        raise AssertionError(f"slot not freed: {m!r}")
    except Timeout:
        pass                            # running: no answer yet
    r1.close()
    r3.close()


# --------------------------------------------------------------------------
# Backpressure


BIG_LINES = 50000       # 1000-byte lines: 50 MB


def test_exec_large_output_slow_reader_memory_flat(h):
    pidfile = os.path.join(h.workdir, "seq.pid")
    d = h.start(extra_lines=tool(
        "big", "param n integer required",
        sh("echo $$ > " + pidfile + "; exec seq -f %0999.0f 1 $0", "{n}"),
        "timeout 300"), sse_high_watermark="64k")
    sid = d.initialize()
    base_rss = vm_rss_kb(d.proc.pid)
    id = d.new_id()
    r = d.open("POST", sid, tool_call("big", {"n": BIG_LINES}, id, "big"),
               rcvbuf=65536)
    expect(r.status == 200 and r.is_sse, f"HTTP {r.status}")
    for _ in range(50):
        r.next_message(10)
    # The reader stalls: the program must end up blocked on its pipe.
    deadline = time.monotonic() + tmo(10)
    while not os.path.exists(pidfile) or not open(pidfile).read().strip():
        expect(time.monotonic() < deadline, "no pid file")
        time.sleep(0.05)
    pid = int(open(pidfile).read())
    time.sleep(1.5)

    def written():
        try:
            with open(f"/proc/{pid}/io") as f:
                for line in f:
                    if line.startswith("wchar:"):
                        return int(line.split()[1])
        except OSError:
            return None

    w1 = written()
    time.sleep(1.0)
    w2 = written()
    if w1 is not None and w2 is not None:
        expect(w1 == w2, f"the program kept writing ({w1} -> {w2} bytes) "
               "while the client read nothing")
        expect(w2 < BIG_LINES * 1000 // 4,
               f"the program wrote {w2} bytes ahead of a stalled client")
    peak = vm_rss_kb(d.proc.pid)

    # Read everything, slowly at first, sampling mcpd's memory.
    final = None
    n = 0
    while True:
        m = r.next_message(30)
        if m is None:
            break
        if is_response(m[1], id):
            final = m[1]
        n += 1
        if n % 2000 == 0:
            peak = max(peak, vm_rss_kb(d.proc.pid))
            if n < 10000:
                time.sleep(0.2)
    check_ids(r.events, 1, what="large exec call")
    # Every event, the 50 read before the stall included.
    allp = [e.json["params"] for e in message_events(r.events)
            if is_progress(e.json)]
    expect(len(allp) == BIG_LINES, f"{len(allp)} progress notifications, "
           f"expected {BIG_LINES}")
    for i, p in enumerate(allp, 1):
        if p["progress"] != i or p["message"] != f"{i:0999d}":
            raise AssertionError(f"line {i} lost, repeated or changed: "
                                 f"progress {p['progress']}, message "
                                 f"{p['message'][:20]}...")
    expect(final is not None, "no response")
    t = texts(final["result"])
    expect(not final["result"].get("isError"), f"{t[-1][:200]!r}")
    expect(len(t[0]) == 1024 * 1024 and t[0].startswith(f"{1:0999d}\n"),
           f"stdout kept: {len(t[0])} bytes")
    expect(len(t) == 2 and str(BIG_LINES * 1000) in t[1],
           f"the cut must be stated: {t[1:]!r}")
    grown = (peak - base_rss) / 1024
    if os.environ.get("MCPD_E2E_DEBUG"):
        print(f"written while stalled: {w1} -> {w2}; rss {base_rss} kB, "
              f"peak {peak} kB")
    if not h.sanitized:     # ASan's quarantine holds freed memory
        expect(grown < 24, f"mcpd grew by {grown:.0f} MiB while relaying "
               f"{BIG_LINES * 1000 // 1000000} MB")
    wait_gone(pid, "the finished program")
    assert_no_children(d)


test_exec_large_output_slow_reader_memory_flat.timeout = 180


def test_exec_no_zombies_after_everything(h):
    d = h.start(extra_lines=COUNT + PIDSLEEP + tool(
        "fail", sh("exit 7")) + tool("bg", sh("sleep 30 & echo $!")))
    sid = d.initialize()
    opened = []
    for i in range(10):
        call_result(d, sid, "count_lines", {"n": i}, "z")
        call_result(d, sid, "fail", {})
        call_result(d, sid, "bg", {})
        id, r = d.call_open(sid, "pidsleep", {}, f"p{i}")
        first_progress(r)
        opened.append((id, r))
    for id, r in opened[:5]:
        d.post(sid, cancelled(id))
    d.delete(sid)
    assert_no_children(d)


# --------------------------------------------------------------------------
# The conf file


def _check(h, lines, conf=None):
    path = h.write(f"t{time.monotonic_ns()}.conf", conf_text(conf, lines))
    rc, out = h.run_mcpd("-t", "-c", path)
    return path, rc, out


def test_exec_conf_errors_name_file_and_line(h):
    noexec = h.write("noexec.sh", "#!/bin/sh\necho hi\n")
    os.chmod(noexec, stat.S_IRUSR | stat.S_IWUSR)
    # The harness conf has 5 lines; a tool block starts on line 6.
    cases = [
        (tool("a", "exec /nonexistent/program"), 7, "No such file"),
        (tool("a", "exec " + noexec), 7, "not executable"),
        (tool("a", "exec /tmp"), 7, "not a regular file"),
        (tool("a", "exec ./relative"), 7, "absolute path"),
        (tool("a", "exec no-such-program-anywhere"), 7, "not found in PATH"),
        (tool("a", 'description "x"'), 6, "missing \"exec"),
        (tool("a", "exec /bin/echo {n}"), 7, "{n} is not a param"),
        (tool("a", "param n integer", "param n string",
              "exec /bin/true"), 8, "declared twice"),
        (tool("a", "param n float", "exec /bin/true"), 7, "float"),
        (tool("a", "exec /bin/true", "timeout 0"), 8, "out of range"),
        (tool("a", "exec /bin/true", "max_output 10"), 8, "out of range"),
        (tool("a", "exec /bin/true", "env 1X=2"), 8, "invalid variable"),
        (tool("a", "exec /bin/true", "cwd /nonexistent"), 8,
         "No such file"),
        (tool("a", "exec /bin/true", "command x"), 8, "unknown directive"),
        (tool("a", "exec /bin/true", "exec /bin/true"), 8, "duplicate exec"),
        (tool("a", "exec /bin/true") + tool("a", "exec /bin/true"), 9,
         "duplicate tool a"),
        (tool("echo", "exec /bin/true"), 6, "built-in"),
        (tool("bad/name", "exec /bin/true"), 6, "invalid name"),
        (["tool a b {", "exec /bin/true", "}"], 6, "expected"),
    ]
    for lines, line, want in cases:
        path, rc, out = _check(h, lines)
        expect(rc != 0, f"mcpd -t accepted {lines}:\n{out}")
        expect(f"{path}:{line}:" in out and want in out,
               f"{lines}: expected {path}:{line}: ... {want}, got:\n{out}")
    # Built-in names are free when the built-in tools are off.
    _, rc, out = _check(h, tool("echo", "exec /bin/echo"),
                        {"builtin_tools": "off"})
    expect(rc == 0, f"tool echo with builtin_tools off:\n{out}")
    _, rc, out = _check(h, COUNT + PIDSLEEP + ["max_children 8"])
    expect(rc == 0, f"good tools rejected:\n{out}")


def test_exec_missing_program_stops_start(h):
    path = h.write("bad.conf", conf_text(None, tool(
        "gone", "exec /nonexistent/bin/tool")))
    rc, out = h.run_mcpd("-c", path, timeout=5)
    expect(rc != 0 and f"{path}:7:" in out,
           f"mcpd started with a missing program (rc {rc}):\n{out}")
