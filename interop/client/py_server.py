"""The official Python SDK's high-level server on 127.0.0.1, for interop/client/run.sh.

mcp 1.x: FastMCP (Streamable HTTP with Mcp-Session-Id sessions, initialize era only).
mcp 2.x: MCPServer, FastMCP's successor (2026-07-28 and the initialize era, sessions for
the latter).

    python py_server.py PORT     Streamable HTTP on 127.0.0.1:PORT
    python py_server.py stdio    newline-delimited JSON-RPC on stdin/stdout
"""

import sys

stdio = sys.argv[1] == "stdio"
port = 0 if stdio else int(sys.argv[1])
try:
    from mcp.server.mcpserver import MCPServer

    mcp = MCPServer("py-interop")
    run = lambda: mcp.run(transport="streamable-http", host="127.0.0.1", port=port)  # noqa: E731
except ImportError:
    from mcp.server.fastmcp import FastMCP

    mcp = FastMCP("py-interop", host="127.0.0.1", port=port)
    run = lambda: mcp.run(transport="streamable-http")  # noqa: E731


@mcp.tool()
def echo(text: str) -> str:
    """Echoes its text."""
    return f"echo: {text}"


@mcp.tool()
def repeat(text: str, times: int) -> str:
    """Repeats its text."""
    return text * times


@mcp.resource("note://greeting", mime_type="text/plain")
def greeting() -> str:
    """A greeting."""
    return "hello from Python"


@mcp.prompt()
def greet(who: str) -> str:
    """Greets someone."""
    return f"Hello, {who}!"


if stdio:
    mcp.run(transport="stdio")
else:
    run()
