#!/usr/bin/env bash
# End-to-end test of `mcp-host serve`'s web page in headless Chromium: starts a slow scripted
# model and `mcp-host serve --single-user` (ask mode, one fake MCP server `f` that may reach
# a host, so its calls need approval), then runs tests/web/e2e.mjs against the sign-in link:
# sign-in, an approval shown whole, a reload while it waits, the answer streamed through a
# real network drop, markdown and hostile text, an elicitation form, switching
# conversations, the server panel, a restart of the service under the page (SIGTERM, the
# stream's `reconnect`, started again on the same address), a question its server stops
# waiting for, and sign-out. Each SIGTERM must
# stop the service with exit 0 within a deadline. The markdown renderer's unit tests
# (tests/web/*.test.mjs, node's test runner) run first.
# Needs `cargo build --workspace --bins --features mcp-host/hosted` and scripts/install-test-deps.sh (playwright-core,
# chromium). Screenshots: $MCP_HOST_ARTEFACTS (default $CARGO_TARGET_DIR/web-e2e).
# Last line: "web-e2e: N passed, N failed".
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
DEPS="${MCP_HOST_DEPS:-$HOME/.cache/mcp-host-deps}"
BIN="$TARGET/debug"
PLAYWRIGHT="$DEPS/web/node_modules/playwright-core"
ARTEFACTS="${MCP_HOST_ARTEFACTS:-$TARGET/web-e2e}"

die() { echo "web-e2e: $*" >&2; echo "web-e2e: 0 passed, 1 failed"; exit 1; }
for b in mcp-host mcp-fake-server mcp-fake-model; do
  [ -x "$BIN/$b" ] || die "$BIN/$b is missing: run cargo build --workspace --bins --features mcp-host/hosted first"
done
[ -f "$PLAYWRIGHT/package.json" ] || die "playwright-core is missing at $PLAYWRIGHT: run scripts/install-test-deps.sh"
[ -x /usr/bin/chromium ] || die "/usr/bin/chromium is missing: run scripts/install-test-deps.sh"
command -v node >/dev/null || die "node is missing"

mkdir -p "$ARTEFACTS"
rm -f "$ARTEFACTS"/step-*.png "$ARTEFACTS"/serve.log
WORK="$(mktemp -d)"
MODEL_PID=""
SERVE_PID=""
NODE_PID=""

# Waits at most $1 seconds until process $2 has exited; 0 if it did.
wait_gone() {
  local until=$((SECONDS + $1))
  while [ $SECONDS -lt $until ]; do
    kill -0 "$2" 2>/dev/null || return 0
    sleep 0.1
  done
  ! kill -0 "$2" 2>/dev/null
}

cleanup() {
  # Playwright closes its browser on SIGTERM.
  if [ -n "$NODE_PID" ]; then
    kill -TERM "$NODE_PID" 2>/dev/null || true
    wait_gone 10 "$NODE_PID" || kill -KILL "$NODE_PID" 2>/dev/null || true
  fi
  if [ -n "$SERVE_PID" ] && kill -0 "$SERVE_PID" 2>/dev/null; then
    kill -TERM "$SERVE_PID" 2>/dev/null || true
    wait_gone 15 "$SERVE_PID" || kill -KILL "$SERVE_PID" 2>/dev/null || true
  fi
  if [ -n "$MODEL_PID" ]; then
    kill "$MODEL_PID" 2>/dev/null || true
  fi
  if [ -f "$WORK/serve.err" ]; then cp "$WORK/serve.err" "$ARTEFACTS/serve.log" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# The model: slow, so an answer streams while the test drops the network.
"$BIN/mcp-fake-model" --delay-ms 150 >"$WORK/model.out" 2>"$WORK/model.err" &
MODEL_PID=$!
until_t=$((SECONDS + 15))
MODEL_URL=""
while [ $SECONDS -lt $until_t ]; do
  MODEL_URL="$(sed -n '1s/^listening on //p' "$WORK/model.out" 2>/dev/null || true)"
  [ -n "$MODEL_URL" ] && break
  kill -0 "$MODEL_PID" 2>/dev/null || die "the fake model exited: $(cat "$WORK/model.err")"
  sleep 0.05
done
[ -n "$MODEL_URL" ] || die "the fake model did not say where it listens within 15 s"

# The catalogue: one fake server, allowed one host so it is not sealed (its calls are asked).
node -e '
  const [file, command] = process.argv.slice(1);
  const catalogue = { mcpServers: { f: { command, args: [], sandbox: { network: { allow: ["example.invalid:443"] } } } } };
  require("fs").writeFileSync(file, JSON.stringify(catalogue, null, 2));
' "$WORK/catalogue.json" "$BIN/mcp-fake-server"

mkdir -p "$WORK/data" "$WORK/config" "$WORK/control"
# Starts the service listening on $1 (its log appended to serve.err).
start_serve() {
  HOME="$WORK" XDG_DATA_HOME="$WORK/data" XDG_CONFIG_HOME="$WORK/config" \
    "$BIN/mcp-host" serve --single-user --listen "$1" --catalogue "$WORK/catalogue.json" \
    --data-dir "$WORK/serve" -m openai-compatible:fake --base-url "$MODEL_URL" --drain 10 \
    >>"$WORK/serve.out" 2>>"$WORK/serve.err" &
  SERVE_PID=$!
}
# Waits at most 30 s for the service to print its sign-in link (the $1-th one in the log).
wait_signin() {
  local until_t=$((SECONDS + 30)) link=""
  while [ $SECONDS -lt $until_t ]; do
    link="$(grep -o 'sign in: http://[^ ]*' "$WORK/serve.err" 2>/dev/null | sed -n "${1}s/^sign in: //p" || true)"
    [ -n "$link" ] && { echo "$link"; return 0; }
    kill -0 "$SERVE_PID" 2>/dev/null || { echo "mcp-host serve exited before it printed a sign-in link: $(tail -20 "$WORK/serve.err")" >&2; return 1; }
    sleep 0.1
  done
  echo "mcp-host serve printed no sign-in link within 30 s: $(tail -20 "$WORK/serve.err")" >&2
  return 1
}
# SIGTERM: the service drains and must exit 0 within 40 s. Counts a pass or a failure.
stop_serve() { # what
  kill -TERM "$SERVE_PID" 2>/dev/null || true
  if wait_gone 40 "$SERVE_PID"; then
    local rc=0
    wait "$SERVE_PID" || rc=$?
    SERVE_PID=""
    if [ "$rc" -eq 0 ]; then
      passed=$((passed + 1)); echo "PASS SIGTERM stops the service with exit 0 ($1)"
    else
      failed=$((failed + 1)); echo "FAIL after SIGTERM the service exited $rc ($1)"
      tail -20 "$WORK/serve.err" | sed 's/^/  | /'
    fi
  else
    failed=$((failed + 1)); echo "FAIL the service did not exit within 40 s of SIGTERM ($1)"
  fi
}

passed=0
failed=0
start_serve 127.0.0.1:0
SIGNIN="$(wait_signin 1)" || die "cannot start the service"
LISTEN="${SIGNIN#http://}"
LISTEN="${LISTEN%%/*}"

# The markdown renderer on hostile text first (plain node, no browser).
if timeout 120 node --test tests/web/ >"$WORK/unit.out" 2>&1; then
  passed=$((passed + 1)); echo "PASS the markdown renderer's unit tests ($(grep -m1 '^# pass' "$WORK/unit.out" | sed 's/^# //'))"
else
  failed=$((failed + 1)); echo "FAIL the markdown renderer's unit tests"; sed 's/^/  | /' "$WORK/unit.out" | tail -40
fi

# The browser test. When it asks (a file `restart` in the control folder), the service is
# stopped with SIGTERM and started again on the same address and data (it answers
# `restarted` or `restart-failed`), so the page's handling of `reconnect` is tested for real.
MCP_HOST_ARTEFACTS="$ARTEFACTS" PLAYWRIGHT_CORE="$PLAYWRIGHT" MCP_HOST_E2E_CONTROL="$WORK/control" \
  node tests/web/e2e.mjs "$SIGNIN" >"$WORK/e2e.out" 2>&1 &
NODE_PID=$!
tail -n +1 -f "$WORK/e2e.out" --pid "$NODE_PID" &
TAIL_PID=$!
until_t=$((SECONDS + 300))
while kill -0 "$NODE_PID" 2>/dev/null && [ $SECONDS -lt $until_t ]; do
  if [ -f "$WORK/control/restart" ]; then
    rm -f "$WORK/control/restart"
    stop_serve "restart, first run"
    start_serve "$LISTEN"
    if wait_signin 2 >/dev/null; then touch "$WORK/control/restarted"; else touch "$WORK/control/restart-failed"; fi
  fi
  sleep 0.1
done
status=0
if kill -0 "$NODE_PID" 2>/dev/null; then
  kill -TERM "$NODE_PID" 2>/dev/null || true
  wait_gone 10 "$NODE_PID" || kill -KILL "$NODE_PID" 2>/dev/null || true
  echo "FAIL the browser test did not finish within 300 s"
fi
wait "$NODE_PID" || status=$?
NODE_PID=""
wait "$TAIL_PID" 2>/dev/null || true
passed=$((passed + $(grep -c '^PASS ' "$WORK/e2e.out" || true)))
if [ "$status" -ne 0 ]; then
  failed=$((failed + 1))
  echo "  service log (last 30 lines):"
  tail -30 "$WORK/serve.err" | sed 's/^/  | /'
fi

stop_serve "end"

echo "screenshots and the service log: $ARTEFACTS"
echo "web-e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
