#!/bin/bash
# Two commands timed in alternation, pair by pair, for a side-by-side ratio on a machine whose
# speed shifts within seconds (a memory state, another job): each command prints one figure
# (its last line, a positive number, e.g. ms per token), the pairs run A B, B A, A B, ... so
# that neither command always runs first, and the ratio B / A of each pair compares two runs
# seconds apart. Prints every pair, then the median of the pairs' ratios with its quartiles
# and the median and fastest figure of each command. A ratio of runs minutes apart mostly
# measures the drift; the median of paired ratios much less (an A/A run of the 3B decode against
# itself on the 2-core guest: median 1.02, quartiles 1.00-1.10, docs/findings.md).
#
# Usage: tests/bench/alternate.sh PAIRS 'COMMAND A' 'COMMAND B'
#   PAIRS: how many pairs (1 to 1000). Each COMMAND is run with bash -c.
# A command that exits non-zero or whose last line is not a positive number ends the run with
# one line naming the command and what it printed, and exit 2.
set -u
usage() {
  echo "usage: $0 PAIRS 'COMMAND A' 'COMMAND B' (PAIRS: a whole number from 1 to 1000)" >&2
  exit 2
}
[[ $# -eq 3 ]] || usage
pairs=$1
[[ "$pairs" =~ ^[0-9]+$ ]] && ((10#$pairs >= 1 && 10#$pairs <= 1000)) || usage
pairs=$((10#$pairs))
cmd_a=$2
cmd_b=$3

# figure NAME COMMAND: runs COMMAND and prints its last line if that is a positive number.
figure() {
  local out rc last
  out=$(bash -c "$2" 2>/dev/null)
  rc=$?
  last=$(tail -n 1 <<<"$out" | tr -d '[:space:]')
  if ((rc != 0)); then
    echo "alternate.sh: command $1 ('$2') exited $rc" >&2
    exit 2
  fi
  if ! [[ "$last" =~ ^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$ ]] ||
    ! awk -v x="$last" 'BEGIN { exit !(x > 0) }'; then
    echo "alternate.sh: command $1 ('$2') printed '$last' as its last line, expected a positive number" >&2
    exit 2
  fi
  echo "$last"
}

ratios=()
as=()
bs=()
for ((i = 0; i < pairs; i++)); do
  if ((i % 2 == 0)); then
    a=$(figure A "$cmd_a") || exit 2
    b=$(figure B "$cmd_b") || exit 2
  else
    b=$(figure B "$cmd_b") || exit 2
    a=$(figure A "$cmd_a") || exit 2
  fi
  r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", b / a }')
  ratios+=("$r")
  as+=("$a")
  bs+=("$b")
  printf '%s load %s pair %d A %.4g B %.4g B/A %s\n' "$(date -u +%H:%M:%S)" \
    "$(cut -d' ' -f1 /proc/loadavg)" "$((i + 1))" "$a" "$b" "$r"
done

# quantile Q VALUES...: the Q-quantile (0..1) of the values, linear between order statistics.
quantile() {
  local q=$1
  shift
  printf '%s\n' "$@" | sort -g | awk -v q="$q" '{ v[NR] = $1 }
    END { p = 1 + q * (NR - 1); lo = int(p); f = p - lo;
          printf "%.4g", (lo < NR) ? v[lo] + f * (v[lo + 1] - v[lo]) : v[lo] }'
}
echo "pairs $pairs: B/A median $(quantile 0.5 "${ratios[@]}") (quartiles" \
  "$(quantile 0.25 "${ratios[@]}")-$(quantile 0.75 "${ratios[@]}"));" \
  "A median $(quantile 0.5 "${as[@]}") fastest $(quantile 0 "${as[@]}");" \
  "B median $(quantile 0.5 "${bs[@]}") fastest $(quantile 0 "${bs[@]}")"
