#!/usr/bin/env bash
# Load-generator scale and fidelity figures (issue 3), each printed beside its target.
# Starts serve-sim (loopback, bounded runs) and `inferbench bench` against it; never pass/fail.
#   A. end-to-end throughput: content events/s and client CPU at 1,000 streams
#   B. memory: resident KiB per in-flight stream at 10,000 streams
#   C. timing fidelity: client TTFT/ITL against serve-sim's --truth-log at 1,000 streams
#   D. agentic replay: client CPU, memory and body bytes/s per lane on 100k-token prompts
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-build/src/inferbench}
[ -x "$BIN" ] || ./scripts/build.sh
tmp=$(mktemp -d)
sim_pid=""
cleanup() { [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

start_sim() {
  rm -f "$tmp/port"
  "$BIN" serve-sim --port 0 --port-file "$tmp/port" --timing-model simple "$@" >"$tmp/sim.log" 2>&1 &
  sim_pid=$!
  for _ in $(seq 200); do [ -s "$tmp/port" ] && break; sleep 0.05; done
  url="http://127.0.0.1:$(cat "$tmp/port")"
}
stop_sim() { kill "$sim_pid" 2>/dev/null || true; wait "$sim_pid" 2>/dev/null || true; sim_pid=""; }
field() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

echo "== A. end-to-end throughput (target: >= 100,000 content events/s using at most one client core)"
start_sim --max-running 4000 --decode-base-ms 6 --decode-per-running-ms 0 --prefill-overhead-ms 0
"$BIN" bench --endpoint "$url" --isl 16 --osl 200 --num-prompts 3000 --concurrency 1000 \
  --threads 1 --warmups 0 --output "$tmp/a.json" >/dev/null || true
field "$tmp/a.json" '"content events/s: %.0f  client CPU: %.2f cores (%.0f events per client CPU-second)  event-loop lag p99 %.2f ms  failed %d" % (j["total_output_tokens"]/j["duration"], j["client"]["cpu_seconds"]/j["duration"], j["total_output_tokens"]/j["client"]["cpu_seconds"], j["client"]["event_loop_lag_p99_ms"], j["failed"])'
stop_sim

echo "== B. memory (target: <= 16 KiB resident per in-flight stream at 10,000 streams)"
start_sim --max-running 20000 --decode-base-ms 500 --decode-per-running-ms 0
"$BIN" bench --endpoint "$url" --isl 16 --osl 8 --num-prompts 10000 --concurrency 10000 \
  --threads 1 --output "$tmp/b.json" >/dev/null || true
field "$tmp/b.json" '"streams in flight: %d  KiB per stream: %.1f  (peak RSS %d KiB, before %d KiB)  failed %d" % (j["client"]["peak_in_flight"], (j["client"]["peak_rss_kib"]-j["client"]["rss_before_kib"])/max(1,j["client"]["peak_in_flight"]), j["client"]["peak_rss_kib"], j["client"]["rss_before_kib"], j["failed"])'
stop_sim

echo "== C. timing fidelity (target: p99 error <= 1 ms at 1,000 concurrent streams)"
start_sim --max-running 2000 --decode-base-ms 20 --decode-per-running-ms 0 --truth-log "$tmp/truth.jsonl"
"$BIN" bench --endpoint "$url" --isl 16 --osl 64 --num-prompts 2000 --concurrency 1000 \
  --threads 1 --output "$tmp/c.json" --details "$tmp/c.jsonl" >/dev/null || true
stop_sim
python3 bench/fidelity.py "$tmp/c.json" "$tmp/c.jsonl" "$tmp/truth.jsonl"

echo "== D. agentic replay (AgentX, 6 traces up to 158k-token prompts, 16 lanes, time-scaled 100x on both sides)"
rm -f "$tmp/port"
"$BIN" serve-sim --port 0 --port-file "$tmp/port" --hardware B200 --model-preset minimax-m2 --tp 2 \
  --time-scale 100 >"$tmp/sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 200); do [ -s "$tmp/port" ] && break; sleep 0.05; done
url="http://127.0.0.1:$(cat "$tmp/port")"
"$BIN" bench --workload agentic --endpoint "$url" --traces tests/data/agentx-traces --concurrency 16 \
  --agentx-fast --time-scale 100 --num-gpus 2 --output "$tmp/d.json" >/dev/null || true
field "$tmp/d.json" '"requests %d (warmup %d)  body bytes built %.1f MB at %.0f MB/s  client CPU %.2f s (%.3f s per lane, %.0f%% of one core)  peak RSS %d KiB (%d KiB per lane)  server prefix hit %.1f%% vs theoretical %.1f%%" % (j["num_prompts"], j["num_warmups"], j["client"]["body_bytes_built"]/1e6, j["client"]["body_bytes_per_s"]/1e6, j["client"]["cpu_seconds"], j["client"]["cpu_seconds_per_lane"], 100*j["client"]["cpu_utilization"], j["client"]["peak_rss_kib"], j["client"]["peak_rss_kib_per_lane"], j["agentic"]["server_prefix_cache"]["hit_rate_pct"] or 0, j["agentic"]["theoretical_prefix_cache_hit_pct"] or 0)'
stop_sim
