#!/usr/bin/env python3
"""bench/stdio_bench.py - stdio round trips of `tools/call echo`, snodo beside rmcp, in one
run (issue 14): one request at a time (latency) and pipelined 32 deep (throughput), with
the server's own CPU time read from /proc, printed as medians and ratios.

Usage: bench/stdio_bench.py --snodo BIN --rmcp BIN [--reps 3] [--serial 2000] [--pipelined 20000]

Servers (each with one tokio worker thread, started fresh per repetition, stopped by PID):
  snodo-2026  snodo fixture --stdio --profile echo --workers 1, requests carry 2026-07-28 _meta
  snodo-2025  the same binary after `initialize` at 2025-11-25, requests without _meta
  rmcp        the shared kit's rmcp 3.11 echo server over stdio (RMCP_BENCH_WORKERS=1),
              after `initialize`
The client (this script) runs on the same machine; only the server's CPU counts in
"requests per server CPU-second".
"""

import argparse
import json
import os
import statistics
import subprocess
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 (1-based), i.e. 11 and 12 after the comm.
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class Server:
    def __init__(self, name, argv, env, modern):
        self.name = name
        self.modern = modern
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **env},
        )
        self.next_id = 0
        if not modern:
            self.roundtrip(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "stdio-bench", "version": "0"},
                },
            )
            self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def write(self, message):
        self.proc.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        if self.modern:
            params = {
                **params,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            }
        self.write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})

    def read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name}: stdout closed")
        return json.loads(line)

    def roundtrip(self, method, params):
        self.request(method, params)
        while True:
            m = self.read()
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{self.name}: {m}")
                return m

    def echo(self):
        self.request("tools/call", {"name": "echo", "arguments": {"text": "hello"}})

    def stop(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def serial(server, n):
    lat = []
    cpu0 = cpu_seconds(server.proc.pid)
    t0 = time.perf_counter()
    for _ in range(n):
        s = time.perf_counter()
        server.echo()
        m = server.read()
        lat.append(time.perf_counter() - s)
        assert "result" in m, m
    wall = time.perf_counter() - t0
    cpu = cpu_seconds(server.proc.pid) - cpu0
    lat.sort()
    return {
        "p50_us": lat[len(lat) // 2] * 1e6,
        "p99_us": lat[int(len(lat) * 0.99)] * 1e6,
        "rps": n / wall,
        "per_cpu_s": n / cpu if cpu > 0 else float("nan"),
    }


def pipelined(server, n, depth=32):
    cpu0 = cpu_seconds(server.proc.pid)
    t0 = time.perf_counter()
    sent = 0
    for _ in range(min(depth, n)):
        server.echo()
        sent += 1
    for _ in range(n):
        m = server.read()
        assert "result" in m, m
        if sent < n:
            server.echo()
            sent += 1
    wall = time.perf_counter() - t0
    cpu = cpu_seconds(server.proc.pid) - cpu0
    return {"rps": n / wall, "per_cpu_s": n / cpu if cpu > 0 else float("nan"), "srv_cpu": cpu / wall}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--snodo", required=True)
    p.add_argument("--rmcp", required=True)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--serial", type=int, default=2000)
    p.add_argument("--pipelined", type=int, default=20000)
    a = p.parse_args()
    snodo = [a.snodo, "fixture", "--stdio", "--profile", "echo", "--workers", "1",
             "--protocols", "2026-07-28,2025-11-25"]
    servers = [
        ("snodo-2026", snodo, {"TOKIO_WORKER_THREADS": "1"}, True),
        ("snodo-2025", snodo, {"TOKIO_WORKER_THREADS": "1"}, False),
        ("rmcp", [a.rmcp], {"RMCP_BENCH_WORKERS": "1"}, False),
    ]
    results = {name: {"serial": [], "pipelined": []} for name, *_ in servers}
    for rep in range(a.reps):
        order = servers[rep % len(servers):] + servers[: rep % len(servers)]
        for name, argv, env, modern in order:
            s = Server(name, argv, env, modern)
            try:
                serial(s, 200)  # warm-up
                results[name]["serial"].append(serial(s, a.serial))
                results[name]["pipelined"].append(pipelined(s, a.pipelined))
            finally:
                s.stop()

    def med(name, kind, key):
        return statistics.median(r[key] for r in results[name][kind])

    print(f"stdio tools/call echo, median of {a.reps} repetitions "
          f"({a.serial} one at a time, {a.pipelined} pipelined 32 deep)")
    print(f"{'server':<11} {'1x p50 us':>10} {'1x p99 us':>10} {'1x req/srv-cpu-s':>17} "
          f"{'32x req/s':>10} {'32x req/srv-cpu-s':>18} {'32x srv cpu':>11}")
    for name, *_ in servers:
        print(f"{name:<11} {med(name, 'serial', 'p50_us'):>10.1f} {med(name, 'serial', 'p99_us'):>10.1f} "
              f"{med(name, 'serial', 'per_cpu_s'):>17.0f} {med(name, 'pipelined', 'rps'):>10.0f} "
              f"{med(name, 'pipelined', 'per_cpu_s'):>18.0f} {med(name, 'pipelined', 'srv_cpu'):>11.2f}")
    print("ratios to rmcp (target: req per server CPU-second >= 2x, one-at-a-time p50 <= 1x)")
    for name in ("snodo-2026", "snodo-2025"):
        print(f"  {name}: 32x req/srv-cpu-s {med(name, 'pipelined', 'per_cpu_s') / med('rmcp', 'pipelined', 'per_cpu_s'):.2f}x, "
              f"1x req/srv-cpu-s {med(name, 'serial', 'per_cpu_s') / med('rmcp', 'serial', 'per_cpu_s'):.2f}x, "
              f"1x p50 {med(name, 'serial', 'p50_us') / med('rmcp', 'serial', 'p50_us'):.2f}x, "
              f"32x req/s {med(name, 'pipelined', 'rps') / med('rmcp', 'pipelined', 'rps'):.2f}x")


if __name__ == "__main__":
    main()
