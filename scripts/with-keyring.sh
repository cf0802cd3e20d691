#!/usr/bin/env bash
# Runs a command inside a private D-Bus session whose Secret Service (the OS keyring) is
# gnome-keyring, unlocked with a throwaway password and keeping its keyring in a temporary
# directory: nothing touches the user's own keyring or session.
#
#   scripts/with-keyring.sh COMMAND [ARG...]
#
# (dbus, gnome-keyring and libsecret-tools come from scripts/install-test-deps.sh.)
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
for tool in dbus-run-session gnome-keyring-daemon secret-tool; do
  command -v "$tool" >/dev/null || { echo "with-keyring: $tool missing; run scripts/install-test-deps.sh" >&2; exit 1; }
done
SESSION="$(mktemp -d)"
trap 'rm -rf "$SESSION"' EXIT
mkdir -m 700 "$SESSION/run" "$SESSION/data"
export XDG_RUNTIME_DIR="$SESSION/run" XDG_DATA_HOME="$SESSION/data"
# --unlock creates and unlocks the "login" keyring (the default collection) with the
# password from stdin; --start makes the daemon own org.freedesktop.secrets at once.
dbus-run-session -- bash -euo pipefail -c '
  printf throwaway | gnome-keyring-daemon --unlock --components=secrets >/dev/null
  gnome-keyring-daemon --start --components=secrets >/dev/null
  exec "$@"' with-keyring "$@"
