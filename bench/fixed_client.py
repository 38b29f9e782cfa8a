#!/usr/bin/env python3
"""Send exactly N MCP requests over one keep-alive HTTP/1.1 connection (for profiling).

Usage: bench/fixed_client.py URL {call|list} PROTO N
Same bodies and headers as the shared kit's bench.sh (2026-07-28: MCP-Protocol-Version,
Mcp-Method, Mcp-Name, params._meta; older revisions: the version header only).
Exits non-zero on the first non-200 response or a response without "result".
"""
import http.client
import sys
from urllib.parse import urlsplit

META = ('"_meta":{"io.modelcontextprotocol/protocolVersion":"%s",'
        '"io.modelcontextprotocol/clientInfo":{"name":"mcp-bench","version":"0.1.0"},'
        '"io.modelcontextprotocol/clientCapabilities":{}}')


def body_and_headers(op, proto):
    modern = proto > "2026-07-27"
    meta = META % proto if modern else ""
    if op == "list":
        body = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{%s}}' % meta
        method = "tools/list"
    else:
        extra = "," + meta if modern else ""
        body = ('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":'
                '{"name":"echo","arguments":{"text":"hello"}%s}}' % extra)
        method = "tools/call"
    h = {"Content-Type": "application/json",
         "Accept": "application/json, text/event-stream",
         "MCP-Protocol-Version": proto}
    if modern:
        h["Mcp-Method"] = method
        if op == "call":
            h["Mcp-Name"] = "echo"
    return body.encode(), h


def main():
    url, op, proto, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    u = urlsplit(url)
    if u.hostname not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("loopback only")
    body, headers = body_and_headers(op, proto)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    for i in range(n):
        conn.request("POST", u.path, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        if r.status != 200 or b'"result"' not in data:
            sys.exit(f"request {i}: HTTP {r.status}: {data[:300]!r}")
    conn.close()


if __name__ == "__main__":
    main()
