#!/usr/bin/env bash
# Connection-layer benchmarks (release build): start-to-ready for 1/10/50 fake servers and
# 2,000 sequential tools/call round trips over stdio. Prints markdown tables.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --locked -p mcp-host-testkit -p mcp-host
cargo bench --locked -p mcp-host --bench startup_and_calls
cargo bench --locked -p mcp-host --bench engine_turn
