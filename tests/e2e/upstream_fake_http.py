#!/usr/bin/env python3
"""The fake MCP server of upstream_fake.py over Streamable HTTP, for
tests/e2e/test_upstream.py: POST /mcp answers requests with an SSE stream
(initialize with JSON and an Mcp-Session-Id), notifications and responses
with 202; GET with Last-Event-ID resumes a request's stream from the
session's event store; DELETE ends the session. Listens on 127.0.0.1 and a
free port, written to PORTFILE.

    upstream_fake_http.py PORTFILE [--no-event-ids] [--log FILE] [--port N]

Tools beyond upstream_fake.py's: drop {n} sends n progress events, cuts
the connection, then finishes (the result waits in the event store);
forget makes the server forget the session (the next request gets 404).
The log line of each POST names its traceparent header (tracing tests).
"""

import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import upstream_fake as fake  # noqa: E402

ARGS = sys.argv[1:]
PORTFILE = ARGS[0]
EVENT_IDS = "--no-event-ids" not in ARGS
LOG = ARGS[ARGS.index("--log") + 1] if "--log" in ARGS else None
PORT = int(ARGS[ARGS.index("--port") + 1]) if "--port" in ARGS else 0

LOCK = threading.Lock()
SESSIONS = {}           # id -> {"events": [(id, stream, data)], "n": int}


def log(line):
    if LOG is not None:
        with LOCK, open(LOG, "a") as f:
            f.write(line + "\n")


class Stream:
    """One SSE response: messages become events, stored for resumption."""

    def __init__(self, handler, sid, key):
        self.h = handler
        self.sid = sid
        self.key = key
        self.open = True
        self.lock = threading.Lock()

    def send(self, msg):
        data = json.dumps(msg, separators=(",", ":"))
        with LOCK:
            sess = SESSIONS.get(self.sid)
            if sess is None:
                return
            sess["n"] += 1
            eid = f"{self.key}-{sess['n']}"
            sess["events"].append((eid, self.key, data))
        self.write(eid, data)

    def write(self, eid, data):
        with self.lock:
            if not self.open:
                return
            text = (f"id: {eid}\n" if EVENT_IDS else "") + f"data: {data}\n\n"
            try:
                self.h.wfile.write(text.encode())
                self.h.wfile.flush()
            except OSError:
                self.open = False

    def cut(self):
        with self.lock:
            self.open = False
            try:
                self.h.connection.shutdown(2)
            except OSError:
                pass


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, fmt, *args):
        pass

    def _json(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _sse_head(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

    def do_DELETE(self):
        sid = self.headers.get("Mcp-Session-Id")
        log(f"DELETE {sid}")
        with LOCK:
            SESSIONS.pop(sid, None)
        self._json(200, {})

    def do_GET(self):
        sid = self.headers.get("Mcp-Session-Id")
        last = self.headers.get("Last-Event-ID")
        with LOCK:
            sess = SESSIONS.get(sid)
        if sess is None:
            return self._json(404, {"error": "no session"})
        if last is None:
            return self._json(405, {"error": "no standalone stream"})
        log(f"GET resume {last}")
        key = last.rsplit("-", 1)[0]
        self._sse_head()
        st = Stream(self, sid, key)
        # Replay what follows the cursor on its stream, waiting for the end.
        deadline = time.monotonic() + 10
        sent = set()
        while time.monotonic() < deadline:
            with LOCK:
                evs = list(sess["events"])
            seen = False
            done = False
            for eid, k, data in evs:
                if eid == last:
                    seen = True
                    continue
                if not seen or k != key or eid in sent:
                    continue
                sent.add(eid)
                st.write(eid, data)
                msg = json.loads(data)
                if "method" not in msg:
                    done = True
            if done:
                return
            time.sleep(0.02)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        msg = json.loads(self.rfile.read(n))
        sid = self.headers.get("Mcp-Session-Id")
        method = msg.get("method")
        log(f"POST {method or 'response'} session={sid} "
            f"version={self.headers.get('MCP-Protocol-Version')} "
            f"traceparent={self.headers.get('traceparent')}")
        if method == "initialize":
            sid = uuid.uuid4().hex
            with LOCK:
                SESSIONS[sid] = {"events": [], "n": 0}
            out = []
            fake.SINK.send = out.append
            fake.handle(msg)
            fake.SINK.send = None
            return self._json(200, out[0], [("Mcp-Session-Id", sid)])
        with LOCK:
            known = sid in SESSIONS
        if not known and "--unknown-session-400" in ARGS:
            # As server-everything's express app answers.
            return self._json(400, {"jsonrpc": "2.0", "id": None, "error": {
                "code": -32000,
                "message": "Bad Request: No valid session ID provided"}})
        if not known:
            return self._json(404, {"jsonrpc": "2.0", "id": None, "error": {
                "code": -32001, "message": "Session not found"}})
        if "id" not in msg or method is None:
            if method is None:
                fake.answered(msg)
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self._sse_head()
        st = Stream(self, sid, uuid.uuid4().hex[:8])
        fake.SINK.send = st.send
        try:
            if method == "tools/call" and \
                    msg["params"]["name"] in ("drop", "forget"):
                return self._special(msg, st, sid)
            fake.handle(msg)
        finally:
            fake.SINK.send = None

    def _special(self, msg, st, sid):
        id = msg["id"]
        if msg["params"]["name"] == "forget":
            # Forgotten before the answer is written: a request sent once
            # the answer is seen gets 404, never a stream that finds its
            # session gone half-way and ends empty.
            with LOCK:
                SESSIONS.pop(sid, None)
            st.write(f"{st.key}-1", json.dumps(
                {"jsonrpc": "2.0", "id": id, "result": fake.text("forgotten")},
                separators=(",", ":")))
            return
        n = int((msg["params"].get("arguments") or {}).get("n", 2))
        token = (msg["params"].get("_meta") or {}).get("progressToken")
        for i in range(1, n + 1):
            if token is not None:
                fake.notify("notifications/progress", {
                    "progressToken": token, "progress": i, "total": n + 1})
        time.sleep(0.1)
        log("drop: cutting the stream")
        st.cut()
        time.sleep(0.2)
        # The rest goes to the store only: a resume picks it up.
        if token is not None:
            fake.notify("notifications/progress", {
                "progressToken": token, "progress": n + 1, "total": n + 1})
        fake.result(id, fake.text(f"dropped after {n}"))


def main():
    ThreadingHTTPServer.allow_reuse_address = True
    srv = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    srv.daemon_threads = True
    tmp = PORTFILE + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, PORTFILE)
    srv.serve_forever()


if __name__ == "__main__":
    main()
