#!/usr/bin/env bash
# tests/bench/step_graphs_table.py on the H200 record of 2026-12-04 (graphs on/off, rounds;
# that run had no BM_CudaStepKernels) and on a one-row BM_CudaStepKernels file: the rows it
# prints carry the JSON's figures.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
table=$root/tests/bench/step_graphs_table.py
out=$(python3 "$table" "$root/results/device/2026-12-04-h200/bench_cuda.json")
grep -q '^1B BF16   1    2.376    2.196   0.924' <<<"$out" || { echo "FAIL: 1B k 1 row"; echo "$out"; exit 1; }
grep -q '^graph capture failures: 0' <<<"$out" || { echo "FAIL: failures line"; exit 1; }
grep -q '^path 2 gamma 1 T 0 graphs 1 .* 6.425       0.184' <<<"$out" || { echo "FAIL: round row"; echo "$out"; exit 1; }
grep -q '^no BM_CudaStepKernels rows' <<<"$out" || { echo "FAIL: no kernels line"; exit 1; }
grep -q '^BM_CudaCopy: 4178 GB/s' <<<"$out" || { echo "FAIL: copy rate in GB/s"; echo "$out"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --before: the record against itself (every ratio 1), then against a copy whose 3B graphs-on
# step took half the time (ratio 2 now over before), and a --before without its file.
record=$root/results/device/2026-12-04-h200/bench_cuda.json
out=$(python3 "$table" "$record" --before "$record")
grep -q '^  BM_CudaStepGraphs/model:1/graphs:1/n_tokens:1 .* 4.2656    4.2656      1.000$' <<<"$out" ||
  { echo "FAIL: before row against itself"; echo "$out"; exit 1; }
grep -q '^  BM_CudaStandardize/top_k:0/top_p_pct:100 .* 0.3935    0.3935      1.000$' <<<"$out" ||
  { echo "FAIL: standardize row"; echo "$out"; exit 1; }
grep -q 'BM_CudaSpeculativeRound' <<<"$(grep '^  BM_' <<<"$out")" && { echo "FAIL: a case outside the list"; exit 1; }
python3 - "$record" "$tmp/half.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for b in d["benchmarks"]:
    if b["name"] == "BM_CudaStepGraphs/model:1/graphs:1/n_tokens:1/manual_time":
        b["real_time"] /= 2
json.dump(d, open(sys.argv[2], "w"))
PY
out=$(python3 "$table" "$record" --before "$tmp/half.json")
grep -q '^  BM_CudaStepGraphs/model:1/graphs:1/n_tokens:1 .* 2.1328    4.2656      2.000$' <<<"$out" ||
  { echo "FAIL: ratio against a faster record"; echo "$out"; exit 1; }
if python3 "$table" "$record" --before 2>/dev/null; then echo "FAIL: --before without a file"; exit 1; fi
cat >"$tmp/k.json" <<'JSON'
{"benchmarks": [{"name": "BM_CudaStepKernels/model:1/n_tokens:4/manual_time",
  "sum_us": 4100.0, "plain_us": 4000.0, "sum_over_plain": 1.025,
  "qkv_us": 310.5, "qkv_share": 0.0757, "qkv_GBps": 1716.0, "qkv_of_copy": 0.411,
  "attention_us": 880.0, "attention_share": 0.2146}]}
JSON
out=$(python3 "$table" "$tmp/k.json")
grep -q '^3B BF16 k 4: sum 4100 us, step alone 4000 us (sum/step 1.025)' <<<"$out" ||
  { echo "FAIL: kernels header"; echo "$out"; exit 1; }
grep -q '^  qkv            310.5   7.6%    1716  41.1%' <<<"$out" || { echo "FAIL: qkv row"; echo "$out"; exit 1; }
grep -q '^  attention      880.0  21.5%' <<<"$out" || { echo "FAIL: attention row"; echo "$out"; exit 1; }
grep -q 'embedding' <<<"$out" && { echo "FAIL: a label the JSON lacks was printed"; exit 1; }
echo "step_graphs_table: ok"
