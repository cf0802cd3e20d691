#!/usr/bin/env bash
# What the symbol names of the release binary hang on besides our source: the toolchain,
# the release profile, and the binary's dependency graph with each package's version and
# features (a crate's metadata, and so the hash in each of its symbols, hashes its profile
# and its dependencies' metadata). scripts/order-functions.sh records it beside the lists it
# makes (crates/cli/link/fingerprint.txt); with --check this fails when the recorded one is
# not this checkout's, because the lists then name functions the build no longer has and
# the linker skips them without a word (peak RSS with seven servers went 11 -> 21 MiB).
#   scripts/link-order-fingerprint.sh           prints it
#   scripts/link-order-fingerprint.sh --check   compares it with the recorded one
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RECORDED="$ROOT/crates/cli/link/fingerprint.txt"

fingerprint() {
  local graph
  # Depth-prefixed, so each package's own dependencies are part of it, not only the set of
  # packages; paths made relative, as cargo's own metadata for a path package is.
  graph="$(cd "$ROOT" && cargo tree --locked -q -p mcp-host --edges normal,build \
    --target x86_64-unknown-linux-gnu --prefix depth -f '{p} [{f}]' | sed "s|$ROOT|.|g")"
  echo "rustc $(rustc -vV | sed -n 's/^release: //p')"
  python3 - "$ROOT/Cargo.toml" <<'PY'
import hashlib, json, sys, tomllib
profile = tomllib.load(open(sys.argv[1], "rb")).get("profile", {})
print("profile", hashlib.sha256(json.dumps(profile, sort_keys=True).encode()).hexdigest())
PY
  echo "graph $(printf '%s\n' "$graph" | sha256sum | cut -d' ' -f1)"
}

if [ "${1:-}" = "--check" ]; then
  now="$(fingerprint)"
  if [ "$now" != "$(cat "$RECORDED" 2>/dev/null)" ]; then
    echo "error: crates/cli/link/*-functions.txt were made for another toolchain, release" >&2
    echo "profile or dependency graph, so the release binary would be linked with its code" >&2
    echo "scattered (about twice the memory): run scripts/order-functions.sh." >&2
    diff <(cat "$RECORDED" 2>/dev/null) <(printf '%s\n' "$now") >&2 || true
    exit 1
  fi
  echo "link order lists: made for this toolchain, profile and dependency graph"
else
  fingerprint
fi
