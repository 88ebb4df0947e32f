#!/usr/bin/env bash
# Counts the bigram table of the n-gram drafter of configs/categories.yaml (the paper's
# "negligible cost" bigram draft, Leviathan et al. 2023 Table 3) with SmolLM2-135M-Instruct's
# tokenizer, from the TRAINING parts of the corpora the repository ships: Moby-Dick's
# etymology, extracts and chapters 1-129, and the State of the Union addresses before 2010
# (tests/data/corpus). The held-out text the category prompts are cut from (chapters 130-135,
# the epilogue, the 2019 address) stays out, so the draft has not seen the prompts' passages.
# Deterministic (files sorted, counts exact): about 2.3 MB, 177k bigrams, under a second.
#
#   bash models/train/make_smollm2_ngram.sh    # -> $SPECLAB_CACHE/smollm2-bigram.ngram
#
# SPECLAB (default build/bin/speclab) is the binary; SPECLAB_CACHE (default ~/.cache/speclab)
# holds the SmolLM2 GGUF from .ci/install and receives the table.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
SPECLAB="${SPECLAB:-$REPO/build/bin/speclab}"
CACHE="${SPECLAB_CACHE:-$HOME/.cache/speclab}"
CORPUS="$REPO/tests/data/corpus"
files=("$CORPUS/moby-dick/etymology.txt" "$CORPUS/moby-dick/extracts.txt")
for i in $(seq 1 129); do files+=("$CORPUS/moby-dick/chapter_$i.txt"); done
for f in "$CORPUS"/sotu/*.txt; do
  year=$(basename "$f" | cut -c1-4)
  if ((year < 2010)); then files+=("$f"); fi
done
args=()
for f in "${files[@]}"; do args+=(--corpus "$f"); done
"$SPECLAB" ngram --tokenizer "$CACHE/SmolLM2-135M-Instruct.Q4_1.gguf" "${args[@]}" \
  --out "$CACHE/smollm2-bigram.ngram"
