#!/usr/bin/env python3
"""One session, N `tools/call stream n=100` (a progress token each), one
after the other, each read to its end: a fixed amount of work for
scripts/cost-redis-cluster to count instructions over.

    stream_calls.py PORT N
"""

import http.client
import json
import sys

HEADERS = {"Accept": "application/json, text/event-stream",
           "Content-Type": "application/json"}


def post(port, body, sid=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    h = dict(HEADERS)
    if sid is not None:
        h["Mcp-Session-Id"] = sid
        h["MCP-Protocol-Version"] = "2025-11-25"
    c.request("POST", "/mcp", json.dumps(body), h)
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status not in (200, 202):
        sys.exit(f"stream_calls: HTTP {r.status}: {data[:300]!r}")
    return r, data


def main():
    port, n = int(sys.argv[1]), int(sys.argv[2])
    r, _ = post(port, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": "2025-11-25",
                                  "capabilities": {},
                                  "clientInfo": {"name": "stream_calls",
                                                 "version": "1"}}})
    sid = r.getheader("Mcp-Session-Id")
    post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    for i in range(n):
        _, data = post(port, {"jsonrpc": "2.0", "id": i + 2,
                              "method": "tools/call",
                              "params": {"name": "stream",
                                         "arguments": {"n": 100},
                                         "_meta": {"progressToken": f"t{i}"}}},
                       sid)
        if b"done 100" not in data:
            sys.exit(f"stream_calls: call {i} ended {data[-300:]!r}")


if __name__ == "__main__":
    main()
