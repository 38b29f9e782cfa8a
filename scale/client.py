#!/usr/bin/env python3
"""MCP client of the scale-out test (scale/run.sh); Python 3 standard library only.

Speaks Streamable HTTP through an nginx round-robin proxy in front of several
`snodo fixture` instances, runs one flow per step, then attributes every request of a
step to the upstream that served it from nginx's access log (each request carries
`X-Scale-Step` and a unique `X-Scale-Req`, which nginx logs next to `$upstream_addr`).

Prints one line per step, `ok <step> (upstreams: ...)` or `FAIL <step>: <reason>`,
and a last line `N passed, M failed`. Exits 1 when a step failed.
"""

import argparse
import http.client
import json
import os
import signal
import socket
import sys
import threading
import time

MODERN = "2026-07-28"
LEGACY = ("2025-11-25", "2025-06-18")
ACCEPT = "application/json, text/event-stream"
REQUEST_TIMEOUT = 20.0
CLIENT_INFO = {"name": "snodo-scale-test", "version": "1.0.0"}

# What the fixture serves (crates/snodo-cli/src/fixture.rs).
# The conformance fixture's resources, and the files of the skills it serves (SEP-2640:
# readable as resources in every revision).
FIXTURE_RESOURCES = {"test://static-text", "test://static-binary", "test://watched-resource",
                     "skill://pdf-processing/SKILL.md", "skill://pdf-processing/references/FORMS.md",
                     "skill://acme/code-review/SKILL.md"}
FIXTURE_TEMPLATES = {"test://template/{id}/data"}
FIXTURE_PROMPTS = {"test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource"}
FIXTURE_TOOLS = {"test_simple_text", "test_tool_with_progress", "test_input_required_result_multi_round", "echo"}
PROGRESS_TEXT = "Progress computation completed: 5050"


class Failure(Exception):
    """A step's assertion failed."""


def need(cond, reason):
    if not cond:
        raise Failure(reason)


def addr_of(text):
    host, _, port = text.rpartition(":")
    return host, int(port)


class Reply:
    def __init__(self, status, ctype, messages, raw):
        self.status = status
        self.ctype = ctype
        self.messages = messages  # [(seconds since the request was sent, message)]
        self.raw = raw

    def response(self, rid):
        """The JSON-RPC response to request `rid` (must be the last message)."""
        need(self.messages, f"HTTP {self.status} with no JSON-RPC message (body {self.raw[:200]!r})")
        last = self.messages[-1][1]
        need(last.get("id") == rid and ("result" in last or "error" in last),
             f"the last message is not the response to id {rid!r}: {json.dumps(last)[:300]}")
        return last

    def result(self, rid):
        msg = self.response(rid)
        need("result" in msg, f"HTTP {self.status}, error {json.dumps(msg.get('error'))[:300]}")
        need(self.status == 200, f"HTTP {self.status} for a result")
        return msg["result"]

    def notifications(self, method):
        return [(t, m) for t, m in self.messages if m.get("method") == method and "id" not in m]


def post(addr, body, headers, step, tag, on_message=None, http_method="POST", path="/mcp", sock_out=None):
    """One request on its own connection (`Connection: close`); reads JSON or SSE.
    `sock_out` (a list) receives the socket, so that another thread can abort the call."""
    conn = http.client.HTTPConnection(addr[0], addr[1], timeout=REQUEST_TIMEOUT)
    hdrs = {
        "Content-Type": "application/json",
        "Accept": ACCEPT,
        "Connection": "close",
        "X-Scale-Step": step,
        "X-Scale-Req": tag,
    }
    hdrs.update(headers)
    data = None if body is None else json.dumps(body).encode()
    start = time.monotonic()
    try:
        conn.request(http_method, path, body=data, headers=hdrs)
        if sock_out is not None:
            sock_out.append(conn.sock)
        resp = conn.getresponse()
        ctype = resp.getheader("Content-Type", "") or ""
        messages, raw = [], b""
        if ctype.startswith("text/event-stream"):
            data_lines = []
            while True:
                line = resp.readline()
                if not line:
                    break
                line = line.decode("utf-8").rstrip("\r\n")
                if line == "":
                    if data_lines:
                        msg = json.loads("\n".join(data_lines))
                        data_lines = []
                        messages.append((time.monotonic() - start, msg))
                        if on_message:
                            on_message(msg)
                    continue
                if line.startswith(":"):
                    continue
                field, _, value = line.partition(":")
                if value.startswith(" "):
                    value = value[1:]
                if field == "data":
                    data_lines.append(value)
        else:
            raw = resp.read()
            if raw and ctype.startswith("application/json"):
                messages.append((time.monotonic() - start, json.loads(raw)))
        return Reply(resp.status, ctype, messages, raw)
    finally:
        conn.close()


class Session:
    """Requests of one step; every request gets a fresh JSON-RPC id and a log tag."""

    def __init__(self, run, step, addr, via_proxy=True):
        self.run, self.step, self.addr = run, step, addr
        self.via_proxy = via_proxy
        self.tags = []

    def tag(self):
        tag = f"{self.step}#{len(self.tags) + 1}"
        if self.via_proxy:
            self.tags.append(tag)
        return tag

    def next_id(self):
        self.run.next_id += 1
        return self.run.next_id

    def send(self, body, headers, **kw):
        tag = self.tag()
        return post(self.addr, body, headers, self.step, tag, **kw), tag

    # initialize era -----------------------------------------------------------------

    def legacy(self, version, method, params=None, notification=False, **kw):
        body = {"jsonrpc": "2.0", "method": method}
        if not notification:
            body["id"] = self.next_id()
        if params is not None:
            body["params"] = params
        headers = {} if method == "initialize" else {"MCP-Protocol-Version": version}
        reply, _ = self.send(body, headers, **kw)
        return reply, body.get("id")

    # 2026-07-28 ---------------------------------------------------------------------

    def modern(self, method, params=None, name=None, caps=None, progress=None, rid=None, **kw):
        params = dict(params or {})
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": caps or {},
            "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        }
        if progress is not None:
            meta["progressToken"] = progress
        params["_meta"] = meta
        rid = self.next_id() if rid is None else rid
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        if name is not None:
            headers["Mcp-Name"] = name
        reply, tag = self.send(body, headers, **kw)
        return reply, rid, tag


def paginate(fetch, key):
    """Follows nextCursor; returns (all items, number of pages, page results)."""
    items, pages, cursor, results = [], 0, None, []
    while True:
        result = fetch(cursor)
        pages += 1
        need(isinstance(result.get(key), list), f"page {pages} has no {key!r} array")
        items.extend(result[key])
        results.append(result)
        cursor = result.get("nextCursor")
        if cursor is None:
            return items, pages, results
        need(pages < 100, "more than 100 pages: the cursor does not advance")


def check_progress(reply, rid, token, modern):
    """≥3 progress notifications with our token, increasing, then the result, streamed."""
    need(reply.ctype.startswith("text/event-stream"), f"expected an SSE stream, got {reply.ctype!r}")
    result = reply.result(rid)
    progress = reply.notifications("notifications/progress")
    need(len(progress) >= 3, f"{len(progress)} progress notifications, expected at least 3")
    need(all(m["params"].get("progressToken") == token for _, m in progress), "a progress notification has another token")
    values = [m["params"]["progress"] for _, m in progress]
    need(values == sorted(values) and len(set(values)) == len(values), f"progress does not increase: {values}")
    texts = [c.get("text") for c in result.get("content", [])]
    need(PROGRESS_TEXT in texts, f"unexpected result content {texts}")
    need(("resultType" in result) == modern, "resultType present on a legacy result" if not modern else "no resultType")
    # The fixture sleeps 50 ms after each notification: a buffering proxy would deliver
    # everything at once at the end.
    spread = reply.messages[-1][0] - progress[0][0]
    need(spread >= 0.06, f"the stream arrived in one burst ({spread * 1000:.0f} ms from the first progress to the result): is the proxy buffering SSE?")
    return f"{len(progress)} progress events over {spread * 1000:.0f} ms"


# steps --------------------------------------------------------------------------------


def step_health(run, s):
    for _ in range(3):
        reply, _ = s.send(None, {}, http_method="GET", path="/healthz")
        need(reply.status == 200, f"GET /healthz answered HTTP {reply.status}")
        need(reply.messages and reply.messages[0][1] == {"status": "ok"}, f"GET /healthz body {reply.raw!r}")
    return "3 × GET /healthz → 200 {\"status\":\"ok\"}"


def legacy_flow(version):
    def step(run, s):
        reply, rid = s.legacy(version, "initialize", {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT_INFO})
        init = reply.result(rid)
        need(init.get("protocolVersion") == version, f"initialize negotiated {init.get('protocolVersion')!r}")
        need("serverInfo" in init and "tools" in init.get("capabilities", {}), "initialize result lacks serverInfo or tools")
        need("Mcp-Session-Id" not in str(reply.raw), "unexpected session id")

        reply, _ = s.legacy(version, "notifications/initialized", notification=True)
        need(reply.status == 202 and not reply.raw, f"notifications/initialized answered HTTP {reply.status} {reply.raw[:100]!r}")

        def fetch(method):
            def f(cursor):
                r, i = s.legacy(version, method, None if cursor is None else {"cursor": cursor})
                res = r.result(i)
                need("resultType" not in res and "ttlMs" not in res, f"{method} at {version} carries 2026 fields")
                return res
            return f

        tools, tool_pages, _ = paginate(fetch("tools/list"), "tools")
        names = {t["name"] for t in tools}
        need(FIXTURE_TOOLS <= names, f"tools/list lacks {sorted(FIXTURE_TOOLS - names)}")

        reply, rid = s.legacy(version, "tools/call", {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": f"p-{version}"}})
        progress = check_progress(reply, rid, f"p-{version}", modern=False)

        resources, pages, _ = paginate(fetch("resources/list"), "resources")
        uris = [r["uri"] for r in resources]
        need(set(uris) == FIXTURE_RESOURCES and len(uris) == len(FIXTURE_RESOURCES), f"resources/list pages gave {uris}")
        if run.page_size:
            need(pages >= 2, f"resources/list fit on {pages} page with --page-size {run.page_size}")
        return f"{len(tools)} tools on {tool_pages} page(s); {progress}; {len(uris)} resources on {pages} page(s)"
    return step


def step_discover(run, s):
    reply, rid, _ = s.modern("server/discover")
    res = reply.result(rid)
    need(res.get("resultType") == "complete", f"resultType {res.get('resultType')!r}")
    versions = res.get("supportedVersions", [])
    need(set((MODERN,) + LEGACY) <= set(versions), f"supportedVersions {versions}")
    need("tools" in res.get("capabilities", {}), "no tools capability")
    need("ttlMs" in res and "cacheScope" in res, "no cache hints")
    return f"supportedVersions {versions}"


def step_modern_lists(run, s):
    def fetch(method):
        def f(cursor):
            r, i, _ = s.modern(method, None if cursor is None else {"cursor": cursor})
            res = r.result(i)
            need(res.get("resultType") == "complete" and "ttlMs" in res, f"{method} page lacks resultType/ttlMs")
            return res
        return f

    summary = []
    for method, key, field, expected in [
        ("tools/list", "tools", "name", FIXTURE_TOOLS),
        ("prompts/list", "prompts", "name", FIXTURE_PROMPTS),
        ("resources/list", "resources", "uri", FIXTURE_RESOURCES),
        ("resources/templates/list", "resourceTemplates", "uriTemplate", FIXTURE_TEMPLATES),
    ]:
        items, pages, results = paginate(fetch(method), key)
        got = [i[field] for i in items]
        need(expected <= set(got), f"{method} lacks {sorted(expected - set(got))}")
        need(len(got) == len(set(got)), f"{method} repeats items across pages: {got}")
        scopes = {r.get("cacheScope") for r in results}
        need(len(scopes) == 1, f"{method} pages disagree on cacheScope: {scopes}")
        summary.append(f"{method} {len(got)}/{pages}p")
    return "items/pages: " + ", ".join(summary)


def step_modern_progress(run, s):
    reply, rid, _ = s.modern("tools/call", {"name": "test_tool_with_progress", "arguments": {}},
                             name="test_tool_with_progress", progress="p-modern")
    return check_progress(reply, rid, "p-modern", modern=True)


MRTR_TOOL = "test_input_required_result_multi_round"


def mrtr_rounds(s, max_rounds=3):
    """Runs the multi-round tool; returns [(tag, reply, rid)] of every round sent."""
    rounds, extra = [], {}
    for n in range(1, max_rounds + 1):
        reply, rid, tag = s.modern("tools/call", dict({"name": MRTR_TOOL, "arguments": {}}, **extra),
                                   name=MRTR_TOOL, caps={"elicitation": {}})
        rounds.append((tag, reply, rid))
        msg = reply.response(rid)
        if "error" in msg:
            return rounds
        res = msg["result"]
        if res.get("resultType") != "input_required":
            return rounds
        asked = res.get("inputRequests") or {}
        need(asked and "requestState" in res, f"round {n}: input_required without inputRequests/requestState")
        answers = {}
        for key, req in asked.items():
            need(req.get("method") == "elicitation/create", f"round {n}: unexpected input request {req.get('method')}")
            props = req["params"]["requestedSchema"].get("properties", {})
            answers[key] = {"action": "accept", "content": {p: f"scale-{p}" for p in props}}
        # The retry: same params, a NEW id, the answers and the state echoed verbatim.
        extra = {"inputResponses": answers, "requestState": res["requestState"]}
    return rounds


def step_mrtr(run, s):
    rounds = mrtr_rounds(s)
    need(len(rounds) == 3, f"finished after {len(rounds)} round(s)")
    for n, (_, reply, rid) in enumerate(rounds[:2], 1):
        res = reply.result(rid)
        need(res.get("resultType") == "input_required", f"round {n} is {res.get('resultType')!r}, expected input_required")
    _, reply, rid = rounds[2]
    res = reply.result(rid)
    need(res.get("resultType") == "complete", f"round 3 is {res.get('resultType')!r}")
    text = " ".join(c.get("text", "") for c in res.get("content", []))
    need("Completed after three rounds" in text and "scale-name" in text and "scale-city" in text,
         f"round 3 text {text!r} does not carry both answers")
    ids = [rid for _, _, rid in rounds]
    need(len(set(ids)) == 3, f"ids reused: {ids}")
    run.checks[s.step] = ("distinct", [t for t, _, _ in rounds], "the three rounds")
    return f"3 rounds, ids {ids}, answers of rounds 1-2 carried by requestState"


def step_pages(run, s):
    need(run.page_size, "snodo fixture has no --page-size flag, so the fixture's lists fit on one page "
                        "(default page size 100) and pages cannot be spread over instances; "
                        "needed CLI change: `snodo fixture --page-size N`")
    tags, n = [], 0

    def fetch(cursor):
        nonlocal n
        n += 1
        r, i, tag = s.modern("tools/list", None if cursor is None else {"cursor": cursor})
        tags.append(tag)
        return r.result(i)

    tools, pages, _ = paginate(fetch, "tools")
    need(pages >= 2, f"tools/list fit on {pages} page with --page-size {run.page_size}")
    names = [t["name"] for t in tools]
    need(len(names) == len(set(names)) and FIXTURE_TOOLS <= set(names), "pages overlap or miss tools")
    run.checks[s.step] = ("distinct", tags, "the pages")
    return f"{len(names)} tools on {pages} pages of {run.page_size}"


def step_host_check(run, s):
    body = lambda: {"jsonrpc": "2.0", "id": s.next_id(), "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}}}
    base = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover"}
    reply, _ = s.send(body(), dict(base, Host="evil.example.com", Origin="http://evil.example.com"))
    need(reply.status == 403, f"Host: evil.example.com answered HTTP {reply.status}, expected 403")
    reply, _ = s.send(body(), dict(base, Origin="http://evil.example.com"))
    need(reply.status == 403, f"Origin: http://evil.example.com answered HTTP {reply.status}, expected 403")
    reply, _ = s.send(body(), dict(base, Origin="http://localhost"))
    need(reply.status == 200, f"Origin: http://localhost answered HTTP {reply.status}, expected 200")
    return "foreign Host → 403, foreign Origin → 403, loopback Origin → 200 (checked by the instances)"


def step_negative(run, s):
    rounds = mrtr_rounds(s)
    last_tag, reply, rid = rounds[-1]
    msg = reply.response(rid)
    need("error" in msg, f"the flow completed after {len(rounds)} rounds WITHOUT a shared key: "
                         "requestState was accepted by another instance")
    err = msg["error"]
    need(len(rounds) >= 2, f"round 1 already failed: {json.dumps(err)}")
    need(err.get("code") == -32602, f"round {len(rounds)} failed with {json.dumps(err)}, expected -32602")
    run.checks[s.step] = ("negative", [t for t, _, _ in rounds], (len(rounds), err.get("message"), reply.status))
    return None


def step_drain(run, s):
    """SIGTERM an instance while it streams: it refuses new connections, finishes the
    in-flight call, exits; nginx then sends its share to the others."""
    pid, direct = run.drain_pid, run.drain_addr
    need(pid and direct, "no --drain-pid/--drain-addr given")
    label = run.label(f"{direct[0]}:{direct[1]}")
    direct_s = Session(run, s.step, direct, via_proxy=False)
    first = threading.Event()
    box = {}

    def call():
        try:
            box["reply"] = direct_s.modern(
                "tools/call", {"name": "test_tool_with_progress", "arguments": {}}, name="test_tool_with_progress",
                progress="p-drain", on_message=lambda m: first.set() if m.get("method") == "notifications/progress" else None)
        except Exception as e:  # noqa: BLE001 - reported below
            box["error"] = e
        finally:
            first.set()

    t = threading.Thread(target=call, daemon=True)
    t.start()
    need(first.wait(REQUEST_TIMEOUT), "no progress notification from the instance")
    os.kill(pid, signal.SIGTERM)
    refused = False
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            socket.create_connection(direct, timeout=0.5).close()
            time.sleep(0.02)
        except OSError:
            refused = True
            break
    t.join(REQUEST_TIMEOUT)
    need("error" not in box, f"the in-flight call broke on SIGTERM: {box.get('error')!r}")
    need("reply" in box, "the in-flight call did not finish")
    reply, rid, _ = box["reply"]
    progress = check_progress(reply, rid, "p-drain", modern=True)
    need(refused, f"{label} still accepted connections 3 s after SIGTERM")
    deadline = time.monotonic() + 12
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.05)
    need(not alive(pid), f"{label} (pid {pid}) still running 12 s after SIGTERM")

    for _ in range(6):
        r, i, _ = s.modern("tools/list")
        r.result(i)
    run.checks[s.step] = ("avoid", list(s.tags), f"{direct[0]}:{direct[1]}")
    return f"SIGTERM {label} mid-stream: in-flight call finished ({progress}), new connections refused, process exited; 6 requests after it"


def step_legacy_server_request(run, s):
    """Initialize era: a server-to-client request waits in the process that sent it, so
    the client's answer POST must reach that process. Round robin sends it elsewhere."""
    version = "2025-11-25"
    params = {"name": "test_elicitation", "arguments": {"message": "scale?"}}
    answer = {"action": "accept", "content": {"username": "scale", "email": "scale@example.com"}}

    def start(sess):
        asked, box, socks = threading.Event(), {}, []

        def on_message(m):
            if m.get("method") == "elicitation/create" and "id" in m:
                box["ask"] = m
                asked.set()

        def call():
            try:
                box["reply"] = sess.legacy(version, "tools/call", params, on_message=on_message, sock_out=socks)
            except Exception as e:  # noqa: BLE001 - an aborted call ends here
                box["error"] = e
            finally:
                asked.set()

        t = threading.Thread(target=call, daemon=True)
        t.start()
        need(asked.wait(REQUEST_TIMEOUT) and "ask" in box, f"no elicitation/create request on the stream: {box}")
        return t, box, socks

    def respond(sess, ask):
        body = {"jsonrpc": "2.0", "id": ask["id"], "result": answer}
        reply, _ = sess.send(body, {"MCP-Protocol-Version": version})
        need(reply.status == 202, f"the answer POST got HTTP {reply.status}")

    # Control, straight to one instance: the answer reaches the process that asked.
    first = next(a for a, label in sorted(run.labels.items(), key=lambda x: x[1]) if label.startswith("s"))
    direct = Session(run, s.step, addr_of(first), via_proxy=False)
    t, box, _ = start(direct)
    respond(direct, box["ask"])
    t.join(REQUEST_TIMEOUT)
    reply, rid = box.get("reply", (None, None))
    need(reply is not None, f"direct control failed: {box.get('error')!r}")
    text = " ".join(c.get("text", "") for c in reply.result(rid).get("content", []))
    need("action=accept" in text, f"direct control: unexpected result {text!r}")

    # Through the proxy: the answer lands on another instance and is dropped there.
    t, box, socks = start(s)
    call_tag = s.tags[-1]
    respond(s, box["ask"])
    t.join(2.0)
    completed = not t.is_alive() and "reply" in box
    if not completed:
        for sock in socks:  # give up: closing the stream cancels the call
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        t.join(REQUEST_TIMEOUT)
    run.checks[s.step] = ("per-instance", [call_tag, s.tags[-1]], completed)
    return None


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# the run ------------------------------------------------------------------------------


class Run:
    def __init__(self, args):
        self.proxy = addr_of(args.proxy)
        self.unshared_proxy = addr_of(args.unshared_proxy)
        self.access_log = args.access_log
        self.page_size = args.page_size
        self.drain_pid = args.drain_pid
        self.drain_addr = addr_of(args.drain_addr) if args.drain_addr else None
        self.labels = {}
        for spec in (args.instances, args.unshared_instances):
            for item in filter(None, spec.split(",")):
                label, _, a = item.partition("=")
                self.labels[a] = label
        self.next_id = 0
        self.checks = {}
        self.passed = self.failed = 0
        self.served = {}  # upstream -> requests served (shared cluster)

    def label(self, upstream):
        return self.labels.get(upstream, upstream)

    def log_entries(self, tags, wait=3.0):
        """Access-log entries of these tags (nginx writes the line as the request ends)."""
        deadline = time.monotonic() + wait
        while True:
            found = {}
            try:
                with open(self.access_log, encoding="utf-8") as f:
                    for line in f:
                        try:
                            e = json.loads(line)
                        except ValueError:
                            continue
                        if e.get("req") in tags:
                            found[e["req"]] = e
            except FileNotFoundError:
                pass
            if len(found) == len(tags) or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def report(self, name, ok, text):
        if ok:
            self.passed += 1
            print(f"ok {name} ({text})", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name}: {text}", flush=True)

    def step(self, name, fn, proxy=None):
        s = Session(self, name, proxy or self.proxy)
        try:
            detail = fn(self, s)
        except Failure as e:
            return self.report(name, False, str(e))
        except Exception as e:  # noqa: BLE001 - a broken step is a failed step
            return self.report(name, False, f"{type(e).__name__}: {e}")
        entries = self.log_entries(set(s.tags))
        missing = [t for t in s.tags if t not in entries]
        if missing:
            return self.report(name, False, f"requests missing from nginx's access log: {missing}")
        # $upstream_addr lists every upstream tried ("a, b" after a failed connect); the last served.
        tried = {t: [u.strip() for u in entries[t]["upstream"].replace(" : ", ", ").split(",") if u.strip()] for t in s.tags}
        final = {t: (tried[t][-1] if tried[t] else "-") for t in s.tags}
        if any(u == "-" for u in final.values()):
            return self.report(name, False, f"requests not proxied to an upstream: {[t for t in s.tags if final[t] == '-']}")
        if proxy is None:
            for t in s.tags:
                self.served[final[t]] = self.served.get(final[t], 0) + 1
        ups = sorted({final[t] for t in s.tags}, key=self.label)
        text = "upstreams: " + " ".join(self.label(u) for u in ups)
        check = self.checks.get(name)
        if check and check[0] == "distinct":
            _, tags, what = check
            seq = [final[t] for t in tags]
            if len(set(seq)) < 2:
                return self.report(name, False, f"{what} were all served by {self.label(seq[0])}; need ≥2 distinct upstreams")
            text = "upstreams: " + " → ".join(self.label(u) for u in seq)
        elif check and check[0] == "negative":
            _, tags, (n, message, status) = check
            seq = [final[t] for t in tags]
            if seq[-1] == seq[-2]:
                return self.report(name, False, f"inconclusive: round {n} failed on the same instance as round {n - 1} ({self.label(seq[-1])})")
            text = (f"without a shared key round {n} on {self.label(seq[-1])} rejected the requestState minted by "
                    f"{self.label(seq[-2])}: HTTP {status}, -32602 {message!r} — failed as expected; upstreams: "
                    + " → ".join(self.label(u) for u in seq))
        elif check and check[0] == "avoid":
            _, tags, gone = check
            after = [final[t] for t in tags]
            if gone in after:
                return self.report(name, False, f"a request was served by the stopped instance {self.label(gone)}")
            retried = sum(1 for t in tags if gone in tried[t][:-1])
            text = (f"upstreams after the stop: " + " ".join(self.label(u) for u in sorted(set(after), key=self.label))
                    + f"; {retried} request(s) retried by nginx after {self.label(gone)} refused the connection")
        elif check and check[0] == "per-instance":
            _, (call, answer), completed = check
            a, b = final[call], final[answer]
            if a == b:
                return self.report(name, False, f"inconclusive: the answer POST reached the asking instance {self.label(a)}")
            if completed:
                return self.report(name, False, f"the call on {self.label(a)} completed although the answer went to {self.label(b)}")
            text = (f"elicitation/create sent by {self.label(a)}, answer POST routed to {self.label(b)} (202, dropped): "
                    "call still waiting after 2 s, then abandoned by closing the stream; "
                    "the same exchange straight to one instance completed — "
                    "initialize-era server requests need affinity, as documented")
        self.report(name, True, f"{text}; {detail}" if detail else text)

    def spread(self):
        ups = sorted(self.served, key=self.label)
        text = ", ".join(f"{self.label(u)}={u} ×{self.served[u]}" for u in ups)
        self.report("spread", len(ups) >= 2,
                    f"upstreams seen: {text}" if len(ups) >= 2 else f"only {len(ups)} upstream served everything: {text}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--proxy", required=True, help="host:port of the proxy in front of the shared-key instances")
    p.add_argument("--unshared-proxy", required=True, help="host:port of the proxy in front of instances with their own keys")
    p.add_argument("--access-log", required=True)
    p.add_argument("--instances", default="", help="label=host:port,... of the shared-key instances")
    p.add_argument("--unshared-instances", default="", help="label=host:port,... of the other instances")
    p.add_argument("--page-size", type=int, default=0, help="page size the instances run with (0: the flag is missing)")
    p.add_argument("--drain-pid", type=int, default=0)
    p.add_argument("--drain-addr", default="")
    args = p.parse_args()
    run = Run(args)
    run.step("health", step_health)
    for v in LEGACY:
        run.step(f"legacy-{v}", legacy_flow(v))
    run.step("modern-discover", step_discover)
    run.step("modern-lists", step_modern_lists)
    run.step("modern-progress", step_modern_progress)
    run.step("mrtr-3-rounds", step_mrtr)
    run.step("pages-across-instances", step_pages)
    run.step("host-check", step_host_check)
    run.step("negative-control-unshared-key", step_negative, proxy=run.unshared_proxy)
    run.step("legacy-server-request-per-instance", step_legacy_server_request)
    run.step("sigterm-drain-and-failover", step_drain)
    run.spread()
    print(f"{run.passed} passed, {run.failed} failed", flush=True)
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
