#!/usr/bin/env python3
"""The gateway lane's driver (scale/gateway.sh, issue 33 step 5); standard library only.

Three `snodo gateway` instances behind nginx round robin, each with warm stdio children
of the conformance fixture (`fx` unprefixed; `b`, `c`, `d` namespaced, for a list
longer than a page). Every request goes through nginx; `X-Scale-Target: gwN` pins one
to instance gwN, and nginx's access log says which instance served each request.

Steps:
  ready      each instance's /healthz: 200 with its four backends up; the children of
             each found with `pgrep -P`, none holding the state key;
  pages      tools/list page after page (132 tools, 100 a page), each page served, the
             cursor continued on another instance than the one that issued it;
  progress   a call of test_tool_with_progress streams its progress through nginx;
  mrtr       the three-round input_required tool: rounds 2 and 3 continued on other
             instances than the round before;
  child-kill the fx child of one instance SIGKILLed under a slow call: the call ends
             at once with an error naming the backend; the next call succeeds once the
             pool has started a new child;
  sigterm    one instance SIGTERMed with a call in flight on it while calls stream
             through nginx: every call succeeds, and none of its children remains;
  spread     nginx's access log: every instance served requests.

Prints `ok <step> (...)` or `FAIL <step>: ...` per step, then `N passed, M failed`.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import client  # noqa: E402 (the scale client: HTTP, SSE, progress and multi-round checks)
import tasks  # noqa: E402 (its Run: steps, reports, which instance served a request)
from client import addr_of, alive, need
from tasks import text_of  # noqa: E402

BACKENDS = ("fx", "b", "c", "d")
ELICIT = {"elicitation": {}}
PAGE = 100  # the gateway front's page (snodo::DEFAULT_PAGE_SIZE)


class Run(tasks.Run):
    def __init__(self, args):  # noqa: super().__init__ wants the tasks lane's arguments
        self.proxy = addr_of(args.proxy)
        self.access_log = args.access_log
        self.instances = dict(i.split("=", 1) for i in args.instances.split(","))
        self.pids = {k: int(v) for k, v in (i.split("=", 1) for i in args.pids.split(","))}
        self.labels = {a: label for label, a in self.instances.items()}
        self.mark = args.mark
        self.next_id = 0
        self.checks = {}
        self.passed = self.failed = 0

    def children(self, label, parent=True):
        """PIDs of instance `label`'s children: backend -> [pid] (by `pgrep -P` when
        `parent`, else by command line alone, which also finds orphans)."""
        found = {}
        for b in BACKENDS:
            cmd = ["pgrep", "-f", "--", f"--task-instance {self.mark}-{label}-{b}$"]
            if parent:
                cmd[1:1] = ["-P", str(self.pids[label])]
            out = subprocess.run(cmd, capture_output=True, text=True).stdout.split()
            found[b] = [int(p) for p in out]
        return found


def call(s, method, params, target=None, name=None, caps=ELICIT, **kw):
    """One 2026-07-28 request through nginx; (message, served by)."""
    s.target = target
    reply, rid, tag = s.modern(method, params, name=name, caps=caps, **kw)
    return reply.response(rid), s.run.served_by(tag)


def tool(s, name, arguments, target=None):
    """tools/call; (result or None, error or None, served by)."""
    msg, by = call(s, "tools/call", {"name": name, "arguments": arguments}, target, name)
    return msg.get("result"), msg.get("error"), by


def state_key(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
    return env.get(b"SNODO_STATE_KEY")


def list_order(run, label):
    """The backends in the order instance `label` lists their tools (first page)."""
    msg, _ = call(tasks.Routed(run, "pages-order", run.proxy), "tools/list", {}, target=label)
    order = []
    for t in msg.get("result", {}).get("tools", []):
        prefix = t["name"].split("_", 1)[0]
        b = prefix if prefix in BACKENDS else "fx"
        if b not in order:
            order.append(b)
    return ",".join(order)


# steps --------------------------------------------------------------------------------


def step_ready(run, s):
    out = []
    for label, addr in sorted(run.instances.items()):
        deadline = time.monotonic() + 20
        while True:
            reply = client.post(addr_of(addr), None, {}, "ready", f"ready-{label}", http_method="GET", path="/healthz")
            health = reply.messages[0][1] if reply.messages else {}
            ups = [b["name"] for b in health.get("backends", []) if b.get("state") == "up"]
            if reply.status == 200 and sorted(ups) == sorted(BACKENDS):
                break
            need(time.monotonic() < deadline, f"{label} /healthz: HTTP {reply.status} {reply.raw[:300]!r}")
            time.sleep(0.2)
        kids = run.children(label)
        need(all(len(p) == 1 for p in kids.values()), f"{label}: children by backend {kids} (want one each)")
        mine = state_key(run.pids[label])
        for b, (pid,) in kids.items():
            theirs = state_key(pid)
            need(theirs and theirs != mine, f"{label}'s child {b} (pid {pid}) has no key of its own")
        out.append(f"{label}: fx pid {kids['fx'][0]}")
    return "every /healthz 200 with fx b c d up, one child each, the children's key not the gateways'; " + ", ".join(out)


def step_pages(run, s):
    pages, cursor, names = [], None, []
    while True:
        msg, by = call(s, "tools/list", {} if cursor is None else {"cursor": cursor})
        if "error" in msg:
            orders = "; ".join(f"{label} lists {list_order(run, label)}" for label in sorted(run.instances))
            need(False, f"page {len(pages) + 1} on {by} (cursor from {pages[-1][0] if pages else '-'}): "
                        f"error {json.dumps(msg['error'])[:200]}; backends in list order: {orders}")
        got = msg["result"].get("tools") or []
        need(got, f"page {len(pages) + 1} on {by} is empty")
        pages.append((by, len(got)))
        names += [t["name"] for t in got]
        cursor = msg["result"].get("nextCursor")
        if cursor is None:
            break
        need(len(pages) < 10, "more than 10 pages: the cursor does not advance")
    need(len(names) == len(set(names)), f"{len(names) - len(set(names))} tools repeated across pages")
    need(len(names) == 33 * len(BACKENDS), f"{len(names)} tools, expected {33 * len(BACKENDS)}")
    need(len(pages) >= 2 and pages[0][1] == PAGE, f"pages {pages}: the list fit on one page")
    for (a, _), (b, _) in zip(pages, pages[1:]):
        need(a != b, f"a cursor issued by {a} was continued on the same instance: pages {pages}")
    for n in ("slow_compute", "b_slow_compute", "d_test_tool_with_task"):
        need(n in names, f"{n} is not listed")
    return (f"{len(names)} tools on {len(pages)} pages: "
            + ", then ".join(f"{n} on {by}" for by, n in pages) + " (each cursor continued elsewhere)")


def step_progress(run, s):
    s.target = None
    reply, rid, tag = s.modern("tools/call", {"name": "test_tool_with_progress", "arguments": {}},
                               name="test_tool_with_progress", progress="gw-progress")
    detail = client.check_progress(reply, rid, "gw-progress", modern=True)
    return f"{detail}, served by {run.served_by(tag)}"


def step_mrtr(run, s):
    s.target = None
    detail = client.step_mrtr(run, s)  # three rounds, answers carried by requestState
    _, tags, _ = run.checks[s.step]
    seq = [run.served_by(t) for t in tags]
    for n in (1, 2):
        need(seq[n] != seq[n - 1], f"round {n + 1} continued on the instance of round {n} ({seq}): inconclusive")
    return f"{detail}; rounds on {' → '.join(seq)}"


def step_child_kill(run, s):
    target = "gw2"
    (old,) = run.children(target)["fx"]
    box = {}

    def slow():
        sess = tasks.Routed(run, s.step, run.proxy)
        try:
            box["answer"] = tool(sess, "slow_compute", {"seconds": 15, "label": "killed"}, target)
        except Exception as e:  # noqa: BLE001 - reported below
            box["exc"] = e
        box["at"] = time.monotonic()

    t = threading.Thread(target=slow, daemon=True)
    t.start()
    time.sleep(1.5)  # the call is on the child by now
    need(t.is_alive(), f"the slow call ended before the kill: {box}")
    os.kill(old, signal.SIGKILL)
    killed = time.monotonic()
    t.join(20)
    need(not t.is_alive(), "the call in flight was still waiting 20 s after its child was killed")
    need("exc" not in box, f"the call in flight: {type(box.get('exc')).__name__}: {box.get('exc')}")
    result, error, by = box["answer"]
    took = box["at"] - killed
    need(by == target, f"the slow call was served by {by}, not {target}")
    said = f"{error.get('code')} {error.get('message')}" if error else text_of(result)
    need(error is not None or (result or {}).get("isError"), f"the call in flight succeeded: {said[:300]}")
    need('"fx"' in said, f"the error does not name the backend fx: {said[:300]}")
    need(took < 5, f"the error came {took:.1f} s after the kill")
    # The next calls: at once errors while no child serves, then success from a new child.
    deadline, refused = time.monotonic() + 10, 0
    while True:
        result, error, by = tool(s, "echo", {"text": "after"}, target)
        if error is None and not result.get("isError") and text_of(result) == "after":
            break
        refused += 1
        need(time.monotonic() < deadline, f"no call succeeded on {target} within 10 s of the kill: "
                                          f"{json.dumps(error or result)[:300]}")
        time.sleep(0.1)
    back = time.monotonic() - killed
    new = run.children(target)["fx"]
    need(len(new) == 1 and new[0] != old, f"{target}'s fx children after the restart: {new} (killed {old})")
    return (f"{target}'s fx child {old} SIGKILLed under slow_compute(15 s): the call ended after "
            f"{took * 1000:.0f} ms with error {said[:110]!r}…; echo succeeded {back:.1f} s after the kill "
            f"({refused} call(s) refused meanwhile) on new child {new[0]}")


def step_sigterm(run, s):
    target = "gw3"
    pid = run.pids[target]
    before = run.children(target)
    need(all(len(p) == 1 for p in before.values()), f"{target}'s children before: {before}")
    box, calls, stop = {}, [], threading.Event()

    def inflight():
        sess = tasks.Routed(run, s.step, run.proxy)
        try:
            box["answer"] = tool(sess, "slow_compute", {"seconds": 2, "label": "drained"}, target)
        except Exception as e:  # noqa: BLE001
            box["exc"] = e

    def stream():
        sess = tasks.Routed(run, s.step, run.proxy)
        while not stop.is_set():
            try:
                sess.target = None
                reply, rid, tag = sess.modern("tools/call", {"name": "echo", "arguments": {"text": "rr"}},
                                              name="echo", caps=ELICIT)
                msg = reply.response(rid)
                calls.append((tag, time.monotonic(), msg.get("error") or (msg["result"] if msg["result"].get("isError") else None)))
            except Exception as e:  # noqa: BLE001
                calls.append((None, time.monotonic(), f"{type(e).__name__}: {e}"))
            time.sleep(0.05)

    threads = [threading.Thread(target=inflight, daemon=True), threading.Thread(target=stream, daemon=True)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    os.kill(pid, signal.SIGTERM)
    sent = time.monotonic()
    while alive(pid) and time.monotonic() - sent < 20:
        time.sleep(0.02)
    gone = time.monotonic()
    need(not alive(pid), f"{target} (pid {pid}) still runs 20 s after SIGTERM")
    orphans = {b: p for b, p in run.children(target, parent=False).items() if p}
    time.sleep(1.5)  # calls keep coming after the instance is gone
    stop.set()
    for t in threads:
        t.join(25)
    need(not orphans, f"{target} exited {gone - sent:.1f} s after SIGTERM leaving children {orphans}")
    need("exc" not in box, f"the call in flight on {target}: {type(box.get('exc')).__name__}: {box.get('exc')}")
    result, error, by = box["answer"]
    need(error is None and text_of(result) == "Computed drained in 2s",
         f"the call in flight on {target}: {json.dumps(error or result)[:300]}")
    bad = [(tag, why) for tag, _, why in calls if why is not None]
    need(not bad, f"{len(bad)} of {len(calls)} calls through nginx failed: {bad[:3]}")
    after = [run.served_by(tag) for tag, at, _ in calls if at > gone]
    need(after and target not in after, f"calls after {target} exited were served by {after}")
    for other in sorted(set(run.instances) - {target}):
        kids = run.children(other)
        need(all(len(p) == 1 for p in kids.values()), f"{other}'s children after: {kids}")
    return (f"{target} (pid {pid}) SIGTERMed: its call in flight completed, it exited "
            f"{(gone - sent) * 1000:.0f} ms later with none of its 4 children left (pgrep -f); "
            f"{len(calls)} echo calls through nginx all succeeded, the {len(after)} after its exit on "
            f"{' '.join(sorted(set(after)))}")


def step_spread(run, s):
    served = {}
    with open(run.access_log, encoding="utf-8") as f:
        for line in f:
            e = json.loads(line)
            ups = [u.strip() for u in e["upstream"].replace(" : ", ", ").split(",") if u.strip()]
            label = run.labels.get(ups[-1], ups[-1]) if ups else "-"
            served[label] = served.get(label, 0) + 1
    need(set(run.instances) <= set(served), f"requests per upstream {served}: an instance served none")
    return "requests per upstream in nginx's log: " + ", ".join(f"{k} {v}" for k, v in sorted(served.items()))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--proxy", required=True)
    p.add_argument("--access-log", required=True)
    p.add_argument("--instances", required=True, help="gw1=host:port,...")
    p.add_argument("--pids", required=True, help="gw1=pid,...")
    p.add_argument("--mark", required=True, help="the children's --task-instance prefix")
    run = Run(p.parse_args())
    run.step("ready", step_ready)
    run.step("pages", step_pages)
    run.step("progress", step_progress)
    run.step("mrtr", step_mrtr)
    run.step("child-kill", step_child_kill)
    run.step("sigterm", step_sigterm)
    run.step("spread", step_spread)
    print(f"{run.passed} passed, {run.failed} failed", flush=True)
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
