#!/bin/bash
# figures.py flags an impossible figure instead of printing it plainly: a batched forward faster
# than its floor (the weights read once, or their multiply-adds at the measured peak) is marked
# as a limit measured wrong, and only that row (a made-up run of two BM_BatchedDecode rows, one
# beating its floor); so is a 32-row forward faster than the FMA peak measured beside it, and a
# T(b, k) forward faster than its floor, and a BF16 row-pairs run whose logits differed.
# Usage: tests/bench/figures_flags.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
row() {  # row B T_BATCH FLOOR BEATEN
  printf '{"name": "BM_BatchedDecode/llama-3.2-1b:bf16/b:%s/iterations:3/manual_time",
    "run_type": "iteration", "real_time": %s, "time_unit": "ms", "T_batch_ms": %s,
    "T_singles_ms": 100, "ratio": 0.5, "read_ms": %s, "arith_ms": 10, "peak_GFLOPs": 200,
    "floor_ms": %s, "floor_frac": %s, "floor_beaten": %s}' "$1" "$2" "$2" "$3" "$3" \
    "$(python3 -c "print($3 / $2)")" "$4"
}
cat >"$tmp/run.json" <<JSON
{"context": {"read_bandwidth_GBps": "30.0", "matmul_isa": "avx2"},
 "benchmarks": [$(row 2 120 100 0), $(row 4 80 100 1)]}
JSON
out=$(python3 "$here/figures.py" "$tmp/run.json") || { echo "FAIL: figures.py exited $?"; exit 1; }
fail=0
line2=$(grep -E '^\| llama-3.2-1b:bf16 \| 2 \|' <<<"$out")
line4=$(grep -E '^\| llama-3.2-1b:bf16 \| 4 \|' <<<"$out")
if [[ -z "$line2" || "$line2" == *"BEATS THE FLOOR"* || "$line2" != *"83%"* ]]; then
  echo "FAIL b=2 (under its floor's pace, 83%, not flagged): '$line2'"; fail=1
fi
if [[ "$line4" != *"BEATS THE FLOOR"* ]]; then
  echo "FAIL b=4 (faster than its floor) not flagged: '$line4'"; fail=1
fi
# A 32-row forward faster than the FMA peak measured beside it is flagged and not met; one at
# 73% of it is met and not flagged.
forward() {  # forward PEAK_FRAC IMPOSSIBLE
  cat >"$tmp/fwd.json" <<JSON
{"context": {"read_bandwidth_GBps": "30.0", "matmul_isa": "avx512"},
 "benchmarks": [{"name": "BM_BatchedForward32/llama-3.2-3b:bf16/iterations:3/manual_time",
   "run_type": "iteration", "real_time": 1400, "time_unit": "ms", "T1_ms": 200, "T32_ms": 1400,
   "T32_over_T1": 7.0, "GFLOPs": $(python3 -c "print(200 * $1)"), "peak_GFLOPs": 200,
   "peak_frac": $1, "peak_frac_impossible": $2}]}
JSON
  python3 "$here/figures.py" "$tmp/fwd.json" | grep -E '^\| llama-3.2-3b:bf16 forward of 32 rows'
}
over=$(forward 1.19 1)
fine=$(forward 0.73 0)
if [[ "$over" != *"ABOVE THE PEAK"* || "$over" != *"MISSED"* ]]; then
  echo "FAIL forward at 119% of the peak not flagged: '$over'"; fail=1
fi
if [[ "$fine" == *"ABOVE THE PEAK"* || "$fine" != *"73%"* || "$fine" != *"| met |"* ]]; then
  echo "FAIL forward at 73% of the peak: '$fine'"; fail=1
fi
# With the fastest iteration (peak_frac_best): that is the figure against the limit, the mean
# beside it; a fastest iteration above the peak is flagged and not met.
forward_best() {  # forward_best MEAN_FRAC BEST_FRAC IMPOSSIBLE
  cat >"$tmp/fwdb.json" <<JSON
{"context": {"read_bandwidth_GBps": "30.0", "matmul_isa": "avx512"},
 "benchmarks": [{"name": "BM_BatchedForward32/llama-3.2-3b:bf16/iterations:5/manual_time",
   "run_type": "iteration", "real_time": 1400, "time_unit": "ms", "T1_ms": 200, "T32_ms": 1400,
   "T32_best_ms": 1300, "T32_over_T1": 7.0, "GFLOPs": $(python3 -c "print(200 * $1)"),
   "GFLOPs_best": $(python3 -c "print(200 * $2)"), "peak_GFLOPs": 200, "peak_frac": $1,
   "peak_frac_best": $2, "peak_frac_impossible": $3}]}
JSON
  python3 "$here/figures.py" "$tmp/fwdb.json" | grep -E '^\| llama-3.2-3b:bf16 forward of 32 rows'
}
best_met=$(forward_best 0.66 0.73 0)
best_low=$(forward_best 0.60 0.68 0)
best_over=$(forward_best 0.90 1.05 1)
if [[ "$best_met" != *"73% (fastest of the iterations"* || "$best_met" != *"mean 66%"* ||
      "$best_met" != *"| met |"* ]]; then
  echo "FAIL forward fastest at 73%, mean 66%: '$best_met'"; fail=1
fi
if [[ "$best_low" != *"68%"* || "$best_low" != *"MISSED"* ]]; then
  echo "FAIL forward fastest at 68%: '$best_low'"; fail=1
fi
if [[ "$best_over" != *"ABOVE THE PEAK"* || "$best_over" != *"MISSED"* ]]; then
  echo "FAIL forward fastest at 105% of the peak not flagged: '$best_over'"; fail=1
fi
# T(b, k): a fastest forward under its floor is flagged on its own row only.
verify_row() {  # verify_row B K T_BEST FLOOR BEATEN
  printf '{"name": "BM_BatchedVerify/llama-3.2-1b:bf16/b:%s/k:%s/iterations:3/manual_time",
    "run_type": "iteration", "real_time": %s, "time_unit": "ms", "rows": %s, "T_ms": %s,
    "T_best_ms": %s, "T_over_T1": 1.5, "read_ms": %s, "arith_ms": 10, "peak_GFLOPs": 200,
    "floor_ms": %s, "floor_frac": %s, "floor_beaten": %s, "peak_frac": 0.5}' "$1" "$2" "$3" \
    "$(($1 * $2))" "$3" "$3" "$4" "$4" "$(python3 -c "print($4 / $3)")" "$5"
}
cat >"$tmp/verify.json" <<JSON
{"context": {"read_bandwidth_GBps": "30.0", "matmul_isa": "avx512"},
 "benchmarks": [$(verify_row 4 8 150 100 0), $(verify_row 8 8 90 100 1)]}
JSON
vout=$(python3 "$here/figures.py" "$tmp/verify.json") || { echo "FAIL: figures.py exited $?"; exit 1; }
v32=$(grep -E '^\| llama-3.2-1b:bf16 \| 4 \| 8 \| 32 \|' <<<"$vout")
v64=$(grep -E '^\| llama-3.2-1b:bf16 \| 8 \| 8 \| 64 \|' <<<"$vout")
if [[ -z "$v32" || "$v32" == *"BEATS THE FLOOR"* || "$v32" != *"67%"* ]]; then
  echo "FAIL T(4, 8) (at 67% of its floor's pace, not flagged): '$v32'"; fail=1
fi
if [[ "$v64" != *"BEATS THE FLOOR"* ]]; then
  echo "FAIL T(8, 8) (faster than its floor) not flagged: '$v64'"; fail=1
fi
# BF16 row pairs against plain rows: a run whose logits differed in some round is flagged.
layout_row() {  # layout_row MODEL DIFFER
  printf '{"name": "BM_DecodeLayoutPairs/%s/iterations:150/real_time", "run_type": "iteration",
    "real_time": 200, "time_unit": "ms", "pairs_over_rows": 0.94, "pairs_q1": 0.91,
    "pairs_q3": 0.98, "rows_ms": 46.0, "pairs_ms": 43.3, "logits_differ": %s}' "$1" "$2"
}
cat >"$tmp/layout.json" <<JSON
{"context": {"read_bandwidth_GBps": "30.0", "matmul_isa": "avx512"},
 "benchmarks": [$(layout_row llama-3.2-1b:bf16 0), $(layout_row llama-3.2-3b:bf16 2)]}
JSON
lout=$(python3 "$here/figures.py" "$tmp/layout.json") || { echo "FAIL: figures.py exited $?"; exit 1; }
l1=$(grep -E '^\| llama-3.2-1b:bf16: 0.940' <<<"$lout")
l3=$(grep -E '^\| llama-3.2-3b:bf16: 0.940' <<<"$lout")
if [[ -z "$l1" || "$l1" == *"CHANGED BITS"* ]]; then
  echo "FAIL layout pairs with no differing logits: '$l1'"; fail=1
fi
if [[ "$l3" != *"THE LAYOUT CHANGED BITS"* ]]; then
  echo "FAIL layout pairs whose logits differed not flagged: '$l3'"; fail=1
fi
[[ $fail == 0 ]] && echo "ok: $line4; $over; $best_met; $v64; $l3"
exit $fail
