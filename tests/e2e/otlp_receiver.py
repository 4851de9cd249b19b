"""
A test OTLP/HTTP receiver (JSON encoding), standard library only: it
records every export request mcpd sends (headers and body), checks each
body against the OTLP JSON mapping (opentelemetry-proto, "JSON Protobuf
Encoding"), and answers as the test asks: 200 {}, a status (429, 503, 400),
or nothing for a while (slow). Tests wait on what it received with
wait_spans(), never with sleeps.

    python3 tests/e2e/otlp_receiver.py [PORT]   # prints spans as they come
    python3 tests/e2e/otlp_receiver.py --discard PORTFILE
        # answers every POST 200 {} unread (scripts/bench-otel's sink); its
        # port is written to PORTFILE
"""

import http.server
import json
import re
import socketserver
import sys
import threading
import time

HEX32 = re.compile(r"\A[0-9a-f]{32}\Z")
HEX16 = re.compile(r"\A[0-9a-f]{16}\Z")
DIGITS = re.compile(r"\A(0|[1-9][0-9]*)\Z")
SPAN_KEYS = {"traceId", "spanId", "parentSpanId", "traceState", "flags",
             "name", "kind", "startTimeUnixNano", "endTimeUnixNano",
             "attributes", "droppedAttributesCount", "events",
             "droppedEventsCount", "links", "droppedLinksCount", "status"}
VALUE_KEYS = {"stringValue", "intValue", "boolValue", "doubleValue",
              "arrayValue", "kvlistValue", "bytesValue"}


def _check(cond, what):
    if not cond:
        raise AssertionError(f"OTLP/JSON mapping: {what}")


def check_attributes(attrs, where):
    _check(isinstance(attrs, list), f"{where}: attributes not a list")
    keys = set()
    for kv in attrs:
        _check(isinstance(kv, dict) and set(kv) == {"key", "value"},
               f"{where}: attribute {kv!r} is not {{key, value}}")
        _check(isinstance(kv["key"], str) and kv["key"],
               f"{where}: attribute key {kv['key']!r}")
        _check(kv["key"] not in keys, f"{where}: key {kv['key']} twice")
        keys.add(kv["key"])
        v = kv["value"]
        _check(isinstance(v, dict) and len(v) == 1 and
               set(v) <= VALUE_KEYS, f"{where}: value {v!r}")
        if "intValue" in v:
            # 64-bit integers are decimal strings in the JSON mapping.
            _check(isinstance(v["intValue"], str) and
                   re.match(r"\A-?(0|[1-9][0-9]*)\Z", v["intValue"]),
                   f"{where}: intValue {v['intValue']!r} not a string "
                   "of digits")
        if "stringValue" in v:
            _check(isinstance(v["stringValue"], str),
                   f"{where}: stringValue {v!r}")
        if "boolValue" in v:
            _check(isinstance(v["boolValue"], bool),
                   f"{where}: boolValue {v!r}")


def check_span(s):
    where = f"span {s.get('name')!r}"
    _check(set(s) <= SPAN_KEYS, f"{where}: unknown keys "
           f"{set(s) - SPAN_KEYS}")
    _check(HEX32.match(s.get("traceId", "")) and
           s["traceId"] != "0" * 32, f"{where}: traceId {s.get('traceId')!r}")
    _check(HEX16.match(s.get("spanId", "")) and s["spanId"] != "0" * 16,
           f"{where}: spanId {s.get('spanId')!r}")
    if "parentSpanId" in s:
        _check(HEX16.match(s["parentSpanId"]),
               f"{where}: parentSpanId {s['parentSpanId']!r}")
    _check(isinstance(s.get("name"), str) and s["name"], f"{where}: name")
    _check(s.get("kind") in (1, 2, 3, 4, 5), f"{where}: kind "
           f"{s.get('kind')!r} is not an enum number")
    for k in ("startTimeUnixNano", "endTimeUnixNano"):
        _check(isinstance(s.get(k), str) and DIGITS.match(s[k]),
               f"{where}: {k} {s.get(k)!r} is not a string of nanoseconds")
    _check(int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"]),
           f"{where}: ends before it starts")
    # Nanoseconds since the epoch: within a day of now.
    _check(abs(int(s["startTimeUnixNano"]) / 1e9 - time.time()) < 86400,
           f"{where}: startTimeUnixNano is not nanoseconds of now")
    if "flags" in s:
        _check(isinstance(s["flags"], int) and 0 <= s["flags"] < 2 ** 32,
               f"{where}: flags {s['flags']!r}")
    check_attributes(s.get("attributes", []), where)
    for link in s.get("links", []):
        _check(HEX32.match(link.get("traceId", "")) and
               HEX16.match(link.get("spanId", "")),
               f"{where}: link {link!r}")
    if "status" in s:
        st = s["status"]
        _check(st.get("code") in (0, 1, 2), f"{where}: status {st!r}")
        _check("message" not in st or st["code"] == 2,
               f"{where}: a status message without ERROR")


def check_request(body):
    """Checks one ExportTraceServiceRequest; returns its spans, each with
    its resource's attributes as a dict under "_resource"."""
    _check(isinstance(body, dict) and set(body) == {"resourceSpans"},
           f"top level {list(body)!r}")
    out = []
    for rs in body["resourceSpans"]:
        check_attributes(rs["resource"]["attributes"], "resource")
        res = {kv["key"]: kv["value"].get("stringValue")
               for kv in rs["resource"]["attributes"]}
        for ss in rs["scopeSpans"]:
            _check(isinstance(ss["scope"].get("name"), str), "scope name")
            for s in ss["spans"]:
                check_span(s)
                s = dict(s)
                s["_resource"] = res
                out.append(s)
    return out


def attr(span, key):
    """A span's attribute value (its one typed member), or None."""
    for kv in span.get("attributes", []):
        if kv["key"] == key:
            v = kv["value"]
            if "intValue" in v:
                return int(v["intValue"])
            return next(iter(v.values()))
    return None


class Receiver:
    """The receiver on 127.0.0.1:port (0: a free one), in a thread."""

    def __init__(self, port=0):
        self.cond = threading.Condition()
        self.requests = []      # (headers dict, body) of each accepted
        self.spans = []
        self.problems = []      # mapping violations
        self.posts = 0          # every POST, answered or not
        self.status = 200       # what to answer
        self.delay = 0.0        # seconds before answering
        self.retry_after = None
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                data = self.rfile.read(n)
                with rec.cond:
                    rec.posts += 1
                    status, delay = rec.status, rec.delay
                    retry_after = rec.retry_after
                    rec.cond.notify_all()
                if delay:
                    time.sleep(delay)
                if status != 200 or self.path != "/v1/traces":
                    self.send_response(status if status != 200 else 404)
                    if retry_after is not None:
                        self.send_header("Retry-After", str(retry_after))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                try:
                    body = json.loads(data)
                    spans = check_request(body)
                    ctype = self.headers.get("Content-Type", "")
                    _check(ctype.startswith("application/json"),
                           f"Content-Type {ctype!r}")
                except (AssertionError, ValueError, KeyError,
                        TypeError) as e:
                    with rec.cond:
                        rec.problems.append(str(e))
                        rec.cond.notify_all()
                    self.send_response(400)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                with rec.cond:
                    rec.requests.append(({k.lower(): v for k, v in
                                          self.headers.items()}, body))
                    rec.spans.extend(spans)
                    rec.cond.notify_all()
                out = b"{}"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def handle_error(self, request, client_address):
                # mcpd gives up on an answer slower than otel_timeout
                # (the slow receiver's test): its closed socket is
                # expected, not a traceback to print.
                if isinstance(sys.exc_info()[1], ConnectionError):
                    return
                super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def wait(self, predicate, timeout, what):
        """Waits until predicate() (under the lock) holds."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"receiver: timed out waiting for {what}; got "
                        f"{len(self.spans)} spans: "
                        f"{[s['name'] for s in self.spans][:40]}; "
                        f"problems {self.problems[:3]}")
                self.cond.wait(left)

    def wait_spans(self, predicate, timeout=10, what="spans"):
        """Waits until predicate(spans) is true; returns the spans."""
        self.wait(lambda: predicate(self.spans), timeout, what)
        with self.cond:
            return list(self.spans)

    def trace(self, trace_id):
        with self.cond:
            return [s for s in self.spans if s["traceId"] == trace_id]


def discard(portfile):
    """A sink as cheap as it can be: the body read, never parsed."""
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    srv = Server(("127.0.0.1", 0), Handler)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(portfile + ".tmp", portfile)
    srv.serve_forever()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--discard"]:
        discard(sys.argv[2])
        sys.exit(0)
    r = Receiver(int(sys.argv[1]) if len(sys.argv) > 1 else 4318)
    print(f"listening on {r.url}/v1/traces", flush=True)
    seen = 0
    while True:
        spans = r.wait_spans(lambda s: len(s) > seen, timeout=1e9)
        for s in spans[seen:]:
            print(s["traceId"], s["spanId"], s.get("parentSpanId", "-"),
                  s["kind"], s["name"], flush=True)
        seen = len(spans)
