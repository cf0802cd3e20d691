#!/usr/bin/env bash
# A conformance-suite client made of the real CLI. The suite passes the server URL as the
# last argument, the scenario in MCP_CONFORMANCE_SCENARIO and its credentials in
# MCP_CONFORMANCE_CONTEXT (JSON).
# - A person's sign-in (the auth/* scenarios but the client_credentials ones): writes a
#   config for the suite's server, signs in with `mcp-host auth login` (the "browser" is
#   scripts/headless-browser.py), then calls the suite's tool with `mcp-host call`, which
#   uses the stored credential. When the call fails for want of a sign-in (a step-up to more
#   scope, an authorization server that moved), the script does what the error says, as a
#   person would: it runs the `mcp-host auth login` command the error names, then calls again.
# - Machine to machine (auth/client-credentials-*, SEP-990's auth/cross-app-access-* and
#   SEP-1933's auth/wif-*): the config's `oauth` block carries the grant and the client
#   id, with the private key file, the identity provider with an ID token file and the
#   secret as `${VAR}` from the environment, or the workload's JWT file; the plain client secret is kept in the
#   credential store with `mcp-host auth set-secret` instead. `mcp-host call` alone then
#   gets the token.
# - Without auth: `initialize` is `mcp-host servers` (connect and list); the others call
#   the suite's tools with `mcp-host call` (sep-2322-*'s input requests two at once,
#   elicitation with the config's `elicitationDefaults`).
# - A person's sign-in takes the pre-registered client (`auth/pre-registration`) and the
#   client metadata document URL (`auth/basic-cimd`) from the config's `oauth` block, the
#   secret through the environment.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HOST="${CARGO_TARGET_DIR:-$ROOT/target}/debug/mcp-host"
URL="${*: -1}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export HOME="$WORK" XDG_DATA_HOME="$WORK/data" XDG_CONFIG_HOME="$WORK/config"
CFG=(--strict-mcp-config --mcp-config "$WORK/servers.json")
case "${MCP_CONFORMANCE_SCENARIO:-}" in
  auth/client-credentials-*|auth/cross-app-access-*|auth/wif-*)
    # The secret goes through the environment, never into the file.
    export MCP_TEST_CLIENT_SECRET
    MCP_TEST_CLIENT_SECRET="$(python3 -c 'import json,os; print(json.loads(os.environ["MCP_CONFORMANCE_CONTEXT"]).get("client_secret", ""))')"
    python3 - "$URL" "$WORK" <<'PY'
import json, os, sys
url, work = sys.argv[1], sys.argv[2]
ctx = json.loads(os.environ["MCP_CONFORMANCE_CONTEXT"])
def private_file(name, text):
    path = os.path.join(work, name)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(text)
    return path
oauth = {"grant": "client_credentials", "clientId": ctx["client_id"]}
if "valid_jwt" in ctx:
    oauth["grant"] = "workload_identity"
    oauth["assertionFile"] = private_file("workload.jwt", ctx["valid_jwt"])
elif "idp_id_token" in ctx:
    oauth["grant"] = "identity_assertion"
    oauth["clientSecret"] = "${MCP_TEST_CLIENT_SECRET}"
    oauth["identityProvider"] = {
        "tokenEndpoint": ctx["idp_token_endpoint"],
        "clientId": ctx["idp_client_id"],
        "idTokenFile": private_file("id-token", ctx["idp_id_token"]),
    }
elif "private_key_pem" in ctx:
    oauth["privateKeyFile"] = private_file("client-key.pem", ctx["private_key_pem"])
    oauth["signingAlgorithm"] = ctx.get("signing_algorithm", "ES256")
with open(os.path.join(work, "servers.json"), "w") as f:
    json.dump({"mcpServers": {"s": {"type": "http", "url": url, "oauth": oauth}}}, f)
PY
    if ! grep -q '"privateKeyFile"\|"identityProvider"\|"assertionFile"' "$WORK/servers.json"; then
      printf '%s\n' "$MCP_TEST_CLIENT_SECRET" | "$HOST" auth set-secret s "${CFG[@]}"
    fi
    ;;
  initialize|tools_call|sse-retry|elicitation-*)
    printf '{"mcpServers": {"s": {"type": "http", "url": "%s", "elicitationDefaults": true}}}\n' "$URL" >"$WORK/servers.json"
    case "$MCP_CONFORMANCE_SCENARIO" in
      initialize) "$HOST" servers "${CFG[@]}" ;;
      tools_call) "$HOST" call s add_numbers --args '{"a": 5, "b": 3}' "${CFG[@]}" ;;
      sse-retry) "$HOST" call s test_reconnection "${CFG[@]}" ;;
      *) "$HOST" call s test_client_elicitation_defaults "${CFG[@]}" ;;
    esac
    exit $?
    ;;
  sep-2322-*)
    printf '{"mcpServers": {"s": {"type": "http", "url": "%s", "elicitationDefaults": true}}}\n' "$URL" >"$WORK/servers.json"
    "$HOST" call s test_mrtr_echo_state "${CFG[@]}" & a=$!
    "$HOST" call s test_mrtr_unrelated "${CFG[@]}" & b=$!
    wait "$a"; wait "$b"
    "$HOST" call s test_mrtr_no_state "${CFG[@]}"
    "$HOST" call s test_mrtr_no_result_type "${CFG[@]}"
    exit 0
    ;;
  *)
    export MCP_TEST_CLIENT_SECRET
    MCP_TEST_CLIENT_SECRET="$(python3 -c 'import json,os; print(json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}").get("client_secret", ""))')"
    python3 - "$URL" "$WORK" <<'PY'
import json, os, sys
url, work = sys.argv[1], sys.argv[2]
ctx = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
# The metadata document URL the suite's CIMD scenario accepts; used only where the
# authorization server takes such documents.
oauth = {"clientMetadataUrl": "https://conformance-test.local/client-metadata.json"}
if "client_id" in ctx:
    oauth["clientId"] = ctx["client_id"]
    if ctx.get("client_secret"):
        oauth["clientSecret"] = "${MCP_TEST_CLIENT_SECRET}"
with open(os.path.join(work, "servers.json"), "w") as f:
    json.dump({"mcpServers": {"s": {"type": "http", "url": url, "oauth": oauth}}}, f)
PY
    BROWSER="$ROOT/scripts/headless-browser.py" "$HOST" auth login s "${CFG[@]}" </dev/null
    "$HOST" auth status s "${CFG[@]}" | grep -q "signed in"
    ;;
esac
# At most three rounds, as a person would give up (auth/scope-retry-limit counts them).
for _ in 1 2 3; do
  if out="$("$HOST" call s test-tool --args '{}' "${CFG[@]}" 2>&1)"; then
    printf '%s\n' "$out"
    exit 0
  fi
  printf '%s\n' "$out" >&2
  # The command the error names, run as written (it names this server and its scope).
  login="$(grep -o 'run `mcp-host auth login s[^`]*`' <<<"$out" | head -1 | sed 's/^run `mcp-host //; s/`$//')" || true
  [ -n "$login" ] || exit 1
  eval "set -- $login"
  BROWSER="$ROOT/scripts/headless-browser.py" "$HOST" "$@" "${CFG[@]}" </dev/null
done
exit 1
