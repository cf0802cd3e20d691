#!/usr/bin/env bash
# Runs client scenarios of the official MCP conformance suite against mcp-host-conformance,
# one at a time: 0.1.16 and, for entries written `next:NAME`, 0.2.0-alpha.12 with the
# 2026-07-28 scenarios (both installed by scripts/install-test-deps.sh, on Node 22).
# A scenario passes only when the suite exits 0 and its checks.json has at least one SUCCESS
# and no FAILURE or WARNING (the suite alone reports "passed" for a client that never
# connected). Last line: "conformance: N passed, N failed".
#
#   scripts/conformance.sh [SCENARIO...]     default: every scenario in DEFAULT below
#
# A scenario written `cli:NAME` (or `next:cli:NAME`) runs NAME with the real CLI as the
# client instead (scripts/cli-client.sh: `mcp-host auth login` through a stand-in browser,
# then `mcp-host call` with the stored credential, following the login command a refused
# call names; for client_credentials and workload identity, the grant, secret, key or JWT
# file in the config's `oauth` block, then `mcp-host call`; for input requests, the calls).
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
NEXT_SUITE="$DEPS/conformance-next/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -x "$NODE22" ] && [ -f "$SUITE" ] && [ -f "$NEXT_SUITE" ] || { echo "run scripts/install-test-deps.sh first" >&2; exit 1; }

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
  # The same 26 through the real CLI.
  cli:initialize cli:tools_call cli:sse-retry cli:elicitation-sep1034-client-defaults
  cli:auth/metadata-default cli:auth/metadata-var1 cli:auth/metadata-var2
  cli:auth/metadata-var3 cli:auth/basic-cimd cli:auth/pre-registration
  cli:auth/scope-from-www-authenticate cli:auth/scope-from-scopes-supported
  cli:auth/scope-omitted-when-undefined cli:auth/scope-step-up cli:auth/scope-retry-limit
  cli:auth/token-endpoint-auth-basic cli:auth/token-endpoint-auth-post
  cli:auth/token-endpoint-auth-none cli:auth/2025-03-26-oauth-metadata-backcompat
  cli:auth/2025-03-26-oauth-endpoint-fallback cli:auth/resource-mismatch
  cli:auth/offline-access-scope cli:auth/offline-access-not-supported
  cli:auth/client-credentials-basic cli:auth/client-credentials-jwt
  cli:auth/cross-app-access-complete-flow
  # 0.2.0-alpha.12: every scenario the 2026-07-28 revision requires (`--requirements
  # 2026-07-28`), the extensions this host implements, and through the CLI the ones that
  # need more than a connection.
  next:tools_call next:request-metadata next:http-standard-headers next:http-custom-headers
  next:http-invalid-tool-headers next:json-schema-ref-no-deref
  next:json-schema-2020-12-preservation next:sep-2322-client-request-state
  next:auth/metadata-default next:auth/metadata-var1 next:auth/metadata-var2
  next:auth/metadata-var3 next:auth/basic-cimd next:auth/scope-from-www-authenticate
  next:auth/scope-from-scopes-supported next:auth/scope-omitted-when-undefined
  next:auth/scope-step-up next:auth/scope-retry-limit next:auth/token-endpoint-auth-basic
  next:auth/token-endpoint-auth-post next:auth/token-endpoint-auth-none
  next:auth/pre-registration next:auth/resource-mismatch next:auth/offline-access-scope
  next:auth/offline-access-not-supported next:auth/authorization-server-migration
  next:auth/iss-supported next:auth/iss-not-advertised next:auth/iss-supported-missing
  next:auth/iss-wrong-issuer next:auth/iss-unexpected next:auth/iss-normalized
  next:auth/metadata-issuer-mismatch
  next:auth/client-credentials-jwt next:auth/client-credentials-basic next:auth/wif-jwt-bearer
  next:auth/dpop next:auth/dpop-nonce
  next:cli:sep-2322-client-request-state next:cli:auth/scope-step-up
  next:cli:auth/authorization-server-migration next:cli:auth/wif-jwt-bearer
  next:cli:auth/dpop next:cli:auth/dpop-nonce
)
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=("${DEFAULT[@]}")
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
pass=0; fail=0
for entry in "${SCENARIOS[@]}"; do
  s="${entry#next:}"
  suite="$SUITE"
  [ "$s" != "$entry" ] && suite="$NEXT_SUITE"
  name="$s"
  s="${s#cli:}"
  client="$DRIVER"
  [ "$s" != "$name" ] && client="$ROOT/scripts/cli-client.sh"
  rm -rf "$OUT/$s"-*/
  log="$OUT/${entry//[\/:]/_}.log"   # cli:auth/x -> cli_auth_x.log
  "$NODE22" "$suite" client --command "$client" --scenario "$s" --timeout 30000 -o "$OUT" >"$log" 2>&1
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
