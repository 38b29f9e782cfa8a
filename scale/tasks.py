#!/usr/bin/env python3
"""Tasks across instances (scale/tasks.sh, issue 18); Python 3 standard library only.

Three `snodo fixture --task-store postgres:URL` instances behind nginx. A request with
no `X-Scale-Target` header is balanced round-robin; with `X-Scale-Target: sN` nginx
sends it to instance sN (still through the proxy), so every step can say which
instance it meant and check in nginx's access log which one served it.

Steps: a task created on one instance is polled through the others, answered with
`tasks/update` through a third and completes; a task is cancelled through another
instance than its owner; the owning instance of a running task is killed with SIGKILL
and the task reads `failed` on the survivors once the lease runs out (timed).

Prints one line per step, `ok <step> (...)` or `FAIL <step>: <reason>`, and a last
line `N passed, M failed`. Exits 1 when a step failed.
"""

import argparse
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import client  # noqa: E402 (the scale client: its HTTP layer and access-log reader)
from client import Failure, Session, addr_of, alive, need  # noqa: E402

# The tasks extension, and elicitation (the fixture's task tools ask through it).
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}
LEASE_LOST = "the instance running this task stopped"


class Routed(Session):
    """A scale-client session whose next requests go to `target` (None: round-robin)."""

    target = None

    def send(self, body, headers, **kw):
        if self.target:
            headers = {**headers, "X-Scale-Target": self.target}
        return super().send(body, headers, **kw)


class Run:
    def __init__(self, args):
        self.proxy = addr_of(args.proxy)
        self.access_log = args.access_log
        self.instances = {}  # label -> addr text
        self.pids = {}
        for item in filter(None, args.instances.split(",")):
            label, _, a = item.partition("=")
            self.instances[label] = a
        for item in filter(None, args.pids.split(",")):
            label, _, pid = item.partition("=")
            self.pids[label] = int(pid)
        self.labels = {a: label for label, a in self.instances.items()}
        self.lease = args.lease
        self.sweep = args.sweep
        self.next_id = 0
        self.passed = self.failed = 0

    def served_by(self, tag):
        """The instance label nginx sent request `tag` to (the last upstream tried)."""
        entry = client.Run.log_entries(self, {tag}).get(tag)
        need(entry is not None, f"request {tag} is missing from nginx's access log")
        ups = [u.strip() for u in entry["upstream"].replace(" : ", ", ").split(",") if u.strip()]
        return self.labels.get(ups[-1], ups[-1]) if ups else "-"

    def report(self, name, ok, text):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'ok' if ok else 'FAIL'} {name}{' (' if ok else ': '}{text}{')' if ok else ''}", flush=True)

    def step(self, name, fn):
        s = Routed(self, name, self.proxy)
        try:
            self.report(name, True, fn(self, s))
        except Failure as e:
            self.report(name, False, str(e))
        except Exception as e:  # noqa: BLE001 - a broken step is a failed step
            self.report(name, False, f"{type(e).__name__}: {e}")


def call(s, method, params, target=None, name=None):
    """One 2026-07-28 request through nginx (to `target` if given); (result, error, served by)."""
    s.target = target
    reply, rid, tag = s.modern(method, params, name=name, caps=TASKS)
    msg = reply.response(rid)
    return msg.get("result"), msg.get("error"), s.run.served_by(tag)


def start_task(s, tool, arguments):
    result, error, owner = call(s, "tools/call", {"name": tool, "arguments": arguments}, name=tool)
    need(error is None, f"tools/call {tool}: error {json.dumps(error)[:300]}")
    need(result.get("resultType") == "task", f"tools/call {tool} did not create a task: {json.dumps(result)[:300]}")
    need(isinstance(result.get("taskId"), str) and len(result["taskId"]) >= 22, f"task id {result.get('taskId')!r}")
    return result["taskId"], owner


def get(s, task_id, target=None):
    result, error, by = call(s, "tasks/get", {"taskId": task_id}, target=target, name=task_id)
    need(error is None, f"tasks/get on {by}: error {json.dumps(error)[:300]}")
    return result, by


def poll_until(s, task_id, statuses, limit, target=None):
    """tasks/get until the status is one of `statuses`; (result, [served by], seconds)."""
    start, seen = time.monotonic(), []
    while True:
        result, by = get(s, task_id, target)
        seen.append(by)
        if result.get("status") in statuses:
            return result, seen, time.monotonic() - start
        need(result.get("status") not in {"completed", "failed", "cancelled"},
             f"ended {result.get('status')!r} (wanted {'/'.join(statuses)}): {json.dumps(result)[:400]}")
        need(time.monotonic() - start < limit,
             f"still {result.get('status')!r} after {limit:.0f} s (wanted {'/'.join(statuses)})")
        time.sleep(0.1)


def others(run, owner):
    return [label for label in sorted(run.instances) if label != owner]


def text_of(result):
    return " ".join(c.get("text", "") for c in (result or {}).get("content", []))


# steps --------------------------------------------------------------------------------


def step_input_across_instances(run, s):
    task_id, owner = start_task(s, "confirm_delete", {"filename": "report.txt"})
    # Polled round-robin: every instance resolves the task right after it was created.
    polls = []
    for _ in range(3):
        result, by = get(s, task_id)
        polls.append((by, result.get("status")))
    need({by for by, _ in polls} == set(run.instances), f"the polls were served by {polls}: need all three instances")
    result, seen, _ = poll_until(s, task_id, {"input_required"}, 20)
    requests = result.get("inputRequests") or {}
    need("confirm_delete" in requests, f"input_required without the confirm_delete request: {json.dumps(result)[:300]}")
    b, c = others(run, owner)
    result, by = get(s, task_id, target=b)
    need(by == b and result.get("status") == "input_required", f"tasks/get on {b}: {by}, {result.get('status')}")
    answer = {"confirm_delete": {"action": "accept", "content": {"confirm": True}}}
    sent = time.monotonic()
    upd, error, by = call(s, "tasks/update", {"taskId": task_id, "inputResponses": answer}, target=c, name=task_id)
    need(error is None and by == c, f"tasks/update on {c}: served by {by}, error {error}")
    result, seen2, _ = poll_until(s, task_id, {"completed", "failed", "cancelled"}, 20)
    took = time.monotonic() - sent
    need(result.get("status") == "completed", f"ended {result.get('status')}: {json.dumps(result)[:300]}")
    need("Deleted report.txt" in text_of(result.get("result")), f"result {json.dumps(result.get('result'))[:200]}")
    return (f"created on {owner}; polled on {' '.join(by for by, _ in polls)} ({' '.join(st for _, st in polls)}); "
            f"input_required read on {b}; answered on {c}; completed {took * 1000:.0f} ms after the answer "
            f"(seen on {seen2[-1]})")


def step_cancel_across_instances(run, s):
    task_id, owner = start_task(s, "slow_compute", {"seconds": 60, "label": "cancel-me"})
    result, _, _ = poll_until(s, task_id, {"working"}, 10, target=others(run, owner)[0])
    target = others(run, owner)[1]
    sent = time.monotonic()
    res, error, by = call(s, "tasks/cancel", {"taskId": task_id}, target=target, name=task_id)
    need(error is None and by == target, f"tasks/cancel on {target}: served by {by}, error {error}")
    result, seen, _ = poll_until(s, task_id, {"cancelled", "completed", "failed"}, 20, target=others(run, owner)[0])
    took = time.monotonic() - sent
    need(result.get("status") == "cancelled", f"ended {result.get('status')}: {json.dumps(result)[:300]}")
    return (f"running on {owner}, cancelled through {target}, read cancelled on {seen[-1]} "
            f"{took * 1000:.0f} ms later")


def step_kill_owner(run, s):
    task_id, owner = start_task(s, "slow_compute", {"seconds": 300, "label": "orphan"})
    survivors = others(run, owner)
    result, _, _ = poll_until(s, task_id, {"working"}, 10, target=survivors[0])
    pid = run.pids[owner]
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    for _ in range(100):
        if not alive(pid):
            break
        time.sleep(0.02)
    need(not alive(pid), f"{owner} (pid {pid}) survived SIGKILL")
    result, by = get(s, task_id, target=survivors[1])
    need(result.get("status") == "working", f"right after the kill: {result.get('status')}")
    limit = run.lease + run.sweep + 10
    result, seen, _ = poll_until(s, task_id, {"failed", "completed", "cancelled"}, limit, target=survivors[0])
    took = time.monotonic() - killed
    need(result.get("status") == "failed", f"ended {result.get('status')}: {json.dumps(result)[:300]}")
    error = result.get("error") or {}
    need(error.get("code") == -32603 and error.get("message") == LEASE_LOST,
         f"the failed task's error is {json.dumps(error)}")
    need(took <= run.lease + run.sweep + 2,
         f"failed after {took:.1f} s: more than lease {run.lease:g} s + sweep {run.sweep:g} s")
    return (f"{owner} (pid {pid}) killed with SIGKILL mid-task; {survivors[0]} read `failed` "
            f"({error.get('message')!r}) {took:.1f} s later (lease {run.lease:g} s, sweep every {run.sweep:g} s)")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--proxy", required=True)
    p.add_argument("--access-log", required=True)
    p.add_argument("--instances", required=True, help="s1=host:port,...")
    p.add_argument("--pids", required=True, help="s1=pid,...")
    p.add_argument("--lease", type=float, required=True, help="the instances' task lease, seconds")
    p.add_argument("--sweep", type=float, required=True, help="the instances' sweep interval, seconds")
    run = Run(p.parse_args())
    run.step("tasks-input-across-instances", step_input_across_instances)
    run.step("tasks-cancel-across-instances", step_cancel_across_instances)
    run.step("tasks-kill-owner", step_kill_owner)
    print(f"{run.passed} passed, {run.failed} failed", flush=True)
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
