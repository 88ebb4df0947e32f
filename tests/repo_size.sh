#!/usr/bin/env bash
# The tracked tree must fit, with the device kit's packages (.device-debs, about 8.1 MiB), in
# the 64 MiB that travel to a lent GPU machine (docs/device.md): fails when the files git
# tracks exceed SPECLAB_TREE_BUDGET_MIB (default 54). Prints the size and the largest files.
set -euo pipefail
cd "$(dirname "$0")/.."
budget=${SPECLAB_TREE_BUDGET_MIB:-54}
bytes=$(git ls-files -z | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
mib=$(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1048576}')
echo "tracked tree: $mib MiB (budget $budget MiB)"
if awk -v b="$bytes" -v m="$budget" 'BEGIN {exit !(b > m * 1048576)}'; then
  echo "repo_size: the tracked tree ($mib MiB) exceeds $budget MiB; largest files:" >&2
  git ls-files -z | xargs -0 stat -c '%s %n' | sort -rn | head -5 >&2
  exit 1
fi
