#!/usr/bin/env bash
# How `inferbench history` behaves on real serve-sim noise (docs/history.md): for each step size,
# REPEATS histories of 12 revisions in a temporary git repository, two keys swept at every
# revision, one of them slowed by STEP% at revision 7 (its decode step time). Prints, per step and
# metric, how often the change point was found at revision 7 on the slowed key (detection) and
# how many change points appeared anywhere else (false alarms), and the run-to-run noise of each
# metric on the steady key (coefficient of variation). Figures, never pass/fail.
#
# Usage: bench/history_detection.sh [BUILD_DIR] (env: STEPS="1 2 5", REPEATS=3)
set -euo pipefail
build=${1:-build}
ib=$(cd "$build" && pwd)/src/inferbench
steps=${STEPS:-"1 2 5"}
repeats=${REPEATS:-3}
work=$(mktemp -d /tmp/ib-history-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

key() {  # key name, decode ms
  cat <<EOF
$1:
  image: inferbench/serve-sim:v1
  model: sim-model
  model-prefix: sim
  precision: bf16
  framework: serve-sim
  runner: local
  multinode: false
  serve:
    command: [inferbench, serve-sim, --decode-base-ms, "$2", --model, "{served-model}", --host, "{host}", --port, "{port}"]
  workload: { prompts-per-conc: 3, min-prompts: 6, warmups-per-conc: 0 }
  scenarios:
    fixed-seq-len:
    - { isl: 32, osl: 12, search-space: [{ tp: 1, conc-list: [2] }] }
EOF
}

for step in $steps; do
  for rep in $(seq 1 "$repeats"); do
    repo=$work/s$step-r$rep
    mkdir -p "$repo/recipes"
    git -C "$repo" init -q -b main
    slow=$(python3 -c "print(8 * (1 + $step / 100))")
    for rev in $(seq 1 12); do
      d=8
      [ "$rev" -ge 7 ] && d=$slow
      { key slow-key "$d"; key steady-key 8; } > "$repo/recipes/r.yaml"
      echo "$rev" > "$repo/rev.txt"
      git -C "$repo" add -A
      git -C "$repo" -c user.name=b -c user.email=b@b commit -qm "revision $rev"
      git -C "$repo" rev-parse HEAD >> "$repo/revs.txt"
      "$ib" sweep "$repo/recipes/r.yaml" --runs-dir "$repo/runs" --no-env-trace >/dev/null 2>&1
    done
    "$ib" history -C "$repo" --db "$repo/runs/inferbench.db" --json > "$repo/history.json"
  done
done

python3 - "$work" "$steps" "$repeats" <<'EOF'
import json, statistics, sys, pathlib
work, steps, repeats = pathlib.Path(sys.argv[1]), sys.argv[2].split(), int(sys.argv[3])
found, alarms, noise = {}, {}, {}
for step in steps:
    for rep in range(1, repeats + 1):
        repo = work / f"s{step}-r{rep}"
        rev7 = (repo / "revs.txt").read_text().split()[6]
        for s in json.loads((repo / "history.json").read_text())["series"]:
            m = s["metric"]
            cps = s["change_points"]
            if s["config_key"] == "slow-key":
                hit = any(c["revision"] == rev7 for c in cps)
                found.setdefault((step, m), []).append(hit)
                alarms[(step, m)] = alarms.get((step, m), 0) + sum(c["revision"] != rev7 for c in cps)
            else:
                alarms[(step, m)] = alarms.get((step, m), 0) + len(cps)
                vals = [v for p in s["positions"] for v in p["values"] if v is not None]
                if len(vals) > 1 and statistics.mean(vals):
                    noise.setdefault(m, []).append(statistics.stdev(vals) / statistics.mean(vals) * 100)
metrics = sorted({m for (_, m) in found})
print(f"{repeats} histories of 12 revisions per step; detection: the change point at revision 7 "
      "on the slowed key; false alarms: change points anywhere else (both keys)")
print(f"{'metric':<22} {'noise CV %':>10} " + " ".join(f"{s+'% found':>9} {s+'% false':>9}" for s in steps))
for m in metrics:
    cv = statistics.mean(noise.get(m, [float('nan')]))
    cells = " ".join(f"{sum(found[(s, m)]):>5}/{len(found[(s, m)]):<3} {alarms[(s, m)]:>9}" for s in steps)
    print(f"{m:<22} {cv:>10.3f} {cells}")
EOF
