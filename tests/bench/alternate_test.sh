#!/bin/bash
# tests/bench/alternate.sh: the pairs run in the order A B, B A, A B (neither command always
# first), the summary is the median of the pairs' ratios with its quartiles (not a ratio of the
# two medians), and bad arguments or a command's bad figure end the run with one line and
# exit 2, before any summary.
# Usage: tests/bench/alternate_test.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
alt="$here/alternate.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# Order: each command logs its name; three pairs are A B, B A, A B.
out=$(bash "$alt" 3 "echo A >>$tmp/order; echo 2" "echo B >>$tmp/order; echo 3") || {
  echo "FAIL: a run of good commands exited $?"; fail=1; }
order=$(tr -d '\n' <"$tmp/order")
if [[ "$order" != "ABBAAB" ]]; then
  echo "FAIL: order '$order', expected ABBAAB"; fail=1
fi
if [[ "$out" != *"pairs 3: B/A median 1.5 (quartiles 1.5-1.5)"* ]]; then
  echo "FAIL: summary of 3 / 2 ratios: '$(tail -n 1 <<<"$out")'"; fail=1
fi

# The median of the paired ratios: A prints 1, 4, 1, 4 and B prints 1, 2, 3, 4 in call order, so
# the pairs (in their A B, B A order) are (1, 1), (4, 2), (1, 3), (4, 4): ratios 1, 0.5, 3, 1,
# median 1, quartiles 0.875-1.5; the ratio of the medians (3 / 2.5 = 1.2) would be wrong.
printf '1\n4\n1\n4\n' >"$tmp/a_seq"
printf '1\n2\n3\n4\n' >"$tmp/b_seq"
next() {  # a command that prints the next line of a sequence file
  echo "n=\$(wc -l <$tmp/$1.used 2>/dev/null || echo 0); echo x >>$tmp/$1.used; sed -n \"\$((n + 1))p\" $tmp/$1"
}
out=$(bash "$alt" 4 "$(next a_seq)" "$(next b_seq)") || { echo "FAIL: sequence run exited $?"; fail=1; }
if [[ "$out" != *"pairs 4: B/A median 1 (quartiles 0.875-1.5); A median 2.5 fastest 1; B median 2.5 fastest 1"* ]]; then
  echo "FAIL: summary of ratios 1, 0.5, 3, 1: '$(tail -n 1 <<<"$out")'"; fail=1
fi

# expect_error NAME EXPECTED_SUBSTRING ARGS...: exit 2, one line on stderr naming the problem,
# no summary on stdout.
expect_error() {
  local name=$1 want=$2
  shift 2
  local o e rc
  o=$(bash "$alt" "$@" 2>"$tmp/err")
  rc=$?
  e=$(cat "$tmp/err")
  if ((rc != 2)); then
    echo "FAIL $name: exit $rc, expected 2"; fail=1
  fi
  if [[ "$e" != *"$want"* || $(wc -l <"$tmp/err") -ne 1 ]]; then
    echo "FAIL $name: stderr '$e', expected one line with '$want'"; fail=1
  fi
  if [[ "$o" == *"pairs "*": B/A median"* ]]; then
    echo "FAIL $name: printed a summary after the error"; fail=1
  fi
}
expect_error no-commands "usage:" 3
expect_error zero-pairs "PAIRS: a whole number from 1 to 1000" 0 'echo 1' 'echo 1'
expect_error too-many-pairs "PAIRS: a whole number from 1 to 1000" 1001 'echo 1' 'echo 1'
expect_error word-pairs "PAIRS: a whole number from 1 to 1000" x 'echo 1' 'echo 1'
expect_error failing-command "command A ('exit 3') exited 3" 2 'exit 3' 'echo 1'
expect_error word-figure "command B ('echo abc') printed 'abc' as its last line, expected a positive number" 2 'echo 1' 'echo abc'
expect_error zero-figure "command A ('echo 0') printed '0'" 2 'echo 0' 'echo 1'
expect_error negative-figure "command B ('echo -5') printed '-5'" 2 'echo 1' 'echo -5'
expect_error empty-figure "command A ('true') printed '' as its last line" 2 'true' 'echo 1'

if ((fail)); then exit 1; fi
echo "alternate.sh: order, median of paired ratios and 9 bad inputs checked"
