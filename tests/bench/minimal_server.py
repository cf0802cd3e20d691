"""The minimal MCP server of the floor benchmark (scripts/bench-floor.sh): five tools over
stdio, newline-delimited JSON-RPC, no SDK, so what is measured is the client, not the server.
Answers initialize, tools/list, tools/call and ping; ignores notifications."""

import json
import sys

TOOLS = [
    {"name": name, "description": text, "inputSchema": {
        "type": "object", "properties": props, "required": list(props)}}
    for name, text, props in [
        ("echo", "Returns its text.", {"text": {"type": "string"}}),
        ("add", "Adds two numbers.", {"a": {"type": "number"}, "b": {"type": "number"}}),
        ("upper", "Upper-cases its text.", {"text": {"type": "string"}}),
        ("length", "Counts the characters of its text.", {"text": {"type": "string"}}),
        ("noop", "Does nothing.", {}),
    ]
]


def call(name, args):
    if name == "echo":
        return str(args.get("text", ""))
    if name == "add":
        return str(args.get("a", 0) + args.get("b", 0))
    if name == "upper":
        return str(args.get("text", "")).upper()
    if name == "length":
        return str(len(str(args.get("text", ""))))
    return ""


def answer(request):
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "minimal", "version": "1"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        text = call(params.get("name"), params.get("arguments") or {})
        return {"content": [{"type": "text", "text": text}], "isError": False}
    if method == "ping":
        return {}
    return None


def main():
    out = sys.stdout
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if "id" not in request or "method" not in request:
            continue
        result = answer(request)
        if result is None:
            reply = {"jsonrpc": "2.0", "id": request["id"],
                     "error": {"code": -32601, "message": "method not found"}}
        else:
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        out.write(json.dumps(reply) + "\n")
        out.flush()


main()
