#!/usr/bin/env python3
"""Reproducers for the limits snodo does not enforce yet (see SECURITY.md, "Known gaps").

Run against a loopback `snodo fixture`:

    snodo fixture --addr 127.0.0.1:39391 &
    loadtest/probe_gaps.py --port 39391 [--wait 25]

Each probe opens one connection, behaves like a hostile client, and reports whether the
server closed the connection within --wait seconds (the fixture's header read timeout is
10 s, so anything still open after 25 s is not timed out at all). Also shows the
positional-array envelope. Bounded: at most --wait + 5 seconds; loopback only.
Exits 0 when every probe got the safe behaviour, 1 otherwise (i.e. 1 while the gaps exist).
"""

import argparse
import socket
import threading
import time

META = ('{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
        '"io.modelcontextprotocol/clientCapabilities":{}}')


def watch(sock, wait):
    """Seconds until the server closed the connection, or None if it kept it open."""
    sock.settimeout(0.5)
    start = time.monotonic()
    while time.monotonic() - start < wait:
        try:
            if not sock.recv(65536):
                return time.monotonic() - start
        except socket.timeout:
            continue
        except OSError:
            return time.monotonic() - start
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--wait", type=float, default=25)
    a = ap.parse_args()
    addr = ("127.0.0.1", a.port)
    body = ('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":%s}}' % META).encode()
    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            b"Mcp-Method: tools/list\r\nContent-Length: %d\r\n\r\n" % len(body))
    probes = {
        "silent connection (no byte sent)": b"",
        "HTTP/2 preface prefix, then silence": b"PRI * HTTP/2",
        "HTTP/2 prior knowledge, idle after SETTINGS": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00",
        "complete head, body stalls after 10 bytes": head + body[:10],
        "half an HTTP/1.1 head (control: timed out)": head[:40],
    }
    results = {}

    def run(name, data):
        s = socket.create_connection(addr)
        if data:
            s.sendall(data)
        results[name] = watch(s, a.wait)
        s.close()

    threads = [threading.Thread(target=run, args=p) for p in probes.items()]
    for t in threads:
        t.start()

    # The positional envelope: a JSON array runs a tool.
    arr = (b'["2.0",7,"tools/call",{"name":"echo","arguments":{"text":"positional"},"_meta":'
           + META.encode() + b"}]")
    s = socket.create_connection(addr)
    s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
              b"Mcp-Method: tools/call\r\nMcp-Name: echo\r\nConnection: close\r\n"
              b"Content-Length: %d\r\n\r\n" % len(arr) + arr)
    s.settimeout(10)
    reply = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        reply += chunk
    status = reply.split(b"\r\n", 1)[0].decode()
    executed = b'"positional"' in reply
    for t in threads:
        t.join()

    bad = 0
    for name, took in results.items():
        ok = took is not None
        bad += not ok
        verdict = f"closed after {took:.1f} s" if ok else f"STILL OPEN after {a.wait:.0f} s"
        print(f"  [{'ok ' if ok else 'GAP'}] {name:<48} {verdict}")
    print(f"  [{'GAP' if executed else 'ok '}] JSON array body {arr[:40].decode()}...  -> {status}"
          f"{', tool executed' if executed else ''}")
    bad += executed
    print(f"probe_gaps: {len(results) + 1 - bad} safe, {bad} gaps")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
