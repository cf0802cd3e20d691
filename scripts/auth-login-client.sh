#!/usr/bin/env bash
# A conformance-suite client made of the real CLI, for the OAuth scenarios that a person
# would go through: writes a config for the suite's server, signs in with
# `mcp-host auth login` (the "browser" is scripts/headless-browser.py), then calls the
# suite's tool with `mcp-host call`, which uses the stored credential. The suite passes the
# server URL as the last argument.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HOST="${CARGO_TARGET_DIR:-$ROOT/target}/debug/mcp-host"
URL="${*: -1}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export HOME="$WORK" XDG_DATA_HOME="$WORK/data" XDG_CONFIG_HOME="$WORK/config"
printf '{"mcpServers": {"s": {"type": "http", "url": "%s"}}}\n' "$URL" >"$WORK/servers.json"
CFG=(--strict-mcp-config --mcp-config "$WORK/servers.json")
BROWSER="$ROOT/scripts/headless-browser.py" "$HOST" auth login s "${CFG[@]}" </dev/null
"$HOST" auth status s "${CFG[@]}" | grep -q "signed in"
"$HOST" call s test-tool --args '{}' "${CFG[@]}"
