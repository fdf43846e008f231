"""MCP servers for the tests, built with the official SDK's MCPServer (FastMCP in mcp 1.x): nobody
here wrote the protocol side. `python servers.py stdio` serves on stdio; `python servers.py http
PORTFILE` serves streamable HTTP (and SSE at /sse) on 127.0.0.1, port 0, and writes the port.

Tools: echo(text), add(a, b), where() (the cwd, $MCP_TEST_ENV and the pid), shout(text) -> isError,
touch(name) (a side effect), and crash() which kills the server process (a crashing server)."""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("sessiondag-test")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def where() -> str:
    """The server's working directory and $MCP_TEST_ENV."""
    return f"cwd={os.getcwd()} env={os.environ.get('MCP_TEST_ENV', '')} pid={os.getpid()}"


@server.tool()
def shout(text: str) -> str:
    """Always fails."""
    raise ValueError(f"no shouting: {text}")


@server.tool()
def touch(name: str) -> str:
    """Create an empty file in the server's working directory."""
    open(name, "x").close()
    return f"created {name}"


@server.tool()
def crash() -> str:
    """Kill this server."""
    os._exit(3)


def serve_http(portfile: str) -> None:
    import socket

    import anyio
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    http = server.streamable_http_app()
    sse = server.sse_app()
    app = Starlette(routes=[Mount("/sse-app", app=sse), Mount("/", app=http)], lifespan=http.router.lifespan_context)
    config = uvicorn.Config(app, log_level="warning")
    with open(portfile + ".tmp", "w") as f:
        f.write(str(sock.getsockname()[1]))
    os.rename(portfile + ".tmp", portfile)
    anyio.run(uvicorn.Server(config).serve, [sock])


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        serve_http(sys.argv[2])
