#!/usr/bin/env python3
"""Generate small, synthetic LLM-serving request traces for inferbench tests.

Every file written by this script is SYNTHETIC: the numbers come from a seeded
pseudo-random generator (Python standard library only), not from any real
service. Only the file *formats* follow the public traces named below, so the
output can be committed freely; no data from those traces is copied. Running
the script twice with the same arguments gives byte-identical files.

Usage:
    scripts/make-timed-traces.py [--mooncake] [--seed N] OUT_DIR

Files written into OUT_DIR (200 requests each, sorted by arrival time):

bailian_synthetic_200.jsonl
    Format of the Qwen-Bailian KVCache traces
    (github.com/alibaba-edu/qwen-bailian-usagetraces-anon, files
    qwen_*_blksz_16.jsonl; that data is Apache-2.0). JSON Lines, one object
    per request, keys in this order:
      chat_id         int, unique request id (here: arrival index 0..199)
      parent_chat_id  int, chat_id of the previous turn, -1 for a root request
      timestamp       float, SECONDS since the start of the trace (3 decimals)
      input_length    int, prompt tokens
      output_length   int, generated tokens
      type            "text" | "search" | "image" | "file"
      turn            int, 1 for a root, parent's turn + 1 otherwise
      hash_ids        list of int, one id per 16-token block of the prompt,
                      ceil(input_length / 16) ids, the last block partial
    A later turn's hash_ids start with ALL of its parent's hash_ids (the
    parent's partial last block is treated as reused), followed by fresh ids
    for the parent's answer and the new user message. Some root requests
    start with one of a few shared "system prompt" blocks runs. Mean arrival
    rate about 5 req/s (exponential inter-arrival times).

burstgpt_synthetic_200.csv
    Format of BurstGPT (github.com/HPMLL/BurstGPT, data/BurstGPT_*.csv; that
    data is CC-BY-4.0, so none of it is copied here). CSV with header
      Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
    Timestamp: integer SECONDS from the start of the trace; several requests
    may share one second. Model: "ChatGPT" or "GPT-4". Total tokens =
    Request + Response tokens. Log Type: "Conversation log" or "API log".
    No prefix (hash) data. Mean rate about 4 req/s with bursty
    (gamma, shape 0.5) inter-arrival times.

azure_synthetic_200.csv
    Format of the Azure LLM inference trace 2023
    (github.com/Azure/AzurePublicDataset, AzureLLMInferenceDataset2023.md,
    data/AzureLLMInferenceTrace_{code,conv}.csv; that data is CC-BY-4.0, so
    none of it is copied here). CSV with header
      TIMESTAMP,ContextTokens,GeneratedTokens
    TIMESTAMP: wall-clock datetime text with 7 fractional digits (100 ns
    ticks), e.g. "2023-11-16 18:15:46.6805900". ContextTokens = prompt tokens,
    GeneratedTokens = output tokens. No prefix data. Mean rate about 5 req/s.

mooncake_synthetic_200.jsonl   (only with --mooncake)
    Format of the Mooncake traces (github.com/kvcache-ai/Mooncake,
    FAST25-release/traces/*.jsonl; Apache-2.0). JSON Lines:
      {"timestamp": <int, MILLISECONDS>, "input_length": N,
       "output_length": M, "hash_ids": [ints]}
    hash_ids: one id per 512-token block, ceil(input_length / 512) ids, the
    last block partial; ids form a prefix tree (a later turn starts with its
    parent's ids). Mean rate about 2 req/s. tests/data/timed-traces/ already
    holds a real 300-line Mooncake excerpt, so this file is optional.

All lengths are kept modest: input 50..4000 tokens, output 5..500 tokens.
"""

import argparse
import csv
import datetime
import json
import math
import os
import random
import sys

N_REQUESTS = 200
MIN_IN, MAX_IN = 50, 4000
MIN_OUT, MAX_OUT = 5, 500


def clamp(v, lo, hi):
    return max(lo, min(hi, v))


def lognormal_int(rng, median, sigma, lo, hi):
    return clamp(int(round(rng.lognormvariate(math.log(median), sigma))), lo, hi)


def blocks(tokens, block):
    return -(-tokens // block)


class Sessions:
    """Multi-turn chat generator with block-hash prefix sharing.

    Returns a list of dicts with keys: t (seconds, float), parent (index or -1),
    turn, input_length, output_length, hash_ids.
    """

    def __init__(self, rng, block, n_system, system_blocks):
        self.rng = rng
        self.block = block
        self.next_id = 0
        self.systems = []
        for _ in range(n_system):
            nb = rng.randint(*system_blocks)
            self.systems.append(self.fresh(nb))

    def fresh(self, n):
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        return ids

    def generate(self, n, rate, p_followup, min_gap):
        rng, block = self.rng, self.block
        out = []
        t = 0.0
        for i in range(n):
            if i:
                t += rng.expovariate(rate)
            # Chats whose latest turn arrived at least min_gap seconds ago and
            # that were not continued yet (each request has at most one child).
            open_ = [j for j, r in enumerate(out)
                     if not r["has_child"] and t - r["t"] >= min_gap]
            req = None
            if open_ and rng.random() < p_followup:
                j = rng.choice(open_[-30:])
                par = out[j]
                user = lognormal_int(rng, 120, 0.8, 5, 1500)
                # Full parent ids, then the parent's answer and the new message.
                extra = par["output_length"] + user
                inp = len(par["hash_ids"]) * block + extra
                if inp <= MAX_IN:
                    ids = par["hash_ids"] + self.fresh(blocks(extra, block))
                    par["has_child"] = True
                    req = dict(parent=j, turn=par["turn"] + 1,
                               input_length=inp, hash_ids=ids)
            if req is None:
                user = lognormal_int(rng, 500, 0.9, MIN_IN, MAX_IN)
                if self.systems and rng.random() < 0.5:
                    sys_ids = rng.choice(self.systems)
                    inp = clamp(len(sys_ids) * block + user, MIN_IN, MAX_IN)
                    rest = inp - len(sys_ids) * block
                    ids = sys_ids + self.fresh(blocks(rest, block))
                else:
                    inp = user
                    ids = self.fresh(blocks(inp, block))
                req = dict(parent=-1, turn=1, input_length=inp, hash_ids=ids)
            req["t"] = t
            req["output_length"] = lognormal_int(rng, 150, 0.8, MIN_OUT, MAX_OUT)
            req["has_child"] = False
            assert len(req["hash_ids"]) == blocks(req["input_length"], block)
            assert MIN_IN <= req["input_length"] <= MAX_IN
            out.append(req)
        return out


def write_bailian(path, rng):
    gen = Sessions(rng, block=16, n_system=3, system_blocks=(4, 40))
    reqs = gen.generate(N_REQUESTS, rate=5.0, p_followup=0.45, min_gap=1.0)
    types = ["text"] * 14 + ["search"] * 3 + ["image"] * 2 + ["file"]
    last = -1.0
    with open(path, "w", newline="\n") as f:
        for i, r in enumerate(reqs):
            ts = round(r["t"], 3)
            if ts <= last:          # keep timestamps strictly increasing
                ts = round(last + 0.001, 3)
            last = ts
            if r["parent"] >= 0:
                typ = reqs[r["parent"]]["type"]
            else:
                typ = rng.choice(types)
            r["type"] = typ
            obj = {
                "chat_id": i,
                "parent_chat_id": r["parent"],
                "timestamp": ts,
                "input_length": r["input_length"],
                "output_length": r["output_length"],
                "type": typ,
                "turn": r["turn"],
                "hash_ids": r["hash_ids"],
            }
            f.write(json.dumps(obj) + "\n")


def write_mooncake(path, rng):
    gen = Sessions(rng, block=512, n_system=2, system_blocks=(1, 2))
    reqs = gen.generate(N_REQUESTS, rate=2.0, p_followup=0.35, min_gap=3.0)
    last = -1
    with open(path, "w", newline="\n") as f:
        for r in reqs:
            ms = max(int(r["t"] * 1000), last)
            last = ms
            obj = {
                "timestamp": ms,
                "input_length": r["input_length"],
                "output_length": r["output_length"],
                "hash_ids": r["hash_ids"],
            }
            f.write(json.dumps(obj) + "\n")


def write_burstgpt(path, rng):
    rate = 4.0
    shape = 0.5                      # < 1: bursty arrivals
    t = float(rng.randint(0, 9))     # seconds from 0:00 of the first day
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["Timestamp", "Model", "Request tokens", "Response tokens",
                    "Total tokens", "Log Type"])
        for i in range(N_REQUESTS):
            if i:
                t += rng.gammavariate(shape, 1.0 / (rate * shape))
            model = "GPT-4" if rng.random() < 0.2 else "ChatGPT"
            log = "API log" if rng.random() < 0.4 else "Conversation log"
            req = lognormal_int(rng, 600, 0.9, MIN_IN, MAX_IN)
            resp = lognormal_int(rng, 200 if log == "Conversation log" else 80,
                                 0.8, MIN_OUT, MAX_OUT)
            w.writerow([int(t), model, req, resp, req + resp, log])


def write_azure(path, rng):
    rate = 5.0
    start = datetime.datetime(2023, 11, 16, 18, 15, 46)
    ticks = 6805900                  # 100 ns ticks past `start`
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["TIMESTAMP", "ContextTokens", "GeneratedTokens"])
        for i in range(N_REQUESTS):
            if i:
                ticks += max(1, int(rng.expovariate(rate) * 1e7))
            sec, frac = divmod(ticks, 10**7)
            ts = (start + datetime.timedelta(seconds=sec)).strftime(
                "%Y-%m-%d %H:%M:%S") + ".%07d" % frac
            ctx = lognormal_int(rng, 900, 0.9, MIN_IN, MAX_IN)
            gen = lognormal_int(rng, 120, 0.9, MIN_OUT, MAX_OUT)
            w.writerow([ts, ctx, gen])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", help="folder to write the traces into")
    ap.add_argument("--mooncake", action="store_true",
                    help="also write mooncake_synthetic_200.jsonl")
    ap.add_argument("--seed", type=int, default=20250101,
                    help="base random seed (default: %(default)s)")
    args = ap.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    # One independent generator per file, so adding --mooncake does not
    # change the other files.
    jobs = [("bailian_synthetic_200.jsonl", write_bailian, 1),
            ("burstgpt_synthetic_200.csv", write_burstgpt, 2),
            ("azure_synthetic_200.csv", write_azure, 3)]
    if args.mooncake:
        jobs.append(("mooncake_synthetic_200.jsonl", write_mooncake, 4))
    for name, fn, k in jobs:
        path = os.path.join(args.out_dir, name)
        fn(path, random.Random(args.seed * 10 + k))
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
