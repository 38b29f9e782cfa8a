"""The official Python SDK's client (mcp 1.30.0) over HTTP/2: its transport is given an
httpx client with HTTP/2 on (the `h2` package), by ALPN over TLS, or by prior knowledge
(`http1=False`) to an http:// URL.

    python h2_client.py URL [CA_PEM]

Steps: initialize (2025-11-25), tools/list, tools/call echo, a call answered over SSE
with progress notifications, and 20 calls at once. Every response's HTTP version is
recorded (an httpx response hook): each must be HTTP/2. One line per step, "ok ..." or
"FAIL ...", then "N passed, M failed"; exit 0 iff M == 0.
"""

import asyncio
import ssl
import sys

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

url = sys.argv[1]
tls = url.startswith("https:")
mode = "h2 (TLS, ALPN)" if tls else "h2c (prior knowledge)"
versions = []
passed = failed = 0


def report(ok, name, info=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   python-sdk {mode}: {name}" + (f" ({info})" if info else ""))
    else:
        failed += 1
        print(f"FAIL python-sdk {mode}: {name}: {info}")


def text(r):
    return "".join(getattr(c, "text", "") for c in r.content)


async def record(response):
    versions.append(response.http_version)


async def main():
    kwargs = {
        "http2": True,
        "timeout": httpx.Timeout(30, read=300),
        "event_hooks": {"response": [record]},
    }
    if tls:
        kwargs["verify"] = ssl.create_default_context(cafile=sys.argv[2])
    else:
        kwargs["http1"] = False
    async with httpx.AsyncClient(**kwargs) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, _):
            async with ClientSession(read, write) as s:
                init = await s.initialize()
                report(True, "initialize", init.protocolVersion)
                tools = [t.name for t in (await s.list_tools()).tools]
                report("echo" in tools, "tools/list", f"{len(tools)} tools")
                r = await s.call_tool("echo", {"text": "over h2"})
                report("over h2" in text(r), "tools/call echo", text(r))
                seen = []

                async def on_progress(p, total, message):
                    seen.append(p)

                r = await s.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
                report(not r.isError and len(seen) >= 1, "progress over an SSE stream", f"progress {seen}")
                rs = await asyncio.gather(*(s.call_tool("echo", {"text": f"c{i}"}) for i in range(20)))
                report(all(f"c{i}" in text(r) for i, r in enumerate(rs)), "20 calls at once")
    report(
        len(versions) >= 24 and set(versions) == {"HTTP/2"},
        "every response came over HTTP/2",
        f"{len(versions)} responses: {sorted(set(versions))}",
    )


try:
    asyncio.run(main())
except Exception as e:  # a failed connection or call is a failed check, reported as such
    report(False, "session", repr(e))
print(f"{passed} passed, {failed} failed")
sys.exit(0 if failed == 0 else 1)
