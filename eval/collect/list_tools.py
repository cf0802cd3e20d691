#!/usr/bin/env python3
"""List a stdio MCP server's tools exactly as it answers, for the search evaluation set.

Usage: list_tools.py --name NAME --package PKG --registry npm|pypi --version V
                     [--env K=V ...] [--out FILE] -- COMMAND [ARGS...]

Starts COMMAND, runs initialize (2025-11-25) -> notifications/initialized -> tools/list
(every page), and writes one JSON record: how the server was started (with the dummy
environment it needed), its serverInfo, protocolVersion, instructions and the tools as
sent. Standard library only.
"""
import argparse, json, os, queue, subprocess, sys, threading, time

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--package", required=True)
    ap.add_argument("--registry", required=True, choices=["npm", "pypi"])
    ap.add_argument("--version", required=True)
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--out")
    ap.add_argument("--stderr", help="file for the server's stderr (default: discarded)")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command and a.command[0] == "--" else a.command
    extra = dict(kv.split("=", 1) for kv in a.env)
    env = {**os.environ, **extra}
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=open(a.stderr, "wb") if a.stderr else subprocess.DEVNULL,
                         env=env, bufsize=0)
    try:
        run(a, p, extra, cmd)
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()

def run(a, p, extra, cmd):
    q = queue.Queue()
    def reader():
        for raw in iter(p.stdout.readline, b""):
            try:
                m = json.loads(raw)
            except ValueError:
                continue
            if isinstance(m, dict):  # skip stray non-message lines (e.g. a bare number logged to stdout)
                q.put(m)
        q.put(None)
    threading.Thread(target=reader, daemon=True).start()
    import atexit
    atexit.register(lambda: p.poll() is None and p.kill())  # never leave the server running on failure
    def send(m):
        try:
            p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
        except BrokenPipeError:
            sys.exit(f"{a.name}: server exited")
    def call(i, method, params):
        send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        deadline = time.time() + a.timeout
        while time.time() < deadline:
            try:
                m = q.get(timeout=max(0.1, deadline - time.time()))
            except queue.Empty:
                break
            if m is None:
                sys.exit(f"{a.name}: server exited")
            if m.get("id") == i and ("result" in m or "error" in m):
                if "error" in m:
                    sys.exit(f"{a.name}: {method}: {m['error']}")
                return m["result"]
            if "method" in m and "id" in m:  # a request to us: refuse it
                send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}})
        sys.exit(f"{a.name}: {method}: no answer in {a.timeout}s")
    init = call(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "mcp-host-eval", "version": "0.1.0"}})
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    tools, cursor, i = [], None, 2
    while True:
        res = call(i, "tools/list", {"cursor": cursor} if cursor else {})
        tools += res.get("tools", [])
        cursor = res.get("nextCursor")
        i += 1
        if not cursor or i > 50:
            break
    record = {"server": a.name, "package": a.package, "registry": a.registry,
              "version": a.version, "command": cmd, "env": extra,
              "serverInfo": init.get("serverInfo"), "protocolVersion": init.get("protocolVersion"),
              "instructions": init.get("instructions"), "tools": tools}
    text = json.dumps(record, indent=1, ensure_ascii=False) + "\n"
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    print(f"{a.name}: {len(tools)} tools", file=sys.stderr)

main()
