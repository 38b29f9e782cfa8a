"""A backend for interop/compose: the official Python SDK's FastMCP (mcp 1.30.0), over
Streamable HTTP with Mcp-Session-Id sessions on 127.0.0.1, or over stdio.

    python py_backend.py PORT       (Streamable HTTP, run.sh and gateway_stdio.sh)
    python py_backend.py stdio      (a stdio child of `snodo gateway`, gateway_stdio.sh)

Completions (issue 32): the `greet` prompt's `who` and the `note://{name}` template's
`name` complete from fixed lists, filtered by the typed prefix.
"""

import asyncio
import sys

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import Completion, PromptReference, ResourceTemplateReference

STDIO = sys.argv[1] == "stdio"
mcp = FastMCP("py-compose-backend", host="127.0.0.1", port=0 if STDIO else int(sys.argv[1]))
WHO = ["Ada", "Alan", "Grace"]
NOTES = ["greeting", "groceries", "todo"]


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


@mcp.resource("note://{name}", mime_type="text/plain")
def note(name: str) -> str:
    """A note by name."""
    return f"note {name}"


@mcp.prompt()
def greet(who: str) -> str:
    """Greets someone."""
    return f"Please greet {who}."


@mcp.completion()
async def complete(ref, argument, context):
    if isinstance(ref, PromptReference) and ref.name == "greet" and argument.name == "who":
        pool = WHO
    elif isinstance(ref, ResourceTemplateReference) and ref.uri == "note://{name}" and argument.name == "name":
        pool = NOTES
    else:
        return None
    return Completion(values=[v for v in pool if v.startswith(argument.value)], total=None, hasMore=False)


mcp.run(transport="stdio" if STDIO else "streamable-http")
