#!/usr/bin/env bash
# Runs client scenarios of the official MCP conformance suite (0.1.16, installed by
# scripts/install-test-deps.sh, on Node 22) against mcp-host-conformance, one at a time.
# A scenario passes only when the suite exits 0 and its checks.json has at least one SUCCESS
# and no FAILURE or WARNING (the suite alone reports "passed" for a client that never
# connected). Last line: "conformance: N passed, N failed".
#
#   scripts/conformance.sh [SCENARIO...]     default: every scenario in DEFAULT below
#
# A scenario written `cli:NAME` runs NAME with the real CLI as the client instead
# (scripts/auth-login-client.sh: `mcp-host auth login` through a stand-in browser, then
# `mcp-host call` with the stored credential; for client_credentials, the grant, secret or
# private key file in the config's `oauth` block, then `mcp-host call`).
#
# auth/scope-retry-limit and auth/resource-mismatch pass with the driver exiting non-zero:
# refusing is the expected outcome there, and the suite allows it.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS="${MCP_HOST_DEPS:-$HOME/.cache/mcp-host-deps}"
DRIVER="${CARGO_TARGET_DIR:-$ROOT/target}/debug/mcp-host-conformance"
[ -x "$DRIVER" ] || (cd "$ROOT" && cargo build -q -p mcp-host-conformance) || exit 1
NODE22="$DEPS/node22/node_modules/.bin/node"
SUITE="$DEPS/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -x "$NODE22" ] && [ -f "$SUITE" ] || { echo "run scripts/install-test-deps.sh first" >&2; exit 1; }

DEFAULT=(
  initialize tools_call sse-retry elicitation-sep1034-client-defaults
  auth/metadata-default auth/metadata-var1 auth/metadata-var2 auth/metadata-var3
  auth/basic-cimd auth/pre-registration
  auth/scope-from-www-authenticate auth/scope-from-scopes-supported
  auth/scope-omitted-when-undefined auth/scope-step-up auth/scope-retry-limit
  auth/token-endpoint-auth-basic auth/token-endpoint-auth-post auth/token-endpoint-auth-none
  auth/2025-03-26-oauth-metadata-backcompat auth/2025-03-26-oauth-endpoint-fallback
  auth/resource-mismatch auth/offline-access-scope auth/offline-access-not-supported
  auth/client-credentials-basic auth/client-credentials-jwt
  auth/cross-app-access-complete-flow
  cli:auth/metadata-default cli:auth/scope-from-www-authenticate
  cli:auth/client-credentials-basic cli:auth/client-credentials-jwt
  cli:auth/cross-app-access-complete-flow
)
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=("${DEFAULT[@]}")
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
pass=0; fail=0
for entry in "${SCENARIOS[@]}"; do
  s="${entry#cli:}"
  client="$DRIVER"
  [ "$s" != "$entry" ] && client="$ROOT/scripts/auth-login-client.sh"
  rm -rf "$OUT/$s"-*/
  log="$OUT/${entry//[\/:]/_}.log"   # cli:auth/x -> cli_auth_x.log
  "$NODE22" "$SUITE" client --command "$client" --scenario "$s" --timeout 30000 -o "$OUT" >"$log" 2>&1
  rc=$?
  checks="$(ls -td "$OUT/$s"-*/ 2>/dev/null | head -1)checks.json"
  read -r ok bad warn < <(python3 - "$checks" <<'PY'
import json, sys
try:
    st = [c.get("status") for c in json.load(open(sys.argv[1]))]
except Exception:
    st = []
print(st.count("SUCCESS"), st.count("FAILURE"), st.count("WARNING"))
PY
)
  if [ "$rc" = 0 ] && [ "$ok" -gt 0 ] && [ "$bad" = 0 ] && [ "$warn" = 0 ]; then
    pass=$((pass+1)); echo "PASS $entry ($ok checks)"
  else
    fail=$((fail+1)); echo "FAIL $entry (exit $rc; $ok ok, $bad failed, $warn warnings)"
    sed 's/^/  /' "$log" | tail -20
  fi
done
echo "conformance: $pass passed, $fail failed"
[ "$fail" = 0 ]
