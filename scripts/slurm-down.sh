#!/usr/bin/env bash
# Stops the test cluster that scripts/slurm-up.sh started: slurmd, slurmctld, then munged, each by
# the pid in its pid file (SIGTERM, then SIGKILL after 10 s). Jobs still running are cancelled
# first. Configuration, keys and logs stay, so slurm-up.sh can start it again.
set -euo pipefail

[ "$(id -u)" -eq 0 ] || { echo "slurm-down: must run as root" >&2; exit 1; }

if command -v scancel >/dev/null && pidof -q slurmctld; then
  scancel --full --signal=KILL --state=RUNNING --user=root >/dev/null 2>&1 || true
  scancel --user=root >/dev/null 2>&1 || true
fi

stop_pidfile() {
  local name=$1 pidfile=$2 pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
    rm -f "$pidfile"
    return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || { echo "slurm-down: $name ($pid) stopped"; rm -f "$pidfile"; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  echo "slurm-down: $name ($pid) killed"
  rm -f "$pidfile"
}

# One slurmd per node of the test cluster (slurmd.pid: an older single-node cluster's).
for f in /run/slurmd.pid /run/slurmd-*.pid; do
  [ -e "$f" ] || continue
  stop_pidfile slurmd "$f"
done
stop_pidfile slurmctld /run/slurmctld.pid
stop_pidfile munged /run/munge/munged.pid
