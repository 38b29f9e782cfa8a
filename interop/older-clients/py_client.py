"""Python `mcp` clients against `snodo serve` with no server flags.

Run with the interpreter of a venv holding one pinned `mcp` release:
  mcp 1.9.4  speaks 2025-03-26 and sends no MCP-Protocol-Version header;
  mcp 2.3.0  ClientSession.initialize(): the initialize handshake (2025-11-25).
Each lists tools, calls `search`, reads hello.txt through the template and gets the
`review_file` prompt. The version header of every POST is recorded from the HTTP
client and appears in the last step's name.

Usage: python py_client.py URL
Output: "ok <step>" / "FAIL <step>: <reason>", last line "N passed, M failed".
"""

import asyncio
import importlib.metadata
import json
import sys

try:  # mcp 2.x uses its own httpx fork
    import httpx2 as httpx
except ImportError:  # mcp 1.x
    import httpx

from mcp import ClientSession

try:
    from mcp.client.streamable_http import streamable_http_client as connect
except ImportError:
    from mcp.client.streamable_http import streamablehttp_client as connect

SENT = []  # (method, version header, status)
_send = httpx.AsyncClient.send


async def _recording_send(self, request, *args, **kwargs):
    response = await _send(self, request, *args, **kwargs)
    if request.method == "POST":
        try:
            body = json.loads(request.content or b"{}")
            method = body.get("method", "response") if isinstance(body, dict) else "batch"
        except ValueError:
            method = "?"
        SENT.append((method, request.headers.get("mcp-protocol-version"), response.status_code))
    return response


httpx.AsyncClient.send = _recording_send

PASSED = FAILED = 0


def report(ok, name, info=""):
    global PASSED, FAILED
    if ok:
        PASSED += 1
        print(f"ok {name}" + (f" ({info})" if info else ""))
    else:
        FAILED += 1
        print(f"FAIL {name}: {info}")


async def step(name, coro_fn):
    try:
        info = await coro_fn()
        report(True, name, info or "")
    except Exception as e:  # noqa: BLE001 - every failure is a failed step
        report(False, name, f"{type(e).__name__}: {e}")


def text_of(blocks):
    return "\n".join(getattr(b, "text", "") or "" for b in blocks)


async def main(url):
    version = importlib.metadata.version("mcp")
    negotiated = {"v": "?"}
    async with connect(url) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:

            async def initialize():
                r = await session.initialize()
                negotiated["v"] = getattr(r, "protocol_version", None) or r.protocolVersion
                name = getattr(r, "server_info", None) or r.serverInfo
                return f"mcp {version}: {negotiated['v']} with {name.name}"

            async def tools():
                r = await session.list_tools()
                names = [t.name for t in r.tools]
                assert "search" in names, names
                return f"{len(names)} tool(s)"

            async def call():
                r = await session.call_tool("search", {"query": "hello"})
                is_error = getattr(r, "is_error", None)
                if is_error is None:
                    is_error = r.isError
                assert not is_error, r
                assert "hello.txt" in text_of(r.content), r
                return "text content names hello.txt"

            async def read_resource():
                t = await session.list_resource_templates()
                templates = getattr(t, "resource_templates", None) or t.resourceTemplates
                tpl = getattr(templates[0], "uri_template", None) or templates[0].uriTemplate
                uri = tpl.replace("{+path}", "hello.txt").replace("{path}", "hello.txt")
                r = await session.read_resource(uri)
                assert "hello world" in r.contents[0].text, r
                return uri

            async def prompt():
                r = await session.get_prompt("review_file", {"path": "hello.txt"})
                assert "hello world" in json.dumps([m.model_dump(mode="json") for m in r.messages]), r
                return f"{len(r.messages)} message(s)"

            await step("initialize", initialize)
            await step("tools/list", tools)
            await step("tools/call search", call)
            await step("resources/read hello.txt", read_resource)
            await step("prompts/get review_file", prompt)

    later = [s for s in SENT if s[0] != "initialize"]
    headers = sorted({h for _, h, _ in later if h})
    print("# wire: " + " ".join(f"{m}{'[' + h + ']' if h else ''}->{s}" for m, h, s in SENT))
    ok = all(200 <= s < 300 for _, _, s in SENT)
    report(
        ok,
        f"exchange: initialize at {negotiated['v']}, {len(later)} later request(s), "
        f"version header {', '.join(headers) if headers else 'never sent'}",
        "" if ok else "a POST was answered with a non-2xx status",
    )
    print(f"{PASSED} passed, {FAILED} failed")
    return 0 if FAILED == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python py_client.py URL", file=sys.stderr)
        sys.exit(2)
    sys.exit(asyncio.run(main(sys.argv[1])))
