#!/usr/bin/env python3
"""The gateway task lane's driver (scale/gateway_tasks.sh, issue 33 step 5); standard
library only.

Three `snodo gateway` instances behind nginx round robin with one PostgreSQL task store,
each with a warm stdio child of server-everything. Every request goes through nginx as a
2026-07-28 caller with the tasks extension; `X-Scale-Target: gwN` pins one to gwN, and
nginx's access log says which instance served each request.

Steps:
  ready     each instance's /healthz: 200 with its backend up; one server-everything
            child each (`pgrep -P`);
  elsewhere simulate-research-query created on gw1 (a front task: the backend's own
            task runs on gw1's child), polled with tasks/get on gw2 and gw3 in turn
            until completed (the backend's stage messages seen as the front task's
            statusMessage on them), its result read with a last tasks/get on each
            (without the backend's task id, which server-everything puts in its
            result's `_meta`);
  cancel    a second one created on gw2, seen working on gw3, cancelled through gw1:
            it reads cancelled on gw3 and gw1, with no result, and stays so; gw2's
            log says the backend's task got tasks/cancel, and server-everything's
            stderr (in gw2's log) that its task is cancelled in its own store;
  input     an ambiguous query created on gw3: the backend's elicitation/create read
            as input_required on gw1, answered with tasks/update on gw2, completed
            with the answer in the report;
  children  each instance still has its one child (none restarted);
  child     gw1's child SIGKILLed under a task: the task reads failed on gw2 at once
            with an error naming the backend; a call on gw1 succeeds on a new child.

Prints `ok <step> (...)` or `FAIL <step>: ...` per step, then `N passed, M failed`.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import client  # noqa: E402 (the scale client: HTTP, SSE)
import tasks  # noqa: E402 (its Run: steps, reports, which instance served a request)
from client import addr_of, need  # noqa: E402
from tasks import text_of  # noqa: E402

TOOL = "simulate-research-query"
# server-everything's stages, each its task's statusMessage for a second.
STAGES = ("Gathering sources", "Analyzing content", "Synthesizing findings", "Generating report")
TERMINAL = {"completed", "failed", "cancelled"}


class Run(tasks.Run):
    def __init__(self, args):  # noqa: super().__init__ wants the tasks lane's arguments
        self.proxy = addr_of(args.proxy)
        self.access_log = args.access_log
        self.instances = dict(i.split("=", 1) for i in args.instances.split(","))
        self.pids = {k: int(v) for k, v in (i.split("=", 1) for i in args.pids.split(","))}
        self.labels = {a: label for label, a in self.instances.items()}
        self.mark = args.mark
        self.logs = args.logs
        self.child = args.child
        self.next_id = 0
        self.passed = self.failed = 0
        self.first_children = {}

    def children(self, label):
        """PIDs of instance `label`'s server-everything children."""
        cmd = ["pgrep", "-P", str(self.pids[label]), "-f", "--", f"--lane-mark {self.mark}-{label}$"]
        return [int(p) for p in subprocess.run(cmd, capture_output=True, text=True).stdout.split()]

    def log(self, label):
        """Instance `label`'s log events (`--log-format json`, one object a line)."""
        out = []
        with open(os.path.join(self.logs, f"{label}.err"), encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
        return out


def fields(event):
    """An event's fields (tracing-subscriber's JSON puts them under `fields`)."""
    return {**event, **(event.get("fields") or {})}


def backend_task(run, label, front_task):
    """The backend task id that instance `label` created for `front_task` (from its
    debug line "backend task created"), or None."""
    for e in map(fields, run.log(label)):
        if e.get("message") == "backend task created" and e.get("front_task") == front_task:
            return e.get("backend_task")
    return None


def create(s, target, topic):
    """tools/call of the task tool on `target`; the front task's id."""
    result, error, by = tasks.call(s, "tools/call", {"name": TOOL, "arguments": {"topic": topic}},
                                   target=target, name=TOOL)
    need(error is None, f"tools/call {TOOL} on {by}: error {json.dumps(error)[:300]}")
    need(by == target, f"tools/call was served by {by}, not {target}")
    need(result.get("resultType") == "task", f"tools/call {TOOL} did not create a task: {json.dumps(result)[:300]}")
    need(isinstance(result.get("taskId"), str), f"task id {result.get('taskId')!r}")
    return result["taskId"]


def get(s, task_id, target):
    result, by = tasks.get(s, task_id, target)
    need(by == target, f"tasks/get for {target} was served by {by}")
    return result


# steps --------------------------------------------------------------------------------


def step_ready(run, s):
    out = []
    for label, addr in sorted(run.instances.items()):
        deadline = time.monotonic() + 30
        while True:
            reply = client.post(addr_of(addr), None, {}, "ready", f"ready-{label}", http_method="GET", path="/healthz")
            health = reply.messages[0][1] if reply.messages else {}
            ups = [b.get("name") for b in health.get("backends", []) if b.get("state") == "up"]
            if reply.status == 200 and len(ups) == 1:
                break
            need(time.monotonic() < deadline, f"{label} /healthz: HTTP {reply.status} {reply.raw[:300]!r}")
            time.sleep(0.2)
        kids = run.children(label)
        need(len(kids) == 1, f"{label}: server-everything children {kids} (want one)")
        run.first_children[label] = kids[0]
        out.append(f"{label} child {kids[0]}")
    return "every /healthz 200 with its backend up; " + ", ".join(out)


def step_elsewhere(run, s):
    owner, pollers = "gw1", ["gw2", "gw3"]
    topic = "otters across instances"
    task_id = create(s, owner, topic)
    start, seen, stages, n = time.monotonic(), [], set(), 0
    while True:
        by = pollers[n % 2]
        n += 1
        result = get(s, task_id, by)
        status = result.get("status")
        seen.append(f"{by}:{status}")
        for stage in STAGES:
            if stage in (result.get("statusMessage") or ""):
                stages.add((stage, by))
        if status in TERMINAL:
            break
        need(status == "working", f"tasks/get on {by}: status {status!r}: {json.dumps(result)[:300]}")
        need(time.monotonic() - start < 20, f"not completed 20 s after creation: {seen[-3:]}")
        time.sleep(0.25)
    took = time.monotonic() - start
    need(status == "completed", f"ended {status!r} on {by}: {json.dumps(result)[:400]}")
    need({b for b, _ in (x.split(":") for x in seen)} == set(pollers), f"polls {seen}: not on both others")
    need(len({st for st, _ in stages}) >= 2, f"the backend's stage messages seen on the pollers: {sorted(stages)} "
                                             f"(want at least two of {STAGES})")
    texts = {}
    for label in (pollers[n % 2], pollers[(n + 1) % 2]):  # the last poller last
        final = get(s, task_id, label)
        need(final.get("status") == "completed", f"the final tasks/get on {label}: {json.dumps(final)[:300]}")
        texts[label] = text_of(final.get("result"))
        need(f"Research Report: {topic}" in texts[label], f"the result on {label}: {texts[label][:300]!r}")
        need("`working` → `completed`" in texts[label], f"the backend did not run it as its task: {texts[label][:400]!r}")
    need(len(set(texts.values())) == 1, "the two instances read different results")
    back = backend_task(run, owner, task_id)
    need(back, f"{owner}'s log has no `backend task created` for front task {task_id}")
    # The backend's result names its own task in `_meta` (related-task): not passed on.
    need(back not in json.dumps(final), f"the front task's result names the backend task {back}: "
                                        f"{json.dumps(final.get('result', {}).get('_meta'))[:300]}")
    return (f"created on {owner} (backend task {back} on its child); {len(seen)} tasks/get alternating "
            f"{' and '.join(pollers)}, completed after {took:.1f} s; stage messages seen: "
            f"{', '.join(f'{st!r} on {b}' for st, b in sorted(stages))}; the report read on "
            f"{' and '.join(texts)}")


def step_cancel(run, s):
    owner, watcher, canceller = "gw2", "gw3", "gw1"
    task_id = create(s, owner, "beavers, cancelled")
    start = time.monotonic()
    while True:
        result = get(s, task_id, watcher)
        if result.get("status") == "working" and any(st in (result.get("statusMessage") or "") for st in STAGES):
            break
        need(result.get("status") == "working", f"tasks/get on {watcher}: {json.dumps(result)[:300]}")
        need(time.monotonic() - start < 10, f"no stage message on {watcher} within 10 s: {json.dumps(result)[:300]}")
        time.sleep(0.1)
    stage = result.get("statusMessage")
    back = backend_task(run, owner, task_id)
    need(back, f"{owner}'s log has no `backend task created` for front task {task_id}")
    sent = time.monotonic()
    ack, error, by = tasks.call(s, "tasks/cancel", {"taskId": task_id}, target=canceller, name=task_id)
    need(error is None and by == canceller, f"tasks/cancel on {canceller}: served by {by}, error {error}")
    while True:
        result = get(s, task_id, watcher)
        if result.get("status") in TERMINAL:
            break
        need(time.monotonic() - sent < 10, f"not cancelled 10 s after tasks/cancel: {json.dumps(result)[:300]}")
        time.sleep(0.1)
    took = time.monotonic() - sent
    need(result.get("status") == "cancelled", f"ended {result.get('status')!r}: {json.dumps(result)[:300]}")
    need("result" not in result, f"a cancelled task with a result: {json.dumps(result)[:300]}")
    # The backend's task: gw2 sent it tasks/cancel (its debug line), and its result never
    # came (it would have 4 s after creation).
    deadline = time.monotonic() + 5
    while True:
        said = [fields(e) for e in run.log(owner)
                if back in str(fields(e).get("backend_task", ""))
                and fields(e).get("message", "").startswith("backend task")]
        msgs = [e["message"] for e in said]
        if "backend task cancelled" in msgs or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    need("backend task cancelled" in msgs, f"{owner}'s log for backend task {back}: {msgs}")
    time.sleep(max(0.0, start + 5 - time.monotonic()))  # past the time the backend would finish
    # The backend's own word (its stderr, in gw2's log): its next stage found its task
    # cancelled in its store.
    refused = f'Cannot update task "{back}" from terminal status "cancelled"'
    need(any(refused in str(e.get("message", "")) for e in map(fields, run.log(owner))),
         f"{owner}'s log has no line from the backend saying its task {back} is cancelled")
    for label in (watcher, canceller):
        final = get(s, task_id, label)
        need(final.get("status") == "cancelled" and "result" not in final,
             f"on {label} after the backend's finishing time: {json.dumps(final)[:300]}")
    return (f"created on {owner} (backend task {back}), seen {stage!r} on {watcher}, cancelled through "
            f"{canceller}: cancelled on {watcher} {took * 1000:.0f} ms later; {owner}'s log: "
            f"{' → '.join(msgs)}, and server-everything's stderr: its task is cancelled; still cancelled with no result on {watcher} and {canceller} "
            f"{time.monotonic() - start:.1f} s after creation")


def step_input(run, s):
    owner, reader, answerer = "gw3", "gw1", "gw2"
    topic = "rivers, ambiguous"
    result, error, by = tasks.call(s, "tools/call", {"name": TOOL, "arguments": {"topic": topic, "ambiguous": True}},
                                   target=owner, name=TOOL)
    need(error is None and by == owner and result.get("resultType") == "task",
         f"tools/call on {by}: {json.dumps(error or result)[:300]}")
    task_id = result["taskId"]
    start = time.monotonic()
    while True:
        result = get(s, task_id, reader)
        if result.get("status") != "working":
            break
        need(time.monotonic() - start < 10, f"no input_required on {reader} within 10 s: {json.dumps(result)[:300]}")
        time.sleep(0.1)
    need(result.get("status") == "input_required", f"on {reader}: {json.dumps(result)[:400]}")
    requests = result.get("inputRequests") or {}
    need(len(requests) == 1, f"inputRequests on {reader}: {json.dumps(requests)[:300]}")
    (key, ask), = requests.items()
    need(ask.get("method") == "elicitation/create", f"the backend's question: {json.dumps(ask)[:300]}")
    answer = {key: {"action": "accept", "content": {"interpretation": "historical"}}}
    sent = time.monotonic()
    _, error, by = tasks.call(s, "tasks/update", {"taskId": task_id, "inputResponses": answer},
                              target=answerer, name=task_id)
    need(error is None and by == answerer, f"tasks/update on {answerer}: served by {by}, error {error}")
    while True:
        result = get(s, task_id, reader)
        if result.get("status") in TERMINAL:
            break
        need(time.monotonic() - sent < 15, f"not completed 15 s after the answer: {json.dumps(result)[:300]}")
        time.sleep(0.2)
    took = time.monotonic() - sent
    text = text_of(result.get("result"))
    need(result.get("status") == "completed", f"ended {result.get('status')!r}: {json.dumps(result)[:300]}")
    need(f"Research Report: {topic} (historical)" in text, f"the result does not carry the answer: {text[:300]!r}")
    return (f"created on {owner}; the backend's elicitation/create read as input_required on {reader}; "
            f"answered with tasks/update on {answerer}; completed {took:.1f} s later with the answer "
            f"in the report (read on {reader})")


def step_children(run, s):
    now = {label: run.children(label) for label in sorted(run.instances)}
    need(all(now[label] == [pid] for label, pid in run.first_children.items()),
         f"children {now}, at the start {run.first_children}")
    return "each instance still has its first child: " + ", ".join(f"{k} {v[0]}" for k, v in now.items())


def step_child_killed(run, s):
    owner, watcher = "gw1", "gw2"
    task_id = create(s, owner, "a child killed")
    start = time.monotonic()
    while True:
        result = get(s, task_id, watcher)
        if any(st in (result.get("statusMessage") or "") for st in STAGES):
            break
        need(result.get("status") == "working", f"tasks/get on {watcher}: {json.dumps(result)[:300]}")
        need(time.monotonic() - start < 10, f"no stage message on {watcher} within 10 s")
        time.sleep(0.1)
    (old,) = run.children(owner)
    os.kill(old, signal.SIGKILL)
    killed = time.monotonic()
    while True:
        result = get(s, task_id, watcher)
        if result.get("status") in TERMINAL:
            break
        need(time.monotonic() - killed < 10, f"still {result.get('status')!r} 10 s after the kill")
        time.sleep(0.1)
    took = time.monotonic() - killed
    error = result.get("error") or {}
    need(result.get("status") == "failed" and f'"{run.child}"' in str(error.get("message")),
         f"after the kill: {json.dumps(result)[:400]}")
    need(took < 5, f"failed {took:.1f} s after the kill")
    # The pool starts a new child: a plain call on the owner succeeds again.
    while True:
        res, err, by = tasks.call(s, "tools/call", {"name": "echo", "arguments": {"message": "back"}},
                                  target=owner, name="echo")
        if err is None and not res.get("isError") and "back" in text_of(res):
            break
        need(time.monotonic() - killed < 15, f"no call succeeded on {owner} 15 s after the kill: "
                                             f"{json.dumps(err or res)[:300]}")
        time.sleep(0.2)
    new = run.children(owner)
    need(len(new) == 1 and new[0] != old, f"{owner}'s children after the restart: {new} (killed {old})")
    return (f"{owner}'s child {old} SIGKILLed under the task: read `failed` on {watcher} {took * 1000:.0f} ms "
            f"later ({error.get('code')} {error.get('message', '')[:70]!r}…); echo on new child {new[0]} "
            f"{time.monotonic() - killed:.1f} s after the kill")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--proxy", required=True)
    p.add_argument("--access-log", required=True)
    p.add_argument("--instances", required=True, help="gw1=host:port,...")
    p.add_argument("--pids", required=True, help="gw1=pid,...")
    p.add_argument("--mark", required=True, help="the children's --lane-mark prefix")
    p.add_argument("--logs", required=True, help="the directory of the instances' gwN.err")
    p.add_argument("--child", default="node",
                   help="the children's program as given to the gateway ($NODE): the backend's name in its errors")
    run = Run(p.parse_args())
    run.step("ready", step_ready)
    run.step("task-polled-elsewhere", step_elsewhere)
    run.step("task-cancelled-elsewhere", step_cancel)
    run.step("task-input-elsewhere", step_input)
    run.step("children", step_children)
    run.step("task-child-killed", step_child_killed)
    print(f"{run.passed} passed, {run.failed} failed", flush=True)
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
