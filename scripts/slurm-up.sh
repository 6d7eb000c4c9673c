#!/usr/bin/env bash
# Starts a multi-node Slurm test cluster on this machine (docs/slurm.md, "The test cluster"):
# munge, one slurmctld and one slurmd per node from Debian's packages, run directly (no systemd).
# Each node is real to Slurm (sinfo lists it, srun -N 3 runs on three) with its own name (node1,
# node2, ...), its own address on loopback (127.0.1.N), slurmd port, spool directory, pid file and
# log, and GRES GPUs (SLURM_UP_GPUS per node, default 4: character devices that stand for them, so
# that --gpus requests are scheduled as on a GPU cluster). All nodes are this machine's processes:
# a server "on node2" runs here and is reached at node2's address.
# SLURM_UP_NODES nodes (default 3). Idempotent: daemons already running with this configuration
# are left alone; a changed configuration restarts them. Needs root and the packages slurmctld,
# slurmd, slurm-client and munge (scripts/install-deps.sh installs them).
# Prints one status line; exits non-zero with the daemons' log tails when a node is not usable.
set -euo pipefail

conf_dir=/etc/slurm
conf=$conf_dir/slurm.conf
log_dir=/var/log/slurm
ctld_state=/var/spool/slurmctld
slurmd_spool=/var/spool/slurmd
munge_key=/etc/munge/munge.key
gres_dev=/var/lib/inferbench-slurm/dev
wait_s=${SLURM_UP_WAIT_S:-30}
nodes=${SLURM_UP_NODES:-3}
gpus=${SLURM_UP_GPUS:-4}

fail() {
  echo "slurm-up: $*" >&2
  for f in "$log_dir/slurmctld.log" "$log_dir"/slurmd-*.log /var/log/munge/munged.log; do
    if [ -f "$f" ]; then
      echo "--- tail of $f ---" >&2
      tail -n 30 "$f" >&2
    fi
  done
  exit 1
}

case "$nodes" in '' | *[!0-9]*) fail "SLURM_UP_NODES must be a number, not '$nodes'" ;; esac
case "$gpus" in '' | *[!0-9]*) fail "SLURM_UP_GPUS must be a number, not '$gpus'" ;; esac
{ [ "$nodes" -ge 1 ] && [ "$nodes" -le 16 ]; } || fail "SLURM_UP_NODES: 1 to 16 nodes, not $nodes"
[ "$gpus" -le 16 ] || fail "SLURM_UP_GPUS: at most 16 GPUs a node, not $gpus"
[ "$(id -u)" -eq 0 ] || fail "must run as root"
for b in munged slurmctld slurmd sinfo scontrol mknod; do
  command -v "$b" >/dev/null || fail "$b not found (install slurmctld slurmd slurm-client munge)"
done
id munge >/dev/null 2>&1 || fail "user munge missing (is the munge package installed?)"
id slurm >/dev/null 2>&1 || fail "user slurm missing (is the slurmctld package installed?)"

# A process whose executable is $1 and that is running (pidof matches the program name only).
running() { pidof -q "$1"; }
# The slurmd of node $1 runs when its pid file names a live process.
slurmd_running() {
  local f=/run/slurmd-$1.pid
  [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null
}

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

# --- slurm.conf and gres.conf ---------------------------------------------------------------
host=$(hostname -s)
# "NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=N"
node_line=$(slurmd -C | head -n 1)
case "$node_line" in
  NodeName=*) ;;
  *) fail "unexpected output of slurmd -C: $node_line" ;;
esac
hw=${node_line#NodeName=* }
# The controller listens on this host's address; a fresh container's hostname may not resolve.
addr=$(getent hosts "$host" 2>/dev/null | awk '{print $1; exit}')
[ -n "$addr" ] || addr=127.0.0.1

node_names=""
node_lines=""
gres=""
[ "$gpus" -gt 0 ] && gres=" Gres=gpu:$gpus"
for i in $(seq 1 "$nodes"); do
  node_names="${node_names:+$node_names,}node$i"
  # Every slurmd binds its own port on all addresses; its node is reached at its own address.
  node_lines="${node_lines}NodeName=node$i NodeAddr=127.0.1.$i NodeHostname=$host Port=$((6817 + i)) $hw$gres State=UNKNOWN
"
done

new_conf=$(cat <<EOF
# Written by inferbench scripts/slurm-up.sh: a test cluster of $nodes nodes on one machine.
ClusterName=inferbench
SlurmctldHost=$host($addr)
SlurmUser=slurm
SlurmdUser=root
AuthType=auth/munge
GresTypes=gpu
StateSaveLocation=$ctld_state
SlurmdSpoolDir=$slurmd_spool/%n
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd-%n.pid
SlurmctldLogFile=$log_dir/slurmctld.log
SlurmdLogFile=$log_dir/slurmd-%n.log
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
${node_lines}PartitionName=debug Nodes=$node_names Default=YES MaxTime=INFINITE State=UP
EOF
)
# The GPUs of each node: character devices with the null device's numbers, named as NVIDIA's.
new_gres="AutoDetect=off"
if [ "$gpus" -gt 0 ]; then
  install -d -m 0755 "$gres_dev"
  for g in $(seq 0 $((gpus - 1))); do
    [ -c "$gres_dev/nvidia$g" ] || mknod -m 0666 "$gres_dev/nvidia$g" c 1 3
  done
  new_gres="$new_gres
NodeName=node[1-$nodes] Name=gpu File=$gres_dev/nvidia[0-$((gpus - 1))]"
fi

install -d -m 0755 "$conf_dir"
conf_changed=0
if [ ! -f "$conf" ] || [ "$(cat "$conf")" != "$new_conf" ]; then
  printf '%s\n' "$new_conf" >"$conf"
  chmod 0644 "$conf"
  conf_changed=1
fi
if [ ! -f "$conf_dir/gres.conf" ] || [ "$(cat "$conf_dir/gres.conf")" != "$new_gres" ]; then
  printf '%s\n' "$new_gres" >"$conf_dir/gres.conf"
  chmod 0644 "$conf_dir/gres.conf"
  conf_changed=1
fi

install -d -o slurm -g slurm -m 0755 "$log_dir" "$ctld_state"
install -d -o root -g root -m 0755 "$slurmd_spool"
for i in $(seq 1 "$nodes"); do install -d -o root -g root -m 0755 "$slurmd_spool/node$i"; done

# --- daemons --------------------------------------------------------------------------------
if [ "$conf_changed" -eq 1 ] && { running slurmctld || running slurmd; }; then
  # Nodes come and go only with a restart of the daemons (an older cluster's too).
  pkill -x slurmd 2>/dev/null || true
  pkill -x slurmctld 2>/dev/null || true
  for _ in $(seq 1 100); do
    { running slurmd || running slurmctld; } || break
    sleep 0.1
  done
fi
if ! running slurmctld; then
  slurmctld || fail "slurmctld did not start"
fi
for i in $(seq 1 "$nodes"); do
  if ! slurmd_running "node$i"; then
    slurmd -N "node$i" || fail "the slurmd of node$i did not start"
  fi
done

# --- wait for the nodes ---------------------------------------------------------------------
deadline=$(($(date +%s) + wait_s))
resumed=0
ready=0
states=""
while [ "$(date +%s)" -lt "$deadline" ]; do
  states=$(sinfo -h -N -p debug -o '%N %T' 2>/dev/null || true)
  ready=$(printf '%s\n' "$states" | awk '$2 ~ /^(idle|mixed|allocated|completing)$/' | wc -l)
  [ "$ready" -ge "$nodes" ] && break
  if [ "$resumed" -eq 0 ] && printf '%s\n' "$states" | grep -Eq ' (down|drain|fail|inval)'; then
    scontrol update nodename="$node_names" state=resume >/dev/null 2>&1 || true
    resumed=1
  fi
  sleep 0.5
done
[ "$ready" -ge "$nodes" ] ||
  fail "$ready of $nodes nodes usable after ${wait_s} s (sinfo: $(printf '%s' "$states" | tr '\n' ' '))"

echo "slurm-up: cluster inferbench ready: $nodes nodes (node1..node$nodes at 127.0.1.1..$nodes," \
  "gpu:$gpus each), partition debug ($hw)"
