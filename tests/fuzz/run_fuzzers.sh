#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) into build-fuzz/ and runs each for
# SECONDS (default 60), one after another, printing executions and crashes per target.
#
#   tests/fuzz/run_fuzzers.sh [SECONDS] [TARGET ...]
#
# Each target starts from its committed seeds (tests/fuzz/corpus/<target>/) plus what earlier
# runs found (build-fuzz/corpus/<target>/, not committed). A crash does not end the target's
# time: the input is saved as build-fuzz/crashes/<target>/crash-<sha1>, counted, and fuzzing
# resumes. Keep a crashing input as a regression test (see tests/fuzz/README.md).
# Exit status: 0 when no target crashed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_TARGET=${1:-60}
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(fuzz_safetensors fuzz_gguf fuzz_tokenizer_json fuzz_tokenizer_model fuzz_experiment_config
    fuzz_jsonl_inputs)
fi
BUILD=build-fuzz

if [ -z "${SPECLAB_FUZZ_NO_BUILD:-}" ]; then  # set it to run what build-fuzz/ already has
  CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S . -B "$BUILD" -DSPECLAB_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 2
  cmake --build "$BUILD" -j"$(nproc)" --target "${TARGETS[@]}" >/dev/null || exit 2
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OMP_NUM_THREADS=1

printf '%-24s %12s %8s %8s\n' target executions crashes seconds
total_crashes=0
for t in "${TARGETS[@]}"; do
  corpus="$BUILD/corpus/$t"
  crashes_dir="$BUILD/crashes/$t"
  log_dir="$BUILD/fuzz-logs"
  mkdir -p "$corpus" "$crashes_dir" "$log_dir"
  execs=0
  crashes=0
  start=$(date +%s)
  while :; do
    left=$((SECONDS_PER_TARGET - ($(date +%s) - start)))
    [ "$left" -gt 0 ] || break
    log="$log_dir/$t.$(date +%s).log"
    "$BUILD/bin/$t" "$corpus" "tests/fuzz/corpus/$t" -max_total_time="$left" -timeout=20 \
      -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$crashes_dir/" >"$log" 2>&1
    rc=$?
    # executions: the final stats line when the run ended normally, else the last status line
    n=$(grep -oE '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
    [ -n "$n" ] || n=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
    execs=$((execs + ${n:-0}))
    if [ "$rc" -ne 0 ]; then
      crashes=$((crashes + 1))
      if [ "$crashes" -le 3 ]; then  # details of the first few; the rest are in the logs
        echo "  $t: crash (exit $rc), log $log:" >&2
        grep -E 'what\(\)|ERROR: AddressSanitizer|runtime error|not one line|Test unit written' "$log" \
          | head -4 | cut -c1-200 | sed 's/^/    /' >&2
      fi
    fi
  done
  total_crashes=$((total_crashes + crashes))
  printf '%-24s %12d %8d %8d\n' "$t" "$execs" "$crashes" "$(($(date +%s) - start))"
done
[ "$total_crashes" -eq 0 ]
