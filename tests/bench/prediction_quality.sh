#!/usr/bin/env bash
# How good is the out-of-sample prediction? Runs the configs below (each cell is predicted from
# its profiles before it is measured), then prints each run's "Prediction quality" (median and
# max |predicted / measured - 1|) and "Best gamma per group" tables, with the machine's load
# before and after. A benchmark, not a test: figures depend on the machine; run it on a quiet
# one and quote the load it prints.
#
#   tests/bench/prediction_quality.sh [OUT_DIR] [--quick]
#
# --quick: default.yaml and synthetic-acceptance.yaml only (about 4 minutes on 2 cores);
# otherwise also smollm2.yaml with 3 prompts of each set and gamma 2, 4 (about 6 more).
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-results/prediction-quality}"
quick=0
[[ "${2:-}" == "--quick" || "${1:-}" == "--quick" ]] && quick=1
[[ "$out" == "--quick" ]] && out=results/prediction-quality
bin=build/bin/speclab
[[ -x "$bin" ]] || { echo "prediction_quality: build first (.ci/build)" >&2; exit 2; }
mkdir -p "$out"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)   $(date -u +%FT%TZ)   $(git describe --always --dirty)"
run() {  # name config extra-args...
  local name=$1 cfg=$2
  shift 2
  rm -rf "$out/$name"
  "$bin" run "$cfg" --out "$out/$name" --no-plots "$@" >"$out/$name.log" 2>&1
  echo
  echo "## $name ($cfg $*)   load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$bin" table "$out/$name/results.jsonl" --format md |
    awk '/^### .*(Prediction quality|Best gamma per group)/{p=1} /^### / && !/(Prediction quality|Best gamma per group)/{p=0} p'
}
run default configs/default.yaml
run synthetic-acceptance configs/synthetic-acceptance.yaml
if ((!quick)); then
  run smollm2 configs/smollm2.yaml --set prompts.limit=3 --set 'sweep.gamma=[2, 4]'
fi
