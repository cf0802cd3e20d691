#!/usr/bin/env bash
# The whole test suite: installs the real MCP servers and the conformance suite (cached),
# then runs the Rust tests (the hosted mode's on SQLite and on a private PostgreSQL), the
# interop test against real servers, the terminal UI driven through tmux, the web page in
# headless Chromium, the credential tests against a real OS keyring (gnome-keyring in a private
# D-Bus session), the conformance scenarios, the deterministic simulation and the fuzz
# targets (short runs). Works on a fresh machine with the Rust
# toolchain, Node 20, Python 3 and git.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/install-test-deps.sh
# With the hosted mode (`--features mcp-host/hosted`), so `mcp-host serve` is tested too; the
# host's tests spawn mcp-host and mcp-fake-server.
cargo build --workspace --bins --locked --features mcp-host/hosted
# The hosted mode's tests run on SQLite and on a real PostgreSQL: a private cluster for this
# run (unless one is given), stopped and removed on exit.
if [ -z "${MCP_HOST_TEST_POSTGRES_URL:-}" ]; then
  PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/mcp-host-pg.XXXXXX")
  trap 'scripts/postgres.sh stop "$PG_DIR" || true; rm -rf "$PG_DIR"' EXIT
  MCP_HOST_TEST_POSTGRES_URL=$(scripts/postgres.sh start "$PG_DIR")
  export MCP_HOST_TEST_POSTGRES_URL
fi
cargo test --workspace --locked --features mcp-host/hosted
# The deterministic simulation: a fixed budget of seeds, exact replay, and the injected bug
# found (a longer run is `scripts/sim.sh 20000`).
scripts/sim.sh 400
scripts/sim.sh --injected 1000  # stops at the first seed that finds it
scripts/interop.sh
scripts/tui-e2e.sh
scripts/web-e2e.sh    # the hosted mode's web page in headless Chromium
scripts/keyring-test.sh
scripts/conformance.sh
scripts/fuzz.sh       # every fuzz target for 20 s (a longer run: scripts/fuzz.sh TARGET SECONDS)
