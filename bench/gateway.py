#!/usr/bin/env python3
"""bench/gateway.py - one fixed-cost stdio MCP server behind each stdio->HTTP gateway, side
by side in one run, as ratios (issue 33, "Performance").

Usage: bench/gateway.py --snodo BIN [--only a,b] [--reps 3] [--serial 2000] [--load 20000]
       (bench/gateway.sh installs the peers and passes their paths)

The backend (the same command behind every gateway, and the floor):
  snodo fixture --stdio --profile echo --workers 1   (`echo` costs the same every call)
Gateways (each started fresh per repetition on 127.0.0.1, stopped by PID, its process
group killed after it so that no child outlives the run):
  direct        the backend's own stdio, driven by this script (the floor)
  snodo         snodo gateway -- BACKEND
  sg-stateful   supergateway 4 --stateful: one warm child per session (one session here)
  sg-stateless  supergateway 4's default: a child per request (bounded counts, see --spawny)
  mcpp-npm      mcp-proxy (npm): one warm child, a server per session
  mcpp-py       mcp-proxy (PyPI): one warm child per named server, a session per client
  mcpp-rs       mcp-proxy 0.6 (crates, tower-mcp): one warm child per [[backends]] entry
The load client is this script for every gateway: Streamable HTTP/1.1 keep-alive, one
`initialize` at 2025-06-18 (its Mcp-Session-Id, if any, on every later request), then
`tools/call echo {"text":"hello"}` with a fresh id each time:
  1x   one request at a time on one connection: p50/p99, minus the floor's = added latency
  32x  32 threads, one connection each, all sharing the one session: requests per gateway
       CPU-second, the gateway's own process only (every thread, user + kernel, from
       /proc/PID/task/*/schedstat; children excluded)
  RSS  VmRSS of the gateway after the 1x run (one warm child), and of a second instance
       with 10 warm children of the same command (10 backends, or 10 sessions where a
       session is a child), 200 calls through each first
Every run is bounded in count and by a socket timeout; a gateway that fails is reported
as such and the others still run.
"""

import argparse
import itertools
import json
import os
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_cpu import cpu_ns  # noqa: E402
from stdio_bench import Server, serial as serial_stdio  # noqa: E402

PROTO = "2025-06-18"
HERE = os.path.dirname(os.path.abspath(__file__))


class Conn:
    """One keep-alive HTTP/1.1 connection to a loopback gateway."""

    def __init__(self, port, path, session=None, timeout=30):
        self.port, self.path, self.session = port, path, session
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.sock.makefile("rb")
        head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                "Content-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\n")
        self.head = head.encode()
        self.versioned = self.head + f"MCP-Protocol-Version: {PROTO}\r\n".encode()
        if session:
            self.versioned += b"Mcp-Session-Id: " + session + b"\r\n"

    def post(self, body, versioned=True):
        head = self.versioned if versioned else self.head
        self.sock.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return read_response(self.f)

    def close(self):
        self.f.close()
        self.sock.close()


def read_response(f):
    """Status, lower-cased headers and the (de-chunked) body of one HTTP/1.1 response."""
    line = f.readline()
    if not line:
        raise ConnectionError("the gateway closed the connection")
    status = int(line.split()[1])
    headers = {}
    while True:
        line = f.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        k, _, v = line.partition(b":")
        headers[k.strip().lower()] = v.strip()
    if b"content-length" in headers:
        body = f.read(int(headers[b"content-length"]))
    elif headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        parts = []
        while True:
            size = int(f.readline().split(b";")[0], 16)
            if size == 0:
                while f.readline() not in (b"\r\n", b"\n", b""):
                    pass
                break
            parts.append(f.read(size))
            f.readline()
        body = b"".join(parts)
    elif status in (202, 204):
        body = b""
    else:
        body = f.read()
    return status, headers, body


def message(body):
    """The JSON-RPC message with an id in a JSON or SSE body."""
    text = body.decode()
    if text.lstrip().startswith("{"):
        return json.loads(text)
    for line in text.splitlines():
        if line.startswith("data:"):
            m = json.loads(line[5:])
            if "id" in m:
                return m
    raise ValueError(f"no JSON-RPC answer in {text[:200]!r}")


IDS = itertools.count(10)


def call_body(tool):
    return (b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s",'
            b'"arguments":{"text":"hello"}}}' % (next(IDS), tool.encode()))


def ok(status, body):
    return status == 200 and b'"result"' in body and b'"isError":true' not in body


class Gateway:
    """A gateway process and where its backends answer."""

    def __init__(self, name, argv, routes, log):
        # routes: [(path, tool)], one per warm child
        self.name, self.routes = name, routes
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True)
        self.pid = self.proc.pid
        self.sessions = [None] * len(routes)

    def wait_ready(self, port, timeout=90):
        deadline = time.monotonic() + timeout
        for i, (path, tool) in enumerate(self.routes):
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name} exited ({self.proc.returncode})")
                try:
                    self.sessions[i] = initialize(port, path)
                    c = self.conn(port, i)
                    try:
                        status, _, body = c.post(call_body(tool))
                    finally:
                        c.close()
                    m = message(body)
                    text = m["result"]["content"][0]["text"]
                    if status != 200 or text != "hello":
                        raise RuntimeError(f"{self.name}: {status} {m}")
                    break
                except (OSError, ValueError, KeyError, IndexError, RuntimeError) as e:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{self.name} not ready on {path}: {e}") from e
                    time.sleep(0.2)

    def conn(self, port, route):
        return Conn(port, self.routes[route][0], self.sessions[route])

    def rss_kib(self):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            if self.proc.poll() is None:
                self.proc.send_signal(sig)
                try:
                    self.proc.wait(timeout=wait)
                except subprocess.TimeoutExpired:
                    continue
        # Whatever the gateway started and left behind (its own process group, by id).
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def initialize(port, path):
    """`initialize` + `notifications/initialized`; the session id, if the gateway gave one."""
    c = Conn(port, path, timeout=30)
    try:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTO, "capabilities": {},
            "clientInfo": {"name": "gateway-bench", "version": "0"}}}).encode()
        status, headers, rbody = c.post(body, versioned=False)
        if status != 200:
            raise RuntimeError(f"initialize: HTTP {status} {rbody[:200]!r}")
        m = message(rbody)
        if "result" not in m:
            raise RuntimeError(f"initialize: {m}")
        session = headers.get(b"mcp-session-id")
        c.session = session
        c.versioned = c.head + f"MCP-Protocol-Version: {PROTO}\r\n".encode()
        if session:
            c.versioned += b"Mcp-Session-Id: " + session + b"\r\n"
        c.post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        return session
    finally:
        c.close()


def serial_http(gw, port, n, route=0):
    tool = gw.routes[route][1]
    c = gw.conn(port, route)
    lat = []
    try:
        for _ in range(n):
            body = call_body(tool)
            s = time.perf_counter()
            status, _, rbody = c.post(body)
            lat.append(time.perf_counter() - s)
            if not ok(status, rbody):
                raise RuntimeError(f"{gw.name}: {status} {rbody[:200]!r}")
    finally:
        c.close()
    lat.sort()
    return {"p50_us": lat[len(lat) // 2] * 1e6, "p99_us": lat[int(len(lat) * 0.99)] * 1e6}


def load_http(gw, port, n, conc):
    """`n` calls from `conc` threads (one connection each) through the first route."""
    tool = gw.routes[0][1]
    conns = [gw.conn(port, 0) for _ in range(conc)]
    left = itertools.count()
    errors = []

    def worker(c):
        try:
            while next(left) < n:
                status, _, rbody = c.post(call_body(tool))
                if not ok(status, rbody):
                    errors.append(f"{status} {rbody[:200]!r}")
                    return
        except (OSError, ValueError) as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(c,)) for c in conns]
    cpu0, t0 = cpu_ns(gw.pid), time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall, cpu = time.perf_counter() - t0, (cpu_ns(gw.pid) - cpu0) / 1e9
    for c in conns:
        c.close()
    if errors:
        raise RuntimeError(f"{gw.name}: {len(errors)} failed, first: {errors[0]}")
    return {"rps": n / wall, "per_cpu_s": n / cpu if cpu > 0 else float("nan"),
            "gw_cpu": cpu / wall}


def backend_argv(a):
    if a.backend:
        return shlex.split(a.backend)
    return [a.snodo, "fixture", "--stdio", "--profile", "echo", "--workers", "1",
            "--protocols", "2026-07-28,2025-11-25,2025-06-18,2025-03-26"]


def gateways(a, port, children, tmp):
    """name -> (argv, routes) for a gateway with `children` warm children, or None
    where the gateway cannot keep that many."""
    back = backend_argv(a)
    cmd = shlex.join(back)
    names = [f"b{i}" for i in range(children)]
    one = children == 1
    node = os.path.join(a.peers, "node_modules")
    out = {}
    if one:
        out["snodo"] = ([a.snodo, "gateway", "--addr", f"127.0.0.1:{port}", "--", *back],
                        [("/mcp", "echo")])
    else:
        out["snodo"] = ([a.snodo, "gateway", "--addr", f"127.0.0.1:{port}"]
                        + [f"--backend={n}=stdio:{cmd}" for n in names],
                        [("/mcp", f"{n}_echo") for n in names])
    if a.snodo_before:
        # the same flags, an earlier build (before/after in one run)
        argv, routes = out["snodo"]
        out["snodo-before"] = ([a.snodo_before, *argv[1:]], routes)
    sg = ["node", f"{node}/supergateway/dist/index.js", "--stdio", cmd, "--outputTransport",
          "streamableHttp", "--port", str(port), "--logLevel", "none",
          "--protocolVersion", PROTO]
    # supergateway --stateful: a child per session; `children` sessions at the same path.
    out["sg-stateful"] = (sg + ["--stateful"], [("/mcp", "echo")] * children)
    if one:
        out["sg-stateless"] = (sg, [("/mcp", "echo")])
        out["mcpp-npm"] = (["node", f"{node}/mcp-proxy/dist/bin/mcp-proxy.mjs", "--host",
                            "127.0.0.1", "--port", str(port), "--server", "stream", "--",
                            *back], [("/mcp", "echo")])
    py = os.path.join(a.peers, ".venv/bin/mcp-proxy")
    if one:
        out["mcpp-py"] = ([py, "--host", "127.0.0.1", "--port", str(port), "--", *back],
                          [("/mcp", "echo")])
    else:
        out["mcpp-py"] = ([py, "--host", "127.0.0.1", "--port", str(port)]
                          + [x for n in names for x in ("--named-server", n, cmd)],
                          [(f"/servers/{n}/mcp", "echo") for n in names])
    if a.mcp_proxy_rs:
        conf = os.path.join(tmp, f"mcpp-rs-{children}.toml")
        with open(conf, "w") as f:
            f.write(f'[proxy]\nname = "bench"\nseparator = "_"\n[proxy.listen]\n'
                    f'host = "127.0.0.1"\nport = {port}\n')
            for n in names:
                f.write(f'[[backends]]\nname = "{n}"\ntransport = "stdio"\n'
                        f'command = {json.dumps(back[0])}\nargs = {json.dumps(back[1:])}\n')
        # tower-mcp's HttpTransport::into_router_with_handle serves MCP at `/` (POST, GET
        # and DELETE `/`), and a backend's tools are named `{name}{separator}{tool}`.
        out["mcpp-rs"] = ([a.mcp_proxy_rs, "--config", conf],
                          [("/", f"{n}_echo") for n in names])
    return out


def profile(a, n, tmp, log):
    """snodo gateway under callgrind: instructions and malloc calls per request in the
    gateway process (the child runs natively), `n` calls from `a.conc` connections after
    a 200-call warm-up."""
    out = os.path.join(tmp, "gateway.%p.out")
    argv, routes = gateways(a, a.port, 1, tmp)["snodo"]
    gw = Gateway("snodo", ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                           *argv], routes, log)
    try:
        gw.wait_ready(a.port, timeout=300)
        serial_http(gw, a.port, 200)
        subprocess.run(["callgrind_control", "-z", str(gw.pid)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        load_http(gw, a.port, n, a.conc)
        subprocess.run(["callgrind_control", "--dump=measured", str(gw.pid)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        gw.stop()
    # the dump requested above is the file whose description names it
    f = None
    for x in sorted(os.listdir(tmp)):
        if x.startswith(f"gateway.{gw.pid}.out"):
            with open(os.path.join(tmp, x), errors="replace") as fh:
                if "dump measured" in fh.read(4096):
                    f = os.path.join(tmp, x)
    if f is None:
        raise SystemExit(f"no callgrind dump in {tmp}")
    with open(f, errors="replace") as fh:
        ir = next(int(line.split()[1]) for line in fh
                  if line.startswith(("summary:", "totals:")))
    calls = subprocess.run([sys.executable, os.path.join(HERE, "cg_calls.py"), f, "^malloc$",
                            "--per", str(n)], capture_output=True, text=True).stdout.split()
    print(f"snodo gateway, {n} calls from {a.conc} connections: {ir // n} Ir per request, "
          f"{calls[1] if len(calls) > 1 else '?'} malloc calls per request; profile: {f}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--snodo", required=True)
    p.add_argument("--peers", default=os.path.join(HERE, "gateway"),
                   help="bench/gateway (node_modules/ and .venv/)")
    p.add_argument("--mcp-proxy-rs", default="", help="the mcp-proxy 0.6 binary, if built")
    p.add_argument("--backend", default="",
                   help="the stdio server's command line (default: the echo fixture); "
                        "it needs an `echo` tool answering {text} with that text")
    p.add_argument("--snodo-before", default="",
                   help="an earlier snodo binary, measured as one more gateway")
    p.add_argument("--only", default="", help="comma-separated gateways (default: all)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--serial", type=int, default=2000)
    p.add_argument("--load", type=int, default=20000)
    p.add_argument("--conc", type=int, default=32)
    p.add_argument("--spawny", type=int, default=100,
                   help="calls (1x and 32x) for sg-stateless, which spawns per request")
    p.add_argument("--port", type=int, default=18930)
    p.add_argument("--callgrind", type=int, default=0, metavar="N",
                   help="only profile snodo gateway under callgrind over N calls")
    a = p.parse_args()
    only = set(filter(None, a.only.split(",")))
    tmp = tempfile.mkdtemp(prefix="snodo-gwbench-")
    log = open(os.path.join(tmp, "gateways.log"), "ab")
    if a.callgrind:
        return profile(a, a.callgrind, tmp, log)
    names = ["direct"] + list(gateways(a, a.port, 1, tmp))
    names = [n for n in names if not only or n in only or n == "direct"]
    res = {n: {"serial": [], "load": [], "rss1": [], "rss10": []} for n in names}
    failed = {}
    for rep in range(a.reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            if name in failed:
                continue
            if name == "direct":
                s = Server("direct", backend_argv(a), {}, False)
                try:
                    serial_stdio(s, 200)
                    res[name]["serial"].append(serial_stdio(s, a.serial))
                finally:
                    s.stop()
                continue
            spawny = name == "sg-stateless"
            n1 = min(a.serial, a.spawny) if spawny else a.serial
            nl = min(a.load, a.spawny) if spawny else a.load
            for children in (1, 10):
                specs = gateways(a, a.port, children, tmp)
                if name not in specs:
                    continue
                argv, routes = specs[name]
                log.write(f"== rep {rep} {name} x{children}: {argv}\n".encode())
                log.flush()
                gw = Gateway(name, argv, routes, log)
                try:
                    gw.wait_ready(a.port)
                    if children == 1:
                        serial_http(gw, a.port, min(200, n1))  # warm-up
                        res[name]["serial"].append(serial_http(gw, a.port, n1))
                        res[name]["rss1"].append(gw.rss_kib())
                        res[name]["load"].append(load_http(gw, a.port, nl, a.conc))
                    else:
                        for i in range(children):
                            serial_http(gw, a.port, 200, route=i)
                        res[name]["rss10"].append(gw.rss_kib())
                except (RuntimeError, OSError, ValueError) as e:
                    failed[name] = str(e)
                    print(f"{name} x{children}: FAILED: {e}", file=sys.stderr)
                finally:
                    gw.stop()
                if name in failed:
                    break
    report(a, res, failed, tmp)


def report(a, res, failed, tmp):
    def med(n, kind, key=None):
        xs = [r[key] if key else r for r in res[n][kind]]
        return statistics.median(xs) if xs else float("nan")

    floor50, floor99 = med("direct", "serial", "p50_us"), med("direct", "serial", "p99_us")
    print(f"stdio echo behind each gateway, median of {a.reps} repetitions: 1x = {a.serial} "
          f"calls one at a time, 32x = {a.load} calls from {a.conc} connections "
          f"(sg-stateless: {a.spawny}); logs in {tmp}")
    print(f"{'gateway':<13} {'1x p50 us':>9} {'+p50 us':>8} {'1x p99 us':>9} {'+p99 us':>8} "
          f"{'32x req/s':>9} {'req/gw-cpu-s':>12} {'gw cpu':>6} {'RSS1 MiB':>8} {'RSS10 MiB':>9}")
    for n in res:
        if n in failed:
            print(f"{n:<13} failed: {failed[n][:100]}")
            continue
        p50, p99 = med(n, "serial", "p50_us"), med(n, "serial", "p99_us")
        print(f"{n:<13} {p50:>9.0f} {p50 - floor50:>8.0f} {p99:>9.0f} {p99 - floor99:>8.0f} "
              f"{med(n, 'load', 'rps'):>9.0f} {med(n, 'load', 'per_cpu_s'):>12.0f} "
              f"{med(n, 'load', 'gw_cpu'):>6.2f} {med(n, 'rss1') / 1024:>8.1f} "
              f"{med(n, 'rss10') / 1024:>9.1f}")
    peers = [n for n in res if not n.startswith(("direct", "snodo")) and n not in failed
             and res[n]["load"]]
    if "snodo" not in res or "snodo" in failed or not peers:
        return
    if res.get("snodo-before", {}).get("load"):
        b50 = med("snodo-before", "serial", "p50_us") - floor50
        print(f"snodo / snodo-before: req/gw-cpu-s "
              f"{med('snodo', 'load', 'per_cpu_s') / med('snodo-before', 'load', 'per_cpu_s'):.2f}x, "
              f"added p50 {med('snodo', 'serial', 'p50_us') - floor50:.0f} vs {b50:.0f} us")
    best = max(peers, key=lambda n: med(n, "load", "per_cpu_s"))
    add = {n: med(n, "serial", "p50_us") - floor50 for n in peers + ["snodo"]}
    s_cpu = med("snodo", "load", "per_cpu_s")
    print(f"snodo vs the best peer by req/gw-cpu-s ({best}), targets in brackets:")
    print(f"  req/gw-cpu-s {s_cpu / med(best, 'load', 'per_cpu_s'):.2f}x [>= 2.5x]; "
          f"added p50 {add['snodo']:.0f} us vs {add[best]:.0f} us [<= 100 us]; "
          f"RSS1 {med('snodo', 'rss1') / med(best, 'rss1'):.2f}x, "
          f"RSS10 {med('snodo', 'rss10') / med(best, 'rss10'):.2f}x [<= 1x]")
    for n in peers:
        print(f"  vs {n}: req/gw-cpu-s {s_cpu / med(n, 'load', 'per_cpu_s'):.2f}x, "
              f"added p50 {add['snodo'] / add[n] if add[n] > 0 else float('nan'):.2f}x, "
              f"RSS1 {med('snodo', 'rss1') / med(n, 'rss1'):.2f}x")


if __name__ == "__main__":
    main()
