"""Drives `snodo serve --otlp-endpoint` over HTTP (parent in _meta, then in the W3C
header) and reads the spans the receiver decoded.

Usage: check.py MCP_PORT SPANS_FILE STDIO_DONE. The stdio run happened before (its
span is in the file too). Prints one line per check, then "N passed, M failed".
"""

import json
import os
import sys
import time
import urllib.request

MCP_PORT, SPANS, PHASE = sys.argv[1], sys.argv[2], sys.argv[3]
V = "2026-07-28"
META_PARENT = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")
HEADER_PARENT = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")
STDIO_PARENT = ("5e1a6d2c4b3a29180716253443526170", "1122334455667788")


def tp(parent):
    return f"00-{parent[0]}-{parent[1]}-01"


def body(i, meta):
    meta = dict(meta)
    meta["io.modelcontextprotocol/protocolVersion"] = V
    meta["io.modelcontextprotocol/clientCapabilities"] = {}
    return json.dumps({
        "jsonrpc": "2.0", "id": i, "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "hello"}, "_meta": meta},
    })


def post(i, meta, extra=None):
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": V, "Mcp-Method": "tools/call", "Mcp-Name": "search",
    }
    headers.update(extra or {})
    req = urllib.request.Request(
        f"http://127.0.0.1:{MCP_PORT}/mcp", data=body(i, meta).encode(), headers=headers
    )
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.status


if PHASE == "stdio-input":
    # The line the stdio run reads.
    print(body(1, {"traceparent": tp(STDIO_PARENT)}))
    sys.exit(0)

if PHASE == "http":
    ok = post(1, {"traceparent": tp(META_PARENT), "tracestate": "snodo=lane"}) == 200
    ok &= post(2, {}, {"traceparent": tp(HEADER_PARENT)}) == 200
    sys.exit(0 if ok else 1)

# PHASE == "check": the servers have exited (their exporters flushed).
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


spans = []
if os.path.exists(SPANS):
    with open(SPANS, encoding="utf-8") as f:
        spans = [json.loads(line) for line in f if line.strip()]
print(f"receiver decoded {len(spans)} span(s)")

for label, parent in [("stdio, _meta", STDIO_PARENT), ("http, _meta", META_PARENT),
                      ("http, traceparent header", HEADER_PARENT)]:
    found = [s for s in spans if s["trace_id"] == parent[0]]
    s = found[0] if found else {}
    check(f"{label}: a span in the caller's trace", bool(found), f"{spans}")
    check(f"{label}: parent is the caller's span", s.get("parent_span_id") == parent[1],
          f"{s.get('parent_span_id')}")
    attrs = s.get("attributes", {})
    check(f"{label}: name and MCP attributes",
          s.get("name") == "tools/call search"
          and s.get("kind") == 2  # SPAN_KIND_SERVER
          and attrs.get("mcp.method.name") == "tools/call"
          and attrs.get("gen_ai.tool.name") == "search"
          and attrs.get("mcp.protocol.version") == V
          and "jsonrpc.request.id" in attrs
          and s.get("service") == "snodo",
          f"{s}")

s = next((s for s in spans if s["trace_id"] == META_PARENT[0]), {})
check("http, _meta: the caller's tracestate travels with the span",
      s.get("trace_state") == "snodo=lane", f"{s.get('trace_state')!r}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
