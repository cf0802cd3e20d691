#!/usr/bin/env bash
# End-to-end test of the interactive host, driven through tmux like a person would: a turn
# against a fake model (Chat Completions wire format) and a real server (mcp-server-time from
# PyPI), an approval answered by key (a stray key first, which must approve nothing), a
# direct /call of a hostile fake server whose description and result carry terminal escape
# sequences (clear screen, window title, OSC 52 clipboard, OSC 8 link; C1 and bidi controls
# checked in the bytes the pane received), a 2026-07-28 call that asks for input twice
# (each form answered by key), and Ctrl-C twice to
# quit with every server stopped; a PreToolUse hook that denies in chat (the model's call and
# a /call), each audited once with the fields of `run` and `call`; a remote server that asks
# for more scope mid-session (the person agrees, signs in through a stand-in browser, and
# the call completes); then `auth set-secret` at a terminal (no echo, and the terminal given
# back, also on Ctrl-C). Last line: "tui-e2e: N passed, N failed".
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS="${MCP_HOST_DEPS:-$HOME/.cache/mcp-host-deps}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
HOST="$TARGET/debug/mcp-host"
FAKE="$TARGET/debug/mcp-fake-server"
FAKE_OAUTH="$TARGET/debug/mcp-fake-oauth"
[ -x "$HOST" ] && [ -x "$FAKE" ] && [ -x "$FAKE_OAUTH" ] || (cd "$ROOT" && cargo build -q -p mcp-host -p mcp-host-testkit) || exit 1
[ -x "$DEPS/venv/bin/mcp-server-time" ] || { echo "run scripts/install-test-deps.sh first" >&2; exit 1; }
command -v tmux >/dev/null || { echo "tmux is missing (scripts/install-test-deps.sh installs it)" >&2; exit 1; }

WORK="$(mktemp -d)"
SOCK="$WORK/tmux.sock"
T=(tmux -S "$SOCK")
MODEL_PID=""
OAUTH_PID=""
cleanup() {
  "${T[@]}" kill-server 2>/dev/null
  [ -n "$MODEL_PID" ] && kill "$MODEL_PID" 2>/dev/null
  [ -n "$OAUTH_PID" ] && kill "$OAUTH_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
export HOME="$WORK/home" XDG_CONFIG_HOME="$WORK/config" XDG_DATA_HOME="$WORK/data" XDG_RUNTIME_DIR="$WORK/run"
mkdir -p "$HOME"

pass=0; fail=0
check() { # name, command...
  local name="$1"; shift
  if "$@"; then pass=$((pass+1)); echo "PASS $name"; else
    fail=$((fail+1)); echo "FAIL $name"; screen | sed 's/^/  | /'
    # What the chat logged (its stderr goes to a file while it owns the terminal).
    tail -n 40 "$XDG_DATA_HOME/mcp-host/chat-stderr.log" 2>/dev/null | sed 's/^/  log | /'
  fi
}
screen() { "${T[@]}" capture-pane -p -t e2e 2>/dev/null; }
# Waits (at most $2 seconds, default 20) until the screen contains $1.
wait_for() {
  local deadline=$((SECONDS + ${2:-20}))
  while [ $SECONDS -lt $deadline ]; do
    screen | grep -qF -- "$1" && return 0
    sleep 0.1
  done
  return 1
}

# Waits (at most 20 s) until the screen no longer contains $1.
wait_gone() {
  local deadline=$((SECONDS + 20))
  while [ $SECONDS -lt $deadline ]; do
    screen | grep -qF -- "$1" || return 0
    sleep 0.1
  done
  return 1
}

# Waits (at most 20 s) until file $2 contains $1.
wait_file() {
  local deadline=$((SECONDS + 20))
  while [ $SECONDS -lt $deadline ]; do
    grep -qF -- "$1" "$2" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

FAKE_MODEL_LOG="$WORK/model.log" python3 "$ROOT/scripts/fake_model.py" chat >"$WORK/model.port" &
MODEL_PID=$!
for _ in $(seq 1 100); do [ -s "$WORK/model.port" ] && break; sleep 0.05; done
MPORT="$(head -1 "$WORK/model.port")"

EVIL_DESC=$'Echoes.\e[2J\e]0;pwned-title\a\e]52;c;ZXZpbA==\a \e]8;;http://evil.example\e\\click here\e]8;;\e\\ done'
python3 - "$WORK/servers.json" "$DEPS/venv/bin/mcp-server-time" "$FAKE" "$EVIL_DESC" <<'PY'
import json, sys
path, time_cmd, fake, desc = sys.argv[1:]
# The time server may reach a host here: confined with nothing to write and nowhere to go it
# would be sealed, its tools read-only, and the approval this script checks never asked.
json.dump({"mcpServers": {
    "time": {"command": time_cmd, "args": ["--local-timezone", "UTC"],
             "sandbox": {"network": {"allow": ["example.test"]}}},
    "evil": {"command": fake, "args": ["--describe-echo", desc]},
    "asker": {"command": fake, "args": ["--era", "modern", "--fault", "tasks"]},
}}, open(path, "w"))
PY

# A session that outlives the others: killing the last session ends the tmux server, and a
# new-session racing that exit fails with "no server running".
"${T[@]}" new-session -d -s keepalive -x 20 -y 5 "sleep 3600"
"${T[@]}" new-session -d -s e2e -x 100 -y 30 \
  "$HOST chat -m openai-compatible:fake --base-url http://127.0.0.1:$MPORT/v1 --strict-mcp-config --mcp-config $WORK/servers.json; echo HOST-EXITED \$?; sleep 30"
"${T[@]}" set-option -t e2e set-titles on >/dev/null 2>&1

check "the host starts and every server comes up" wait_for "3/3" 30

"${T[@]}" send-keys -t e2e "what time is it?" Enter
check "the call waits for approval in a modal that says why" wait_for "Allow once"
# A stray key and Enter must not approve anything.
"${T[@]}" send-keys -t e2e "x" Enter
sleep 0.5
check "a stray key approves nothing" bash -c '! grep -q "The time is known" <<<"$1" && grep -qF "Allow once" <<<"$1"' _ "$(screen)"
# Typing turned the letter shortcuts off; Tab turns them back on, then "o" and Enter.
"${T[@]}" send-keys -t e2e Tab
"${T[@]}" send-keys -t e2e "o"
"${T[@]}" send-keys -t e2e Enter
check "after 'allow once' the call runs and the model answers" wait_for "The time is known."
check "the tool card shows the call done" bash -c 'grep -q "time__get_current_time\|get_current_time" <<<"$1"' _ "$(screen)"
check "the model got the tool's result" bash -c 'grep -q "\"role\": *\"tool\"" "$1" || grep -q "\"role\":\"tool\"" "$1"' _ "$WORK/model.log"

# A server prompt as a slash command, and a resource attached by mention, reach the model.
"${T[@]}" send-keys -t e2e '/evil:greet Ada' Enter
check "a server prompt is sent as the message" wait_file "Say hello to Ada." "$WORK/model.log"
"${T[@]}" send-keys -t e2e 'summarise @evil:mem://r1 please' Enter
check "an @server:uri mention attaches the resource" wait_file "contents of mem://r1" "$WORK/model.log"

before_title="$("${T[@]}" display-message -p -t e2e '#{pane_title}')"
"${T[@]}" send-keys -t e2e '/call evil evil {}' Enter
check "a hostile result is shown as text" wait_for "safetext"
check "escape sequences did not clear the screen" bash -c 'grep -q "The time is known" <<<"$1"' _ "$(screen)"
"${T[@]}" send-keys -t e2e '/tools evil__echo' Enter
check "a hostile description is shown with its escapes removed" wait_for "click here"
after_title="$("${T[@]}" display-message -p -t e2e '#{pane_title}')"
check "escape sequences did not retitle the window" bash -c '[ "$1" = "$2" ] && ! grep -q pwned <<<"$2"' _ "$before_title" "$after_title"
check "no escaped text leaked onto the screen" bash -c '! grep -q "pwned\|ZXZpbA\|evil.example" <<<"$1"' _ "$(screen)"
"${T[@]}" send-keys -t e2e Escape

# C1 controls and bidi controls in a result: the bytes the host writes to the terminal are
# logged with pipe-pane (the screen alone cannot show a control that was obeyed) and searched.
"${T[@]}" pipe-pane -t e2e -o "cat >> '$WORK/pane.raw'"
"${T[@]}" send-keys -t e2e '/call evil echo {"message": "c1\u009b2J\u0085 bidi\u202eabc\u2066\u200f end"}' Enter
check "a result with C1 and bidi controls is shown as text" wait_for "bidiabc end"
"${T[@]}" pipe-pane -t e2e
check "no C1 control or bidi control reached the terminal" python3 -c '
import sys
raw = open(sys.argv[1], "rb").read()
c1 = [bytes([0xC2, b]) for b in range(0x80, 0xA0)]
bidi = [chr(c).encode() for c in (0x61C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))]
sys.exit(0 if raw and not any(s in raw for s in c1 + bidi) else 1)' "$WORK/pane.raw"

# A 2026-07-28 tool that asks twice (SEP-2322): each round's form is the person's to fill.
"${T[@]}" send-keys -t e2e '/call asker ask {}' Enter
check "an input round puts its form to the person" wait_for "Who is asking?"
"${T[@]}" send-keys -t e2e C-u
"${T[@]}" send-keys -t e2e "Grace" Enter
"${T[@]}" send-keys -t e2e Enter
check "the second round asks again, with the first answer" wait_for "Really Grace?"
"${T[@]}" send-keys -t e2e Enter
"${T[@]}" send-keys -t e2e Enter
check "the call completes after two rounds answered in the TUI" wait_for "name=Grace sure=true (accept, 2 rounds)"

# A call the server runs as a task (the Tasks extension): its status shows on its card while
# it is polled, its question is the person's, and its result arrives when it completes.
"${T[@]}" send-keys -t e2e '/call asker research {"topic": "python", "ask": true, "polls": 40}' Enter
check "a task's question puts its form to the person" wait_for "Which python do you mean?"
"${T[@]}" send-keys -t e2e Enter
"${T[@]}" send-keys -t e2e Enter
check "a running task shows its status on its card" wait_for "task working: stage"
check "the task's result arrives when it completes" wait_for "report on python (technical)"

"${T[@]}" send-keys -t e2e C-c
"${T[@]}" send-keys -t e2e C-c
check "Ctrl-C twice quits cleanly" wait_for "HOST-EXITED 0" 15
# The [x] keeps pgrep from matching the shell that runs it.
check "no server process is left" bash -c '! pgrep -f "[m]cp-server-time --local-timezone UTC" >/dev/null && ! pgrep -f -- "[-]-describe-echo" >/dev/null' 

# Without a model the host still starts, says how to configure one, and /call works.
"${T[@]}" kill-session -t e2e 2>/dev/null
env -u MCP_HOST_MODEL -u OPENAI_BASE_URL "${T[@]}" new-session -d -s e2e -x 100 -y 30 \
  "$HOST chat --strict-mcp-config --mcp-config $WORK/servers.json; echo HOST-EXITED \$?; sleep 30"
check "without a model the host starts and says how to configure one" wait_for "no model" 30
wait_for "3/3" 30
"${T[@]}" send-keys -t e2e 'hello' Enter
check "a message without a model explains instead of failing" wait_for "provider:model"
"${T[@]}" send-keys -t e2e '/call evil echo {"message": "still works"}' Enter
check "/call works without a model" wait_for "still works"
"${T[@]}" send-keys -t e2e '/quit' Enter
check "/quit exits cleanly" wait_for "HOST-EXITED 0" 15

# A PreToolUse hook that denies guards the model's calls in chat as in `run`, and a
# person's /call too: nothing is asked, the call never runs, the model reads the reason.
kill "$MODEL_PID" 2>/dev/null
FAKE_MODEL_LOG="$WORK/model-hooked.log" python3 "$ROOT/scripts/fake_model.py" chat >"$WORK/model2.port" &
MODEL_PID=$!
for _ in $(seq 1 100); do [ -s "$WORK/model2.port" ] && break; sleep 0.05; done
MPORT2="$(head -1 "$WORK/model2.port")"
python3 - "$WORK/servers.json" "$WORK/hooked.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["hooks"] = {"PreToolUse": [{"matcher": "time__.*", "hooks": [
    {"type": "command", "command": "cat >/dev/null; echo 'blocked by the e2e hook' >&2; exit 2"}]}]}
json.dump(config, open(sys.argv[2], "w"))
PY
"${T[@]}" kill-session -t e2e 2>/dev/null
"${T[@]}" new-session -d -s e2e -x 100 -y 30 \
  "$HOST chat -m openai-compatible:fake --base-url http://127.0.0.1:$MPORT2/v1 --strict-mcp-config --mcp-config $WORK/hooked.json; echo HOST-EXITED \$?; sleep 30"
wait_for "3/3" 30
"${T[@]}" send-keys -t e2e "what time is it?" Enter
check "with a denying hook the model's call asks nothing and the turn ends" wait_for "The time is known."
check "no approval was asked for the hooked call" bash -c '! grep -qF "Allow once" <<<"$1"' _ "$(screen)"
check "the model read the hook's reason" wait_file "blocked by the e2e hook" "$WORK/model-hooked.log"
"${T[@]}" send-keys -t e2e '/call time get_current_time {"timezone": "UTC"}' Enter
check "a person's /call is stopped by the hook too" wait_for "blocked by the e2e hook"
# One audit record per call in chat too, with the fields of `run` and `call` (the list in
# crates/cli/tests/all/gate.rs): the hook's refusals of the model's call and of the /call alike.
audit_ok() {
  python3 - "$WORK/data/mcp-host/audit.jsonl" <<'PY'
import json, sys
fields = ["args_sha256", "background_job", "decided_by", "duration_ms", "error", "event", "id",
          "is_error", "name", "reason", "refused", "result_bytes", "result_handle", "server",
          "source", "status", "tool", "truncated", "ts", "verdict"]
records = [json.loads(l) for l in open(sys.argv[1])]
# A call that took input rounds lists them too (the first session's asker__ask), and one the
# server ran as a task its task id (asker__research).
assert records and all(sorted(set(r) - {"input_rounds", "task_id"}) == fields for r in records), records
rounds = [r["input_rounds"] for r in records if r["tool"] == "ask"]
assert [len(r) for r in rounds] == [2], rounds
tasks = [(r["task_id"], len(r["input_rounds"])) for r in records if r["tool"] == "research"]
assert tasks == [("task-1", 1)], tasks
hooked = {r["source"] for r in records if r["tool"] == "get_current_time"
          and (r["decided_by"] or {}).get("by") == "hook" and r["status"] == "refused"}
assert hooked == {"model", "person"}, hooked
PY
}
# The screen already showed the hook's words for the model's call, so the /call's record may
# still be on its way: wait for it (bounded), then check once more so a failure says why.
audit_settled() {
  for _ in $(seq 100); do audit_ok 2>/dev/null && return 0; sleep 0.1; done
  audit_ok
}
check "chat audits each call once, with the same fields as run and call" audit_settled
"${T[@]}" send-keys -t e2e '/quit' Enter
check "/quit exits cleanly after the hooked session" wait_for "HOST-EXITED 0" 15

# A step-up inside a chat: signed in (by `auth login`) without the scope the server's tool
# needs, the person's /call is answered 403 insufficient_scope; the person is asked, with the
# scope, whether to sign in, then to open the sign-in page (a stand-in browser that
# approves), and the same call completes.
"$FAKE_OAUTH" --require-scope files:write >"$WORK/oauth.url" &
OAUTH_PID=$!
for _ in $(seq 1 100); do [ -s "$WORK/oauth.url" ] && break; sleep 0.05; done
OURL="$(head -1 "$WORK/oauth.url")"
printf '{"mcpServers": {"r": {"type": "http", "url": "%s"}}}\n' "$OURL" >"$WORK/oauth.json"
BROWSER="$ROOT/scripts/headless-browser.py" "$HOST" auth login r --strict-mcp-config --mcp-config "$WORK/oauth.json" </dev/null >"$WORK/login.log" 2>&1
check "auth login signs in to the protected server" grep -q "signed in" "$WORK/login.log"
"${T[@]}" kill-session -t e2e 2>/dev/null
"${T[@]}" new-session -d -s e2e -x 100 -y 30 \
  "env MCP_HOST_LOG=mcp_host=debug BROWSER=$ROOT/scripts/headless-browser.py $HOST chat --strict-mcp-config --mcp-config $WORK/oauth.json; echo HOST-EXITED \$?; sleep 30"
wait_for "1/1" 30
"${T[@]}" send-keys -t e2e '/call r whoami {}' Enter
check "a step-up asks the person first, naming the scope" wait_for "files:write"
"${T[@]}" send-keys -t e2e Enter
check "then offers the sign-in page" wait_for "Sign in to r in your browser"
"${T[@]}" send-keys -t e2e y
check "the call completes with the new sign-in" wait_for "$OURL"
"${T[@]}" send-keys -t e2e '/quit' Enter
check "/quit exits cleanly after the step-up" wait_for "HOST-EXITED 0" 15
kill "$OAUTH_PID" 2>/dev/null; OAUTH_PID=""

# `auth set-secret` at a terminal: the secret is not echoed, the terminal echoes again after,
# and Ctrl-C at the prompt gives up with the terminal given back.
printf '{"mcpServers": {"r": {"type": "http", "url": "https://r.example/mcp", "oauth": {"clientId": "app"}}}}\n' >"$WORK/remote.json"
"${T[@]}" kill-session -t e2e 2>/dev/null
"${T[@]}" new-session -d -s e2e -x 100 -y 30 "bash --norc --noprofile"
"${T[@]}" send-keys -t e2e "$HOST auth set-secret r --strict-mcp-config --mcp-config $WORK/remote.json; echo SET-EXITED \$?" Enter
check "set-secret prompts at a terminal" wait_for "client secret of"
"${T[@]}" send-keys -t e2e "hunter2-typed" Enter
check "set-secret keeps the typed secret" wait_for "SET-EXITED 0"
check "the typed secret was not echoed" bash -c '! grep -q "hunter2-typed" <<<"$1"' _ "$(screen)"
"${T[@]}" send-keys -t e2e "echo visible-again" Enter
check "the terminal echoes again afterwards" wait_for "echo visible-again"
# A clean screen first, so that waiting for the prompt cannot match the previous one.
"${T[@]}" send-keys -t e2e "clear" Enter
"${T[@]}" clear-history -t e2e
check "the screen is cleared" wait_gone "client secret of"
"${T[@]}" send-keys -t e2e "$HOST auth set-secret r --strict-mcp-config --mcp-config $WORK/remote.json; echo SET-EXITED \$?" Enter
check "set-secret prompts again" wait_for "client secret of"
"${T[@]}" send-keys -t e2e C-c
check "Ctrl-C at the prompt gives up" wait_for "SET-EXITED 1"
"${T[@]}" send-keys -t e2e "echo echo-restored" Enter
check "and the terminal echoes again" wait_for "echo echo-restored"

echo "tui-e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
