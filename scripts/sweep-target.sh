#!/usr/bin/env bash
# Keeps a build cache outside the clone (CI's $CARGO_TARGET_DIR) from filling the disk.
# Cargo never deletes an artefact: every change to a crate's dependencies or features leaves
# the old test binaries and libraries (100-400 MB each) beside the new ones, in the debug,
# simulation, fuzz and release folders alike. One day's changes to the workspace's
# dependency graph grew one machine's cache to 61 GB and ran a CI run out of disk.
#
#   scripts/sweep-target.sh DIR [DAYS]
#     deletes the compiled files no build or test has read for DAYS days (2), by access
#     time (ext4's default `relatime` still updates it at least once a day), and empty
#     folders left under `incremental`;
#   scripts/sweep-target.sh DIR --ours-older-than FILE
#     deletes the workspace's own compiled files (our libraries, and the test and program
#     executables) older than FILE. A run from a fresh clone rebuilds every one of ours it
#     uses, so at its end an older one belongs to another dependency graph.
#
# Cargo rebuilds a deleted file that turns out to be needed (a missing output makes its unit
# stale), so a wrong guess costs build time, never a wrong result. The fuzz corpus, build
# scripts' outputs and fingerprints are kept.
set -euo pipefail
DIR="${1:?usage: scripts/sweep-target.sh DIR [DAYS | --ours-older-than FILE]}"
[ -d "$DIR" ] || exit 0
before=$(du -sm "$DIR" | cut -f1)
if [ "${2:-}" = "--ours-older-than" ]; then
  MARK="${3:?--ours-older-than needs a file}"
  # Ours: `libmcp_host*`/`mcp_host*` files, and executables (no extension: tests, programs).
  find "$DIR" -type f -path '*/deps/*' ! -newer "$MARK" \
    \( -name 'libmcp_host*' -o -name 'mcp_host*' -o ! -name '*.*' \) -delete
  what="our files older than this run"
else
  DAYS="${2:-2}"
  # find's -atime +N means at least N+1 whole days.
  find "$DIR" -type f \( -path '*/deps/*' -o -path '*/incremental/*' \) \
    -atime +"$((DAYS - 1))" -delete
  what="files unread for $DAYS days"
fi
find "$DIR" -mindepth 2 -path '*/incremental/*' -type d -empty -delete
after=$(du -sm "$DIR" | cut -f1)
echo "sweep-target: $DIR $before MB -> $after MB ($what removed)"
