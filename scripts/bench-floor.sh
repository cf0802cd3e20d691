#!/usr/bin/env bash
# The host against the floor: mcp-host beside a raw no-SDK JSON-RPC client
# (`mcp-raw-client`, crates/testkit) on the same servers, in the same run, as ratios:
#   - start to every tool listed, 1 / 10 / 50 minimal servers (tests/bench/minimal_server.py:
#     five tools, raw stdio, no SDK), wall time, median of RUNS;
#   - instructions of the host and its supervisor processes (callgrind, servers not traced)
#     for the same start, 10 / 50 servers: repeatable where wall-clock CPU is not;
#   - sequential tools/call on the minimal server (`mcp-host call --repeat N`): p50 and the
#     client's CPU per call, and its instructions; and the instructions of a call answered
#     with 4 MB of text (the testkit server's `big` tool);
#   - an agent turn of one call per step against the scripted model (`repeat N`): host CPU
#     per call, at the start of a turn and at the end of a 2,000-call one, and the same in
#     instructions per step (callgrind: turns of 100, 300, 1,800 and 2,000 calls);
#   - peak RSS while holding the seven real servers of the interop set, and the PSS of each
#     supervisor process.
# Compare two builds in one run: BEFORE=path/to/old/mcp-host scripts/bench-floor.sh.
# QUICK=1 skips callgrind. Needs scripts/install-test-deps.sh first (the real servers).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS="${MCP_HOST_DEPS:-$HOME/.cache/mcp-host-deps}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
(cd "$ROOT" && cargo build --release --locked -q -p mcp-host -p mcp-host-testkit)
AFTER="${AFTER:-$TARGET/release/mcp-host}"
[ -x "$DEPS/venv/bin/mcp-server-time" ] || { echo "run scripts/install-test-deps.sh first" >&2; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
. "$ROOT/scripts/seven-servers.sh"
scratch_home "$WORK"
write_seven_servers "$WORK/seven.json"

exec python3 "$ROOT/scripts/bench_floor.py" "$WORK" "$TARGET/release" "$AFTER" "${BEFORE:-}" \
  "${RUNS:-5}" "${QUICK:-0}" "$ROOT/tests/bench/minimal_server.py"
