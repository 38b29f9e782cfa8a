#!/usr/bin/env python3
"""The output side of `snodo serve` under hostile readers (issue 37), measured on a real
process: peak RSS (VmHWM) and what each client got. Bounded: each scenario starts its own
server on a free loopback port, sends a fixed number of requests and stops within a fixed
time; the whole run takes about three minutes.

    loadtest/answer_memory.py BINARY [SCENARIO ...]

Scenarios: batch (64 resources/read of an 8 MiB file in one 2025-03-26 batch), unread
(24 connections ask for a 48 MiB answer each and read nothing), slow (an 11 MB answer
read at 400 KiB/s), stalled (an 11 MB answer never read: when does the server let go?),
idle_exit (SIGTERM with one silent and one half-head connection), metrics_emfile (the
metrics listener under a 64-descriptor limit, flooded, then scraped). Default: all.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

MIB = 1024 * 1024


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) // 1024
    return -1


def socket_fds(pid):
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                n += 1
        except OSError:
            pass
    return n


class Server:
    def __init__(self, binary, root, extra=(), prefix=()):
        self.port = free_port()
        cmd = [*prefix, binary, "serve", "--root", root, "--addr", f"127.0.0.1:{self.port}", *extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("server did not start")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def post(port, body, version=None, rcvbuf=None):
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect(("127.0.0.1", port))
    data = body.encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\n"
        + (f"MCP-Protocol-Version: {version}\r\n" if version else "")
        + f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    )
    s.sendall(head.encode() + data)
    return s


def read_all(s, limit, pace=None):
    """Reads until EOF or `limit` seconds; `pace`: bytes per second at most."""
    s.settimeout(1)
    out = bytearray()
    start = time.time()
    while time.time() - start < limit:
        try:
            chunk = s.recv(16384 if pace else 1 << 20)
        except socket.timeout:
            continue
        except OSError:
            break
        if not chunk:
            break
        out += chunk
        if pace:
            time.sleep(len(chunk) / pace)
    return bytes(out), time.time() - start


def body_of(raw):
    head, _, body = raw.partition(b"\r\n\r\n")
    return head.decode(errors="replace"), body


def read_uri(root, name):
    return f"file://{os.path.join(root, name)}"


def read_request(i, root, name):
    return {"jsonrpc": "2.0", "id": i, "method": "resources/read", "params": {"uri": read_uri(root, name)}}


def scenario_batch(binary, root):
    with Server(binary, root) as srv:
        batch = json.dumps([read_request(i, root, "big.txt") for i in range(64)])
        s = post(srv.port, batch)
        raw, took = read_all(s, 120)
        s.close()
        head, body = body_of(raw)
        line = head.split("\r\n")[0]
        try:
            answers = json.loads(body)
            ok = sum(1 for a in answers if "result" in a)
            err = [a for a in answers if "error" in a]
            what = f"{ok} results, {len(err)} errors" + (f" ({err[0]['error']['message'][:90]})" if err else "")
        except ValueError:
            what = f"unreadable body ({len(body)} bytes)"
        alive = srv.proc.poll() is None
        print(f"batch: request {len(batch)} B; {line}; {len(raw) / MIB:.1f} MiB in {took:.1f} s; {what}; "
              f"VmHWM {status(srv.proc.pid, 'VmHWM') if alive else 'n/a'} MiB; server alive: {alive}")


def scenario_unread(binary, root):
    with Server(binary, root) as srv:
        socks = [post(srv.port, json.dumps(read_request(i, root, "esc.txt")), "2025-11-25", rcvbuf=4096)
                 for i in range(24)]
        peak_rss = 0
        for _ in range(16):
            time.sleep(0.5)
            peak_rss = max(peak_rss, status(srv.proc.pid, "VmRSS"))
        statuses = {}
        for s in socks:
            s.settimeout(2)
            try:
                first = s.recv(200)
            except OSError:
                first = b""
            code = first.split(b" ")[1].decode() if first.count(b" ") else "closed"
            statuses[code] = statuses.get(code, 0) + 1
            s.close()
        time.sleep(1)
        print(f"unread: 24 x 48 MiB answers not read for 8 s: peak VmRSS {peak_rss} MiB, "
              f"VmHWM {status(srv.proc.pid, 'VmHWM')} MiB, VmRSS after closing {status(srv.proc.pid, 'VmRSS')} MiB; "
              f"statuses {statuses}")


def scenario_slow(binary, root):
    with Server(binary, root) as srv:
        s = post(srv.port, json.dumps(read_request(1, root, "eleven.bin")), "2025-11-25", rcvbuf=16384)
        raw, took = read_all(s, 60, pace=400 * 1024)
        s.close()
        head, body = body_of(raw)
        length = next((int(l.split(":")[1]) for l in head.lower().split("\r\n") if l.startswith("content-length:")), -1)
        print(f"slow: {len(body) / 1e6:.1f} MB of {length / 1e6:.1f} MB at 400 KiB/s in {took:.1f} s; "
              f"whole: {len(body) == length}")


def scenario_stalled(binary, root):
    with Server(binary, root) as srv:
        before = socket_fds(srv.proc.pid)
        s = post(srv.port, json.dumps(read_request(1, root, "eleven.bin")), "2025-11-25", rcvbuf=4096)
        start = time.time()
        time.sleep(0.5)
        held = socket_fds(srv.proc.pid)
        released = None
        while time.time() - start < 60:
            if socket_fds(srv.proc.pid) < held:
                released = time.time() - start
                break
            time.sleep(0.25)
        s.close()
        print(f"stalled: server sockets before {before}, while held {held}; connection dropped after "
              f"{'%.1f s' % released if released else 'more than 60 s'}")


def scenario_idle_exit(binary, root):
    with Server(binary, root) as srv:
        silent = socket.create_connection(("127.0.0.1", srv.port))
        half = socket.create_connection(("127.0.0.1", srv.port))
        half.sendall(b"POST /mcp HTTP/1.1\r\nHost: loc")
        time.sleep(0.3)
        start = time.time()
        srv.proc.terminate()
        try:
            code = srv.proc.wait(30)
        except subprocess.TimeoutExpired:
            code = None
        print(f"idle_exit: SIGTERM with a silent and a half-head connection: exited ({code}) after "
              f"{time.time() - start:.2f} s")
        silent.close()
        half.close()


def scenario_metrics_emfile(binary, root):
    mport = free_port()
    with Server(binary, root, extra=("--metrics-addr", f"127.0.0.1:{mport}"),
                prefix=("prlimit", "--nofile=64:64")) as srv:
        flood = []
        for _ in range(80):
            try:
                c = socket.create_connection(("127.0.0.1", mport), 1)
                c.sendall(b"GET /metrics HTTP/1.1\r\n")
                flood.append(c)
            except OSError:
                break
        time.sleep(1)
        for c in flood:
            c.close()
        time.sleep(0.5)

        def scrape(port, path, extra=b""):
            try:
                c = socket.create_connection(("127.0.0.1", port), 2)
                c.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n".encode() + extra + b"\r\n")
                raw, _ = read_all(c, 3)
                c.close()
                return raw.split(b"\r\n")[0].decode() or "no answer"
            except OSError as e:
                return f"error {e}"

        print(f"metrics_emfile: 80 idle connections to the metrics port under a 64-fd limit, closed; then "
              f"metrics scrape: {scrape(mport, '/metrics')!r}; MCP /healthz: {scrape(srv.port, '/healthz')!r}")


SCENARIOS = {
    "batch": scenario_batch,
    "unread": scenario_unread,
    "slow": scenario_slow,
    "stalled": scenario_stalled,
    "idle_exit": scenario_idle_exit,
    "metrics_emfile": scenario_metrics_emfile,
}


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    names = sys.argv[2:] or list(SCENARIOS)
    root = tempfile.mkdtemp(prefix="snodo-answers-")
    try:
        with open(os.path.join(root, "big.txt"), "wb") as f:
            f.write(b"a" * (8 * MIB - 16))
        # Control characters: each is written \u0001 in JSON, a 48 MiB answer.
        with open(os.path.join(root, "esc.txt"), "wb") as f:
            f.write(b"\x01" * (8 * MIB - 16))
        # Not UTF-8: a base64 blob, an 11 MB answer.
        with open(os.path.join(root, "eleven.bin"), "wb") as f:
            f.write(b"\xff" * (8 * MIB - 16))
        for name in names:
            SCENARIOS[name](binary, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
