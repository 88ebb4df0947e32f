#!/bin/sh
# The table of speed figures (tests/bench/README.md): runs every speclab_bench benchmark,
# ~10 minutes on 2 cores, and prints each figure next to its limit measured in the same run.
#   tests/bench/figures.sh [BUILD_DIR] [extra speclab_bench flags, e.g. --benchmark_filter=Decode]
# SPECLAB_MATMUL_ISA=avx512bf16 tests/bench/figures.sh   # the same with vdpbf16ps for BF16
set -e
build=${1:-build}
[ $# -gt 0 ] && shift
out=${TMPDIR:-/tmp}/speclab_bench_$$.json
OMP_WAIT_POLICY=passive "$build/bin/speclab_bench" --benchmark_out="$out" \
  --benchmark_out_format=json "$@" >&2
python3 "$(dirname "$0")/figures.py" "$out"
