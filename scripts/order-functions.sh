#!/usr/bin/env bash
# Remakes crates/cli/link/hot-functions.txt: the functions the release binary runs when it
# starts servers, lists tools, makes calls and runs a turn, which the linker then lays out
# together at the front of the code (crates/cli/build.rs); and supervise-functions.txt,
# the same for the supervisor program. The kernel maps a binary's code
# 64 KiB around each page fault, so the few MiB a run uses, scattered over 22 MB, kept
# 15 MiB resident; laid out together they keep about their own size (docs/benchmarks.md).
#
# Run it again after a dependency, the toolchain, the release profile or any crate's list of
# dependencies changes: those change the symbols' hashes (a crate's metadata hashes its
# dependencies'), and names the list no longer matches are simply not ordered (nothing
# breaks; memory grows back). Code changes on the call path rename generic instances too
# (438 names once, 4 MiB of RSS). scripts/bench-floor.sh says how much of the list still matches
# and warns below 98 %. Needs scripts/install-test-deps.sh first, valgrind,
# and perf (Debian's linux-perf) for the confined runs, which valgrind cannot follow.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS="${MCP_HOST_DEPS:-$HOME/.cache/mcp-host-deps}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
LIST="$ROOT/crates/cli/link/hot-functions.txt"
[ -x "$DEPS/venv/bin/mcp-server-time" ] || { echo "run scripts/install-test-deps.sh first" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 1; }

# The builds below run with the scratch HOME: keep the toolchain's own.
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
WORK="$(mktemp -d)"
trap 'kill "${MODEL_PID:-0}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
. "$ROOT/scripts/seven-servers.sh"
scratch_home "$WORK"
write_seven_servers "$WORK/seven.json"
PYTHON="$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')"
printf '{"mcpServers": {"m0": {"command": "%s", "args": ["%s"]}}}\n' \
  "$PYTHON" "$ROOT/tests/bench/minimal_server.py" >"$WORK/one.json"
# Valgrind's exec of a confined server is refused by Landlock: unconfined copies for it.
for c in seven one; do
  python3 - "$WORK/$c.json" "$WORK/$c-off.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
for server in config["mcpServers"].values():
    server["sandbox"] = "off"
json.dump(config, open(sys.argv[2], "w"))
PY
done

# Links the release binaries with maps of where each function went.
build() {
  (cd "$ROOT" && MCP_HOST_LINK_MAP="$WORK/map" MCP_HOST_SUPERVISE_LINK_MAP="$WORK/smap" \
    cargo build --release --locked -q -p mcp-host -p mcp-host-testkit)
}
HOST="$TARGET/release/mcp-host"

# The workloads: $1 runs before each command (valgrind or perf), $2 picks the configs.
workloads() {
  local run="$1" suffix="$2" out="$3"
  "$run" "$out.tools" "$HOST" tools --strict-mcp-config --mcp-config "$WORK/seven$suffix.json"
  "$run" "$out.servers" "$HOST" servers --strict-mcp-config --mcp-config "$WORK/seven$suffix.json"
  "$run" "$out.call" "$HOST" call m0 echo --args '{"text":"hi"}' --repeat 50 \
    --strict-mcp-config --mcp-config "$WORK/one$suffix.json"
  "$run" "$out.run" "$HOST" run -p 'repeat 20 m0__echo {"text":"hi"}' -m openai-compatible:fake \
    --base-url "$MODEL_URL" --allowed-tools m0__echo --max-steps 30 \
    --strict-mcp-config --mcp-config "$WORK/one$suffix.json"
}
callgrind() {
  local out="$1"; shift
  valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no \
    --callgrind-out-file="$out" --log-file="$out.log" "$@" >/dev/null 2>&1 ||
    echo "warning: $* failed under callgrind (its profile is partial)" >&2
}
faults() {
  local out="$1"; shift
  perf record -q -e page-faults -c 1 -d -o "$out" "$@" >/dev/null 2>&1 ||
    echo "warning: $* failed under perf (its profile is partial)" >&2
}

rm -f "$LIST"
build
"$TARGET/release/mcp-fake-model" >"$WORK/model.out" 2>/dev/null &
MODEL_PID=$!
for _ in $(seq 100); do grep -q "listening on" "$WORK/model.out" && break; sleep 0.05; done
MODEL_URL="$(sed -n 's/.*listening on //p' "$WORK/model.out")"
[ -n "$MODEL_URL" ] || { echo "mcp-fake-model did not start" >&2; exit 1; }
MODEL_URL="$MODEL_URL/v1"

# Everything an unconfined run executes, exactly.
workloads callgrind -off "$WORK/cg"
python3 "$ROOT/scripts/order_functions.py" sections "$WORK/map" "$WORK"/cg.{tools,servers,call,run} >"$LIST"
echo "executed under callgrind: $(wc -l <"$LIST") functions" >&2

# What only a confined run executes (the sandbox's set-up, the egress proxy), found by the
# page faults it still takes outside the ordered code; each round finds one function per
# 64 KiB it touches, so a few rounds settle it.
if command -v perf >/dev/null; then
  for round in 1 2 3 4 5 6; do
    build
    workloads faults "" "$WORK/pf"
    before=$(wc -l <"$LIST")
    for w in tools servers call run; do
      python3 "$ROOT/scripts/order_functions.py" faults "$WORK/map" "$WORK/pf.$w"
    done | sort -u - "$LIST" -o "$LIST"
    added=$(($(wc -l <"$LIST") - before))
    echo "round $round: $added functions faulted outside the list" >&2
    [ "$added" -eq 0 ] && break
  done
else
  echo "perf not found: the confined runs' own functions are not in the list" >&2
fi
# The supervisor's own list: what the supervisors of a seven-server start run (each traced
# in its own profile; the servers they start are not).
SUPERVISE_LIST="$ROOT/crates/cli/link/supervise-functions.txt"
rm -f "$SUPERVISE_LIST"
build
valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no \
  --trace-children=yes --trace-children-skip='*python*,*node*,*npx*,*uv*,*mcp-server-*' \
  --callgrind-out-file="$WORK/scg.%p" --log-file="$WORK/scg.%p.log" \
  "$HOST" tools --strict-mcp-config --mcp-config "$WORK/seven-off.json" >/dev/null 2>&1 ||
  echo "warning: the supervisors' run failed under callgrind (its profile is partial)" >&2
find "$WORK" -maxdepth 1 -name 'scg.*' ! -name '*.log' -print0 |
  xargs -0 env ORDER_BINARY=mcp-host-supervise python3 "$ROOT/scripts/order_functions.py" \
    sections "$WORK/smap" >"$SUPERVISE_LIST"
echo "$SUPERVISE_LIST: $(wc -l <"$SUPERVISE_LIST") functions" >&2
build
"$ROOT/scripts/link-order-fingerprint.sh" >"$ROOT/crates/cli/link/fingerprint.txt"
echo "$LIST: $(wc -l <"$LIST") functions" >&2
