"""The Python SDK's HTTP+SSE server (the 2024-11-05 transport), as its documentation shows
it, for mcp-host's interop test: `python python_sse_server.py PORT` serves the event
stream at http://127.0.0.1:PORT/sse."""
import sys

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("python-sse-example")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    mcp.run("sse", host="127.0.0.1", port=int(sys.argv[1]))
