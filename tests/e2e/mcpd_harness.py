"""
Black-box harness for the mcpd end-to-end tests.

It starts the real binary on a temporary conf (port 0, the port is read from
the daemon's "listening on HOST:PORT" log line), drains its stderr in a thread
so the pipe never fills, and talks HTTP/1.1 over raw sockets so every header,
every framing detail and every abrupt disconnect is under the test's control.

Python 3.11 standard library only.
"""

import codecs
import collections
import contextlib
import json
import os
import re
import resource
import signal
import socket
import ssl
import struct
import subprocess
import tempfile
import threading
import time
import uuid

VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
LATEST = "2025-11-25"
ACCEPT_BOTH = "application/json, text/event-stream"
EVENT_ID_RE = re.compile(r"\A(0|[1-9][0-9]*)-(0|[1-9][0-9]*)\Z")
LISTEN_RE = re.compile(rb"listening on (\S+):(\d+)")
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                     "runtime error:")

# Every timeout is multiplied by this; the runner raises it for sanitized
# builds, which run several times slower.
SLOW = 1.0


def tmo(seconds):
    """A timeout scaled for the build under test."""
    return seconds * SLOW


class Timeout(AssertionError):
    """Something awaited did not happen in time (a test failure)."""


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


class Skip(BaseException):
    """Raised by a test that cannot run here: the runner lists and counts
    it apart, as skipped, never as passed. By default something it needs
    is not installed (redis-server, promtool, nginx, node and its
    modules): with MCPD_TEST_NO_SKIP=1, as CI sets it, that counts as a
    failure. other_run=True: it needs what another run of the suite sets
    up (the shared Redis of `make e2e-redis`), and is skipped in this one
    even in CI. A BaseException, like the runner's timeout, so that no
    test's `except Exception` turns it into a pass."""

    def __init__(self, reason, other_run=False):
        super().__init__(reason)
        self.other_run = other_run


def need_shared_redis():
    """The shared Redis of the run (MCPD_TEST_REDIS_URL, which
    scripts/with-redis sets), for tests of several processes on one log;
    without one, Skip: the run on Redis (make e2e-redis) runs the test."""
    if REDIS_URL is None:
        raise Skip("needs MCPD_TEST_REDIS_URL (run it under "
                   "scripts/with-redis)", other_run=True)
    return REDIS_URL


# --------------------------------------------------------------------------
# JSON-RPC / MCP message helpers


def rpc(method, params=None, id=None):
    """A JSON-RPC request (id given) or notification (id None)."""
    msg = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        msg["id"] = id
    if params is not None:
        msg["params"] = params
    return msg


def tool_call(name, arguments, id, progress_token=None):
    params = {"name": name, "arguments": arguments}
    if progress_token is not None:
        params["_meta"] = {"progressToken": progress_token}
    return rpc("tools/call", params, id)


def cancelled(request_id, reason="e2e test"):
    return rpc("notifications/cancelled",
               {"requestId": request_id, "reason": reason})


def parse_event_id(s):
    """'K-N' -> (K, N); AssertionError unless canonical decimals."""
    m = EVENT_ID_RE.match(s or "")
    expect(m is not None, f"event id {s!r} is not of the form K-N "
           "(canonical decimals)")
    return int(m.group(1)), int(m.group(2))


def is_response(msg, id=None):
    if not isinstance(msg, dict) or "method" in msg:
        return False
    if "result" not in msg and "error" not in msg:
        return False
    return id is None or msg.get("id") == id


def is_progress(msg):
    return isinstance(msg, dict) and \
        msg.get("method") == "notifications/progress"


def is_log(msg):
    return isinstance(msg, dict) and \
        msg.get("method") == "notifications/message"


def result_text(msg):
    """The text of a tools/call result's single text content item."""
    expect(is_response(msg), f"not a JSON-RPC response: {msg!r}")
    expect("result" in msg, f"response is an error, not a result: {msg!r}")
    content = msg["result"].get("content")
    expect(isinstance(content, list) and len(content) >= 1,
           f"result has no content list: {msg!r}")
    item = content[0]
    expect(item.get("type") == "text", f"content[0] is not text: {msg!r}")
    return item.get("text")


def assert_rpc_error(body, code=None, id_null=True):
    """body is a JSON-RPC error object; returns its 'error' member."""
    expect(isinstance(body, dict), f"body is not a JSON object: {body!r}")
    expect(body.get("jsonrpc") == "2.0", f"no jsonrpc 2.0 member: {body!r}")
    expect(isinstance(body.get("error"), dict),
           f"no error object in body: {body!r}")
    err = body["error"]
    expect(isinstance(err.get("code"), int),
           f"error.code missing or not an integer: {body!r}")
    expect(isinstance(err.get("message"), str),
           f"error.message missing: {body!r}")
    if id_null:
        expect(body.get("id") is None, f"error id is not null: {body!r}")
    if code is not None:
        expect(err["code"] == code,
               f"error.code {err['code']} != {code}: {body!r}")
    return err


def random_session_id():
    return uuid.uuid4().hex + uuid.uuid4().hex[:8]


# --------------------------------------------------------------------------
# Raw HTTP/1.1 client


class Conn:
    """One TCP connection to the daemon with an input buffer."""

    def __init__(self, host, port, timeout, rcvbuf=None):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            if rcvbuf:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            s.settimeout(timeout)
            s.connect((host, port))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except BaseException:
            s.close()
            raise
        self.sock = s
        self.buf = bytearray()
        self.eof = False
        self.reset = False
        self.closed = False

    def send(self, data):
        """Send everything; a peer that already gave up is not an error
        here (its answer, if any, is still read afterwards)."""
        self.sock.settimeout(tmo(10))
        try:
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False

    def fill(self, deadline):
        """Read more into buf. False at EOF; Timeout past the deadline."""
        if self.eof:
            return False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Timeout("timed out waiting for data from mcpd")
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(262144)
        except socket.timeout:
            raise Timeout("timed out waiting for data from mcpd") from None
        except ConnectionResetError:
            self.eof = self.reset = True
            return False
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def readline(self, deadline):
        """One CRLF- (or LF-) terminated line without its terminator;
        None at EOF before a full line."""
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 1]
                return line[:-1] if line.endswith(b"\r") else line
            if not self.fill(deadline):
                return None

    def take(self, n):
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    def cut(self):
        """Abrupt disconnect: RST, no FIN handshake, unread data dropped."""
        if self.closed:
            return
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                 struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close()

    def close(self):
        if not self.closed:
            self.closed = True
            try:
                self.sock.close()
            except OSError:
                pass


class SlowConn(Conn):
    """A slow reader: a tiny receive buffer (SO_RCVBUF set before connect,
    so the TCP window stays small) and reads of at most `chunk` bytes, each
    after a pause of `pause` seconds. pace() changes both at any time; a
    reader that does not read at all is a stalled client. (On loopback the
    daemon's kernel send buffer still grows to megabytes.)"""

    def __init__(self, host, port, timeout, rcvbuf=4096, chunk=512,
                 pause=0.005):
        super().__init__(host, port, timeout, rcvbuf)
        self.chunk = chunk
        self.pause = pause
        self.received = 0           # bytes read from the socket so far

    def pace(self, chunk=None, pause=None):
        if chunk is not None:
            self.chunk = chunk
        if pause is not None:
            self.pause = pause

    def fill(self, deadline):
        if self.eof:
            return False
        if self.pause > 0:
            time.sleep(max(0.0, min(self.pause,
                                    deadline - time.monotonic())))
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Timeout("timed out waiting for data from mcpd")
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(self.chunk)
        except socket.timeout:
            raise Timeout("timed out waiting for data from mcpd") from None
        except ConnectionResetError:
            self.eof = self.reset = True
            return False
        if not data:
            self.eof = True
            return False
        self.received += len(data)
        self.buf += data
        return True


class Body:
    """Incremental reader of one response body (chunked, length or EOF)."""

    def __init__(self, conn, mode, length=0):
        self.conn = conn
        self.mode = mode            # "none", "chunked", "length", "eof"
        self.left = length
        self.done = mode == "none"
        self.truncated = False      # ended by EOF/RST, not by its framing
        self.need_crlf = False

    def _end(self, truncated=False):
        self.done = True
        self.truncated = truncated
        return b""

    def read_some(self, deadline):
        """Some body bytes; b"" once the body has ended."""
        c = self.conn
        while not self.done:
            if self.mode == "length":
                if self.left == 0:
                    return self._end()
                if not c.buf and not c.fill(deadline):
                    return self._end(truncated=True)
                data = c.take(min(self.left, len(c.buf)))
                self.left -= len(data)
                return data
            if self.mode == "eof":
                if not c.buf and not c.fill(deadline):
                    return self._end()
                return c.take(len(c.buf))
            # chunked
            if self.left == 0:
                if self.need_crlf:
                    line = c.readline(deadline)
                    if line is None:
                        return self._end(truncated=True)
                    self.need_crlf = False
                line = c.readline(deadline)
                if line is None:
                    return self._end(truncated=True)
                try:
                    size = int(line.split(b";")[0].strip(), 16)
                except ValueError:
                    raise AssertionError(f"bad chunk size line {line!r}")
                if size == 0:
                    while True:     # trailers up to the empty line
                        line = c.readline(deadline)
                        if not line:
                            break
                    return self._end()
                self.left = size
            if not c.buf and not c.fill(deadline):
                return self._end(truncated=True)
            data = c.take(min(self.left, len(c.buf)))
            self.left -= len(data)
            if self.left == 0:
                self.need_crlf = True
            return data
        return b""


class SSEEvent:
    """One dispatched SSE block. Fields absent from the block are None.
    (Unlike a browser, blocks without data are kept: priming events,
    bare retry: blocks.)"""

    __slots__ = ("id", "event", "data", "retry", "fields")

    def __init__(self):
        self.id = None
        self.event = None
        self.data = None
        self.retry = None
        self.fields = []

    @property
    def json(self):
        return json.loads(self.data)

    @property
    def is_message(self):
        return self.data is not None and self.data != ""

    def __repr__(self):
        return f"SSEEvent({self.fields!r})"


class SSEParser:
    """WHATWG event-stream parsing (CRLF/LF/CR line ends, comments,
    multi-line data, field value's single leading space)."""

    _eol = re.compile(r"\r\n|\r|\n")

    def __init__(self):
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.text = ""
        self.cur = SSEEvent()
        self.comments = []

    def feed(self, data, final=False):
        self.text += self.decoder.decode(data, final)
        events = []
        pos = 0
        text = self.text
        for m in self._eol.finditer(text):
            if m.group() == "\r" and m.end() == len(text) and not final:
                break           # maybe the first half of a CRLF
            ev = self._line(text[pos:m.start()])
            pos = m.end()
            if ev is not None:
                events.append(ev)
        self.text = text[pos:]
        return events

    def _line(self, line):
        if line == "":
            if not self.cur.fields:
                return None
            ev, self.cur = self.cur, SSEEvent()
            return ev
        if line.startswith(":"):
            self.comments.append(line[1:])
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        ev = self.cur
        ev.fields.append((name, value))
        if name == "data":
            ev.data = value if ev.data is None else ev.data + "\n" + value
        elif name == "id":
            if "\0" not in value:
                ev.id = value
        elif name == "event":
            ev.event = value
        elif name == "retry":
            if value.isdigit():
                ev.retry = int(value)
        return None


class Reply:
    """One HTTP response: status and headers read at once, the body on
    demand, either whole or (for SSE) event by event."""

    def __init__(self, conn, method, deadline):
        self.conn = conn
        line = conn.readline(deadline)
        while True:
            if line is None:
                raise AssertionError("mcpd closed the connection without "
                                     "an HTTP response")
            parts = line.decode("latin-1").split(" ", 2)
            expect(len(parts) >= 2 and parts[0].startswith("HTTP/1."),
                   f"bad status line {line!r}")
            self.version = parts[0]
            self.status = int(parts[1])
            self.reason = parts[2] if len(parts) > 2 else ""
            self.headers = []
            while True:
                h = conn.readline(deadline)
                expect(h is not None, "connection closed inside headers")
                if h == b"":
                    break
                name, _, value = h.decode("latin-1").partition(":")
                self.headers.append((name.strip(), value.strip()))
            if self.status >= 200 or self.status == 101:
                break
            line = conn.readline(deadline)      # skip 1xx interim replies
        te = (self.header("Transfer-Encoding") or "").lower()
        cl = self.header("Content-Length")
        if method == "HEAD" or self.status in (204, 304):
            self.reader = Body(conn, "none")
        elif "chunked" in te:
            self.reader = Body(conn, "chunked")
        elif cl is not None:
            self.reader = Body(conn, "length", int(cl))
        else:
            self.reader = Body(conn, "eof")
        self._body = None
        self.parser = SSEParser() if self.is_sse else None
        self.pending = collections.deque()
        self.ended = False
        self.events = []        # every event handed out so far

    # headers

    def header(self, name):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def header_all(self, name):
        name = name.lower()
        return [v for k, v in self.headers if k.lower() == name]

    @property
    def content_type(self):
        return (self.header("Content-Type") or "").split(";")[0] \
            .strip().lower()

    @property
    def is_sse(self):
        return self.content_type == "text/event-stream"

    @property
    def is_json(self):
        return self.content_type == "application/json"

    @property
    def session_id(self):
        return self.header("Mcp-Session-Id")

    # whole body

    def read_body(self, timeout=10):
        if self._body is None:
            deadline = time.monotonic() + tmo(timeout)
            parts = []
            while True:
                data = self.reader.read_some(deadline)
                if not data:
                    break
                parts.append(data)
            self._body = b"".join(parts)
            self.ended = True
        return self._body

    @property
    def body(self):
        return self.read_body()

    @property
    def json(self):
        body = self.read_body()
        try:
            return json.loads(body)
        except ValueError:
            raise AssertionError(f"HTTP {self.status} body is not JSON: "
                                 f"{body[:300]!r}") from None

    # SSE

    def next_event(self, timeout=5):
        """The next SSE block; None once the stream has ended; Timeout if
        nothing arrives in time."""
        expect(self.parser is not None,
               f"not an SSE response (HTTP {self.status}, Content-Type "
               f"{self.header('Content-Type')!r})")
        deadline = time.monotonic() + tmo(timeout)
        while not self.pending:
            if self.ended:
                return None
            try:
                data = self.reader.read_some(deadline)
            except Timeout:
                raise Timeout(f"no SSE event within {tmo(timeout):.1f}s "
                              f"(got so far: {self.events[-3:]!r})") from None
            if not data:
                self.pending.extend(self.parser.feed(b"", final=True))
                self.ended = True
            else:
                self.pending.extend(self.parser.feed(data))
        ev = self.pending.popleft()
        self.events.append(ev)
        return ev

    def next_message(self, timeout=5):
        """(event, decoded JSON) of the next event with data; None at end."""
        deadline = time.monotonic() + tmo(timeout)
        while True:
            ev = self.next_event(max(0.0, deadline - time.monotonic())
                                 / SLOW)
            if ev is None:
                return None
            if ev.is_message:
                return ev, ev.json

    def next_messages(self, count, timeout=5, what="SSE stream"):
        """The next `count` message events; fails if the stream ends
        first."""
        got = []
        while len(got) < count:
            m = self.next_message(timeout)
            expect(m is not None, f"{what}: ended after {len(got)} of "
                   f"{count} messages: {self.events[-3:]!r}")
            got.append(m[0])
        return got

    def events_until_close(self, timeout=10):
        """All further events until the server ends the stream."""
        deadline = time.monotonic() + tmo(timeout)
        out = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Timeout(f"SSE stream not closed by mcpd within "
                              f"{tmo(timeout):.1f}s (last events: "
                              f"{(self.events)[-3:]!r})")
            try:
                ev = self.next_event(remaining / SLOW)
            except Timeout:
                raise Timeout(f"SSE stream not closed by mcpd within "
                              f"{tmo(timeout):.1f}s (last events: "
                              f"{(self.events)[-3:]!r})") from None
            if ev is None:
                return out
            out.append(ev)

    def messages(self):
        """Decoded JSON of every message: SSE data events seen so far, or
        the JSON body (a batch array flattened)."""
        if self.is_sse:
            return [ev.json for ev in self.events if ev.is_message]
        body = self.json
        return body if isinstance(body, list) else [body]

    def rpc(self, id):
        """The JSON-RPC response with this id (reads the whole body)."""
        if self.is_sse:
            if not self.ended:
                self.events_until_close()
        for msg in self.messages():
            if is_response(msg, id):
                return msg
        raise AssertionError(f"no JSON-RPC response with id {id!r} in "
                             f"HTTP {self.status} reply: {self.messages()!r}")

    def cut(self):
        self.conn.cut()
        self.ended = True

    def close(self):
        self.conn.close()
        self.ended = True

    def __repr__(self):
        return f"<Reply HTTP {self.status} {self.content_type}>"


# --------------------------------------------------------------------------
# The daemon


# MCPD_TEST_REDIS_URL runs every daemon the harness starts on the redis
# event log instead of the memory one: redis://HOST:PORT[/DB], or any form
# mcpd takes (rediss://, unix://, with a user and password); then
# MCPD_TEST_REDIS_CONF holds more lines for those daemons' conf (the TLS
# files, a password file), separated by newlines, and MCPD_TEST_REDIS_CA
# the CA the tests' own connections check a rediss:// server with.
REDIS_URL = os.environ.get("MCPD_TEST_REDIS_URL") or None
REDIS_CONF = tuple(line for line in
                   (os.environ.get("MCPD_TEST_REDIS_CONF") or "").split("\n")
                   if line.strip())
REDIS_CA = os.environ.get("MCPD_TEST_REDIS_CA") or None
# The conf lines that name a redis event log mcpd waits for at start.
EVENTLOG_REDIS_RE = re.compile(r"^eventlog (redis|rediss|unix|redis-sentinel|"
                               r"redis-cluster)://", re.M)

DEFAULT_CONF = (
    ("listen", "127.0.0.1:0"),
    ("endpoint", "/mcp"),
    ("eventlog", REDIS_URL or "memory"),
    ("builtin_tools", "on"),
)

# What a started daemon has unless its test says otherwise (after the
# DEFAULT_CONF lines, which tests count): no drain, so SIGTERM (stop())
# interrupts running calls at once, as the tests written before the drain
# expect; tests of the drain set drain_delay and drain_timeout themselves.
DAEMON_CONF = (
    ("drain_delay", "0"),
    ("drain_timeout", "0"),
)


def conf_text(overrides=None, extra_lines=()):
    """The conf file: defaults, overridden (None drops a key), then extra
    raw lines."""
    overrides = dict(overrides or {})
    lines = ["# written by tests/e2e/mcpd_harness.py"]
    for key, value in DEFAULT_CONF:
        if key in overrides:
            value = overrides.pop(key)
        if value is not None:
            lines.append(f"{key} {value}")
    for key, value in overrides.items():
        if value is not None:
            lines.append(f"{key} {value}")
    lines.extend(extra_lines)
    return "\n".join(lines) + "\n"


def sanitizer_env(env):
    env.setdefault("ASAN_OPTIONS",
                   "detect_leaks=1:abort_on_error=0:exitcode=99")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    return env


class _Drain(threading.Thread):
    """Copies a pipe into a buffer forever, so the daemon never blocks."""

    def __init__(self, pipe, cond):
        super().__init__(daemon=True)
        self.pipe = pipe
        self.cond = cond
        self.data = bytearray()
        self.closed = False

    def run(self):
        fd = self.pipe.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            with self.cond:
                if chunk:
                    self.data += chunk
                else:
                    self.closed = True
                self.cond.notify_all()
            if not chunk:
                return


class Daemon:
    """One running mcpd and HTTP helpers bound to it."""

    def __init__(self, mcpd, workdir, conf=None, extra_lines=(),
                 sanitized=False, name="mcpd"):
        self.mcpd = mcpd
        self.sanitized = sanitized
        conf = dict(conf or {})
        for key, value in DAEMON_CONF:
            conf.setdefault(key, value)
        if REDIS_URL is not None and conf.get("eventlog", REDIS_URL) == \
                REDIS_URL:
            extra_lines = tuple(extra_lines) + REDIS_CONF
        self.conf = conf_text(conf, extra_lines)
        self.conf_path = os.path.join(workdir, f"{name}.conf")
        with open(self.conf_path, "w") as f:
            f.write(self.conf)
        self.endpoint = (conf or {}).get("endpoint", "/mcp")
        self.proc = None
        self.host = "127.0.0.1"
        self.port = None
        self.versions = {}          # session id -> negotiated version
        self.next_id = 1
        self.conns = []
        self.stopped = False
        self.problems = []
        self.cond = threading.Condition()
        self.nofile = None          # RLIMIT_NOFILE (soft and hard) if set
        self.env = {}               # added to the environment at start

    # process

    def _limit(self):
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))

    def start(self, timeout=10, listening=True):
        """Start the daemon and (listening=True) wait until it listens;
        with listening=False, return at once (await_listening later)."""
        env = os.environ.copy()
        if self.sanitized:
            sanitizer_env(env)
        env.update(self.env)
        self.proc = subprocess.Popen(
            [self.mcpd, "-c", self.conf_path], stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
            start_new_session=True,
            preexec_fn=self._limit if self.nofile is not None else None)
        self.err = _Drain(self.proc.stderr, self.cond)
        self.out = _Drain(self.proc.stdout, self.cond)
        self.err.start()
        self.out.start()
        if listening:
            self.await_listening(timeout)
        return self

    def await_listening(self, timeout=10):
        """Wait for the daemon's "listening on HOST:PORT" line (and with
        the redis log, for its command connection)."""
        deadline = time.monotonic() + tmo(timeout)
        with self.cond:
            while True:
                m = LISTEN_RE.search(self.err.data)
                if m:
                    self.host = m.group(1).decode()
                    self.port = int(m.group(2))
                    break
                if self.proc.poll() is not None and self.err.closed:
                    self.problems.append("mcpd exited during start-up")
                    raise AssertionError(
                        f"mcpd exited with status {self.proc.returncode} "
                        f"before logging 'listening on HOST:PORT'; conf:\n"
                        f"{self.conf}stderr:\n{self.stderr_tail()}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"no 'listening on HOST:PORT' on mcpd's stderr "
                        f"within {tmo(timeout):.0f}s; stderr:\n"
                        f"{self.stderr_tail()}\nstdout:\n"
                        f"{self.out.data[-2000:].decode(errors='replace')}")
                self.cond.wait(min(remaining, 0.2))
        expect(self.host in ("127.0.0.1", "localhost", "0.0.0.0"),
               f"mcpd listens on {self.host!r}, conf asked for 127.0.0.1")
        self.host = "127.0.0.1"
        if EVENTLOG_REDIS_RE.search(self.conf):
            self._wait_redis_ready(timeout)
        return self

    def _wait_redis_ready(self, timeout):
        """With the redis event log the daemon listens once its command
        connection is up, or after eventlog_wait without it (and answers
        503 meanwhile), and issues no requestState before it has read the
        log's keyring: wait for those, but never fail here (a test may
        mean a Redis that is not there)."""
        try:
            self.wait_log(lambda line: "command connection ready" in line,
                          timeout, "redis command connection ready")
            if not re.search(r"^state_key_file ", self.conf, re.M):
                self.wait_log(lambda line: "state key: " in line,
                              timeout, "the keyring read")
        except AssertionError:
            pass

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stderr_text(self):
        with self.cond:
            return self.err.data.decode("utf-8", errors="replace")

    def stderr_tail(self, lines=40):
        return "\n".join(self.stderr_text().splitlines()[-lines:])

    def wait_log(self, predicate, timeout=3, what="log line"):
        """Wait for a stderr line satisfying predicate(line); returns it."""
        deadline = time.monotonic() + tmo(timeout)
        with self.cond:
            while True:
                text = self.err.data.decode("utf-8", errors="replace")
                for line in text.splitlines():
                    if predicate(line):
                        return line
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.err.closed:
                    raise AssertionError(
                        f"no {what} on mcpd's stderr; tail:\n"
                        f"{self.stderr_tail(15)}")
                self.cond.wait(min(remaining, 0.2))

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=5, close_clients=True):
        """SIGTERM, bounded wait; returns the problems found (exit status,
        unexpected death, sanitizer reports)."""
        if self.stopped or self.proc is None:
            return self.problems
        self.stopped = True
        if close_clients:
            for c in self.conns:
                c.close()
        rc = self.proc.poll()
        if rc is not None:
            self.problems.append(f"mcpd died unexpectedly (exit status {rc})")
        else:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(tmo(timeout))
            except subprocess.TimeoutExpired:
                self.problems.append(
                    f"mcpd did not exit within {tmo(timeout):.0f}s of "
                    "SIGTERM (killed)")
                self.proc.kill()
                rc = self.proc.wait()
            if rc != 0 and not self.problems:
                self.problems.append(
                    f"mcpd exited with status {rc} on SIGTERM" +
                    (" (sanitizer exit code)" if rc == 99 else ""))
        self.err.join(tmo(5))
        self.out.join(tmo(5))
        text = self.stderr_text()
        for marker in SANITIZER_MARKERS:
            if marker in text:
                self.problems.append(f"stderr contains {marker!r}")
        self.exit_status = rc
        return self.problems

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    # HTTP

    def new_id(self):
        i = self.next_id
        self.next_id += 1
        return i

    def _header_list(self, session, headers, body):
        h = [("Host", f"127.0.0.1:{self.port}"), ("Accept", ACCEPT_BOTH)]
        if body is not None:
            h.append(("Content-Type", "application/json"))
        if session is not None:
            h.append(("Mcp-Session-Id", session))
            if self.versions.get(session):
                h.append(("MCP-Protocol-Version", self.versions[session]))
        for name, value in (headers or {}).items():
            h = [(k, v) for k, v in h if k.lower() != name.lower()]
            if value is not None:
                h.append((name, value))
        return h

    def build_request(self, method, session=None, body=None, headers=None,
                      path=None):
        """The bytes of one HTTP/1.1 request with the default headers."""
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        hl = self._header_list(session, headers, body)
        if body is not None and not any(k.lower() == "content-length"
                                        for k, _ in hl):
            hl.append(("Content-Length", str(len(body))))
        head = f"{method} {path or self.endpoint} HTTP/1.1\r\n" + \
            "".join(f"{k}: {v}\r\n" for k, v in hl) + "\r\n"
        return head.encode("latin-1") + (body or b"")

    def connect(self, timeout=10, rcvbuf=None):
        """A new TCP connection to the daemon (closed at teardown)."""
        try:
            conn = Conn(self.host, self.port, tmo(timeout), rcvbuf)
        except OSError as e:
            raise AssertionError(
                f"cannot connect to mcpd ({e}); daemon "
                f"{'alive' if self.alive() else 'DEAD'}; stderr:\n"
                f"{self.stderr_tail(15)}") from None
        self.conns.append(conn)
        return conn

    def open(self, method, session=None, body=None, headers=None, path=None,
             timeout=10, rcvbuf=None, raw_head=None, conn=None):
        """Send one request (on a new connection unless conn is given) and
        read the response head; the body is left on the wire
        (Reply.next_event / Reply.read_body)."""
        deadline = time.monotonic() + tmo(timeout)
        if conn is None:
            conn = self.connect(timeout, rcvbuf)
        if raw_head is not None:
            data = raw_head
        else:
            data = self.build_request(method, session, body, headers, path)
        conn.send(data)
        try:
            return Reply(conn, method, deadline)
        except Timeout:
            raise Timeout(f"no HTTP response to {method} within "
                          f"{tmo(timeout):.0f}s") from None

    def read_whole(self, r, timeout=10):
        """Read the rest of a reply (an SSE 200 until the server ends it)."""
        if r.is_sse and r.status == 200:
            r.events_until_close(timeout)
        else:
            r.read_body(timeout)
        return r

    def request(self, method, session=None, body=None, headers=None,
                path=None, timeout=10):
        """Send one request and read the whole response (an SSE response
        until the server closes it)."""
        r = self.read_whole(self.open(method, session, body, headers, path,
                                      timeout), timeout)
        r.close()
        return r

    def post(self, session, body, headers=None, timeout=10):
        return self.request("POST", session, body, headers, timeout=timeout)

    def post_open(self, session, body, headers=None, timeout=10):
        return self.open("POST", session, body, headers, timeout=timeout)

    def get_sse(self, session, last_event_id=None, headers=None, timeout=10,
                rcvbuf=None):
        """GET on the endpoint. An SSE 200 is returned open (read it with
        next_event); anything else is returned with its body read."""
        hdrs = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            hdrs["Last-Event-ID"] = last_event_id
        hdrs.update(headers or {})
        r = self.open("GET", session, None, hdrs, timeout=timeout,
                      rcvbuf=rcvbuf)
        if not (r.status == 200 and r.is_sse):
            r.read_body(timeout)
            r.close()
        return r

    def delete(self, session, headers=None):
        return self.request("DELETE", session, None, headers)

    def connect_slow(self, timeout=10, rcvbuf=4096, chunk=512, pause=0.005):
        """A new slow-reading TCP connection (SlowConn; closed at
        teardown)."""
        try:
            conn = SlowConn(self.host, self.port, tmo(timeout), rcvbuf,
                            chunk, pause)
        except OSError as e:
            raise AssertionError(
                f"cannot connect to mcpd ({e}); daemon "
                f"{'alive' if self.alive() else 'DEAD'}; stderr:\n"
                f"{self.stderr_tail(15)}") from None
        self.conns.append(conn)
        return conn

    def open_slow(self, method, session=None, body=None, headers=None,
                  timeout=10, rcvbuf=4096, chunk=512, pause=0.005):
        """open() on a SlowConn: the reply's body is read slowly (see
        SlowConn; reply.conn.pace() changes the pace)."""
        conn = self.connect_slow(timeout, rcvbuf, chunk, pause)
        return self.open(method, session, body, headers, timeout=timeout,
                         conn=conn)

    def get_sse_slow(self, session, last_event_id=None, headers=None,
                     timeout=10, rcvbuf=4096, chunk=512, pause=0.005):
        """get_sse() on a SlowConn."""
        hdrs = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            hdrs["Last-Event-ID"] = last_event_id
        hdrs.update(headers or {})
        r = self.open_slow("GET", session, None, hdrs, timeout, rcvbuf,
                           chunk, pause)
        if not (r.status == 200 and r.is_sse):
            r.conn.pace(chunk=65536, pause=0)
            r.read_body(timeout)
            r.close()
        return r

    # the process, seen from outside

    def proc_status_kib(self, field="VmRSS"):
        """A kB field of /proc/PID/status of the daemon (VmRSS, VmHWM,
        ...), in KiB."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        raise AssertionError(f"no {field} in /proc/{self.proc.pid}/status")

    def rss_kib(self):
        return self.proc_status_kib("VmRSS")

    def healthz(self, timeout=5):
        """GET /healthz, decoded."""
        r = self.request("GET", path="/healthz", timeout=timeout)
        expect(r.status == 200, f"/healthz -> HTTP {r.status}")
        return r.json

    def metric(self, name):
        """One counter of /healthz "metrics"."""
        return self.healthz()["metrics"][name]

    def wait_metric(self, name, predicate, timeout=10, what=None):
        """Poll /healthz until predicate(metrics[name]); returns the
        value."""
        deadline = time.monotonic() + tmo(timeout)
        while True:
            value = self.metric(name)
            if predicate(value):
                return value
            if time.monotonic() >= deadline:
                raise Timeout(f"/healthz metrics.{name} = {value!r}: "
                              f"{what or 'condition'} not reached within "
                              f"{tmo(timeout):.1f}s")
            time.sleep(0.02)


    def initialize_reply(self, version=LATEST, headers=None, id=None):
        params = {"protocolVersion": version, "capabilities": {},
                  "clientInfo": {"name": "mcpd-e2e", "version": "0.1"}}
        return self.post(None, rpc("initialize", params,
                                   id if id is not None else self.new_id()),
                         headers)

    def initialize(self, version=LATEST, initialized=True, headers=None):
        """A fresh session; returns its id (the negotiated version is used
        for MCP-Protocol-Version from then on)."""
        id = self.new_id()
        r = self.initialize_reply(version, headers, id)
        expect(r.status == 200, f"initialize({version}) -> HTTP {r.status}: "
               f"{r.body[:300]!r}")
        sid = r.session_id
        expect(sid, "initialize reply has no Mcp-Session-Id header")
        res = r.rpc(id)
        expect("result" in res, f"initialize failed: {res!r}")
        self.versions[sid] = res["result"].get("protocolVersion")
        if initialized:
            n = self.post(sid, rpc("notifications/initialized"))
            expect(n.status == 202,
                   f"notifications/initialized -> HTTP {n.status}")
        return sid

    def ping(self, session, headers=None):
        return self.post(session, rpc("ping", None, self.new_id()), headers)

    def assert_alive(self, session, context=""):
        """The daemon still serves and the session is still valid."""
        expect(self.alive(), f"mcpd died {context}; stderr:\n"
               f"{self.stderr_tail(20)}")
        id = self.new_id()
        r = self.post(session, rpc("ping", None, id))
        expect(r.status == 200, f"ping {context} -> HTTP {r.status} "
               f"{r.body[:200]!r}")
        msg = r.rpc(id)
        expect(msg.get("result") == {}, f"ping {context} -> {msg!r}")

    def call_open(self, session, name, arguments, progress_token=None,
                  headers=None):
        """Start a tools/call; returns (request id, open Reply)."""
        id = self.new_id()
        r = self.post_open(session, tool_call(name, arguments, id,
                                              progress_token), headers)
        return id, r

    def call(self, session, name, arguments, progress_token=None,
             timeout=10):
        """A whole tools/call; returns (response message, Reply)."""
        id = self.new_id()
        r = self.post(session, tool_call(name, arguments, id, progress_token),
                      timeout=timeout)
        expect(r.status == 200, f"tools/call {name} -> HTTP {r.status} "
               f"{r.body[:300]!r}")
        return r.rpc(id), r


# --------------------------------------------------------------------------
# What each test function receives


class Harness:
    def __init__(self, mcpd, sanitized=False, workdir=None):
        self.mcpd = mcpd
        self.sanitized = sanitized
        self.workdir = workdir or tempfile.mkdtemp(prefix="mcpd-e2e-")
        self.daemons = []

    def start(self, extra_lines=(), nofile=None, **conf):
        """Start mcpd with the default conf plus overrides
        (stream_maxlen=5, allowed_origins="http://good.example", ...);
        nofile: its open file limit (soft and hard, so mcpd cannot raise
        it)."""
        d = Daemon(self.mcpd, self.workdir, conf, extra_lines,
                   self.sanitized, f"mcpd{len(self.daemons)}")
        d.nofile = nofile
        self.daemons.append(d)
        d.start()
        return d

    def write(self, name, text):
        path = os.path.join(self.workdir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_mcpd(self, *args, timeout=10):
        """Run the binary to completion (e.g. -t -c FILE)."""
        env = os.environ.copy()
        if self.sanitized:
            sanitizer_env(env)
        p = subprocess.run([self.mcpd, *args], stdin=subprocess.DEVNULL,
                           capture_output=True, env=env,
                           timeout=tmo(timeout))
        out = p.stdout.decode(errors="replace") + \
            p.stderr.decode(errors="replace")
        return p.returncode, out

    def conf_accepts(self, *lines):
        """Does `mcpd -t` accept the default conf plus these lines? (With
        the shared Redis's own lines, as a daemon's conf has them: a
        password file, the TLS files.)"""
        if REDIS_URL is not None:
            lines = tuple(lines) + REDIS_CONF
        path = self.write(f"probe{time.monotonic_ns()}.conf",
                          conf_text(None, lines))
        rc, _ = self.run_mcpd("-t", "-c", path)
        return rc == 0

    def stop_all(self):
        """Stop every daemon now; their problems are kept for teardown(),
        which reports them."""
        for d in self.daemons:
            try:
                d.stop()
            except Exception:           # teardown reports it
                d.kill()

    def teardown(self):
        """Stop every daemon; returns the problems (strings)."""
        problems = []
        for d in self.daemons:
            try:
                for p in d.stop():
                    problems.append(f"{os.path.basename(d.conf_path)}: {p}")
            except Exception as e:              # never leave one running
                d.kill()
                problems.append(f"stopping mcpd: {e!r}")
        return problems

    def stderr_tails(self, lines=30):
        return "\n".join(
            f"--- stderr of {os.path.basename(d.conf_path)} (last {lines} "
            f"lines)\n{d.stderr_tail(lines)}"
            for d in self.daemons if d.proc is not None)


# --------------------------------------------------------------------------
# Checks on a sequence of SSE events


def message_events(events):
    """The events that carry a message (non-empty data)."""
    return [e for e in events if e.is_message]


def check_ids(events, first_n, stream=None, what="stream"):
    """Every message event has an id K-N: one K (== stream if given), N
    consecutive from first_n. Returns (K, last N)."""
    msgs = message_events(events)
    k = stream
    n = first_n - 1
    for e in msgs:
        expect(e.id is not None, f"{what}: message event without id: {e!r}")
        ek, en = parse_event_id(e.id)
        if k is None:
            k = ek
        expect(ek == k, f"{what}: id {e.id} changes stream (expected K={k})")
        expect(en == n + 1, f"{what}: id {e.id} follows {k}-{n}: ids must "
               "be consecutive with no holes or repeats")
        n = en
    return k, n


def stream_messages(events):
    return [e.json for e in message_events(events)]


# --------------------------------------------------------------------------
# Redis, seen from the tests: a minimal RESP client and private servers


class RedisError(Exception):
    """An error reply (-ERR ...) from Redis."""


def parse_redis_url(url):
    """redis://HOST:PORT[/DB] -> (host, port, db)."""
    m = re.match(r"\Aredis://([^:/]+):(\d+)(?:/(\d+))?/?\Z", url or "")
    expect(m is not None, f"not a redis://HOST:PORT[/DB] url: {url!r}")
    return m.group(1), int(m.group(2)), int(m.group(3) or 0)


def parse_redis_address(url):
    """Any URL of mcpd's but redis-sentinel:// as a dict: host, port (or
    path), db, tls, user, password (percent-decoded); for
    redis-cluster://, the first node's host and port, and nodes, every
    (host, port)."""
    from urllib.parse import unquote
    m = re.match(r"\Aredis-cluster://(?:([^:@/]*)(?::([^@/]*))?@)?"
                 r"([^/@]+)\Z", url or "")
    if m:
        nodes = []
        for one in m.group(3).split(","):
            h = re.match(r"\A(\[[^\]]+\]|[^:]+)(?::(\d+))?\Z", one)
            expect(h is not None, f"not a cluster node: {one!r}")
            nodes.append((h.group(1).strip("[]"), int(h.group(2) or 6379)))
        return {"path": None, "host": nodes[0][0], "port": nodes[0][1],
                "db": 0, "tls": "redis_tls on" in REDIS_CONF, "nodes": nodes,
                "user": unquote(m.group(1)) if m.group(1) else None,
                "password": unquote(m.group(2)) if m.group(2) else None}
    m = re.match(r"\Aunix://(/[^?]+)(?:\?db=(\d+))?\Z", url or "")
    if m:
        return {"path": unquote(m.group(1)), "host": None, "port": None,
                "db": int(m.group(2) or 0), "tls": False, "user": None,
                "password": None}
    m = re.match(r"\A(rediss?)://(?:([^:@/]*)(?::([^@/]*))?@)?"
                 r"(\[[^\]]+\]|[^:/]+)(?::(\d+))?(?:/(\d+))?/?\Z", url or "")
    expect(m is not None, f"not a redis URL mcpd takes: {url!r}")
    return {"path": None, "host": m.group(4).strip("[]"),
            "port": int(m.group(5) or 6379), "db": int(m.group(6) or 0),
            "tls": m.group(1) == "rediss",
            "user": unquote(m.group(2)) if m.group(2) else None,
            "password": unquote(m.group(3)) if m.group(3) else None}


def redis_node_urls(url):
    """The URL of each node a redis-cluster:// URL names (its password
    kept), or [url]: for a command every node must run."""
    addr = parse_redis_address(url)
    if "nodes" not in addr:
        return [url]
    from urllib.parse import quote
    auth = ""
    if addr["password"] is not None:
        auth = f"{quote(addr['user'] or '', safe='')}:" \
            f"{quote(addr['password'], safe='')}@"
    scheme = "rediss" if addr["tls"] else "redis"
    return [f"{scheme}://{auth}{h if ':' not in h else '[' + h + ']'}:{p}"
            for h, p in addr["nodes"]]


class RedisConn(Conn):
    """A connection to Redis as a URL says: TCP, a unix socket, or TLS
    (checked against ca, default MCPD_TEST_REDIS_CA; client certificate
    cert and key if the server asks for one)."""

    def __init__(self, addr, timeout, ca=None, cert=None, key=None):
        if addr["path"] is not None:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            target = addr["path"]
        else:
            s = socket.socket(socket.AF_INET6 if ":" in addr["host"] else
                              socket.AF_INET, socket.SOCK_STREAM)
            target = (addr["host"], addr["port"])
        try:
            s.settimeout(timeout)
            s.connect(target)
            if addr["tls"]:
                ctx = ssl.create_default_context(cafile=ca or REDIS_CA)
                if cert is not None:
                    ctx.load_cert_chain(cert, key)
                s = ctx.wrap_socket(s, server_hostname=addr["host"])
        except BaseException:
            s.close()
            raise
        self.sock = s
        self.buf = bytearray()
        self.eof = False
        self.reset = False
        self.closed = False


def _resp_encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if not isinstance(a, bytes):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def _resp_read(conn, deadline):
    line = conn.readline(deadline)
    expect(line is not None, "redis closed the connection")
    kind, rest = line[:1], line[1:]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        return RedisError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        while len(conn.buf) < n + 2:
            expect(conn.fill(deadline), "redis closed inside a bulk reply")
        data = conn.take(n + 2)[:n]
        return data.decode("utf-8", errors="replace")
    if kind == b"*":
        n = int(rest)
        if n < 0:
            return None
        return [_resp_read(conn, deadline) for _ in range(n)]
    raise AssertionError(f"bad RESP line from redis: {line!r}")


def redis_command(url, *args, timeout=5, user=None, password=None,
                  ca=None, cert=None, key=None):
    """One command on a fresh connection to any URL mcpd takes but
    redis-sentinel:// (with AUTH first: the URL's user and password, or
    those given); the decoded reply (an error reply is raised as
    RedisError)."""
    addr = parse_redis_address(url)
    user = user or addr["user"]
    password = password or addr["password"]
    db = addr["db"]
    asking = False
    # On a cluster, a key's command goes where MOVED or ASK says.
    for _ in range(5):
        conn = RedisConn(addr, tmo(timeout), ca, cert, key)
        try:
            deadline = time.monotonic() + tmo(timeout)
            auth = [[c for c in ("AUTH", user, password)
                     if c is not None]] if password is not None else []
            cmds = auth + ([["SELECT", db]] if db else []) + \
                ([["ASKING"]] if asking else []) + [list(args)]
            conn.send(b"".join(_resp_encode(c) for c in cmds))
            replies = [_resp_read(conn, deadline) for _ in cmds]
        finally:
            conn.close()
        last = replies[-1]
        m = re.match(r"\A(MOVED|ASK) \d+ (.*):(\d+)\Z", str(last)) \
            if isinstance(last, RedisError) and "nodes" in addr else None
        if m is None:
            break
        addr = dict(addr, host=m.group(2).strip("[]") or addr["host"],
                    port=int(m.group(3)))
        asking = m.group(1) == "ASK"
    for r in replies:
        if isinstance(r, RedisError):
            raise r
    return replies[-1]


def redis_info(url, **kwargs):
    """INFO all of the Redis at url as {field: value} (strings), where a
    command's stats are read as cmdstat_NAME's calls: "calls:NAME"."""
    text = redis_command(url, "INFO", "all", **kwargs)
    if isinstance(text, bytes):
        text = text.decode()
    info = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if not sep or line.startswith("#"):
            continue
        info[name] = value
        m = re.match(r"cmdstat_(\S+)\Z", name)
        c = re.search(r"(?:\A|,)calls=(\d+)", value) if m else None
        if c is not None:
            info["calls:" + m.group(1)] = c.group(1)
    return info


def redis_calls(info, command):
    """How many times the Redis that gave info (redis_info's) has run
    command (lower case), 0 if never."""
    return int(info.get("calls:" + command, 0))


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port():
    """A loopback TCP port nobody listens on (at the time of asking), for
    a server that must be told its port. It is drawn at random from the
    12,000 ports below the kernel's ephemeral range: between this answer
    and the server's bind, the kernel never hands it to a connect() or a
    listen on port 0 elsewhere, which the suites `make check` runs side
    by side do by the thousand. Under `make check` each suite draws from
    a slice of its own (MCPD_TEST_PORT_LANE of MCPD_TEST_PORT_LANES), so
    two suites never pick the same port between one's check and its
    bind. Nor does one process get a port twice among its last
    answers: a test draws the ports of several servers before it starts
    any (a Sentinel deployment's five)."""
    import random
    high = _ephemeral_low()
    low = max(1024, high - 12000)
    try:
        lane = int(os.environ.get("MCPD_TEST_PORT_LANE", ""))
        lanes = int(os.environ.get("MCPD_TEST_PORT_LANES", ""))
    except ValueError:
        lane, lanes = 0, 1
    if 0 <= lane < lanes:
        width = (high - low) // lanes
        low, high = low + lane * width, low + (lane + 1) * width
    for _ in range(200):
        port = random.randrange(low, high)
        if port in _PORTS_GIVEN:
            continue
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            _PORTS_GIVEN.append(port)
            return port
        except OSError:
            continue
        finally:
            s.close()
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


# free_port()'s last answers, none of which it gives again: far more than
# the servers one test sets up before starting them.
_PORTS_GIVEN = collections.deque(maxlen=256)


def free_cluster_ports(n):
    """n loopback TCP ports for Redis Cluster nodes, each with its cluster
    bus port (port + 10000) free too. Both lie below free_port()'s range
    as well as the kernel's ephemeral range, so neither a connect() nor a
    server another suite side by side starts on a free_port() answer can
    take a node's port or its bus port before the node binds them."""
    import random
    high = _ephemeral_low()
    top = max(1024, high - 12000) - 10000   # bus ports below free_port's
    low = 1024
    if top - low < 4 * n:
        raise RuntimeError("no room below the ephemeral range for %d "
                           "cluster ports" % n)
    got = []
    for _ in range(200 * n):
        if len(got) == n:
            break
        port = random.randrange(low, top)
        if port in got or not all(_bindable(p) for p in (port,
                                                         port + 10000)):
            continue
        got.append(port)
    if len(got) < n:
        raise RuntimeError("no %d free cluster ports" % n)
    return got


def _bindable(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def redis_server_path():
    """The redis-server binary, or None."""
    import shutil
    return shutil.which("redis-server")


@contextlib.contextmanager
def private_redis(h, *args, aof=False, start=True, **kwargs):
    """A RedisServer of the test's own (args: redis-server's options),
    for a test that stops, restarts, pauses or configures Redis; started
    unless start=False. Skip when no redis-server is installed. On the way
    out, whatever happened, every daemon of h stops first (no daemon's
    shutdown waits on a Redis that is gone), then Redis:

        with private_redis(h, aof=True) as rs:
            d = h.start(eventlog=rs.url)
            ...
    """
    if redis_server_path() is None:
        raise Skip("no redis-server binary installed (scripts/install-deps)")
    rs = RedisServer(h.workdir, *args, aof=aof, **kwargs)
    try:
        if start:
            rs.start()
        yield rs
    finally:
        h.stop_all()
        rs.stop()


class RedisServer:
    """A private redis-server on a loopback port, in its own directory
    (under workdir), for tests that stop, restart, pause or configure
    Redis. start() may be called again after shutdown() or stop(): same
    port, same directory (with aof=True, the data survives). stop() is
    always safe to call (a test calls it in `finally`)."""

    def __init__(self, workdir, *args, port=None, aof=False, password=None,
                 tls=None, unix=False):
        """password: requirepass (the tests' commands AUTH with it);
        tls: (certificate, key, CA) files: TLS only on the port; unix: a
        unix socket only, no TCP port."""
        self.dir = tempfile.mkdtemp(prefix="redis-", dir=workdir)
        self.port = port or free_port()
        self.args = [str(a) for a in args]
        self.aof = aof
        self.password = password
        self.tls = tls
        self.unix = unix
        self.proc = None
        self.paused = False
        self.logfile = os.path.join(self.dir, "redis.log")

    @property
    def socket_path(self):
        """A unix socket path must be short (108 bytes): not under the
        test's directory."""
        if getattr(self, "_sock", None) is None:
            self._sock = os.path.join(tempfile.mkdtemp(prefix="mcpd-r"),
                                      "redis.sock")
        return self._sock

    @property
    def url(self):
        """The server's URL, without credentials."""
        if self.unix:
            return f"unix://{self.socket_path}"
        return f"{'rediss' if self.tls else 'redis'}://127.0.0.1:{self.port}"

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout=10):
        expect(not self.running(), "redis-server already running")
        argv = [redis_server_path() or "redis-server",
                "--bind", "127.0.0.1", "--port", str(self.port),
                "--dir", self.dir, "--save", "",
                "--daemonize", "no", "--logfile", self.logfile]
        if self.aof:
            argv += ["--appendonly", "yes", "--appendfsync", "always"]
        else:
            argv += ["--appendonly", "no"]
        if "--maxmemory-policy" not in self.args:
            argv += ["--maxmemory-policy", "noeviction"]
        if self.password is not None:
            argv += ["--requirepass", self.password]
        if self.tls is not None:
            argv[argv.index("--port") + 1] = "0"
            argv += ["--tls-port", str(self.port), "--tls-cert-file",
                     self.tls[0], "--tls-key-file", self.tls[1],
                     "--tls-ca-cert-file", self.tls[2],
                     "--tls-auth-clients", "no"]
        if self.unix:
            argv[argv.index("--port") + 1] = "0"
            argv += ["--unixsocket", self.socket_path, "--unixsocketperm",
                     "700"]
        argv += self.args
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.monotonic() + tmo(timeout)
        while True:
            try:
                if self.cmd("PING", timeout=1) == "PONG":
                    return self
            except (OSError, AssertionError, RedisError):
                pass
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"redis-server exited with status {self.proc.returncode}"
                    f" at start; log:\n{self.log_tail()}")
            if time.monotonic() >= deadline:
                self.stop()
                raise AssertionError(f"redis-server on port {self.port} "
                                     f"not answering PING; log:\n"
                                     f"{self.log_tail()}")
            time.sleep(0.02)

    def cmd(self, *args, timeout=5):
        return redis_command(self.url, *args, timeout=timeout,
                             password=self.password,
                             ca=self.tls[2] if self.tls else None)

    def shutdown(self, timeout=10):
        """SHUTDOWN (with aof: everything written is on disk), and wait
        for the process to be gone."""
        if not self.running():
            return
        self.resume()
        try:
            conn = RedisConn(parse_redis_address(self.url), tmo(timeout),
                             ca=self.tls[2] if self.tls else None)
            if self.password is not None:
                conn.send(_resp_encode(["AUTH", self.password]))
                _resp_read(conn, time.monotonic() + tmo(timeout))
            conn.send(_resp_encode(["SHUTDOWN"]))
            try:    # normally no reply: the connection just closes
                conn.readline(time.monotonic() + tmo(timeout))
            except (Timeout, OSError):
                pass
            conn.close()
        except OSError:
            pass
        try:
            self.proc.wait(tmo(timeout))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("redis-server did not exit on SHUTDOWN")

    def pause(self):
        """SIGSTOP: Redis still accepts TCP connections but answers
        nothing (a hung server)."""
        if self.running():
            self.proc.send_signal(signal.SIGSTOP)
            self.paused = True

    def resume(self):
        if self.paused and self.running():
            self.proc.send_signal(signal.SIGCONT)
        self.paused = False

    def stop(self):
        """Stop the server whatever its state (SIGCONT, SIGTERM, SIGKILL
        after 5 s)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.resume()
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if getattr(self, "_sock", None) is not None:
            import shutil
            shutil.rmtree(os.path.dirname(self._sock), ignore_errors=True)
            self._sock = None

    def log_tail(self, lines=20):
        try:
            with open(self.logfile, errors="replace") as f:
                return "\n".join(f.read().splitlines()[-lines:])
        except OSError:
            return "(no log)"
