#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the test suite and prints its admin URL on stdout.
# Usage: eval "$(scripts/pg-start.sh DIR)"   -> exports MEASURED_TEST_DATABASE_URL and MEASURED_PG_DIR
# Installs PostgreSQL with apt-get when no server binaries are found (needs root).
set -euo pipefail
dir=${1:?usage: pg-start.sh DIR}
find_bin() {
  local b
  for b in /usr/lib/postgresql/*/bin; do
    [ -x "$b/initdb" ] && { echo "$b"; return 0; }
  done
  return 1
}
if ! bin=$(find_bin); then
  if [ "$(id -u)" -ne 0 ]; then
    echo "PostgreSQL server binaries not found and not root: install postgresql (15+) first" >&2
    exit 1
  fi
  echo "installing PostgreSQL with apt-get ..." >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
  bin=$(find_bin)
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
# The server runs as the postgres user when this runs as root: from a folder it may not enter
# (a 0700 temporary clone), runuser would complain that it cannot change into it.
cd /
run=()
if [ "$(id -u)" -eq 0 ]; then
  # initdb refuses to run as root; the Debian package provides the postgres user.
  id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
  chown postgres "$dir"
  run=(runuser -u postgres --)
  if ! "${run[@]}" test -x "$dir"; then
    echo "the postgres user cannot reach $dir: a folder above it is not searchable by others (mktemp -d makes 0700 folders; chmod 755 it)" >&2
    exit 1
  fi
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
password="pw-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s\n' "$password" >"$dir/pwfile"
[ "$(id -u)" -eq 0 ] && chown postgres "$dir/pwfile"
"${run[@]}" "$bin/initdb" -D "$dir/data" -U measured --pwfile="$dir/pwfile" --auth=scram-sha-256 >"$dir/initdb.log" 2>&1
# Kept so a test can stop this server and start it again on the same port (scripts/pg-ctl.sh).
# Fast by default (a crash may lose the last acknowledged commits); MEASURED_PG_DURABLE=1 keeps
# PostgreSQL's own durability, for tests that crash the server and count on what it acknowledged.
options="-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200"
if [ "${MEASURED_PG_DURABLE:-0}" != 1 ]; then
  options="$options -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
fi
printf '%s\n' "$options" >"$dir/options"
"${run[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -o "$options" start >&2
echo "export MEASURED_PG_DIR='$dir' MEASURED_PG_BIN='$bin'"
echo "export MEASURED_TEST_DATABASE_URL='postgres://measured:$password@127.0.0.1:$port/postgres'"
