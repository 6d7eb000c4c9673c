#!/usr/bin/env bash
# Starts a single-node Slurm cluster on this machine for tests (docs/slurm.md): munge, slurmctld
# and slurmd from Debian's packages, run directly (no systemd), the node named after this host.
# Idempotent: daemons already running are left alone. Needs root and the packages slurmctld,
# slurmd, slurm-client and munge (scripts/install-deps.sh installs them).
# Prints one status line; exits non-zero with the daemons' log tails when the node is not usable.
set -euo pipefail

conf_dir=/etc/slurm
conf=$conf_dir/slurm.conf
log_dir=/var/log/slurm
ctld_state=/var/spool/slurmctld
slurmd_spool=/var/spool/slurmd
munge_key=/etc/munge/munge.key
wait_s=${SLURM_UP_WAIT_S:-30}

fail() {
  echo "slurm-up: $*" >&2
  for f in "$log_dir/slurmctld.log" "$log_dir/slurmd.log" /var/log/munge/munged.log; do
    if [ -f "$f" ]; then
      echo "--- tail of $f ---" >&2
      tail -n 30 "$f" >&2
    fi
  done
  exit 1
}

[ "$(id -u)" -eq 0 ] || fail "must run as root"
for b in munged slurmctld slurmd sinfo scontrol; do
  command -v "$b" >/dev/null || fail "$b not found (install slurmctld slurmd slurm-client munge)"
done
id munge >/dev/null 2>&1 || fail "user munge missing (is the munge package installed?)"
id slurm >/dev/null 2>&1 || fail "user slurm missing (is the slurmctld package installed?)"

# A process whose executable is $1 and that is running (pidof matches the program name only).
running() { pidof -q "$1"; }

# --- munge ----------------------------------------------------------------------------------
install -d -o munge -g munge -m 0700 /etc/munge
install -d -o munge -g munge -m 0700 /var/lib/munge
install -d -o munge -g munge -m 0700 /var/log/munge
install -d -o munge -g munge -m 0755 /run/munge
if [ ! -s "$munge_key" ]; then
  dd if=/dev/urandom of="$munge_key" bs=1 count=1024 status=none
fi
chown munge:munge "$munge_key"
chmod 0400 "$munge_key"
if ! running munged; then
  runuser -u munge -- munged || fail "munged did not start"
fi
for _ in $(seq 1 50); do
  if munge -n </dev/null | unmunge >/dev/null 2>&1; then break; fi
  sleep 0.1
done
munge -n </dev/null | unmunge >/dev/null 2>&1 || fail "munge credentials do not round-trip"

# --- slurm.conf -----------------------------------------------------------------------------
host=$(hostname -s)
# "NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=N"
node_line=$(slurmd -C | head -n 1)
case "$node_line" in
  NodeName=*) ;;
  *) fail "unexpected output of slurmd -C: $node_line" ;;
esac
node_line="NodeName=$host ${node_line#NodeName=* }"
# The daemons find each other by this address; a fresh container's hostname may not resolve.
addr=$(getent hosts "$host" 2>/dev/null | awk '{print $1; exit}')
[ -n "$addr" ] || addr=127.0.0.1

new_conf=$(cat <<EOF
# Written by inferbench scripts/slurm-up.sh: a single-node test cluster.
ClusterName=inferbench
SlurmctldHost=$host($addr)
SlurmUser=slurm
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$ctld_state
SlurmdSpoolDir=$slurmd_spool
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$log_dir/slurmctld.log
SlurmdLogFile=$log_dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
# Finished jobs stay visible to scontrol for 5 minutes (no accounting database here).
MinJobAge=300
KillWait=10
InactiveLimit=0
$node_line NodeAddr=$addr State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
)
install -d -m 0755 "$conf_dir"
conf_changed=0
if [ ! -f "$conf" ] || [ "$(cat "$conf")" != "$new_conf" ]; then
  printf '%s\n' "$new_conf" >"$conf"
  chmod 0644 "$conf"
  conf_changed=1
fi

install -d -o slurm -g slurm -m 0755 "$log_dir" "$ctld_state"
install -d -o root -g root -m 0755 "$slurmd_spool"

# --- daemons --------------------------------------------------------------------------------
if [ "$conf_changed" -eq 1 ] && running slurmctld; then
  scontrol reconfigure >/dev/null 2>&1 || true
fi
if ! running slurmctld; then
  slurmctld || fail "slurmctld did not start"
fi
if ! running slurmd; then
  slurmd || fail "slurmd did not start"
fi

# --- wait for the node ----------------------------------------------------------------------
state=""
deadline=$(( $(date +%s) + wait_s ))
resumed=0
while [ "$(date +%s)" -lt "$deadline" ]; do
  state=$(sinfo -h -n "$host" -o '%T' 2>/dev/null | head -n 1 || true)
  case "$state" in
    idle|mixed|allocated|completing) break ;;
    down*|drain*|fail*)
      if [ "$resumed" -eq 0 ]; then
        scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
        resumed=1
      fi
      ;;
  esac
  sleep 0.5
done
case "$state" in
  idle|mixed|allocated|completing) ;;
  *) fail "node $host is '${state:-unknown}' after ${wait_s} s (sinfo: $(sinfo 2>&1 | tr '\n' ' '))" ;;
esac

echo "slurm-up: cluster inferbench ready: node $host $state, partition debug" \
  "(${node_line#NodeName=* })"
