"""An MCP server over stdio, written with the official Python SDK (MCPServer, once FastMCP),
which the gateway starts and supervises in its end-to-end tests (tests/mcp_gateway.rs).

Its tools: `add`, `pid` (this process's id, to tell a restarted server), `crash` (exits at
once, mid-call: a server that dies mid-session), `delete_all` (a tool keys are kept from).
"""

import os

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("files-server")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Adds A and B."""
    return a + b


@mcp.tool()
def pid() -> int:
    """This server process's id."""
    return os.getpid()


@mcp.tool()
def crash() -> str:
    """Exits the server process at once."""
    os._exit(3)


@mcp.tool()
def delete_all() -> str:
    """Deletes every file."""
    return "deleted everything"


mcp.run("stdio")
