#!/usr/bin/env python3
"""bench/cold_start.py - process start to the first answered `tools/list`, over stdio (issue 15).

Usage: bench/cold_start.py --snodo BIN [--rmcp BIN] [--reps 15] [--no-callgrind]

For each server, interleaved, --reps times: the wall time from spawn to the `tools/list`
answer on stdout, the server's CPU time (wait4) and its peak RSS when it answered (VmHWM), medians printed. Then,
unless --no-callgrind, one run under callgrind: the instructions of the whole process
(start, the answers, exit at end of input), which no neighbour's load can move.

Servers: snodo-2026 (`snodo fixture --stdio --profile echo --workers 1`, one 2026-07-28
tools/list), snodo-2025 (the same after initialize at 2025-11-25) and, with --rmcp, the
rmcp 3.11 stdio echo server of bench/rmcp-stdio (initialize, then tools/list); demo-2026 is
the demo (`snodo serve --stdio --root bench/`), one 2026-07-28 tools/list.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import time

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
INIT = [
    {"jsonrpc": "2.0", "id": 0, "method": "initialize",
     "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "cold-start", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def session(modern):
    lines = [] if modern else list(INIT)
    params = {"_meta": META} if modern else {}
    lines.append({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params})
    return b"".join(json.dumps(m).encode() + b"\n" for m in lines)


def once(argv, env, payload):
    """Wall ms to the tools/list answer, CPU ms and peak RSS MiB of the whole process."""
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.dup2(r_in, 0)
        os.dup2(w_out, 1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        for fd in (r_in, w_in, r_out, w_out):
            os.close(fd)
        os.execve(argv[0], argv, {**os.environ, **env})
    os.close(r_in)
    os.close(w_out)
    os.write(w_in, payload)
    buf = b""
    wall = None
    with os.fdopen(r_out, "rb", buffering=0) as out:
        while wall is None:
            chunk = out.read(65536)
            if not chunk:
                break
            buf += chunk
            for line in buf.split(b"\n")[:-1]:
                if line and json.loads(line).get("id") == 1:
                    wall = (time.perf_counter() - t0) * 1000
                    rss = peak_rss_mib(pid)
        os.close(w_in)
        while out.read(65536):
            pass
    _, status, ru = os.wait4(pid, 0)
    if wall is None or status != 0:
        raise SystemExit(f"{argv[0]}: no tools/list answer (status {status}): {buf[:300]!r}")
    return wall, (ru.ru_utime + ru.ru_stime) * 1000, rss


def peak_rss_mib(pid):
    """VmHWM of the exec'd server (wait4's ru_maxrss would count the forked Python too)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def instructions(argv, env, payload):
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + argv,
        input=payload, capture_output=True, env={**os.environ, **env}, check=True,
    ).stderr.decode()
    m = re.search(r"refs:\s+([\d,]+)", out)
    return int(m.group(1).replace(",", "")) if m else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--snodo", required=True)
    p.add_argument("--rmcp")
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--no-callgrind", action="store_true")
    a = p.parse_args()
    fixture = [a.snodo, "fixture", "--stdio", "--profile", "echo", "--workers", "1"]
    demo = [a.snodo, "serve", "--stdio", "--workers", "1", "--root",
            os.path.dirname(os.path.abspath(__file__))]
    servers = [("snodo-2026", fixture, {}, session(True)),
               ("snodo-2025", fixture, {}, session(False)),
               ("demo-2026", demo, {}, session(True))]
    if a.rmcp:
        servers.append(("rmcp", [a.rmcp], {"RMCP_BENCH_WORKERS": "1"}, session(False)))
    runs = {name: [] for name, *_ in servers}
    for _ in range(a.reps):
        for name, argv, env, payload in servers:
            runs[name].append(once(argv, env, payload))
    counted = {}
    if not a.no_callgrind:
        for name, argv, env, payload in servers:
            counted[name] = instructions(argv, env, payload)
    print(f"cold start over stdio, medians of {a.reps} interleaved runs")
    print(f"{'server':12s} {'wall ms':>8s} {'cpu ms':>8s} {'peak RSS MiB':>13s} {'instructions':>13s}")
    med = {}
    for name, rs in runs.items():
        med[name] = [statistics.median(r[i] for r in rs) for i in range(3)]
        ir = counted.get(name)
        print(f"{name:12s} {med[name][0]:8.2f} {med[name][1]:8.2f} {med[name][2]:13.1f} "
              f"{ir if ir is not None else '-':>13}")
    if "rmcp" in med:
        print("ratios to rmcp:")
        for name in ("snodo-2026", "snodo-2025", "demo-2026"):
            ir = (f", instructions {counted[name] / counted['rmcp']:.2f}x"
                  if counted.get(name) and counted.get("rmcp") else "")
            print(f"  {name}: wall {med[name][0] / med['rmcp'][0]:.2f}x, cpu "
                  f"{med[name][1] / med['rmcp'][1]:.2f}x, peak RSS {med[name][2] / med['rmcp'][2]:.2f}x{ir}")


if __name__ == "__main__":
    main()
