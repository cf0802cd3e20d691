#!/usr/bin/env bash
# A private, throwaway PostgreSQL cluster for the tests of the hosted mode (crates/serve):
# trust authentication for local and loopback connections only, listening on 127.0.0.1 at a
# free port, its socket in the cluster folder, fsync off, TLS offered (self-signed). Works as
# root (the server then runs as the `postgres` user, which the Debian package creates).
#
#   scripts/postgres.sh start DIR   # prints one line: postgres://mcp_host@127.0.0.1:PORT/mcp_host
#   scripts/postgres.sh stop DIR
#
# Both are idempotent: `start` on a running cluster prints its URL again, `start` on a
# stopped one restarts it, `stop` on a stopped (or missing) one does nothing. The server
# binaries are looked up in $PG_BIN, then on PATH, then in the newest /usr/lib/postgresql/*/bin.
set -euo pipefail

ROLE=mcp_host
DATABASE=mcp_host
START_TIMEOUT=30 # seconds pg_ctl waits for the server to accept connections

die() { echo "[postgres] $*" >&2; exit 1; }
usage() { die "usage: $0 start|stop DIR"; }

[ $# -eq 2 ] || usage
cmd=$1
dir=$2

pg_bin() {
  if [ -n "${PG_BIN:-}" ]; then echo "$PG_BIN"; return; fi
  if command -v pg_ctl >/dev/null && command -v initdb >/dev/null; then
    dirname "$(command -v pg_ctl)"; return
  fi
  local newest
  newest=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$newest" ] || die "no PostgreSQL server binaries (initdb, pg_ctl): install the postgresql package"
  echo "$newest"
}
BIN=$(pg_bin)
[ -x "$BIN/initdb" ] && [ -x "$BIN/pg_ctl" ] || die "no initdb/pg_ctl in $BIN"
if [ -x "$BIN/psql" ]; then PSQL="$BIN/psql"; else PSQL=psql; fi

# initdb and postgres refuse to run as root: as root, the cluster belongs to `postgres`.
if [ "$(id -u)" -eq 0 ]; then
  id -u postgres >/dev/null 2>&1 || die "running as root and there is no postgres user to run the server"
  as_owner() { (cd "$dir" && runuser -u postgres -- "$@"); }
else
  as_owner() { (cd "$dir" && "$@"); }
fi

data="$dir/data"

running() {
  [ -f "$data/postmaster.pid" ] && as_owner "$BIN/pg_ctl" -D "$data" status >/dev/null 2>&1
}

# A port nobody listens on now (the start below retries if another process takes it first).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 40000))
}

url() { echo "postgres://$ROLE@127.0.0.1:$(cat "$dir/port")/$DATABASE"; }

psql_admin() {
  # Over the cluster's own socket, as its superuser (the user initdb ran as).
  as_owner "$PSQL" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$(cat "$dir/port")" -d postgres "$@"
}

start() {
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$dir"
    # The server must reach its folder: every parent has to be searchable by `postgres`.
    runuser -u postgres -- test -x "$dir" || die "the postgres user cannot reach $dir (a parent folder is private)"
  fi
  if running; then url; return; fi

  if [ ! -f "$data/PG_VERSION" ]; then
    rm -rf "$data"
    as_owner "$BIN/initdb" -D "$data" --auth=trust --encoding=UTF8 --locale=C \
      --no-instructions >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    # Trust, but only over the socket and loopback: replace initdb's pg_hba.conf.
    cat >"$data/pg_hba.conf" <<'EOF'
local   all   all                 trust
host    all   all   127.0.0.1/32  trust
EOF
    cat >>"$data/postgresql.conf" <<EOF

# scripts/postgres.sh: a throwaway test cluster.
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
# TLS on offer (a self-signed certificate): clients may ask for sslmode=require.
ssl = on
ssl_cert_file = 'server.crt'
ssl_key_file = 'server.key'
EOF
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=127.0.0.1" \
      -keyout "$data/server.key" -out "$data/server.crt" >/dev/null 2>&1 ||
      die "openssl could not make the test server's certificate"
    chmod 600 "$data/server.key"
    [ "$(id -u)" -ne 0 ] || chown postgres: "$data/server.key" "$data/server.crt"
  fi

  local tries=0
  # A restart keeps its port (and so its URL) while that port is free.
  [ -s "$dir/port" ] || free_port >"$dir/port"
  while :; do
    if as_owner "$BIN/pg_ctl" -D "$data" -l "$dir/server.log" -w -t "$START_TIMEOUT" \
      -o "-p $(cat "$dir/port")" start >/dev/null 2>&1; then
      break
    fi
    tries=$((tries + 1))
    # Another process took the port between the probe and the start: try another one.
    if [ $tries -lt 5 ] && tail -n 20 "$dir/server.log" 2>/dev/null | grep -q "could not bind"; then
      free_port >"$dir/port"
      continue
    fi
    tail -n 20 "$dir/server.log" >&2 || true
    die "the server did not start (log: $dir/server.log)"
  done

  # The role the tests connect as: owns its database (PostgreSQL 15 lets only the owner
  # create tables in `public`) and may create more (one fresh database per test).
  if ! psql_admin -tA -c "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'" | grep -q 1; then
    psql_admin -c "CREATE ROLE $ROLE LOGIN CREATEDB"
  fi
  if ! psql_admin -tA -c "SELECT 1 FROM pg_database WHERE datname = '$DATABASE'" | grep -q 1; then
    psql_admin -c "CREATE DATABASE $DATABASE OWNER $ROLE"
  fi
  url
}

stop() {
  [ -d "$dir" ] || return 0
  dir=$(cd "$dir" && pwd)
  if running; then
    as_owner "$BIN/pg_ctl" -D "$data" -m fast -w -t "$START_TIMEOUT" stop >/dev/null
  fi
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
