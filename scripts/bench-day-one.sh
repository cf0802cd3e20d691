#!/usr/bin/env bash
# Wall time of the commands a newcomer runs first, with the seven real servers of the interop
# set (everything, filesystem, memory, time, fetch, git, fastmcp) configured: `servers`,
# `call SERVER TOOL`, `call SERVER__TOOL`, `policy explain SERVER__TOOL`, `doctor time`, and a
# server that exits at once. Median of RUNS (default 5) runs each, as a markdown table.
# Compare two builds in the same run: BEFORE=path/to/old/mcp-host scripts/bench-day-one.sh
# (default AFTER: this checkout's release build). Needs scripts/install-test-deps.sh first.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS="${MCP_HOST_DEPS:-$HOME/.cache/mcp-host-deps}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
if [ -z "${AFTER:-}" ]; then
  (cd "$ROOT" && cargo build --release --locked -q -p mcp-host)
  AFTER="$TARGET/release/mcp-host"
fi
[ -x "$DEPS/venv/bin/mcp-server-time" ] || { echo "run scripts/install-test-deps.sh first" >&2; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
. "$ROOT/scripts/seven-servers.sh"
scratch_home "$WORK"
write_seven_servers "$WORK/seven.json"
cat >"$WORK/exits.json" <<JSON
{"mcpServers": {"git-bad": {"command": "$DEPS/venv/bin/mcp-server-git", "args": ["--repository", "/nonexistent/repo"]}}}
JSON

python3 - "$WORK" "$AFTER" "${BEFORE:-}" "${RUNS:-5}" <<'PY'
import os, statistics, subprocess, sys, time
work, after, before, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
seven = ["--strict-mcp-config", "--mcp-config", f"{work}/seven.json"]
cases = [
    ("servers (7 servers)", ["servers"] + seven),
    ("call time get_current_time", ["call", "time", "get_current_time", "--args", '{"timezone":"UTC"}'] + seven),
    ("call time__get_current_time", ["call", "time__get_current_time", "--args", '{"timezone":"UTC"}'] + seven),
    ("policy explain time__get_current_time", ["policy", "explain", "time__get_current_time"] + seven),
    ("doctor time", ["doctor", "time"] + seven),
    ("servers, one server that exits at once", ["servers", "--strict-mcp-config", "--mcp-config", f"{work}/exits.json"]),
]
builds = [("after", after)] + ([("before", before)] if before else [])
def timed(binary, args):
    t = time.monotonic()
    subprocess.run([binary] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t
head = "| command | " + " | ".join(f"{b} (s)" for b, _ in builds) + (" | before / after |" if before else " |")
print(head)
print("|" + "---|" * (len(builds) + 1 + (1 if before else 0)))
for name, args in cases:
    if not os.access(builds[-1][1], os.X_OK):
        break
    medians = []
    for _, binary in builds:
        # A command the old build does not have (doctor) shows as "-".
        probe = subprocess.run([binary, args[0], "--help"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if probe.returncode != 0:
            medians.append(None)
            continue
        timed(binary, args)  # warm the servers' own caches (npx, uv, pyc)
        medians.append(statistics.median(timed(binary, args) for _ in range(runs)))
    cells = ["-" if m is None else f"{m:.2f}" for m in medians]
    ratio = ""
    if before:
        ratio = " | " + ("-" if None in medians else f"{medians[1] / medians[0]:.1f}×")
    print(f"| {name} | " + " | ".join(cells) + ratio + " |")
PY
