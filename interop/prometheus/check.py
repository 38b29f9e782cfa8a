"""Makes MCP requests to the demo, then asks Prometheus's HTTP API for the counters.

Then runs one task on the fixture (TASK_PORT) and asks for the task series.

Usage: check.py MCP_PORT PROMETHEUS_PORT TASK_PORT. Prints one line per check, then
"N passed, M failed"; exits 0 iff nothing failed.
"""

import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

MCP_PORT, PROM_PORT, TASK_PORT = sys.argv[1], sys.argv[2], sys.argv[3]
MCP = f"http://127.0.0.1:{MCP_PORT}/mcp"
TASKS_MCP = f"http://127.0.0.1:{TASK_PORT}/mcp"
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
PROM = f"http://127.0.0.1:{PROM_PORT}"
V = "2026-07-28"
CALLS = 3

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


def wait_http(url, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return True
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.2)
    return False


def request(url, i, method, name, params, caps):
    """One 2026-07-28 request (`name`: its Mcp-Name); (status, JSON body)."""
    body = {
        "jsonrpc": "2.0",
        "id": i,
        "method": method,
        "params": {
            **params,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": V,
                "io.modelcontextprotocol/clientCapabilities": caps,
            },
        },
    }
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": V,
            "Mcp-Method": method,
            "Mcp-Name": name,
        },
    )
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.status, json.loads(r.read())


def call_tool(i):
    params = {"name": "search", "arguments": {"query": "hello"}}
    return request(MCP, i, "tools/call", "search", params, {})


def refused():
    req = urllib.request.Request(
        MCP, data=b"{}", headers={"Content-Type": "text/plain"}
    )
    try:
        urllib.request.urlopen(req, timeout=5)
        return 200
    except urllib.error.HTTPError as e:
        return e.code


def query(expr):
    url = f"{PROM}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as r:
        data = json.loads(r.read())
    result = data.get("data", {}).get("result", [])
    return float(result[0]["value"][1]) if result else None


def eventually(expr, want, seconds=30):
    deadline = time.time() + seconds
    got = None
    while time.time() < deadline:
        try:
            got = query(expr)
        except (urllib.error.URLError, OSError, ValueError, KeyError):
            got = None
        if got == want:
            return got
        time.sleep(0.5)
    return got


check("snodo serves", wait_http(f"http://127.0.0.1:{MCP_PORT}/healthz"))
check("prometheus is ready", wait_http(f"{PROM}/-/ready"))
check("prometheus scrapes snodo", eventually('up{job="snodo"}', 1.0) == 1.0)

answers = [call_tool(i) for i in range(1, CALLS + 1)]
check(
    f"{CALLS} tools/call answered",
    all(s == 200 and "result" in a for s, a in answers),
    repr(answers[:1]),
)
check("a text/plain POST is refused with 415", refused() == 415)

expr = 'sum(snodo_requests_total{job="snodo",method="tools/call",name="search",outcome="ok"})'
got = eventually(expr, float(CALLS))
check(f"prometheus: {expr} == {CALLS}", got == float(CALLS), f"got {got}")
expr = 'sum(snodo_refusals_total{job="snodo",reason="415"})'
got = eventually(expr, 1.0)
check(f"prometheus: {expr} == 1", got == 1.0, f"got {got}")
expr = 'sum(snodo_request_duration_seconds_count{job="snodo",method="tools/call"})'
got = eventually(expr, float(CALLS))
check(f"prometheus: {expr} == {CALLS}", got == float(CALLS), f"got {got}")
got = eventually("snodo_requests_in_flight", 0.0)
check("prometheus: snodo_requests_in_flight == 0", got == 0.0, f"got {got}")

# Tasks: one slow_compute task on the fixture, seen by Prometheus while it works and
# once it completed.
check("the task fixture serves", wait_http(f"http://127.0.0.1:{TASK_PORT}/healthz"))
check("prometheus scrapes the task fixture", eventually('up{job="tasks"}', 1.0) == 1.0)
params = {"name": "slow_compute", "arguments": {"seconds": 4, "label": "lane"}}
status, created = request(TASKS_MCP, 1, "tools/call", "slow_compute", params, TASKS)
task_id = created.get("result", {}).get("taskId")
check("tools/call slow_compute created a task", status == 200 and task_id, repr(created)[:300])
expr = 'snodo_tasks_running{job="tasks",status="working"}'
got = eventually(expr, 1.0, seconds=3.5)
check(f"prometheus: {expr} == 1 while it works", got == 1.0, f"got {got}")
final = None
for i in range(2, 80):
    _, got_task = request(TASKS_MCP, i, "tasks/get", task_id or "", {"taskId": task_id}, TASKS)
    final = got_task.get("result", {}).get("status")
    if final in ("completed", "failed", "cancelled"):
        break
    time.sleep(0.25)
check("the task completed", final == "completed", f"status {final}")
expr = 'snodo_tasks_ended_total{job="tasks",status="completed"}'
got = eventually(expr, 1.0)
check(f"prometheus: {expr} == 1", got == 1.0, f"got {got}")
expr = 'snodo_tasks_running{job="tasks",status="working"}'
got = eventually(expr, 0.0)
check(f"prometheus: {expr} == 0 after", got == 0.0, f"got {got}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
