#!/usr/bin/env python3
"""A local stand-in for a model API, for mcp-host's interop and terminal tests: speaks OpenAI's
streaming Chat Completions or Anthropic's streaming Messages format. The first request gets
three tool calls (two real servers), every later one a final text. Wire "chat" (Chat
Completions) asks for one call, time__get_current_time, then answers "The time is known.".
Prints its port, then serves. With FAKE_MODEL_LOG set, appends each request body there."""
import os
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WIRE = sys.argv[1]  # "openai", "anthropic" or "chat"
if WIRE == "chat":
    CALLS_FIRST = [("c1", "time__get_current_time", {"timezone": "UTC"})]
    FINAL = "The time is known."
else:
    CALLS_FIRST = None
    FINAL = "done"
CALLS = [
    ("c1", "time__get_current_time", {"timezone": "UTC"}),
    ("c2", "everything__echo", {"message": "interop"}),
    ("c3", "everything__get-sum", {"a": 2, "b": 3}),
]


def sse(events):
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events)


def openai_body(first):
    if first:
        calls = CALLS_FIRST or CALLS
        deltas = [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": cid, "type": "function",
                   "function": {"name": name, "arguments": json.dumps(args)}}]}}]} for i, (cid, name, args) in enumerate(calls)]
        return sse(deltas + [{"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]) + "data: [DONE]\n\n"
    return sse([{"choices": [{"index": 0, "delta": {"content": FINAL}}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]) + "data: [DONE]\n\n"


def anthropic_body(first):
    events = [{"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}}]
    if first:
        for i, (cid, name, args) in enumerate(CALLS):
            events += [{"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": cid, "name": name, "input": {}}},
                       {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)}},
                       {"type": "content_block_stop", "index": i}]
        events.append({"type": "message_delta", "delta": {"stop_reason": "tool_use"}})
    else:
        events += [{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                   {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "done"}},
                   {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}]
    events.append({"type": "message_stop"})
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


class Handler(BaseHTTPRequestHandler):
    served = 0

    def do_POST(self):
        request = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if os.environ.get("FAKE_MODEL_LOG"):
            with open(os.environ["FAKE_MODEL_LOG"], "ab") as log:
                log.write(request + b"\n")
        first = Handler.served == 0
        Handler.served += 1
        body = (anthropic_body if WIRE == "anthropic" else openai_body)(first).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
