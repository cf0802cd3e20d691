#!/usr/bin/env bash
# Deterministic simulation of the client side (crates/sim): the real connection manager,
# sessions, stdio wire, Streamable HTTP transport and call gate under tokio's paused clock,
# against simulated servers behind faulty in-memory pipes and a faulty simulated HTTP
# front, one seed deciding everything.
#
#   scripts/sim.sh [SEEDS] [FROM]     run seeds FROM..FROM+SEEDS (default 300 from 0), then
#                                      require the first 20 to replay the same trace and
#                                      the seeds to have reached both eras on both
#                                      transports (the list is MUST_REACH in crates/sim)
#   MCP_HOST_SIM_SEED=S scripts/sim.sh  replay seed S and print its trace
#   scripts/sim.sh --injected [SEEDS]  build with the documented injected bug (the restart
#                                      budget is never spent) and require that the
#                                      simulation finds it, printing the seed
#
# Built with `--cfg tokio_unstable` (in a target dir of its own, so the workspace's build
# is untouched) so tokio's `select!` draws are seeded too and a seed replays exactly.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TARGET="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-host-target}/sim"
build() {
  RUSTFLAGS="--cfg tokio_unstable" CARGO_TARGET_DIR="$TARGET" \
    cargo build --locked -q -p mcp-host-sim "$@"
}
BIN="$TARGET/debug/mcp-host-sim"
if [ "${1:-}" = "--injected" ]; then
  build --features injected-bug
  seeds="${2:-300}"
  if out=$("$BIN" --seeds "$seeds" 2>&1); then
    echo "$out"
    echo "sim.sh: the injected bug was NOT found in $seeds seeds" >&2
    exit 1
  fi
  echo "$out" | grep -E "broke an invariant|retries since|replay:" >&2
  grep -q "retries since the last restart" <<<"$out" || {
    echo "$out" >&2
    echo "sim.sh: a seed failed, but not on the injected bug's invariant" >&2
    exit 1
  }
  echo "sim.sh: the injected bug was found"
  exit 0
fi
build
exec "$BIN" --seeds "${1:-300}" --from "${2:-0}" --replay 20 --require-coverage
