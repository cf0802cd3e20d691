#!/usr/bin/env bash
# Keeps a build cache outside the clone (CI's $CARGO_TARGET_DIR) from growing without end.
# Cargo never deletes an artefact: every change to a crate's dependencies or features leaves
# its old test binaries and libraries (100-400 MB each) beside the new ones, and one
# machine's cache reached 47 GB. This deletes the compiled files no build or test has read
# for two days or more (by access time, which ext4's default `relatime` still updates at
# least once a day), and empty folders left under `incremental`. Cargo rebuilds a deleted
# file that turns out to be needed (a missing output makes its unit stale), so the cost of a
# wrong guess is build time, never a wrong result. The fuzz corpus, build scripts' outputs
# and fingerprints are kept.
#
#   scripts/sweep-target.sh DIR [DAYS]    DAYS: unread for at least this many days (2)
set -euo pipefail
DIR="${1:?usage: scripts/sweep-target.sh DIR [DAYS]}"
DAYS="${2:-2}"
[ -d "$DIR" ] || exit 0
before=$(du -sm "$DIR" | cut -f1)
# find's -atime +N means at least N+1 whole days.
find "$DIR" -type f \( -path '*/deps/*' -o -path '*/incremental/*' \) \
  -atime +"$((DAYS - 1))" -delete
find "$DIR" -mindepth 2 -path '*/incremental/*' -type d -empty -delete
after=$(du -sm "$DIR" | cut -f1)
echo "sweep-target: $DIR $before MB -> $after MB (files unread for $DAYS days removed)"
