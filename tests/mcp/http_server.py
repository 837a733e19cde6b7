"""An MCP server over Streamable HTTP, written with the official Python SDK (MCPServer, once
FastMCP), for the gateway's end-to-end tests (tests/mcp_gateway.rs).

Usage: http_server.py PORT [TOKEN] [sse]. With TOKEN (`-` for none), every request must carry
`Authorization: Bearer TOKEN` (the credential the gateway sends for it), else 401. With `sse` it
speaks the older HTTP+SSE transport (`GET /sse`, `POST /messages/`) instead. Its tools:
`search` (echoes its query), `config` (returns text holding a fake OpenAI key, for the guard
test), `slow` (sleeps), `count` (how many calls this process served), `steps` (reports its
progress), `wait` (waits until it is cancelled), `cancelled` (how many calls were cancelled
here); a prompt and a resource.
"""

import asyncio
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer

port = int(sys.argv[1])
token = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] != "-" else None
legacy = len(sys.argv) > 3 and sys.argv[3] == "sse"
calls = 0
cancellations = 0

mcp = MCPServer("search-server")


@mcp.tool()
def search(query: str) -> str:
    """Searches the documents for QUERY."""
    global calls
    calls += 1
    return f"results for {query}"


@mcp.tool()
def config() -> str:
    """Shows the service's configuration."""
    return "endpoint=https://api.example.com key=sk-proj-abcdefghijklmnopqrstuvwx region=eu"


@mcp.tool()
async def slow(seconds: float, started: str = "") -> str:
    """Waits SECONDS, then answers (having first created the file STARTED, if named)."""
    if started:
        open(started, "w").close()
    await asyncio.sleep(seconds)
    return "done"


@mcp.tool()
def count() -> int:
    """How many searches this process served."""
    return calls


@mcp.tool()
async def steps(n: int, ctx: Context) -> str:
    """Works through N steps, reporting each."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i} of {n}")
        await asyncio.sleep(0.05)
    return f"{n} steps done"


@mcp.tool()
async def wait() -> str:
    """Waits a minute, or until the call is cancelled."""
    global cancellations
    try:
        await anyio.sleep(60)
    except anyio.get_cancelled_exc_class():
        cancellations += 1
        raise
    return "waited"


@mcp.tool()
def cancelled() -> int:
    """How many calls were cancelled here."""
    return cancellations


@mcp.prompt()
def summarize(topic: str) -> str:
    """Asks for a summary of TOPIC."""
    return f"Summarize what is known about {topic}."


@mcp.resource("docs://readme")
def readme() -> str:
    """The project's readme."""
    return "The search server's readme."


app = mcp.sse_app(host="127.0.0.1") if legacy else mcp.streamable_http_app(host="127.0.0.1")


async def guarded(scope, receive, send):
    if scope["type"] == "http" and token is not None:
        headers = dict(scope["headers"])
        if headers.get(b"authorization") != f"Bearer {token}".encode():
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
    await app(scope, receive, send)


uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning")
