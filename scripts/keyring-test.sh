#!/usr/bin/env bash
# The tests that need a real OS keyring (they are #[ignore]d in a plain `cargo test`): runs
# them with --ignored inside a private gnome-keyring session (scripts/with-keyring.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
cargo test -q --locked -p mcp-host-auth --test keyring --no-run
cargo test -q --locked -p mcp-host --features hosted --test all --no-run
scripts/with-keyring.sh bash -euo pipefail -c '
  cargo test -q --locked -p mcp-host-auth --test keyring -- --ignored
  cargo test -q --locked -p mcp-host --features hosted --test all -- --ignored oauth::'
echo "keyring-test: passed"
