#!/usr/bin/env python3
"""What the request log and metrics cost in server CPU, measured in pairs (issue 19).

Usage: bench/observe_cost.py SNODO_BIN [REPS] [SECONDS]

`bench/compare.sh` starts each server afresh per cell and compares medians of cells
taken minutes apart; on this VM a cell moves by 10-25 %, more than the 5 % being
measured. Here the variants run side by side for the whole measurement, and each
repetition loads them back to back, in alternating order, with the same request:

  quiet     snodo fixture --profile echo, RUST_LOG=snodo::request=off (no request log)
  logs      the same with the request log at info (the default)
  observed  the request log and Prometheus metrics (--metrics-addr)

Each server's stderr (the log) goes to a file in a temporary directory, or with
STDERR=pipe to a pipe that `cat` drains to /dev/null on the load generator's CPU (how a
container runtime or journald takes a service's stderr; the reader's CPU is not counted).

Each server has one tokio worker and is pinned to CPU $SERVER_CPU [0]; wrk (one thread,
32 connections) to CPU $LOADGEN_CPU [1]. A run's server CPU is the sum over the server's
threads of /proc/PID/task/*/schedstat (nanoseconds on CPU: user and kernel, the writer
thread included); CPU per request = that / the requests wrk completed. Every repetition
starts the three servers afresh (a process's layout can bias it by a few per cent for its
whole life) and gives one ratio per variant (variant / quiet, same repetition); printed:
the median ratio and its quartiles, per request kind. Loopback only; each wrk run is
bounded.
"""
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fixed_client import body_and_headers  # noqa: E402
from proc_cpu import cpu_ns  # noqa: E402

VARIANTS = [
    ("quiet", {"RUST_LOG": "snodo::request=off,snodo=info"}, []),
    ("logs", {}, []),
    ("observed", {}, ["--metrics-addr", "127.0.0.1:{metrics}"]),
]
CASES = [("2026-07-28", "call"), ("2026-07-28", "list"), ("2025-11-25", "call"), ("2025-11-25", "list")]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"server on {port} did not start")


def lua(path, proto, op):
    body, headers = body_and_headers(op, proto)
    with open(path, "w") as f:
        f.write('wrk.method = "POST"\n')
        f.write("wrk.body = [==[%s]==]\n" % body.decode())
        for k, v in headers.items():
            f.write('wrk.headers["%s"] = [==[%s]==]\n' % (k, v))


def wrk(port, script, seconds, cpu):
    cmd = ["taskset", "-c", cpu, "wrk", "-t1", "-c32", f"-d{seconds}s", "--timeout", "5s",
           "-s", script, f"http://127.0.0.1:{port}/mcp"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 15).stdout
    m = re.search(r"(\d+) requests in", out)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if not m or bad:
        raise SystemExit(f"wrk failed on {port}:\n{out}")
    return int(m.group(1))


def log_sink(name, tmp, drain_cpu):
    """Where a server's stderr goes: a file, or (STDERR=pipe) a pipe `cat` drains."""
    if os.environ.get("STDERR", "file") == "pipe":
        cat = subprocess.Popen(["taskset", "-c", drain_cpu, "cat"], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL)
        return cat.stdin, cat
    return open(os.path.join(tmp, f"{name}.log"), "w"), None


def start(binary, server_cpu, tmp, drain_cpu):
    """The three variants, listening; [(name, port, process, drain)]."""
    servers = []
    for name, env, extra in VARIANTS:
        port = free_port()
        args = [a.format(metrics=free_port()) for a in extra]
        log, drain = log_sink(name, tmp, drain_cpu)
        p = subprocess.Popen(
            ["taskset", "-c", server_cpu, binary, "fixture", "--addr", f"127.0.0.1:{port}",
             "--protocols", "2026-07-28,2025-11-25", "--profile", "echo", *args],
            env={**os.environ, "TOKIO_WORKER_THREADS": "1", **env},
            stdout=subprocess.DEVNULL, stderr=log)
        log.close()  # the server has its own descriptor
        servers.append((name, port, p, drain))
    try:
        for _, port, _, _ in servers:
            wait_port(port)
    except BaseException:
        stop(servers)
        raise
    return servers


def stop(servers):
    for _, _, p, _ in servers:
        p.terminate()
    for _, _, p, drain in servers:
        p.wait(timeout=10)
        if drain is not None:
            drain.wait(timeout=10)


def main():
    binary = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 11
    seconds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    server_cpu = os.environ.get("SERVER_CPU", "0")
    loadgen_cpu = os.environ.get("LOADGEN_CPU", "1")
    tmp = tempfile.mkdtemp(prefix="snodo-observe-")
    ratios = {(c, n): [] for c in CASES for n, _, _ in VARIANTS[1:]}
    per_req = {(c, n): [] for c in CASES for n, _, _ in VARIANTS}
    for c in CASES:
        lua(os.path.join(tmp, f"{c[0]}-{c[1]}.lua"), *c)
    for rep in range(reps):
        # Fresh processes every repetition: a process's own code and heap layout can make
        # it a few per cent faster or slower for its whole life, the same for every
        # request; kept for the whole run, that bias would not average out.
        servers = start(binary, server_cpu, tmp, loadgen_cpu)
        try:
            for name, port, _, _ in servers:
                wrk(port, os.path.join(tmp, f"{CASES[0][0]}-{CASES[0][1]}.lua"), 1, loadgen_cpu)
            for c in CASES:
                script = os.path.join(tmp, f"{c[0]}-{c[1]}.lua")
                order = servers if rep % 2 == 0 else servers[::-1]
                got = {}
                for name, port, p, _ in order:
                    before = cpu_ns(p.pid)
                    n = wrk(port, script, seconds, loadgen_cpu)
                    got[name] = (cpu_ns(p.pid) - before) / n / 1000.0
                    per_req[(c, name)].append(got[name])
                for name, _, _ in VARIANTS[1:]:
                    ratios[(c, name)].append(got[name] / got["quiet"])
        finally:
            stop(servers)
        print(f"repetition {rep + 1}/{reps} done", file=sys.stderr)
    print(f"## observation cost, paired: {reps} repetitions x {seconds} s per run, c=32, "
          f"server CPU {server_cpu}, wrk CPU {loadgen_cpu}, "
          f"stderr to a {os.environ.get('STDERR', 'file')}")
    print()
    print("| request | quiet µs/req (median) | logs x quiet: median (q1-q3) | "
          "logs + metrics x quiet: median (q1-q3) |")
    print("|---|---:|---:|---:|")
    for c in CASES:
        q = statistics.median(per_req[(c, "quiet")])
        cells = []
        for name in ("logs", "observed"):
            r = sorted(ratios[(c, name)])
            qs = statistics.quantiles(r, n=4) if len(r) > 1 else [r[0], r[0], r[0]]
            cells.append(f"{statistics.median(r):.3f} ({qs[0]:.3f}-{qs[2]:.3f})")
        print(f"| {c[0]} tools/{c[1]} | {q:.2f} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
