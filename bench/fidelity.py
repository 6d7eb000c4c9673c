#!/usr/bin/env python3
"""Client timing fidelity: compares what `inferbench bench --details` recorded with what
`inferbench serve-sim --truth-log` says it sent, on the same monotonic clock.

usage: fidelity.py RESULT.json DETAILS.jsonl TRUTH.jsonl
Prints percentiles of the client's lateness per content event (client read time minus the time
the server handed the token's bytes to its socket), for the first token (TTFT) and for inter-token
gaps (ITL error = client gap - server gap); per request, the error of its TTFT, its E2E latency
(last token) and its mean ITL; and, beside them, the server's own emission lag (the socket
handoff minus the end of the engine step that produced the token), which says whether the truth
server kept up with its schedule."""
import json
import sys


def pct(values, q):
    """numpy's linear percentile."""
    if not values:
        return float("nan")
    v = sorted(values)
    h = (len(v) - 1) * q / 100.0
    lo = int(h)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (h - lo) * (v[hi] - v[lo])


def main():
    result = json.load(open(sys.argv[1]))
    origin = result["origin_mono_ns"]
    prefix = result["request_id_prefix"]
    truth = {}
    for line in open(sys.argv[3]):
        rec = json.loads(line)
        truth[rec.get("request_id", "")] = rec
    first_err, token_err, itl_err = [], [], []
    e2e_err, mean_itl_err, emission_lag = [], [], []
    matched = 0
    for line in open(sys.argv[2]):
        rec = json.loads(line)
        if not rec["ok"]:
            continue
        t = truth.get(f"{prefix}{rec['index']}")
        if t is None:
            continue
        client = [origin + ms * 1e6 for ms in rec["content_ms"]]
        server = t["token_ns"]
        if len(client) != len(server):
            continue
        matched += 1
        errs = [(c - s) / 1e6 for c, s in zip(client, server)]
        first_err.append(errs[0])
        token_err.extend(errs)
        for i in range(1, len(client)):
            itl_err.append(((client[i] - client[i - 1]) - (server[i] - server[i - 1])) / 1e6)
        e2e_err.append(errs[-1])
        if len(client) > 1:
            mean_itl_err.append(((client[-1] - client[0]) - (server[-1] - server[0]))
                                / (len(client) - 1) / 1e6)
        due = t.get("due_ns") or []
        if len(due) == len(server):
            emission_lag.extend((s - d) / 1e6 for s, d in zip(server, due))
    print(f"requests matched with the truth log: {matched}")
    for name, vals in (("TTFT error (ms)", first_err), ("per-token lateness (ms)", token_err),
                       ("ITL error (ms)", itl_err), ("per-request E2E error (ms)", e2e_err),
                       ("per-request mean ITL err", mean_itl_err),
                       ("server emission lag (ms)", emission_lag)):
        if not vals:
            continue
        absv = [abs(x) for x in vals]
        print(f"{name:26s} n={len(vals):8d}  p50 {pct(vals, 50):8.3f}  p99 {pct(vals, 99):8.3f}"
              f"  |p99| {pct(absv, 99):8.3f}  max {max(absv) if absv else float('nan'):8.3f}")
    print(f"client: {json.dumps(result['client'])}")


if __name__ == "__main__":
    main()
