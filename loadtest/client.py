#!/usr/bin/env python3
"""Load + fault client for `snodo fixture` (Python standard library only).

Many concurrent clients, for a fixed time, mix valid 2026-07-28 and initialize-era calls,
progress streams, notifications/cancelled, malformed and oversized bodies, refused heads,
slow writers, kept-alive connections and mid-request disconnects. Every request that is
sent whole must get exactly one well-formed answer; every client must finish.

Usage: client.py --port PORT --pid PID [--duration 30] [--clients 64] [--idle 5]
       [--log SERVER_LOG] [--json OUT.json]
Prints a summary table and `N passed, M failed`; exits 1 when a check failed.
"""

import argparse
import asyncio
import collections
import json
import os
import random
import time

V26 = "2026-07-28"
V25 = "2025-11-25"
META = {"io.modelcontextprotocol/protocolVersion": V26, "io.modelcontextprotocol/clientCapabilities": {}}
BODY_LIMIT = 4 * 1024 * 1024  # HttpConfig default
STEP_TIMEOUT = 20.0  # a scenario that takes longer is a stuck connection

stats = collections.Counter()  # scenario -> count
statuses = collections.Counter()  # status -> count
by_scenario = collections.defaultdict(collections.Counter)
problems = []  # (scenario, message)
latencies = []


def problem(scenario, msg):
    if len(problems) < 200:
        problems.append((scenario, msg))
    stats["problems"] += 1


# ---- requests ---------------------------------------------------------------------------

def head(host, headers, length=None, chunked=False, close=True):
    lines = [
        "POST /mcp HTTP/1.1",
        f"Host: {host}",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
    ]
    lines += [f"{k}: {v}" for k, v in headers]
    if chunked:
        lines.append("Transfer-Encoding: chunked")
    elif length is not None:
        lines.append(f"Content-Length: {length}")
    lines.append("Connection: close" if close else "Connection: keep-alive")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def modern_call(rid, tool, args, extra_meta=None):
    meta = dict(META)
    meta.update(extra_meta or {})
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": tool, "arguments": args, "_meta": meta}}
    headers = [("MCP-Protocol-Version", V26), ("Mcp-Method", "tools/call"), ("Mcp-Name", tool)]
    return headers, json.dumps(body).encode()


def modern_list(rid):
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/list", "params": {"_meta": META}}
    return [("MCP-Protocol-Version", V26), ("Mcp-Method", "tools/list")], json.dumps(body).encode()


def legacy_call(rid, tool, args, meta=None):
    params = {"name": tool, "arguments": args}
    if meta:
        params["_meta"] = meta
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
    return [("MCP-Protocol-Version", V25)], json.dumps(body).encode()


# ---- response parsing -------------------------------------------------------------------

def dechunk(data):
    out = bytearray()
    while True:
        eol = data.find(b"\r\n")
        if eol < 0:
            raise ValueError("truncated chunk size")
        size = int(data[:eol].split(b";")[0], 16)
        data = data[eol + 2:]
        if size == 0:
            if not data.startswith(b"\r\n"):
                raise ValueError("bad chunked trailer")
            return bytes(out), data[2:]
        if len(data) < size + 2:
            raise ValueError("truncated chunk")
        out += data[:size]
        if data[size:size + 2] != b"\r\n":
            raise ValueError("chunk without CRLF")
        data = data[size + 2:]


def parse_one(buf):
    """Parses one HTTP/1.1 response off `buf`; returns (status, headers, body, rest)."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        raise ValueError(f"no complete head in {buf[:80]!r}")
    lines = buf[:end].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise ValueError(f"bad status line {lines[0]!r}")
    status = int(parts[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    rest = buf[end + 4:]
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body, rest = dechunk(rest)
    elif "content-length" in headers:
        n = int(headers["content-length"])
        if len(rest) < n:
            raise ValueError("truncated body")
        body, rest = rest[:n], rest[n:]
    else:
        body, rest = rest, b""
    return status, headers, body, rest


def check_message(scenario, status, headers, body, rid):
    """Checks one answer is one well-formed JSON-RPC answer; returns the final message."""
    ct = headers.get("content-type")
    if status in (202, 204):
        if body:
            problem(scenario, f"{status} with a body {body[:80]!r}")
        return None
    if ct == "application/json":
        try:
            msg = json.loads(body)
        except ValueError as e:
            problem(scenario, f"{status}: JSON body does not parse ({e}): {body[:120]!r}")
            return None
        frames = [msg]
    elif ct == "text/event-stream":
        frames = []
        for frame in body.decode("utf-8", "replace").split("\n\n"):
            for line in frame.split("\n"):
                if line.startswith("data: "):
                    try:
                        frames.append(json.loads(line[6:]))
                    except ValueError as e:
                        problem(scenario, f"SSE frame does not parse ({e}): {line[:120]!r}")
                        return None
        if not frames:
            problem(scenario, "SSE without any message")
            return None
    else:
        problem(scenario, f"{status} with content type {ct!r}: {body[:80]!r}")
        return None
    final = frames[-1]
    answers = [f for f in frames if "result" in f or "error" in f]
    if len(answers) != 1:
        problem(scenario, f"{len(answers)} answers in one response")
    if final.get("jsonrpc") != "2.0" or (("result" in final) == ("error" in final)):
        problem(scenario, f"final message is not one response: {str(final)[:160]}")
    if status >= 400 and "error" not in final:
        problem(scenario, f"{status} without an error")
    if "error" in final and not isinstance(final["error"].get("code"), int):
        problem(scenario, f"error without a code: {final}")
    if rid is not None and final.get("id") not in (rid, None):
        problem(scenario, f"answer for id {final.get('id')!r}, sent {rid!r}")
    if rid is not None and "result" in final and final.get("id") != rid:
        problem(scenario, f"result with id {final.get('id')!r}, sent {rid!r}")
    return final, frames


async def read_all(reader):
    chunks = []
    while True:
        b = await reader.read(65536)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


# ---- scenarios --------------------------------------------------------------------------

class Ctx:
    def __init__(self, host, port):
        self.host, self.port = host, port
        self.hosthdr = f"{host}:{port}"
        self.next_id = 0

    def rid(self):
        self.next_id += 1
        return self.next_id


async def exchange(ctx, scenario, raw_parts, rid, expect, delays=None):
    """Sends a whole request (optionally in pieces with delays), reads to EOF, checks
    exactly one well-formed answer with a status in `expect`."""
    reader, writer = await asyncio.open_connection(ctx.host, ctx.port)
    started = time.monotonic()
    try:
        for i, part in enumerate(raw_parts):
            writer.write(part)
            await writer.drain()
            if delays:
                await asyncio.sleep(delays[i % len(delays)])
        stats["sent"] += 1
        by_scenario[scenario]["sent"] += 1
        data = await read_all(reader)
    finally:
        writer.close()
    latencies.append(time.monotonic() - started)
    try:
        status, headers, body, rest = parse_one(data)
    except ValueError as e:
        problem(scenario, f"unparseable answer ({e})")
        return None
    if rest:
        problem(scenario, f"{len(rest)} bytes after the answer: {rest[:80]!r}")
    stats["answered"] += 1
    statuses[status] += 1
    by_scenario[scenario]["answered"] += 1
    by_scenario[scenario][status] += 1
    if status not in expect:
        problem(scenario, f"status {status} (expected {sorted(expect)}): {body[:160]!r}")
    return status, headers, check_message(scenario, status, headers, body, rid)


async def sc_modern_echo(ctx):
    rid = ctx.rid()
    h, b = modern_call(rid, "echo", {"text": f"hello {rid}"})
    r = await exchange(ctx, "modern_echo", [head(ctx.hosthdr, h, len(b)) + b], rid, {200})
    if r and r[2] and r[2][0].get("result", {}).get("content", [{}])[0].get("text") != f"hello {rid}":
        problem("modern_echo", f"wrong echo: {r[2][0]}")


async def sc_modern_list(ctx):
    rid = ctx.rid()
    h, b = modern_list(rid)
    await exchange(ctx, "modern_list", [head(ctx.hosthdr, h, len(b)) + b], rid, {200})


async def sc_legacy_echo(ctx):
    rid = f"legacy-{ctx.rid()}"
    h, b = legacy_call(rid, "echo", {"text": "legacy"})
    await exchange(ctx, "legacy_echo", [head(ctx.hosthdr, h, len(b)) + b], rid, {200})


async def sc_progress(ctx):
    rid = ctx.rid()
    h, b = modern_call(rid, "test_tool_with_progress", {}, {"progressToken": f"p-{rid}"})
    r = await exchange(ctx, "progress_stream", [head(ctx.hosthdr, h, len(b)) + b], rid, {200})
    if r and r[2]:
        final, frames = r[2]
        progress = [f for f in frames if f.get("method") == "notifications/progress"]
        if r[1].get("content-type") != "text/event-stream" or len(progress) != 3:
            problem("progress_stream", f"{len(progress)} progress notifications, {r[1].get('content-type')}")


async def sc_legacy_progress(ctx):
    rid = ctx.rid()
    h, b = legacy_call(rid, "test_tool_with_progress", {}, {"progressToken": rid})
    r = await exchange(ctx, "legacy_progress", [head(ctx.hosthdr, h, len(b)) + b], rid, {200})
    if r and r[2]:
        final, frames = r[2]
        if len([f for f in frames if f.get("method") == "notifications/progress"]) != 3:
            problem("legacy_progress", "progress notifications missing")


async def sc_cancelled(ctx):
    body = json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": random.randint(1, 1000), "reason": "load"}}).encode()
    h = [("MCP-Protocol-Version", random.choice([V26, V25]))]
    await exchange(ctx, "cancelled", [head(ctx.hosthdr, h, len(body)) + body], None, {202})


async def sc_malformed(ctx):
    rid = ctx.rid()
    h, good = modern_list(rid)
    kind = random.randrange(6)
    if kind == 0:
        body = os.urandom(random.randint(0, 300))
    elif kind == 1:
        body = good[: random.randint(0, len(good) - 1)]
    elif kind == 2:
        body = b"[" + good + b"]"
    elif kind == 3:
        body = b"[" * 5000 + b"]" * 5000
    elif kind == 4:
        body = good.replace(b'"2.0"', b'"1.0"')
    else:
        b = bytearray(good)
        for _ in range(3):
            b[random.randrange(len(b))] = random.randrange(256)
        body = bytes(b)
    # Whatever the bytes, the answer is one well-formed message; ids may be unreadable.
    # Three flipped bytes can also turn the request into a valid notification (`"id"`
    # becomes `"iX"`), which is accepted with 202 and no body.
    expect = {200, 400, 404} | ({202} if kind == 5 else set())
    r = await exchange(ctx, "malformed", [head(ctx.hosthdr, h, len(body)) + body], None,
                       expect)
    return r


async def sc_oversized_declared(ctx):
    # Declares 5 MiB, sends 64 KiB of it: refused without reading the rest.
    h, _ = modern_list(0)
    raw = head(ctx.hosthdr, h, BODY_LIMIT + 1024 * 1024) + b" " * 65536
    await exchange(ctx, "oversized_declared", [raw], None, {413})


def _send_chunked_then_read(host, port, parts):
    """Blocking: streams `parts` until the server stops reading, then reads the answer.

    A plain socket, because the server answers 413 and closes while the client is still
    sending: the answer waits in the kernel's receive queue, and a blocking recv() still
    returns it after the send failed (asyncio would drop it with the transport).
    """
    import socket
    s = socket.create_connection((host, port), timeout=STEP_TIMEOUT)
    try:
        for p in parts:
            try:
                s.sendall(p)
            except OSError:
                break  # the server answered and closed mid-body: fine
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        return data
    finally:
        s.close()


async def sc_oversized_chunked(ctx):
    # A chunked body that crosses the limit while streaming.
    h, _ = modern_list(0)
    chunk = b" " * 262144
    piece = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
    parts = [head(ctx.hosthdr, h, chunked=True)] + [piece] * (BODY_LIMIT // len(chunk) + 2) + [b"0\r\n\r\n"]
    stats["sent"] += 1
    by_scenario["oversized_chunked"]["sent"] += 1
    data = await asyncio.to_thread(_send_chunked_then_read, ctx.host, ctx.port, parts)
    try:
        status, headers, body, _ = parse_one(data)
    except ValueError as e:
        problem("oversized_chunked", f"no answer ({e})")
        return
    stats["answered"] += 1
    statuses[status] += 1
    by_scenario["oversized_chunked"]["answered"] += 1
    by_scenario["oversized_chunked"][status] += 1
    if status != 413:
        problem("oversized_chunked", f"status {status}")
    check_message("oversized_chunked", status, headers, body, None)


async def sc_refused_head(ctx):
    rid = ctx.rid()
    h, b = modern_list(rid)
    kind = random.randrange(3)
    if kind == 0:
        raw = head("evil.example.com", h, len(b)) + b
        expect = {403}
    elif kind == 1:
        raw = head(ctx.hosthdr, h + [("Origin", "http://evil.example.com")], len(b)) + b
        expect = {403}
    else:
        raw = head(ctx.hosthdr, h, len(b)).replace(b"Content-Type: application/json", b"Content-Type: text/plain") + b
        expect = {415}
    await exchange(ctx, "refused_head", [raw], None, expect)


async def sc_slow_writer(ctx):
    rid = ctx.rid()
    h, b = modern_call(rid, "echo", {"text": "slow " * 50})
    raw = head(ctx.hosthdr, h, len(b)) + b
    n = random.randint(5, 15)
    step = max(1, len(raw) // n)
    parts = [raw[i:i + step] for i in range(0, len(raw), step)]
    await exchange(ctx, "slow_writer", parts, rid, {200}, delays=[random.uniform(0.05, 0.25)])


async def sc_keepalive_pair(ctx):
    """Two requests on one kept-alive connection: exactly one answer each, in order."""
    reader, writer = await asyncio.open_connection(ctx.host, ctx.port)
    try:
        buf = b""
        for i in range(2):
            rid = ctx.rid()
            h, b = modern_call(rid, "echo", {"text": f"ka {rid}"})
            writer.write(head(ctx.hosthdr, h, len(b), close=(i == 1)) + b)
            await writer.drain()
            stats["sent"] += 1
            by_scenario["keepalive_pair"]["sent"] += 1
            while True:
                try:
                    status, headers, body, rest = parse_one(buf)
                    buf = rest
                    break
                except ValueError:
                    more = await reader.read(65536)
                    if not more:
                        problem("keepalive_pair", f"connection closed before answer {i + 1}")
                        return
                    buf += more
            stats["answered"] += 1
            statuses[status] += 1
            by_scenario["keepalive_pair"]["answered"] += 1
            by_scenario["keepalive_pair"][status] += 1
            if status != 200:
                problem("keepalive_pair", f"status {status}")
            check_message("keepalive_pair", status, headers, body, rid)
        tail = buf + await read_all(reader)
        if tail:
            problem("keepalive_pair", f"extra bytes after two answers: {tail[:80]!r}")
    finally:
        writer.close()


async def sc_disconnect(ctx):
    """Mid-request disconnects: nothing is expected back; the server must not suffer."""
    rid = ctx.rid()
    kind = random.randrange(4)
    if kind == 3:
        h, b = modern_call(rid, "test_tool_with_progress", {}, {"progressToken": f"d-{rid}"})
    else:
        h, b = modern_call(rid, "echo", {"text": "bye"})
    raw = head(ctx.hosthdr, h, len(b)) + b
    reader, writer = await asyncio.open_connection(ctx.host, ctx.port)
    try:
        if kind == 0:
            writer.write(raw[: random.randint(1, raw.index(b"\r\n\r\n"))])  # half a head
        elif kind == 1:
            writer.write(raw[: len(raw) - random.randint(1, len(b))])  # head + part of the body
        else:
            writer.write(raw)  # whole request, then leave mid-answer
        await writer.drain()
        if kind == 3:
            await reader.read(16)  # the stream has started
        else:
            await asyncio.sleep(random.uniform(0, 0.05))
    finally:
        if random.random() < 0.5:
            writer.transport.abort()  # RST
        else:
            writer.close()  # FIN
    stats["disconnects"] += 1
    by_scenario["disconnect"]["dropped"] += 1


SCENARIOS = [
    (sc_modern_echo, 20), (sc_modern_list, 8), (sc_legacy_echo, 12), (sc_progress, 8),
    (sc_legacy_progress, 4), (sc_cancelled, 6), (sc_malformed, 12), (sc_oversized_declared, 3),
    (sc_oversized_chunked, 1), (sc_refused_head, 5), (sc_slow_writer, 5), (sc_keepalive_pair, 6),
    (sc_disconnect, 10),
]


async def client(ctx, deadline, rng_seed):
    random.seed(rng_seed)
    funcs = [f for f, _ in SCENARIOS]
    weights = [w for _, w in SCENARIOS]
    while time.monotonic() < deadline:
        f = random.choices(funcs, weights)[0]
        name = f.__name__[3:]
        stats["scenarios"] += 1
        try:
            await asyncio.wait_for(f(ctx), STEP_TIMEOUT)
        except asyncio.TimeoutError:
            problem(name, f"stuck: no answer within {STEP_TIMEOUT} s")
            stats["stuck"] += 1
        except (ConnectionError, OSError) as e:
            problem(name, f"connection error: {e!r}")


# ---- server observation -----------------------------------------------------------------

def proc_status(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def server_connections(pid, port):
    """Established TCP connections of the server on its port (from /proc/net/tcp*)."""
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    local, state = cols[1], cols[3]
                    if int(local.split(":")[1], 16) == port and state == "01":
                        n += 1
        except OSError:
            pass
    return n


async def sample_rss(pid, stop, out):
    while not stop.is_set():
        rss = proc_status(pid, "VmRSS")
        if rss:
            out.append(rss)
        await asyncio.sleep(0.2)


async def warm_up(ctx):
    for _ in range(20):
        await sc_modern_echo(ctx)


def mib(kib):
    return f"{kib / 1024:.1f} MiB" if kib is not None else "n/a"


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--duration", type=float, default=30)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--idle", type=float, default=5)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--log", default=None)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    duration = min(max(a.duration, 1), 600)
    seed = a.seed if a.seed is not None else int(time.time())
    ctx = Ctx(a.host, a.port)

    await warm_up(ctx)
    for k in list(stats):
        if k not in ("problems",):
            stats[k] = 0
    statuses.clear()
    by_scenario.clear()
    latencies.clear()
    await asyncio.sleep(1)
    rss_before = proc_status(a.pid, "VmRSS")
    fds_before = fd_count(a.pid)
    samples = []
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample_rss(a.pid, stop, samples))
    started = time.monotonic()
    deadline = started + duration
    tasks = [asyncio.create_task(client(Ctx(a.host, a.port), deadline, seed + i)) for i in range(a.clients)]
    done, pending = await asyncio.wait(tasks, timeout=duration + STEP_TIMEOUT + 10)
    for t in pending:
        t.cancel()
    elapsed = time.monotonic() - started
    stop.set()
    await sampler
    conns_end = server_connections(a.pid, a.port)
    await asyncio.sleep(a.idle)
    rss_after = proc_status(a.pid, "VmRSS")
    rss_hwm = proc_status(a.pid, "VmHWM")
    fds_after = fd_count(a.pid)
    conns_idle = server_connections(a.pid, a.port)
    rss_peak = max(samples + [rss_after or 0, rss_before or 0])
    alive = proc_status(a.pid, "VmRSS") is not None
    # A last request: the server still answers.
    ok_after = False
    sent, answered = stats["sent"], stats["answered"]
    try:
        h, b = modern_list(1)
        r = await asyncio.wait_for(exchange(ctx, "after", [head(ctx.hosthdr, h, len(b)) + b], 1, {200}), 10)
        ok_after = bool(r and r[0] == 200)
    except Exception as e:  # noqa: BLE001 - report any failure
        problem("after", repr(e))
    stats["sent"], stats["answered"] = sent, answered
    statuses[200] -= 1 if ok_after else 0

    panics = []
    if a.log and os.path.exists(a.log):
        with open(a.log, errors="replace") as f:
            panics = [l.rstrip() for l in f if "panicked" in l]

    # ---- summary ----
    print()
    print(f"load: {a.clients} clients for {duration:.0f} s (ran {elapsed:.1f} s), seed {seed}")
    print()
    all_status = sorted({s for c in by_scenario.values() for s in c if isinstance(s, int)})
    cols = ["sent", "answered"] + [str(s) for s in all_status] + ["dropped"]
    print(f"{'scenario':<20}" + "".join(f"{c:>9}" for c in cols))
    for name in sorted(by_scenario):
        if name == "after":
            continue
        c = by_scenario[name]
        row = [c["sent"], c["answered"]] + [c[s] for s in all_status] + [c["dropped"]]
        print(f"{name:<20}" + "".join(f"{v:>9}" for v in row))
    tot = [stats["sent"], stats["answered"]] + [statuses[s] for s in all_status] + [stats["disconnects"]]
    print(f"{'TOTAL':<20}" + "".join(f"{v:>9}" for v in tot))
    print()
    lat = sorted(latencies)
    if lat:
        print(f"latency (whole exchange): p50 {lat[len(lat) // 2] * 1000:.0f} ms, p99 {lat[int(len(lat) * 0.99)] * 1000:.0f} ms, max {lat[-1] * 1000:.0f} ms")
    print(f"throughput: {stats['sent'] / elapsed:.0f} requests/s sent whole, {stats['disconnects']} deliberate disconnects")
    print(f"RSS: before {mib(rss_before)}, peak {mib(rss_peak)} (VmHWM {mib(rss_hwm)}), after {a.idle:.0f} s idle {mib(rss_after)}")
    print(f"server fds: before {fds_before}, after {fds_after}; established connections: at end {conns_end}, after idle {conns_idle}")
    print(f"panics in server log: {len(panics)}")
    for p in panics[:5]:
        print(f"  {p}")
    if problems:
        print(f"problems ({stats['problems']}):")
        seen = collections.Counter(problems)
        for (sc, msg), n in seen.most_common(15):
            print(f"  {n:>5} x {sc}: {msg}")

    # ---- checks ----
    grow_limit = 16 * 1024 + (rss_before or 0) // 2  # KiB: within 16 MiB + 50 % of baseline
    checks = [
        ("every client finished (no stuck connection)", not pending and stats["stuck"] == 0),
        ("every request sent whole got exactly one well-formed answer",
         stats["sent"] == stats["answered"] and stats["problems"] == 0),
        ("requests were sent", stats["sent"] > 0),
        ("no panic in the server log", not panics),
        ("server alive and answering after the load", alive and ok_after),
        ("no server connection left open after idle", conns_idle == 0),
        ("server fds back to baseline", fds_after is not None and fds_before is not None and fds_after <= fds_before),
        (f"RSS after idle within 16 MiB + 50% of baseline ({mib(rss_after)} vs {mib(rss_before)})",
         rss_after is not None and rss_before is not None and rss_after - rss_before <= grow_limit),
    ]
    print()
    passed = 0
    for name, ok in checks:
        print(f"  [{'PASS' if ok else 'FAIL'}] {name}")
        passed += ok
    failed = len(checks) - passed
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"sent": stats["sent"], "answered": stats["answered"],
                       "statuses": {str(k): v for k, v in statuses.items()},
                       "disconnects": stats["disconnects"], "panics": len(panics),
                       "rss_kib": {"before": rss_before, "peak": rss_peak, "hwm": rss_hwm, "after": rss_after},
                       "passed": passed, "failed": failed}, f, indent=1)
    print(f"client checks: {passed} of {len(checks)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
