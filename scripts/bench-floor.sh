#!/usr/bin/env bash
# The host against the floor: mcp-host beside a raw no-SDK JSON-RPC client
# (`mcp-raw-client`, crates/testkit) on the same servers, in the same run, as ratios:
#   - start to every tool listed, 1 / 10 / 50 minimal servers (tests/bench/minimal_server.py:
#     five tools, raw stdio, no SDK), wall time, median of RUNS;
#   - instructions of the host and its supervisor processes (callgrind, servers not traced)
#     for the same start, 10 / 50 servers: repeatable where wall-clock CPU is not;
#   - sequential tools/call on the minimal server (`mcp-host call --repeat N`): p50 and the
#     client's CPU per call, free and with client and server held to one vCPU (`taskset`),
#     and its instructions; and the instructions of a call answered
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
# Linked with a map (a fixed path, so this does not relink at every run), to check the
# function order lists against this build before anything is measured.
MAP="$TARGET/release/mcp-host.map"
(cd "$ROOT" && MCP_HOST_LINK_MAP="$MAP" cargo build --release --locked -q -p mcp-host -p mcp-host-testkit)
AFTER="${AFTER:-$TARGET/release/mcp-host}"
read -r share found listed < <(python3 "$ROOT/scripts/order_functions.py" coverage "$MAP" \
  "$ROOT/crates/cli/link/hot-functions.txt")
echo "Link order: $found of the $listed functions in crates/cli/link/hot-functions.txt are in this build."
if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 0.98 else 1)" "$share"; then
  echo "WARNING: the list is stale, so the binary's code is scattered and its memory and start" \
    "numbers are not the shipped ones: run scripts/order-functions.sh first."
fi
[ -x "$DEPS/venv/bin/mcp-server-time" ] || { echo "run scripts/install-test-deps.sh first" >&2; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
. "$ROOT/scripts/seven-servers.sh"
scratch_home "$WORK"
write_seven_servers "$WORK/seven.json"

exec python3 "$ROOT/scripts/bench_floor.py" "$WORK" "$TARGET/release" "$AFTER" "${BEFORE:-}" \
  "${RUNS:-5}" "${QUICK:-0}" "$ROOT/tests/bench/minimal_server.py"
