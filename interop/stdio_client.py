"""Real-client interop over stdio with the official Python SDK (`mcp`, pinned in stdio.sh).

Usage: python stdio_client.py --mode auto|legacy --bin SNODO --root DIR --work DIR
  auto    probe server/discover (expected 2026-07-28)
  legacy  initialize handshake (expected 2025-11-25)
DIR must hold hello.txt = "hello world\\n". Output: "ok <step>" / "FAIL <step>: <reason>",
then "N passed, M failed"; exit 0 iff M == 0.
"""

import argparse
import json
import os
import shlex
import sys

import anyio
from mcp import Client, StdioServerParameters

RESULTS = {"passed": 0, "failed": 0}


def report(name, ok, info=""):
    RESULTS["passed" if ok else "failed"] += 1
    line = f"ok {name}" if ok else f"FAIL {name}: {info}"
    if ok and info:
        line += f"  # {info}"
    print(line, flush=True)


async def step(name, fn):
    try:
        info = await fn()
        report(name, True, info or "")
        return True
    except Exception as e:  # noqa: BLE001 - every failure is a FAIL line
        report(name, False, f"{type(e).__name__}: {e}".replace("\n", " "))
        return False


def dump(model):
    return json.dumps(model.model_dump(mode="json", by_alias=True, exclude_none=True))


async def demo(args, want):
    params = StdioServerParameters(
        command=args.bin, args=["serve", "--stdio", "--legacy", "--root", args.root]
    )
    async with Client(params, mode=args.mode, read_timeout_seconds=15) as client:
        report("connect (snodo serve --stdio)", True, f"negotiated {client.protocol_version}")

        async def version():
            assert client.protocol_version == want, f"negotiated {client.protocol_version}, want {want}"

        async def tools():
            r = await client.list_tools()
            names = [t.name for t in r.tools]
            assert "search" in names, f"no search tool in {names}"

        async def call():
            r = await client.call_tool("search", {"query": "hello"})
            assert not r.is_error, dump(r)
            assert "hello.txt" in dump(r), dump(r)

        async def resources():
            r = await client.list_resources()
            hello = [x for x in r.resources if str(x.uri).endswith("/hello.txt")]
            assert hello, [str(x.uri) for x in r.resources]
            read = await client.read_resource(str(hello[0].uri))
            assert "hello world" in dump(read), dump(read)
            return str(hello[0].uri)

        async def prompt():
            r = await client.get_prompt("review_file", {"path": "hello.txt"})
            assert "hello world" in dump(r), dump(r)

        async def rate_limit():
            """The demo's search allows 30 calls per 10 s per caller (one spent above): a
            burst meets the limit as a tool error the model can read, with the retry hint
            in _meta for clients that retry on their own."""
            for i in range(1, 41):
                r = await client.call_tool("search", {"query": "hello"})
                if r.is_error:
                    body = json.loads(dump(r))
                    limit = body.get("_meta", {}).get("io.snodo/limit", {})
                    assert limit.get("reason") == "rate", body
                    assert limit.get("retryAfterMs", 0) > 0, body
                    text = " ".join(c.get("text", "") for c in body.get("content", []))
                    assert "rate" in text.lower() or "retry" in text.lower(), text
                    assert 25 <= i <= 31, f"limited after {i} calls: {body}"
                    return f"call {i + 1} of the window refused: {text!r}, retryAfterMs={limit['retryAfterMs']}"
            raise AssertionError("40 calls in a burst were never limited")

        for name, fn in [
            ("version", version),
            ("tools/list", tools),
            ("tools/call search", call),
            ("resources/list + read", resources),
            ("prompts/get review_file", prompt),
            ("search rate limit (per-tool policy)", rate_limit),
        ]:
            await step(name, fn)


async def cancellation(args):
    """The fixture's progress tool runs ~150 ms; the client abandons it after 40 ms.
    Both directions of the pipe are teed to files to check the wire."""
    wire_in = os.path.join(args.work, f"py-{args.mode}-in.jsonl")
    wire_out = os.path.join(args.work, f"py-{args.mode}-out.jsonl")
    cmd = f"tee {shlex.quote(wire_in)} | {shlex.quote(args.bin)} fixture --stdio | tee {shlex.quote(wire_out)}"
    params = StdioServerParameters(command="sh", args=["-c", cmd])
    async with Client(params, mode=args.mode, read_timeout_seconds=15) as client:
        # On a loaded machine the 40 ms deadline can pass after the tool finished: that
        # attempt says nothing about the server and is made again (at most three).
        for attempt in range(1, 4):
            finished = False
            with anyio.move_on_after(0.04):
                await client.call_tool("test_tool_with_progress", {})
                finished = True
            if not finished:
                break
            print(f"# cancellation attempt {attempt}: the call finished before it was abandoned; again")
        assert not finished, "the call finished before it was abandoned, three times"
        await anyio.sleep(0.4)
        after = await client.call_tool("echo", {"text": "after"})
        assert "after" in dump(after), dump(after)
    sent = [json.loads(line) for line in open(wire_in) if line.strip()]
    written = [json.loads(line) for line in open(wire_out) if line.strip()]
    call = [m for m in sent if m.get("method") == "tools/call" and m["params"]["name"] == "test_tool_with_progress"]
    assert call, "the call was not sent"
    rid = call[-1]["id"]  # the attempt that was abandoned
    cancels = [m for m in sent if m.get("method") == "notifications/cancelled"]
    assert any(m["params"].get("requestId") == rid for m in cancels), f"no notifications/cancelled for {rid}"
    late = [m for m in written if m.get("id") == rid]
    assert not late, f"the cancelled request was answered: {late}"
    assert all(m.get("jsonrpc") == "2.0" for m in written), "stdout carried a non-JSON-RPC line"
    return f"request {rid} cancelled, nothing written for it"


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["auto", "legacy"], required=True)
    p.add_argument("--bin", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    want = "2026-07-28" if args.mode == "auto" else "2025-11-25"
    print(f"# python mcp over stdio, mode {args.mode}, want {want}", flush=True)
    try:
        await demo(args, want)
    except Exception as e:  # noqa: BLE001
        report("demo session", False, f"{type(e).__name__}: {e}")
    await step("cancellation", lambda: cancellation(args))
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed", flush=True)
    sys.exit(0 if RESULTS["failed"] == 0 else 1)


if __name__ == "__main__":
    anyio.run(main)
