#!/usr/bin/env bash
# Stops the test PostgreSQL server scripts/pg-up.sh started, and removes its folder.
# env: PG_UP_DIR (default /tmp/inferbench-pg)
set -euo pipefail
dir=${PG_UP_DIR:-/tmp/inferbench-pg}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -n "$bin" ] && [ -f "$dir/data/postmaster.pid" ]; then
  as_owner=()
  if [ "$(id -u)" -eq 0 ]; then as_owner=(runuser -u nobody --); fi
  "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
fi
rm -rf "$dir"
echo "pg-down: stopped; $dir removed" >&2
