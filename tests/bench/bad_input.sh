#!/bin/bash
# speclab_bench's bad input (SPECLAB_BENCH_GGUF, and the kernels' SPECLAB_MATMUL_ISA, _STREAM, _PREFETCH and _LAYOUT): each case must end in one line naming the file or
# variable and exit 2, not a crash (before it, stderr may hold the read probes' lines). Usage: tests/bench/bad_input.sh PATH/TO/speclab_bench
set -u
bench=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {  # expect NAME PATTERN -- command...
  local name=$1 pattern=$2
  shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  # Exit 2, and the error is the last line of stderr (the read probes may print before it).
  if [ "$rc" -ne 2 ] || ! tail -n 1 "$tmp/err" | grep -q -- "$pattern"; then
    echo "FAIL $name: exit $rc, stderr:"; cat "$tmp/err"; fail=1
  else
    echo "ok $name: $(tail -n 1 "$tmp/err")"
  fi
}
# A path that does not exist, and a directory: refused when the benchmarks are registered.
expect missing "SPECLAB_BENCH_GGUF: $tmp/none.gguf: not a regular file" -- \
  env SPECLAB_BENCH_GGUF="$tmp/none.gguf" "$bench" --benchmark_list_tests
expect directory "SPECLAB_BENCH_GGUF: $tmp: not a regular file" -- \
  env SPECLAB_BENCH_GGUF="$tmp" "$bench" --benchmark_list_tests
# A regular file that is not a GGUF: refused when its benchmark loads it.
printf 'not a gguf file at all' >"$tmp/junk.gguf"
expect not-gguf "junk.gguf" -- env SPECLAB_BENCH_GGUF="$tmp/junk.gguf" "$bench" \
  --benchmark_filter='BM_Decode/gguf:junk'
# The kernels' settings: a misspelt value is refused before any probe or benchmark runs.
expect bad-isa "SPECLAB_MATMUL_ISA: unknown kernel path 'avx-512'" -- \
  env SPECLAB_MATMUL_ISA=avx-512 "$bench" --benchmark_filter=none
expect bad-stream "SPECLAB_MATMUL_STREAM: unknown value 'whole' (expected rows, rows-ahead or segments)" -- \
  env SPECLAB_MATMUL_STREAM=whole "$bench" --benchmark_filter=none
expect bad-prefetch "SPECLAB_MATMUL_PREFETCH: unknown value 'L1' (expected l1 or l2)" -- \
  env SPECLAB_MATMUL_PREFETCH=L1 "$bench" --benchmark_filter=none
expect bad-layout "SPECLAB_MATMUL_LAYOUT: unknown value 'pair' (expected rows or pairs)" -- \
  env SPECLAB_MATMUL_LAYOUT=pair "$bench" --benchmark_filter=none
exit $fail
