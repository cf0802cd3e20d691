#!/usr/bin/env bash
# Interop test against real MCP servers from npm and PyPI (installed by
# scripts/install-test-deps.sh): every server must come up `ready` in its protocol era
# through `mcp-host servers --json`, over stdio, Streamable HTTP (server-everything) and
# the legacy HTTP+SSE transport (server-everything and both SDKs' SSE servers);
# calls must work; a broken file and a missing command must not stop the others.
# Last line: "interop: N passed, N failed".
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS="${MCP_HOST_DEPS:-$HOME/.cache/mcp-host-deps}"
HOST="${MCP_HOST_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/mcp-host}"
[ -x "$HOST" ] || (cd "$ROOT" && cargo build -q -p mcp-host) || exit 1
[ -x "$DEPS/venv/bin/mcp-server-time" ] || { echo "run scripts/install-test-deps.sh first" >&2; exit 1; }

WORK="$(mktemp -d)"
HTTP_PID=""
SSE_PIDS=()
cleanup() { kill $HTTP_PID "${SSE_PIDS[@]}" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
export HOME="$WORK/home" XDG_CONFIG_HOME="$WORK/config" XDG_DATA_HOME="$WORK/data" XDG_RUNTIME_DIR="$WORK/run"
mkdir -p "$HOME"

pass=0; fail=0
check() { # name, command...
  local name="$1"; shift
  if "$@"; then pass=$((pass+1)); echo "PASS $name"; else fail=$((fail+1)); echo "FAIL $name"; fi
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { # port: until something listens there (15 s at most)
  for _ in $(seq 1 150); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$1),0.2)" 2>/dev/null && return
    sleep 0.1
  done
}

PORT="$(free_port)"
NM="$DEPS/node_modules/@modelcontextprotocol"
PORT="$PORT" node "$NM/server-everything/dist/index.js" streamableHttp >"$WORK/http.log" 2>&1 &
HTTP_PID=$!
wait_port "$PORT"

cat >"$WORK/servers.json" <<JSON
{"mcpServers": {
  "everything": {"command": "node", "args": ["$NM/server-everything/dist/index.js", "stdio"]},
  "filesystem": {"command": "node", "args": ["$NM/server-filesystem/dist/index.js", "$DEPS/work/fsroot"]},
  "memory": {"command": "node", "args": ["$NM/server-memory/dist/index.js"], "env": {"MEMORY_FILE_PATH": "$WORK/memory.jsonl"}},
  "time": {"command": "$DEPS/venv/bin/mcp-server-time", "args": ["--local-timezone", "UTC"]},
  "git": {"command": "$DEPS/venv/bin/mcp-server-git", "args": ["--repository", "$DEPS/work/gitrepo"]},
  "fastmcp": {"command": "$DEPS/venv/bin/python", "args": ["$ROOT/tests/interop/fastmcp_server.py"]},
  "everything-http": {"type": "http", "url": "http://127.0.0.1:$PORT/mcp"},
  "my.server": {"command": "node", "args": ["$NM/server-memory/dist/index.js"], "env": {"MEMORY_FILE_PATH": "$WORK/memory2.jsonl"}}
},
 "permissions": {"taintExempt": [{"from": "time", "to": "everything"}]}
}
JSON

expect_states() { # json-file, then name=era pairs; every listed server must be ready in that era
  python3 - "$@" <<'PY'
import json, sys
rows = {r["name"]: r for r in json.load(open(sys.argv[1]))}
ok = True
for pair in sys.argv[2:]:
    name, era = pair.split("=")
    r = rows.get(name)
    if not r or r["state"] != "ready" or r["era"] != era or r["tools"] < 1:
        print(f"  {name}: expected ready in {era}, got {r}", file=sys.stderr)
        ok = False
    else:
        print(f"  {name}: ready, era {r['era']}, {r['tools']} tools, {r['transport']}")
sys.exit(0 if ok else 1)
PY
}

CFG=(--strict-mcp-config --mcp-config "$WORK/servers.json")
start=$(date +%s.%N)
"$HOST" servers --json "${CFG[@]}" >"$WORK/servers.out" 2>"$WORK/servers.err"
echo "servers --json took $(python3 -c "print(round($(date +%s.%N)-$start,2))")s"
check "all real servers ready in their eras" expect_states "$WORK/servers.out" \
  everything=2025-11-25 filesystem=2025-11-25 memory=2025-11-25 everything-http=2025-11-25 \
  time=2026-07-28 git=2026-07-28 fastmcp=2026-07-28 my.server=2025-11-25

echo_out="$("$HOST" call everything echo --args '{"message":"hi"}' "${CFG[@]}" 2>&1)"
check "call everything echo prints hi" grep -q "hi" <<<"$echo_out"
echo "  $echo_out"
time_out="$("$HOST" call time get_current_time --args '{"timezone":"UTC"}' "${CFG[@]}" 2>&1)"
check "call time get_current_time prints a time" grep -q '"datetime"' <<<"$time_out"
add_out="$("$HOST" call fastmcp add --args '{"a":2,"b":40}' "${CFG[@]}" 2>&1)"
check "call fastmcp add (2026-07-28) works" grep -q "42" <<<"$add_out"
fs_out="$("$HOST" call filesystem read_text_file --args "{\"path\":\"$DEPS/work/fsroot/hello.txt\"}" "${CFG[@]}" 2>&1)"
check "call filesystem reads a file in its root, confined" grep -q "hello from mcp-host interop" <<<"$fs_out"
git_out="$("$HOST" call git git_status --args "{\"repo_path\":\"$DEPS/work/gitrepo\"}" "${CFG[@]}" 2>&1)"
check "call git reads its repository's status, confined" grep -qi "branch" <<<"$git_out"
echo "  ${git_out:0:120}"
http_out="$("$HOST" call everything-http echo --args '{"message":"over http"}' "${CFG[@]}" 2>&1)"
check "call over Streamable HTTP works" grep -q "over http" <<<"$http_out"

"$HOST" tools --json "${CFG[@]}" >"$WORK/tools.json" 2>"$WORK/tools.err"
check "every tool has a unique model-visible name of at most 64 safe characters" python3 - "$WORK/tools.json" <<'PY'
import json, re, sys
rows = json.load(open(sys.argv[1]))
names = [r["name"] for r in rows]
bad = [n for n in names if len(n) > 64 or not re.fullmatch(r"[A-Za-z0-9_-]+", n)]
servers = {r["server"] for r in rows}
print(f"  {len(rows)} tools from {len(servers)} servers; {len(set(names))} distinct names")
ok = not bad and len(set(names)) == len(names) and all(r["server"] and r["tool"] for r in rows)
ok = ok and {"everything__echo", "everything-http__echo", "memory__read_graph", "my_server__read_graph"} <= set(names)
sys.exit(0 if ok else 1)
PY
same_a="$("$HOST" call everything__echo --args '{"message":"from stdio"}' "${CFG[@]}" 2>&1)"
same_b="$("$HOST" call everything-http__echo --args '{"message":"from http"}' "${CFG[@]}" 2>&1)"
check "two servers with the same tool names both answer" \
  bash -c 'grep -q "from stdio" <<<"$1" && grep -q "from http" <<<"$2"' _ "$same_a" "$same_b"
dotted="$("$HOST" call my_server__read_graph "${CFG[@]}" 2>&1)"
check "a server named my.server maps to my_server__*" grep -q "entities" <<<"$dotted"
"$HOST" tools --search "what time is it in Tokyo" --limit 3 --json "${CFG[@]}" >"$WORK/search.json" 2>/dev/null
check "search ranks time__get_current_time first for 'what time is it in Tokyo'" python3 - "$WORK/search.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
print("  ranked:", [r["name"] for r in rows])
sys.exit(0 if rows and rows[0]["name"] == "time__get_current_time" else 1)
PY
bad_args="$("$HOST" call time get_current_time --args '{"timezone": 7}' "${CFG[@]}" 2>&1)"
check "wrong-typed arguments are refused locally with a JSON Pointer" grep -q "/timezone" <<<"$bad_args"

for wire in openai anthropic; do
  python3 "$ROOT/scripts/fake_model.py" "$wire" >"$WORK/model-$wire.port" &
  MODEL_PID=$!
  for _ in $(seq 1 100); do [ -s "$WORK/model-$wire.port" ] && break; sleep 0.05; done
  MPORT="$(head -1 "$WORK/model-$wire.port")"
  if [ "$wire" = openai ]; then model=(-m openai-compatible:fake --base-url "http://127.0.0.1:$MPORT/v1");
  else model=(-m anthropic:fake --base-url "http://127.0.0.1:$MPORT"); fi
  "$HOST" run -p "what time is it, echo and add" "${model[@]}" --allowed-tools 'time__*,everything__*' \
    --output-format json "${CFG[@]}" >"$WORK/run-$wire.json" 2>"$WORK/run-$wire.err"
  kill "$MODEL_PID" 2>/dev/null
  check "run: a $wire-wire-format turn makes three tool calls on two real servers" python3 - "$WORK/run-$wire.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("  no JSON:", e); sys.exit(1)
calls = r.get("tool_calls", [])
print("  result:", r.get("result"), "| calls:", [(c["name"], c["is_error"], c.get("refused")) for c in calls])
ok = r.get("result") == "done" and r.get("end") == "finished" and len(calls) == 3
ok = ok and not any(c["is_error"] for c in calls) and {c["name"].split("__")[0] for c in calls} == {"time", "everything"}
sys.exit(0 if ok else 1)
PY
done

printf '{\n  "mcpServers": {\n    "broken": {"command": "x",,}\n  }\n}\n' >"$WORK/bad.json"
cat >"$WORK/missing.json" <<JSON
{"mcpServers": {
  "missing": {"command": "no-such-mcp-server-anywhere"},
  "time": {"command": "$DEPS/venv/bin/mcp-server-time"},
  "memory": {"command": "node", "args": ["$NM/server-memory/dist/index.js"], "env": {"MEMORY_FILE_PATH": "$WORK/memory.jsonl"}}
}}
JSON
"$HOST" servers --json --strict-mcp-config --mcp-config "$WORK/bad.json" --mcp-config "$WORK/missing.json" \
  >"$WORK/bad.out" 2>"$WORK/bad.err"
check "bad JSON and a missing command leave the others ready" expect_states "$WORK/bad.out" \
  time=2026-07-28 memory=2025-11-25
check "the bad file's error names file and line" grep -q "bad.json:3:" "$WORK/bad.err"
check "the missing command is failed with a clear reason" python3 - "$WORK/bad.out" <<'PY'
import json, sys
r = {x["name"]: x for x in json.load(open(sys.argv[1]))}["missing"]
print("  missing:", r["state"], "-", r["error"])
sys.exit(0 if r["state"] == "failed" and "no-such-mcp-server-anywhere" in r["error"] else 1)
PY
sed 's/^/  stderr: /' "$WORK/bad.err"

# Confinement: every stdio server above ran under the default strict sandbox; these run
# through npx and uvx (offline, from the caches install-test-deps.sh filled), and the fetch
# server reaches a local test site only through its egress proxy, which maps the names to
# loopback (never a real address) and refuses a host off its allow-list.
SITE_PORT="$(free_port)"
mkdir -p "$WORK/site"
echo "<html><body><p>hello from the test site</p></body></html>" >"$WORK/site/page.html"
python3 -m http.server --bind 127.0.0.1 --directory "$WORK/site" "$SITE_PORT" >"$WORK/site.log" 2>&1 &
SITE_PID=$!
wait_port "$SITE_PORT"
cat >"$WORK/confined.json" <<JSON
{"mcpServers": {
  "memory-npx": {"command": "npx", "args": ["--offline", "-y", "@modelcontextprotocol/server-memory@2026.8.31"],
                 "env": {"npm_config_cache": "$DEPS/npm-cache", "MEMORY_FILE_PATH": "$WORK/npx-data/memory.jsonl"}},
  "time-uvx": {"command": "$DEPS/venv/bin/uvx", "args": ["--offline", "--from", "mcp-server-time==2026.10.19", "mcp-server-time"],
               "env": {"UV_CACHE_DIR": "$DEPS/uv-cache"}},
  "fetch": {"command": "$DEPS/venv/bin/mcp-server-fetch", "args": ["--ignore-robots-txt"],
            "sandbox": {"network": {"allow": ["site.test:$SITE_PORT"], "allowPrivate": ["127.0.0.1"]}}}
}}
JSON
export MCP_HOST_EGRESS_RESOLVE="site.test=127.0.0.1,other.test=127.0.0.1"
CCFG=(--strict-mcp-config --mcp-config "$WORK/confined.json")
"$HOST" servers --json "${CCFG[@]}" >"$WORK/confined.out" 2>"$WORK/confined.err"
check "npx, uvx and fetch servers are ready, confined" expect_states "$WORK/confined.out" \
  memory-npx=2025-11-25 time-uvx=2026-07-28 fetch=2026-07-28
check "every stdio server ran under the strict sandbox" python3 - "$WORK/servers.out" "$WORK/confined.out" <<'PY'
import json, sys
rows = [r for f in sys.argv[1:] for r in json.load(open(f)) if r["transport"] == "stdio"]
bad = [(r["name"], (r.get("sandbox") or {}).get("level")) for r in rows if (r.get("sandbox") or {}).get("level") != "strict"]
print(f"  {len(rows)} stdio servers, not strict: {bad}")
sys.exit(0 if rows and not bad else 1)
PY
npx_out="$("$HOST" call memory-npx create_entities --args '{"entities":[{"name":"n","entityType":"t","observations":["o"]}]}' "${CCFG[@]}" 2>&1)"
check "a server started through npx writes its data file" grep -q '"name": "n"' <<<"$npx_out"
uvx_out="$("$HOST" call time-uvx get_current_time --args '{"timezone":"UTC"}' "${CCFG[@]}" 2>&1)"
check "a server started through uvx answers" grep -q '"datetime"' <<<"$uvx_out"
fetch_out="$("$HOST" call fetch fetch --args "{\"url\":\"http://site.test:$SITE_PORT/page.html\"}" "${CCFG[@]}" 2>&1)"
check "fetch reaches the allowed site through the proxy" grep -q "hello from the test site" <<<"$fetch_out"
echo "  ${fetch_out:0:300}"
denied_out="$("$HOST" call fetch fetch --args "{\"url\":\"http://other.test:$SITE_PORT/page.html\"}" "${CCFG[@]}" 2>&1)"
check "fetch of a host off the allow-list is refused" bash -c '! grep -q "hello from the test site" <<<"$1"' _ "$denied_out"
echo "  ${denied_out:0:200}"
check "the audit log records the allowed and the refused connection" python3 - "$XDG_DATA_HOME/mcp-host/audit.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if '"egress"' in l]
seen = {(l["host"], l["allowed"]) for l in lines if l.get("event") == "egress"}
print("  egress:", sorted(seen), [l["detail"] for l in lines if not l["allowed"]])
sys.exit(0 if ("site.test", True) in seen and ("other.test", False) in seen else 1)
PY
kill "$SITE_PID" 2>/dev/null

# The legacy HTTP+SSE transport (2024-11-05): server-everything's `sse` mode, the Python
# SDK's SSE server (tests/interop/python_sse_server.py) and the TypeScript SDK's own
# example (simpleSseServer.js, which always listens on port 3000), each as `"type": "sse"`
# and as `"type": "http"`, which must fall back to it.
SSE_PORT="$(free_port)"; PY_SSE_PORT="$(free_port)"
PORT="$SSE_PORT" node "$NM/server-everything/dist/index.js" sse >"$WORK/sse.log" 2>&1 &
SSE_PIDS=($!)
"$DEPS/venv/bin/python" "$ROOT/tests/interop/python_sse_server.py" "$PY_SSE_PORT" >"$WORK/py-sse.log" 2>&1 &
SSE_PIDS+=($!)
if python3 -c "import socket; socket.create_connection(('127.0.0.1',3000),0.2)" 2>/dev/null; then
  echo "  port 3000 is taken: the TypeScript SDK's SSE example cannot listen" >&2
fi
(cd "$WORK" && exec node "$NM/sdk/dist/esm/examples/server/simpleSseServer.js" >"$WORK/ts-sse.log" 2>&1) &
SSE_PIDS+=($!)
wait_port "$SSE_PORT"; wait_port "$PY_SSE_PORT"; wait_port 3000
cat >"$WORK/sse.json" <<JSON
{"mcpServers": {
  "everything-sse": {"type": "sse", "url": "http://127.0.0.1:$SSE_PORT/sse"},
  "everything-fallback": {"type": "http", "url": "http://127.0.0.1:$SSE_PORT/sse"},
  "python-sse": {"type": "sse", "url": "http://127.0.0.1:$PY_SSE_PORT/sse"},
  "python-fallback": {"type": "http", "url": "http://127.0.0.1:$PY_SSE_PORT/sse"},
  "ts-sse": {"type": "sse", "url": "http://127.0.0.1:3000/mcp"},
  "ts-fallback": {"type": "http", "url": "http://127.0.0.1:3000/mcp"}
}}
JSON
SCFG=(--strict-mcp-config --mcp-config "$WORK/sse.json")
"$HOST" servers --json "${SCFG[@]}" >"$WORK/sse.out" 2>"$WORK/sse.err"
check "three HTTP+SSE servers are ready over sse, configured or by fallback" python3 - "$WORK/sse.out" <<'PY'
import json, sys
rows = {r["name"]: r for r in json.load(open(sys.argv[1]))}
ok = len(rows) == 6
for name, r in sorted(rows.items()):
    print(f"  {name}: {r['state']}, {r['transport']}, {r['tools']} tools, {r.get('transport_note') or ''}")
    ok = ok and r["state"] == "ready" and r["transport"] == "sse" and r["tools"] >= 1
    ok = ok and (r.get("transport_note") is not None) == name.endswith("-fallback")
sys.exit(0 if ok else 1)
PY
sse_echo="$("$HOST" call everything-sse echo --args '{"message":"over legacy sse"}' "${SCFG[@]}" 2>&1)"
check "call server-everything over HTTP+SSE" grep -q "over legacy sse" <<<"$sse_echo"
py_add="$("$HOST" call python-fallback add --args '{"a":2,"b":40}' "${SCFG[@]}" 2>&1)"
check "call the Python SDK's SSE server (by fallback)" grep -q "42" <<<"$py_add"
ts_call="$("$HOST" call ts-sse start-notification-stream --args '{"interval":10,"count":2}' "${SCFG[@]}" 2>&1)"
check "call the TypeScript SDK's SSE example" grep -q "Completed sending 2 notifications" <<<"$ts_call"
kill "${SSE_PIDS[@]}" 2>/dev/null

echo "interop: $pass passed, $fail failed"
[ "$fail" = 0 ]
