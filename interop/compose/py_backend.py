"""A backend for interop/compose/run.sh: the official Python SDK's FastMCP (mcp 1.30.0),
Streamable HTTP with Mcp-Session-Id sessions, on 127.0.0.1.

    python py_backend.py PORT
"""

import asyncio
import sys

from mcp.server.fastmcp import Context, FastMCP

mcp = FastMCP("py-compose-backend", host="127.0.0.1", port=int(sys.argv[1]))


@mcp.tool()
def echo(text: str) -> str:
    """Echoes its text."""
    return f"echo: {text}"


@mcp.tool()
async def count(steps: int, delay: float, ctx: Context) -> str:
    """Counts to `steps`, reporting progress, `delay` seconds apart."""
    for i in range(1, steps + 1):
        await asyncio.sleep(delay)
        await ctx.report_progress(i, steps)
    return f"counted to {steps}"


@mcp.resource("note://greeting", mime_type="text/plain")
def greeting() -> str:
    """A greeting."""
    return "hello from Python"


@mcp.prompt()
def greet(who: str) -> str:
    """Greets someone."""
    return f"Please greet {who}."


mcp.run(transport="streamable-http")
