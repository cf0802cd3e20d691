#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo fuzz, libFuzzer) of every parser of untrusted input:
#
#   scripts/fuzz.sh                   every target for 20 s (what CI runs)
#   scripts/fuzz.sh TARGET [SECONDS]  one target, for SECONDS (default 300)
#   scripts/fuzz.sh all SECONDS       every target for SECONDS each
#
# Targets are in fuzz/fuzz_targets/; their seed corpora in fuzz/corpus/TARGET (committed;
# what a run learns goes to $CARGO_TARGET_DIR/fuzz-corpus/TARGET, so the tree stays clean).
# A crash is written to fuzz/artifacts/TARGET/: minimise it with
# `cargo fuzz tmin -s none TARGET FILE`, fix it, and add it as a regression test (see
# docs/fuzzing.md). Built on the stable toolchain: `-s none` needs no sanitizer runtime.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-host-target}/fuzz"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked --version 0.13.2
TARGETS=$(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^mcp-host-fuzz$')
which="${1:-all}"
seconds="${2:-}"
if [ "$which" = "all" ]; then
  seconds="${seconds:-20}"
else
  grep -qx "$which" <<<"$TARGETS" || { echo "fuzz.sh: no target $which (targets: $(echo $TARGETS))" >&2; exit 2; }
  TARGETS="$which"
  seconds="${seconds:-300}"
fi
(cd fuzz && cargo fuzz build -s none)
for t in $TARGETS; do
  learned="$CARGO_TARGET_DIR/fuzz-corpus/$t"
  mkdir -p "$learned" "fuzz/corpus/$t"
  echo "fuzz.sh: $t for ${seconds}s"
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb: a runaway allocation.
  (cd fuzz && cargo fuzz run -s none "$t" "$learned" "corpus/$t" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 2>&1 | grep -E "^(stat::number_of_executed_units|stat::peak_rss|Done|==|SUMMARY|thread|panicked|Failing|Test unit)" || true)
  # libFuzzer exits non-zero on a finding; the pipe above hides it, the artifact does not.
  if compgen -G "fuzz/artifacts/$t/*" >/dev/null; then
    echo "fuzz.sh: $t found a failure: $(ls fuzz/artifacts/$t/)" >&2
    exit 1
  fi
done
echo "fuzz.sh: no failures"
