#!/usr/bin/env bash
# Soak test of resume (docs/sweep.md, "Killed sweeps"): runs a real sweep on serve-sim, kills the
# `inferbench sweep` process with SIGKILL at random moments ROUNDS times (default 20), resuming the
# run after each kill, then lets it complete. Then checks that
#   - every planned point is stored exactly once, ok (a killed point is never half-stored),
#   - the database passes PRAGMA integrity_check,
#   - no serve-sim started by the sweeps outlived the sweep that started it,
#   - `inferbench runs` showed the killed run as interrupted (its dead owner detected),
# prints a summary and exits 1 on any violation (2: a usage or setup error).
#
#   scripts/soak.sh [ROUNDS]        INFERBENCH=path/to/inferbench (default build/src/inferbench)
#
# The recipe is the main job's (examples/recipes/serve-sim.yaml: serve-sim's roofline model of
# Llama-3.1-8B on one H200) with more, smaller points: 3 x ROUNDS + 4 concurrencies, 2 requests
# per concurrency and no warmups, so that a point lasts about a second and kills land before,
# during and between points, and during server start-up. Bounded in time: the soak stops (as a
# violation) after SOAK_LIMIT_S seconds (default 60 + 30 x ROUNDS), the last sweep with it.
# SOAK_KEEP=1 keeps the work folder (runs, database, sweep.log) even when everything passed.
set -uo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-20}
if ! [[ "$rounds" =~ ^[0-9]+$ ]] || ((rounds < 1 || rounds > 1000)); then
  echo "soak.sh: ROUNDS must be a whole number from 1 to 1000 (got '$rounds')" >&2
  exit 2
fi
bin=${INFERBENCH:-build/src/inferbench}
if [[ ! -x "$bin" ]]; then
  echo "soak.sh: $bin is not an executable (build it: cmake --build build --target inferbench;" \
    "or set INFERBENCH)" >&2
  exit 2
fi
bin=$(realpath "$bin")
command -v python3 >/dev/null || { echo "soak.sh: python3 is needed to query the database" >&2; exit 2; }
limit_s=${SOAK_LIMIT_S:-$((60 + 30 * rounds))}

work=$(mktemp -d /tmp/inferbench-soak.XXXXXX)
runs="$work/runs"
db="$runs/inferbench.db"
# Every process a sweep starts inherits this variable: how its servers are found afterwards.
marker="IB_SOAK_MARKER=$$-$RANDOM$RANDOM"
export "${marker?}"
points=$((3 * rounds + 4))
concs=$(seq -s, 1 "$points")
args=(sweep examples/recipes/serve-sim.yaml --runs-dir "$runs" --concurrency "$concs"
  --prompts-per-conc 2 --min-prompts 2 --warmups-per-conc 0 --startup-timeout 60
  --point-timeout 120 --no-env-trace)
violations=()
start=$(date +%s)
sweep_pid=

cleanup() {
  [[ -n "$sweep_pid" ]] && kill -KILL "$sweep_pid" 2>/dev/null
  for p in $(servers); do kill -KILL "$p" 2>/dev/null; done
  if ((${#violations[@]} == 0)) && [[ -z "${SOAK_KEEP:-}" ]]; then rm -rf "$work"; fi
}
trap cleanup EXIT

# Processes (other than this script's) that carry the marker: the sweeps' serve-sim children.
servers() {
  local d
  for d in /proc/[0-9]*; do
    [[ "${d#/proc/}" == "$$" || "${d#/proc/}" == "$BASHPID" ]] && continue
    if tr '\0' '\n' 2>/dev/null <"$d/environ" | grep -qxF "$marker"; then
      # argv[1] is the subcommand: `inferbench serve-sim ...`, not `inferbench sweep serve-sim.yaml`.
      [[ "$(tr '\0' '\n' 2>/dev/null <"$d/cmdline" | sed -n 2p)" == serve-sim ]] && echo "${d#/proc/}"
    fi
  done
}

violation() {
  violations+=("$1")
  echo "soak: VIOLATION: $1" >&2
}

out_of_time() { (($(date +%s) - start > limit_s)); }

# Runs a command in the background, killing it after $1 seconds; its exit status (137 if killed).
run_bounded() {
  local secs=$1
  shift
  "$@" &
  local pid=$! deadline=$(($(date +%s) + secs))
  while kill -0 "$pid" 2>/dev/null; do
    if (($(date +%s) > deadline)); then kill -KILL "$pid"; break; fi
    sleep 0.2
  done
  wait "$pid"
}

# The run's name once the sweep has created it (the first sweep's run; later ones resume it).
run_name() {
  python3 - "$db" <<'EOF' 2>/dev/null
import sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
row = con.execute("SELECT name FROM runs ORDER BY id LIMIT 1").fetchone()
print(row[0] if row else "")
EOF
}

name=
checked_status=
kills=0
mid_point=0
finished_early=0
round=0
while ((kills < rounds)); do
  round=$((round + 1))
  if out_of_time; then violation "time limit ${limit_s}s reached after $kills kills"; break; fi
  resume=()
  [[ -n "$name" ]] && resume=(--resume "$name")
  # A random moment: 0.2 to 2.2 s after the start (server start-up takes about half a second).
  ms=$((200 + RANDOM % 2000))
  delay=$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))
  echo "--- round $round: ${resume[*]:-new run}, kill after ${delay}s" >>"$work/sweep.log"
  "$bin" "${args[@]}" "${resume[@]}" >>"$work/sweep.log" 2>&1 &
  sweep_pid=$!
  sleep "$delay"
  if kill -0 "$sweep_pid" 2>/dev/null; then
    [[ -n "$(servers)" ]] && mid_point=$((mid_point + 1))
    kill -KILL "$sweep_pid"
    kills=$((kills + 1))
  else
    finished_early=$((finished_early + 1))
  fi
  wait "$sweep_pid" 2>/dev/null
  sweep_pid=
  [[ -z "$name" ]] && name=$(run_name)
  # The server dies with its sweep (PR_SET_PDEATHSIG): give it a moment to exit, no more.
  for _ in $(seq 50); do [[ -z "$(servers)" ]] && break; sleep 0.1; done
  left=$(servers)
  if [[ -n "$left" ]]; then
    violation "round $round: serve-sim $(echo $left) outlived its killed sweep"
    for p in $left; do kill -KILL "$p" 2>/dev/null; done
  fi
  if [[ -n "$name" && -z "$checked_status" ]] && ((kills > 0)); then
    # The killed sweep could not mark its run: readers must see its owner is gone.
    checked_status=$("$bin" runs --db "$db" --json |
      python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["status"])')
    [[ "$checked_status" == interrupted ]] ||
      violation "after a kill, runs shows the run as '$checked_status', not interrupted"
  fi
  if ((finished_early > 3)); then break; fi  # the run completed; the rest would only resume it
done

# Complete the run.
if [[ -z "$name" ]]; then
  violation "no run was ever created (see $work/sweep.log)"
elif ! out_of_time; then
  echo "--- final resume" >>"$work/sweep.log"
  if ! run_bounded $((limit_s - ($(date +%s) - start) + 10)) \
    "$bin" "${args[@]}" --resume "$name" >>"$work/sweep.log" 2>&1; then
    violation "the final resume of $name failed (see $work/sweep.log)"
  fi
fi

# The checks.
if [[ -n "$name" ]]; then
  check=$(python3 - "$db" "$name" "$points" <<'EOF'
import sqlite3, sys
db, name, points = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
problems = []
ic = con.execute("PRAGMA integrity_check").fetchall()
if ic != [("ok",)]:
    problems.append(f"integrity_check: {ic[:5]}")
run_id, status = con.execute("SELECT id, status FROM runs WHERE name = ?", (name,)).fetchone()
if status != "ok":
    problems.append(f"run {name} ended {status}, not ok")
rows = con.execute(
    "SELECT fingerprint, workload_key, concurrency, status, count(*) FROM points WHERE run_id = ? "
    "GROUP BY fingerprint, workload_key, concurrency, status", (run_id,)).fetchall()
for fp, wl, conc, st, n in rows:
    if st != "ok":
        problems.append(f"conc {conc}: {n} point(s) stored {st}")
    elif n != 1:
        problems.append(f"conc {conc}: measured {n} times")
ok = {r[2] for r in rows if r[3] == "ok"}
missing = sorted(set(range(1, points + 1)) - ok)
if missing:
    problems.append(f"concurrencies never measured: {missing}")
stored = con.execute("SELECT count(*) FROM points WHERE run_id = ?", (run_id,)).fetchone()[0]
print(f"{stored} stored, {len(ok)} distinct ok of {points} planned")
for p in problems:
    print("PROBLEM " + p)
EOF
)
  summary_points=$(echo "$check" | head -1)
  while IFS= read -r line; do
    [[ "$line" == PROBLEM* ]] && violation "${line#PROBLEM }"
  done <<<"$check"
fi
left=$(servers)
[[ -n "$left" ]] && violation "serve-sim $(echo $left) still running at the end"

elapsed=$(($(date +%s) - start))
echo "soak: rounds $round, kills $kills (with its server up: $mid_point), sweeps that finished" \
  "before their kill: $finished_early"
echo "soak: run ${name:-none}: points ${summary_points:-unknown}"
echo "soak: time ${elapsed}s (limit ${limit_s}s); database $db"
if ((${#violations[@]} > 0)); then
  echo "soak: FAILED: ${#violations[@]} violation(s); files kept in $work" >&2
  exit 1
fi
echo "soak: ok"
