#!/usr/bin/env bash
# Benchmarks (release build), printed as markdown tables: start-to-ready for 1/10/50 fake
# servers and 2,000 sequential tools/call round trips over stdio; the agent loop's overhead;
# the hosted mode's load run (turns per second, event delivery, memory per user, processes);
# the egress proxy's added latency and tunnel throughput on loopback;
# the credential vault and a token refresh (inside a private gnome-keyring session when
# scripts/keyring-test.sh's tools are installed, so the OS keyring is measured too).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release --locked -p mcp-host-testkit -p mcp-host --features mcp-host/hosted
cargo bench --locked -p mcp-host --bench startup_and_calls
cargo bench --locked -p mcp-host --bench engine_turn
# The hosted mode under N users (LOAD_USERS=10,100,1000 by default; a few minutes at 1,000).
cargo bench --locked -p mcp-host --features hosted --bench serve_load
cargo bench --locked -p mcp-host-egress --bench proxy
if command -v gnome-keyring-daemon >/dev/null; then
  scripts/with-keyring.sh cargo bench --locked -p mcp-host-auth --bench credentials
else
  cargo bench --locked -p mcp-host-auth --bench credentials
fi
