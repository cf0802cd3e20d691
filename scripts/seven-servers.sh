# Sourced by the benchmarks. scratch_home DIR points HOME and the XDG folders into DIR, so a
# run reads no configuration of the user's and leaves nothing behind.
scratch_home() {
  export HOME="$1/home" XDG_CONFIG_HOME="$1/config" XDG_DATA_HOME="$1/data" XDG_RUNTIME_DIR="$1/run"
  mkdir -p "$HOME" "$XDG_RUNTIME_DIR"
}

# write_seven_servers FILE writes the config of the seven real
# servers of the interop set (everything, filesystem, memory, time, fetch, git, fastmcp),
# from $DEPS (scripts/install-test-deps.sh), $ROOT (this checkout) and $WORK (a scratch folder).
write_seven_servers() {
  local nm="$DEPS/node_modules/@modelcontextprotocol"
  cat >"$1" <<JSON
{"mcpServers": {
  "everything": {"command": "node", "args": ["$nm/server-everything/dist/index.js", "stdio"]},
  "filesystem": {"command": "node", "args": ["$nm/server-filesystem/dist/index.js", "$DEPS/work/fsroot"]},
  "memory": {"command": "node", "args": ["$nm/server-memory/dist/index.js"], "env": {"MEMORY_FILE_PATH": "$WORK/memory.jsonl"}},
  "time": {"command": "$DEPS/venv/bin/mcp-server-time", "args": ["--local-timezone", "UTC"]},
  "fetch": {"command": "$DEPS/venv/bin/mcp-server-fetch"},
  "git": {"command": "$DEPS/venv/bin/mcp-server-git", "args": ["--repository", "$DEPS/work/gitrepo"]},
  "fastmcp": {"command": "$DEPS/venv/bin/python", "args": ["$ROOT/tests/interop/fastmcp_server.py"]}
}}
JSON
}
