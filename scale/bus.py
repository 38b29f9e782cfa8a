#!/usr/bin/env python3
"""The bus lane's client (issue 35), driven by scale/bus.sh: three snodo instances behind
nginx round robin sharing one bus, exercised through the proxy only. Standard library only.

Steps (each bounded in time; any failure exits 1 with a line saying which):
  fanout    three subscriptions/listen streams (one per instance, round robin), a
            resource update published by whichever instance the trigger call lands on,
            delivered to all three;
  rate      12 calls of bus_limited (5 a minute per principal): exactly 5 admitted;
  cancel    an initialize-era tools/call of bus_wait, then notifications/cancelled by
            id through the proxy (another instance): the call ends at once;
  answer    an initialize-era test_elicitation; the client's answer POSTed through the
            proxy (another instance) completes the call;
  outage    the bus server killed: calls still answer within their deadline (rate
            limits fail open); restarted: every listener is told its lists changed, and
            a change published afterwards reaches all three again.
Which instance served what is read back from nginx's access log ($upstream_addr); that
the three listeners were on three instances, bus.sh reads from the instances' logs.
"""

import argparse
import http.client
import json
import queue
import subprocess
import sys
import threading
import time

TOKEN = "Bearer lane"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
URI = "test://watched-resource"


def fail(msg):
    print(f"FAIL {msg}", flush=True)
    sys.exit(1)


def ok(msg):
    print(f"ok   {msg}", flush=True)


def modern_body(rid, method, params):
    params = dict(params)
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def headers(version, step, extra=None):
    h = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version,
        "Authorization": TOKEN,
        "X-Scale-Step": step,
    }
    h.update(extra or {})
    return h


def open_post(addr, body, hdrs, timeout=30):
    host, port = addr.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    conn.request("POST", "/mcp", body=json.dumps(body), headers=hdrs)
    return conn, conn.getresponse()


def messages(resp):
    """Yields each JSON message of a response (SSE events or one JSON body)."""
    if "text/event-stream" not in (resp.getheader("Content-Type") or ""):
        data = resp.read()
        if data:
            yield json.loads(data)
        return
    data = []
    while True:
        line = resp.readline()
        if not line:
            return
        line = line.decode().rstrip("\r\n")
        if line.startswith("data: "):
            data.append(line[6:])
        elif line == "" and data:
            yield json.loads("".join(data))
            data = []


def post(addr, body, hdrs, timeout=30):
    conn, resp = open_post(addr, body, hdrs, timeout)
    try:
        return resp.status, list(messages(resp))
    finally:
        conn.close()


class Listener:
    """One subscriptions/listen stream read on a thread of its own."""

    def __init__(self, addr, n):
        body = modern_body(1000 + n, "subscriptions/listen", {"notifications": {
            "toolsListChanged": True, "resourcesListChanged": True,
            "resourceSubscriptions": [URI]}})
        hdrs = headers(MODERN, f"listen-{n}", {"Mcp-Method": "subscriptions/listen"})
        self.conn, self.resp = open_post(addr, body, hdrs, timeout=120)
        if self.resp.status != 200:
            fail(f"listen {n}: HTTP {self.resp.status}")
        self.events = queue.Queue()
        threading.Thread(target=self.read, daemon=True).start()
        first = self.next(10)
        if not first or first.get("method") != "notifications/subscriptions/acknowledged":
            fail(f"listen {n}: no acknowledgement ({first})")

    def read(self):
        try:
            for m in messages(self.resp):
                self.events.put((time.monotonic(), m))
        except Exception:  # the stream ended (closed at the end of the lane)
            pass
        self.events.put((time.monotonic(), None))

    def next(self, wait):
        try:
            return self.events.get(timeout=wait)[1]
        except queue.Empty:
            return None

    def wait_for(self, method, wait):
        """The first message with `method` within `wait` s, and when it came."""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                at, m = self.events.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                return None, None
            if m is None:
                return None, None
            if m.get("method") == method:
                return at, m
        return None, None

    def close(self):
        self.conn.close()


def call_tool(addr, step, rid, name, args=None, timeout=30):
    body = modern_body(rid, "tools/call", {"name": name, "arguments": args or {}})
    return post(addr, body, headers(MODERN, step, {"Mcp-Method": "tools/call", "Mcp-Name": name}),
                timeout)


def trigger(addr, step):
    started = time.monotonic()
    status, msgs = call_tool(addr, step, 1, "test_trigger_resource_update")
    if status != 200 or not msgs or "result" not in msgs[-1]:
        fail(f"{step}: trigger answered {status} {msgs}")
    return started


def limited(addr, step, rid, timeout=30):
    started = time.monotonic()
    status, msgs = call_tool(addr, step, rid, "bus_limited", timeout=timeout)
    took = time.monotonic() - started
    if status != 200 or not msgs or "result" not in msgs[-1]:
        fail(f"{step}: bus_limited answered {status} {msgs}")
    return not msgs[-1]["result"].get("isError", False), took


def upstreams(log, step):
    """The upstreams nginx logged for `step` (it logs a request when it ends: waits up to 3 s)."""
    deadline = time.monotonic() + 3
    while True:
        out = []
        with open(log) as f:
            for line in f:
                entry = json.loads(line)
                if entry.get("step") == step:
                    out.append(entry["upstream"])
        if out or time.monotonic() > deadline:
            return out
        time.sleep(0.1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--modern", required=True)
    ap.add_argument("--legacy", required=True)
    ap.add_argument("--access-log", required=True)
    ap.add_argument("--kill", required=True)
    ap.add_argument("--restart", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--instances", required=True, help="ADDR=NAME,... of the legacy instances")
    a = ap.parse_args()
    name = a.name
    names = dict(pair.split("=") for pair in a.instances.split(","))

    # fanout
    listeners = [Listener(a.modern, n) for n in range(3)]
    started = trigger(a.modern, "trigger-1")
    lat = []
    for n, l in enumerate(listeners):
        at, m = l.wait_for("notifications/resources/updated", 10)
        if m is None:
            fail(f"{name} fanout: listener {n} did not hear the update")
        lat.append((at - started) * 1000)
    ok(f"{name} fanout: an update published on one instance reached the 3 listeners "
       f"(after {', '.join(f'{x:.1f}' for x in lat)} ms from the trigger call)")

    # rate
    results = [limited(a.modern, "rate", 100 + i)[0] for i in range(12)]
    if sum(results) != 5:
        fail(f"{name} rate: {sum(results)} of 12 calls admitted, expected 5")
    spread = sorted(set(upstreams(a.access_log, "rate")))
    if len(spread) != 3:
        fail(f"{name} rate: calls reached {spread}, expected 3 instances")
    ok(f"{name} rate: 5 of 12 calls admitted across {len(spread)} instances (5/min deployment-wide)")

    # cancel
    result = {}

    def run_call():
        t0 = time.monotonic()
        body = {"jsonrpc": "2.0", "id": 77, "method": "tools/call",
                "params": {"name": "bus_wait", "arguments": {}}}
        result["status"], result["msgs"] = post(a.legacy, body, headers(LEGACY, "cancel-call"), 40)
        result["took"] = time.monotonic() - t0

    t = threading.Thread(target=run_call)
    t.start()
    time.sleep(0.7)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": 77, "reason": "lane"}}
    status, _ = post(a.legacy, cancel, headers(LEGACY, "cancel"))
    if status != 202:
        fail(f"{name} cancel: the cancellation answered {status}")
    t.join(30)
    if t.is_alive() or result.get("took", 99) > 10:
        fail(f"{name} cancel: the call was not cancelled ({result})")
    if any(m.get("result", {}).get("content", [{}])[0].get("text") == "not cancelled"
           for m in result["msgs"]):
        fail(f"{name} cancel: the call ran to its end ({result})")
    call_at, cancel_at = upstreams(a.access_log, "cancel-call"), upstreams(a.access_log, "cancel")
    if not call_at or not cancel_at or call_at[0] == cancel_at[0]:
        fail(f"{name} cancel: call on {call_at}, cancellation on {cancel_at}: not two instances")
    ok(f"{name} cancel: the call on {call_at[0]} ended {result['took']:.2f} s after it began, "
       f"cancelled through {cancel_at[0]} (HTTP {result['status']})")

    # answer
    body = {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
            "params": {"name": "test_elicitation", "arguments": {"message": "Who?"}}}
    conn, resp = open_post(a.legacy, body, headers(LEGACY, "ask"), 30)
    stream = messages(resp)
    question = next(stream, None)
    if not question or question.get("method") != "elicitation/create":
        fail(f"{name} answer: no elicitation/create ({question})")
    answer = {"jsonrpc": "2.0", "id": question["id"],
              "result": {"action": "accept", "content": {"username": "ada", "email": "a@b.c"}}}
    status, _ = post(a.legacy, answer, headers(LEGACY, "answer"))
    if status != 202:
        fail(f"{name} answer: the answer answered {status}")
    final = next(stream, None)
    conn.close()
    text = (final or {}).get("result", {}).get("content", [{}])[0].get("text", "")
    if "action=accept" not in text or "ada" not in text:
        fail(f"{name} answer: the call did not complete with the answer ({final})")
    # The question's id names the instance that holds it (nginx logs the asking stream
    # only once it ends).
    holder = str(question["id"]).rsplit("@", 1)[-1]
    answer_at = [names.get(u, u) for u in upstreams(a.access_log, "answer")]
    if not answer_at or answer_at[0] == holder:
        fail(f"{name} answer: asked by {holder}, answered on {answer_at}: not two instances")
    ok(f"{name} answer: elicitation {question['id']} asked by {holder}, answered through "
       f"{answer_at[0]}, call completed")

    # outage
    subprocess.run(a.kill, shell=True, check=True)
    killed = time.monotonic()
    time.sleep(0.5)
    slowest = 0.0
    for i in range(6):
        _, took = limited(a.modern, "outage-rate", 200 + i, timeout=10)
        slowest = max(slowest, took)
    trigger(a.modern, "outage-trigger")
    if slowest > 3.0:
        fail(f"{name} outage: a call took {slowest:.2f} s with the bus down")
    ok(f"{name} outage: with the bus killed, 6 rate-limited calls and a trigger answered "
       f"(slowest {slowest * 1000:.0f} ms)")
    subprocess.run(a.restart, shell=True, check=True)
    restarted = time.monotonic()
    told = []
    for n, l in enumerate(listeners):
        at, m = l.wait_for("notifications/tools/list_changed", 20)
        if m is None:
            fail(f"{name} outage: listener {n} was not told its lists changed after the restart")
        told.append(at - restarted)
    ok(f"{name} outage: down {restarted - killed:.1f} s; after the restart every listener "
       f"was told its lists changed ({', '.join(f'{x:.1f}' for x in told)} s)")
    # The bus carries changes again: another publish reaches every listener.
    deadline = time.monotonic() + 15
    while True:
        started = trigger(a.modern, "trigger-2")
        heard = [l.wait_for("notifications/resources/updated", 3)[1] is not None for l in listeners]
        if all(heard):
            break
        if time.monotonic() > deadline:
            fail(f"{name} outage: after the restart, listeners heard {heard}")
    ok(f"{name} outage: after the restart an update reached all 3 listeners again")
    for l in listeners:
        l.close()
    print(f"{name}: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
