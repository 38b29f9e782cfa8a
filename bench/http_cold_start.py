#!/usr/bin/env python3
"""bench/http_cold_start.py - process start to the first answered HTTP `tools/list` (issue 15).

Usage: bench/http_cold_start.py --server NAME=PORT=CMD... [--reps 9] [--callgrind] [--out FILE]

Each --server is `name=port=command line` (the command must listen on 127.0.0.1:port).
For every server, interleaved, --reps times: spawn it, send a 2026-07-28 `tools/list` (the
shared kit's body and headers, bench/fixed_client.py) on a fresh connection every 0.2 ms
until one is answered with a result, and record the wall time from spawn to that answer,
the process's CPU time so far (/proc/PID/schedstat, nanoseconds), its RSS and peak RSS
then, and the RSS split into anonymous (per-instance) and file-backed (the executable and
libraries mapped from the page cache, shared by every instance) from
/proc/PID/smaps_rollup; stop it (SIGTERM, by PID). Medians are printed, with ratios to the first server
given. With --callgrind, one more run each under callgrind: the instructions from exec to
the first answer (a dump taken right after it) and to exit (SIGTERM right after the
answer, then the server's shutdown), which no neighbour can move.
--out appends one JSON line per server with the medians. With --drop-cache, each
server's executable is dropped from the page cache first (posix_fadvise DONTNEED) and
run once unrecorded, so that every binary is read back the same way (by the faults of
its first run, in the kernel's read-ahead folios): a binary just written by the linker
or by cp keeps the writer's folios, and file-backed RSS then depends on how it was made.
"""

import argparse
import glob
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixed_client import body_and_headers  # noqa: E402
from proc_cpu import cpu_ns  # noqa: E402


def request_bytes(port):
    body, headers = body_and_headers("list", "2026-07-28")
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{head}"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


def try_once(port, raw):
    """One request on a fresh connection; True when answered 200 with a result."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(raw)
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            return data.startswith(b"HTTP/1.1 200") and b'"result"' in data
    except OSError:
        return False


def proc_status(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM"):
                    out[k] = int(v.split()[0]) / 1024
    except OSError:
        pass
    return out


def rss_split(pid):
    """RssAnon and RssFile (MiB) from /proc/PID/smaps_rollup (Anonymous vs the rest)."""
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            fields = {}
            for line in f:
                k, _, v = line.partition(":")
                if v.strip().endswith("kB"):
                    fields[k] = int(v.split()[0]) / 1024
        if "Rss" in fields and "Anonymous" in fields:
            out["anon_mib"] = fields["Anonymous"]
            out["file_mib"] = fields["Rss"] - fields["Anonymous"]
    except OSError:
        pass
    return out


def faults(pid):
    """Page faults (minor + major) of the process so far, from /proc/PID/stat."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[7]) + int(fields[9])
    except (OSError, ValueError, IndexError):
        return None


def cpu_ms(pid):
    """CPU time of every thread of the process, from the scheduler (ns resolution)."""
    return cpu_ns(pid) / 1e6


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def port_free(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def run(cmd, port, prefix=(), limit_s=30.0, on_answer=None):
    if not port_free(port):
        sys.exit(f"port {port} is already in use")
    raw = request_bytes(port)
    t0 = time.perf_counter()
    proc = subprocess.Popen([*prefix, *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not try_once(port, raw):
            if proc.poll() is not None:
                sys.exit(f"{cmd[0]} exited with {proc.returncode} before answering")
            if time.perf_counter() - t0 > limit_s:
                sys.exit(f"{cmd[0]} did not answer within {limit_s} s")
            time.sleep(0.0002)
        wall = (time.perf_counter() - t0) * 1000
        cpu = cpu_ms(proc.pid)
        flt = faults(proc.pid)
        st = proc_status(proc.pid)
        split = rss_split(proc.pid)
        if on_answer:
            on_answer(proc.pid)
        return {"wall_ms": wall, "cpu_ms": cpu,
                "rss_mib": st.get("VmRSS"), "hwm_mib": st.get("VmHWM"),
                "anon_mib": split.get("anon_mib"), "file_mib": split.get("file_mib"),
                "faults": flt}
    finally:
        stop(proc)


def callgrind(cmd, port):
    """Instructions from exec to the first answer (a callgrind dump taken right after
    it), and from exec to exit (the answer, then SIGTERM and the shutdown)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.%p.out")

        def dump(pid):
            subprocess.run(["callgrind_control", "--dump=answered", str(pid)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)

        run(cmd, port, prefix=("valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"),
            limit_s=120.0, on_answer=dump)
        total, answered = 0, None
        for f in glob.glob(os.path.join(d, "cg.*.out*")):
            ir, is_answer = 0, False
            with open(f) as fh:
                for line in fh:
                    if line.startswith("desc: Trigger: dump answered"):
                        is_answer = True
                    if line.startswith(("summary:", "totals:")):
                        ir = int(line.split()[1])
                        break
            total += ir
            if is_answer:
                answered = ir
        return answered, (total or None)


def drop_cache(path):
    """Evicts a file's clean pages from the page cache (pages mapped elsewhere stay)."""
    import shutil
    exe = shutil.which(path) or path
    fd = os.open(exe, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", action="append", required=True, help="name=port=command")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--drop-cache", action="store_true")
    a = ap.parse_args()
    servers = []
    for spec in a.server:
        name, port, cmd = spec.split("=", 2)
        servers.append((name, int(port), cmd.split()))

    if a.drop_cache:
        for _, port, cmd in servers:
            drop_cache(cmd[0])
        for _, port, cmd in servers:
            run(cmd, port)
    runs = {name: [] for name, _, _ in servers}
    for rep in range(a.reps):
        order = servers[rep % len(servers):] + servers[:rep % len(servers)]
        for name, port, cmd in order:
            runs[name].append(run(cmd, port))
    rows = {}
    for name, port, cmd in servers:
        rs = runs[name]
        row = {k: statistics.median([r[k] for r in rs if r[k] is not None] or [0])
               for k in ("wall_ms", "cpu_ms", "rss_mib", "hwm_mib", "anon_mib", "file_mib", "faults")}
        row["instructions"], row["instructions_exit"] = (
            callgrind(cmd, port) if a.callgrind else (None, None))
        rows[name] = row

    print(f"cold start over HTTP to the first tools/list answer, medians of {a.reps} interleaved runs")
    print("| server | wall ms | CPU ms | RSS MiB at answer = anon + file | peak RSS MiB "
          "| page faults | instructions to answer (to exit) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, row in rows.items():
        ins = row["instructions"]
        print(f"| {name} | {row['wall_ms']:.2f} | {row['cpu_ms']:.2f} | {row['rss_mib']:.1f} "
              f"= {row['anon_mib']:.1f} + {row['file_mib']:.1f} "
              f"| {row['hwm_mib']:.1f} | {row['faults']:.0f} "
              f"| {ins if ins else '-'} ({row['instructions_exit'] or '-'}) |")
    first = servers[0][0]
    for name in rows:
        if name == first:
            continue
        r, o = rows[first], rows[name]
        parts = [f"{k} {r[k] / o[k]:.2f}x" for k in ("wall_ms", "cpu_ms", "rss_mib")
                 if r[k] and o[k]]
        if r["instructions"] and o["instructions"]:
            parts.append(f"instructions {r['instructions'] / o['instructions']:.2f}x")
        print(f"  {first} / {name}: " + ", ".join(parts))
    if a.out:
        with open(a.out, "a") as f:
            for name, row in rows.items():
                f.write(json.dumps({"name": name, **row}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
