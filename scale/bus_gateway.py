#!/usr/bin/env python3
"""The bus lane's gateway step (issue 35 §2, the gateway's pending backend rounds), driven
by scale/bus.sh: three `snodo gateway` instances behind nginx round robin sharing one bus,
each running its own initialize-era stdio child (`snodo fixture --stdio --protocols
2025-06-18`). Standard library only.

  parked    a 2026-07-28 tools/call of fx_test_elicitation: the child sends
            elicitation/create during the call, the gateway that runs it parks the call
            and answers input_required; the continuation (inputResponses + requestState),
            sent through round robin, lands on another gateway, which carries the answer
            over the bus to the holder; the child's result comes back;
  again     the same continuation once more: refused clearly (the call went on), by the
            holder, through whichever gateway received it.
Which gateway served what is read back from nginx's access log ($upstream_addr).
"""

import argparse
import json
import sys
import time

from bus import fail, ok, post, upstreams

VERSION = "2026-07-28"
TOOL = "fx_test_elicitation"


def call(addr, step, rid, params, statuses=(200,)):
    params = dict(params)
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
    hdrs = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": TOOL,
        "X-Scale-Step": step,
    }
    started = time.monotonic()
    status, msgs = post(addr, body, hdrs, timeout=30)
    took = time.monotonic() - started
    if status not in statuses or not msgs:
        fail(f"{step}: HTTP {status} {msgs}")
    return msgs[-1], took


def served(log, step, names):
    ups = upstreams(log, step)
    if len(ups) != 1:
        fail(f"{step}: nginx logged {ups}")
    return names.get(ups[0], ups[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proxy", required=True)
    ap.add_argument("--access-log", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--instances", required=True, help="ADDR=NAME,... of the gateways")
    a = ap.parse_args()
    names = dict(pair.split("=") for pair in a.instances.split(","))
    name = a.name

    first, _ = call(a.proxy, "gw-round-1", 1, {"name": TOOL, "arguments": {"message": "Who are you?"}})
    result = first.get("result") or {}
    if result.get("resultType") != "input_required":
        fail(f"{name} parked: the first round answered {first}")
    asked = result.get("inputRequests") or {}
    if len(asked) != 1:
        fail(f"{name} parked: asked {asked}")
    key, question = next(iter(asked.items()))
    if question.get("method") != "elicitation/create":
        fail(f"{name} parked: asked {question}")
    holder = served(a.access_log, "gw-round-1", names)

    answer = {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}
    cont = {"name": TOOL, "arguments": {"message": "Who are you?"},
            "inputResponses": {key: answer}, "requestState": result["requestState"]}
    done, took = call(a.proxy, "gw-round-2", 2, cont)
    there = served(a.access_log, "gw-round-2", names)
    if there == holder:
        fail(f"{name} parked: round robin sent the continuation to {holder} again")
    text = ((done.get("result") or {}).get("content") or [{}])[0].get("text", "")
    if "action=accept" not in text or "ada@example.com" not in text:
        fail(f"{name} parked: the continuation on {there} answered {done}")
    ok(f"{name} parked: elicitation parked on {holder}, continued on {there} over the bus, "
       f"answered in {took * 1000:.0f} ms: {text!r}")

    # A JSON-RPC error: 400 over HTTP (invalid params).
    again, _ = call(a.proxy, "gw-round-3", 3, cont, statuses=(200, 400))
    where = served(a.access_log, "gw-round-3", names)
    message = json.dumps(again.get("error") or again.get("result"))
    if "error" not in again or "already continued" not in message:
        fail(f"{name} again: continuing twice answered {again}")
    ok(f"{name} again: continued twice, on {where}: refused ({again['error']['message']!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
