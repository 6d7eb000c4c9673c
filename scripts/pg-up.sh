#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests (docs/store.md): Debian's server binaries, a cluster
# initialised into a temporary folder, run as an unprivileged user (root's own processes are refused
# by postgres: `nobody` when run as root), listening on loopback only and on a Unix socket in that
# folder. Idempotent: a server already up is reused. Prints the URL the tests take
# (INFERBENCH_TEST_PG_URL) and writes it to $PG_UP_DIR/url. scripts/pg-down.sh stops it.
#
# env: PG_UP_DIR (default /tmp/inferbench-pg), PG_UP_PORT (default 55432)
set -euo pipefail
dir=${PG_UP_DIR:-/tmp/inferbench-pg}
port=${PG_UP_PORT:-55432}
db=inferbench_test
user=inferbench
url="postgresql://$user@127.0.0.1:$port/$db"

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "pg-up: no PostgreSQL server binaries under /usr/lib/postgresql (scripts/install-deps.sh" \
    "installs Debian's postgresql)" >&2
  exit 1
fi

as_owner=()
if [ "$(id -u)" -eq 0 ]; then as_owner=(runuser -u nobody --); fi

if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -d "$db" -U "$user" 2>/dev/null; then
  echo "$url" > "$dir/url" 2>/dev/null || true
  echo "pg-up: PostgreSQL already up at $url" >&2
  echo "$url"
  exit 0
fi

mkdir -p "$dir"
if [ ! -f "$dir/data/PG_VERSION" ]; then
  rm -rf "$dir/data"
  mkdir -p "$dir/data"
  [ ${#as_owner[@]} -eq 0 ] || chown -R nobody: "$dir"
  # trust on loopback and the socket: a test server that nothing outside this machine can reach.
  "${as_owner[@]}" "$bin/initdb" -D "$dir/data" -U "$user" --auth=trust -E UTF8 --no-locale \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
fi
[ ${#as_owner[@]} -eq 0 ] || chown -R nobody: "$dir"
chmod 0700 "$dir/data"
"${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=200" start \
  >/dev/null || { tail -20 "$dir/server.log" >&2; exit 1; }
if ! "$bin/psql" -h 127.0.0.1 -p "$port" -U "$user" -d postgres -tAc \
  "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1; then
  "$bin/createdb" -h 127.0.0.1 -p "$port" -U "$user" "$db"
fi
echo "$url" > "$dir/url"
echo "pg-up: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') up at $url (data in $dir)" >&2
echo "$url"
