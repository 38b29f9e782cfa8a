#!/usr/bin/env python3
"""A stdio MCP server (initialize era) that misbehaves on demand, for tests/child.rs and
tests/pool.rs. Standard library only.

argv[1] is the mode:
  ok          serves; tools: echo, sleep (ms), spin (ms of CPU, one call at a time), pid, die (exits 3 mid-call), long (a
              17 MiB line), garbage (garbage lines, then the answer), stall (stops
              reading stdin), flood (floods stdout with garbage, never answers)
  grandchild  as ok, and starts `sleep 300` first (its pid written to $GRANDCHILD_FILE)
  die-init    writes to stderr and exits 2 when it reads `initialize`
  mute-init   never answers `initialize`
  mute-after-init  answers `initialize`, then nothing (it keeps reading)
  stderr      as ok, and writes 100000 lines to stderr at start (one of 10 KiB)
Every start appends a line to $STARTS_FILE when set.
"""
import json
import os
import subprocess
import sys
import threading
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
out_lock = threading.Lock()
out = sys.stdout.buffer

if os.environ.get("STARTS_FILE"):
    with open(os.environ["STARTS_FILE"], "a") as f:
        f.write(f"{os.getpid()}\n")

if mode == "grandchild":
    g = subprocess.Popen(["sleep", "300"])
    with open(os.environ["GRANDCHILD_FILE"], "w") as f:
        f.write(str(g.pid))

if mode == "stderr":
    err = sys.stderr
    # A line that is not UTF-8: forwarded lossily (U+FFFD for the bad byte).
    err.buffer.write(b"bad \xff utf8\n")
    err.buffer.flush()
    err.write("x" * 10240 + "\n")
    for i in range(100000):
        err.write(f"noise {i}\n")
    err.flush()


def send(msg):
    data = json.dumps(msg).encode() + b"\n"
    with out_lock:
        out.write(data)
        out.flush()


def raw(data):
    with out_lock:
        out.write(data)
        out.flush()


TOOLS = [
    {"name": n, "description": n, "inputSchema": {"type": "object"}}
    for n in ["echo", "sleep", "spin", "pid", "die", "long", "garbage", "stall", "flood"]
]


def text(t):
    return {"content": [{"type": "text", "text": str(t)}]}


def call(id_, name, args):
    if name == "echo":
        send({"jsonrpc": "2.0", "id": id_, "result": text(args.get("text", ""))})
    elif name == "sleep":
        time.sleep(args.get("ms", 0) / 1000)
        send({"jsonrpc": "2.0", "id": id_, "result": text(os.getpid())})
    elif name == "pid":
        send({"jsonrpc": "2.0", "id": id_, "result": text(os.getpid())})
    elif name == "die":
        sys.stderr.write("dying on request\n")
        sys.stderr.flush()
        os._exit(3)
    elif name == "long":
        raw(b'{"jsonrpc":"2.0","id":' + json.dumps(id_).encode() + b',"result":"' + b"a" * (17 << 20) + b'"}\n')
    elif name == "garbage":
        raw(b"this is not json\n{broken\n[1,2,3]\n\n")
        send({"jsonrpc": "2.0", "id": id_, "result": text("after garbage")})
    elif name == "flood":
        while True:
            raw(b"garbage " * 100 + b"\n")


def main():
    for line in sys.stdin.buffer:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, id_ = msg.get("method"), msg.get("id")
        if method == "initialize":
            if mode == "die-init":
                sys.stderr.write("fatal: no configuration found\n")
                sys.stderr.flush()
                os._exit(2)
            if mode == "mute-init":
                continue
            version = msg["params"].get("protocolVersion", "2025-06-18")
            send({"jsonrpc": "2.0", "id": id_, "result": {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "child.py", "version": "1"}}})
        elif mode == "mute-after-init":
            continue
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": id_, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            p = msg["params"]
            if p["name"] == "spin":
                end = time.process_time() + (p.get("arguments") or {}).get("ms", 0) / 1000
                while time.process_time() < end:
                    pass
                send({"jsonrpc": "2.0", "id": id_, "result": text(os.getpid())})
                continue
            if p["name"] == "stall":
                send({"jsonrpc": "2.0", "id": id_, "result": text("stalling")})
                time.sleep(3600)
            threading.Thread(target=call, args=(id_, p["name"], p.get("arguments") or {}), daemon=True).start()
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": id_, "result": {}})
        elif id_ is not None and method is not None:
            send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "Method not found"}})


main()
