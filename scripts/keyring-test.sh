#!/usr/bin/env bash
# The tests that need a real OS keyring: starts a private D-Bus session with gnome-keyring
# (its Secret Service), unlocked with a throwaway password and keeping its keyring in a
# temporary directory, then runs the ignored keyring tests inside it. Nothing touches the
# user's own keyring or session. (gnome-keyring, dbus and libsecret-tools come from
# scripts/install-test-deps.sh.)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
for tool in dbus-run-session gnome-keyring-daemon secret-tool; do
  command -v "$tool" >/dev/null || { echo "keyring-test: $tool missing; run scripts/install-test-deps.sh" >&2; exit 1; }
done
cargo test -q --locked -p mcp-host-store --test keyring --no-run
cargo test -q --locked -p mcp-host --test oauth --no-run
SESSION="$(mktemp -d)"
trap 'rm -rf "$SESSION"' EXIT
mkdir -m 700 "$SESSION/run" "$SESSION/data"
export XDG_RUNTIME_DIR="$SESSION/run" XDG_DATA_HOME="$SESSION/data"
dbus-run-session -- bash -euo pipefail -c '
  # --unlock creates and unlocks the "login" keyring (the default collection) with the
  # password from stdin; --start makes the daemon own org.freedesktop.secrets at once.
  printf throwaway | gnome-keyring-daemon --unlock --components=secrets >/dev/null
  gnome-keyring-daemon --start --components=secrets >/dev/null
  cargo test -q --locked -p mcp-host-store --test keyring -- --ignored
  cargo test -q --locked -p mcp-host --test oauth -- --ignored
'
echo "keyring-test: passed"
