"""A hostile HTTP/1.1 server for the tests of what mcpd fetches (an
upstream's url, jwks_uri, introspection): raw sockets, so it can say what
no well-behaved server would. Each request is answered by the mode set for
its method:

    ok          a normal answer (the body the test set, or an MCP answer)
    chunk       chunked, one chunk announced as 600 MiB, then bytes of it
    length      Content-Length 600 MiB, then bytes of it
    endless     chunked, 16 KiB chunks that never end
    silent      SSE headers, then nothing, the connection held open

"Bytes of it" stop at SEND_MAX (256 MiB) or when mcpd closes: a client
that gathers them grows by that much; one that refuses them does not.

With mcp=True it is a minimal MCP server: POST initialize, tools/list and
notifications get normal answers, a tools/call (and a GET) the mode set
for it; the hostile part is the answer, not the protocol.
"""

import json
import socket
import threading

ANNOUNCED = 600 * 1024 * 1024
SEND_MAX = 256 * 1024 * 1024
PIECE = 64 * 1024


class HostileServer:
    def __init__(self, mcp=False, body=b"{}"):
        self.mcp = mcp
        self.body = body
        self.modes = {"GET": "ok", "POST": "ok"}
        self.sent = 0                   # bytes of hostile bodies sent
        self.requests = []              # (method, path, rpc method)
        self.lock = threading.Lock()
        self.stopping = False
        self.held = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def count(self, method, rpc=None):
        with self.lock:
            return sum(1 for m, _, r in self.requests
                       if m == method and (rpc is None or r == rpc))

    def close(self):
        self.stopping = True
        try:
            self.sock.close()
        except OSError:
            pass
        for c in self.held:
            try:
                c.close()
            except OSError:
                pass

    # ------------------------------------------------------------------

    def _accept(self):
        while not self.stopping:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,),
                             daemon=True).start()

    def _read_request(self, c):
        data = b""
        while b"\r\n\r\n" not in data:
            more = c.recv(65536)
            if not more:
                return None
            data += more
        head, rest = data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "0"))
        while len(rest) < n:
            more = c.recv(65536)
            if not more:
                break
            rest += more
        return method, path, headers, rest[:n]

    def _serve(self, c):
        try:
            req = self._read_request(c)
            if req is None:
                return
            method, path, headers, body = req
            rpc = None
            msg = None
            if method == "POST" and self.mcp:
                try:
                    msg = json.loads(body)
                    rpc = msg.get("method")
                except ValueError:
                    pass
            with self.lock:
                self.requests.append((method, path, rpc))
            if self.mcp and method == "POST":
                self._mcp(c, msg)
            elif self.mcp and method == "DELETE":
                self._plain(c, 200, b"", "text/plain")
            else:
                self._mode(c, self.modes.get(method, "ok"), self.body,
                           "application/json")
        except OSError:
            pass
        finally:
            if c not in self.held:
                try:
                    c.close()
                except OSError:
                    pass

    def _plain(self, c, status, body, ctype, extra=""):
        c.sendall((f"HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\n"
                   f"Content-Length: {len(body)}\r\n{extra}"
                   "Connection: close\r\n\r\n").encode() + body)

    def _mcp(self, c, msg):
        rpc = msg.get("method") if isinstance(msg, dict) else None
        if rpc == "initialize":
            res = {"protocolVersion": "2025-06-18",
                   "capabilities": {"tools": {}},
                   "serverInfo": {"name": "hostile", "version": "1"}}
            self._plain(c, 200, json.dumps({"jsonrpc": "2.0",
                                            "id": msg["id"],
                                            "result": res}).encode(),
                        "application/json", "Mcp-Session-Id: h1\r\n")
        elif rpc == "tools/list":
            res = {"tools": [{"name": "boom", "inputSchema":
                              {"type": "object"}}]}
            self._plain(c, 200, json.dumps({"jsonrpc": "2.0",
                                            "id": msg["id"],
                                            "result": res}).encode(),
                        "application/json")
        elif rpc == "tools/call":
            self._mode(c, self.modes["POST"], b"", "text/event-stream")
        else:
            self._plain(c, 202, b"", "application/json")

    def _mode(self, c, mode, body, ctype):
        if mode == "ok":
            self._plain(c, 200, body, ctype)
            return
        if mode == "silent":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream"
                      b"\r\nTransfer-Encoding: chunked\r\n\r\n")
            self.held.append(c)
            return
        head = f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\n"
        if mode == "length":
            head += f"Content-Length: {ANNOUNCED}\r\n\r\n"
        else:
            head += "Transfer-Encoding: chunked\r\n\r\n"
        if mode == "chunk":
            head += f"{ANNOUNCED:x}\r\n"
        c.sendall(head.encode())
        piece = b"x" * PIECE
        if mode == "endless":
            piece = f"{PIECE:x}\r\n".encode() + piece + b"\r\n"
        n = 0
        while n < SEND_MAX and not self.stopping:
            c.sendall(piece)
            n += len(piece)
            with self.lock:
                self.sent += len(piece)
