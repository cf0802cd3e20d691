"""A tiny FastMCP server for mcp-host's interop test (stdio by default)."""
from fastmcp import FastMCP

mcp = FastMCP("mcp-host-interop")


@mcp.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


if __name__ == "__main__":
    mcp.run(show_banner=False)
