#!/bin/sh
# Rebuild the whole tiny zoo from scratch: data + tokenizer, three trainings, evaluations, cards.
# Every step is deterministic (fixed seeds); rerunning after an interruption resumes from
# the checkpoints in ~/.cache/speclab/zoo-ckpt. Run from the repository root:
#   sh models/train/train_zoo.sh
# Reproduction check (leaves models/zoo alone; fresh checkpoints so nothing resumes):
#   ZOO_OUT=/tmp/zoo-repro/out CKPT_DIR=/tmp/zoo-repro/ckpt PARALLEL=1 sh models/train/train_zoo.sh
#   python models/train/check_reproduction.py /tmp/zoo-repro/out
# (with ZOO_OUT set: trains, exports there and evaluates perplexity; no alpha, no cards)
set -e
export OMP_WAIT_POLICY=PASSIVE  # shared 2-core box: do not spin at OpenMP barriers
PY=${PY:-/opt/speclab-venv/bin/python}
LOGS=${LOGS:-${HOME}/.cache/speclab/zoo-logs}
ZOO_OUT=${ZOO_OUT:-}
CKPT_DIR=${CKPT_DIR:-${HOME}/.cache/speclab/zoo-ckpt}
OUT=${ZOO_OUT:-models/zoo}
mkdir -p "$LOGS"
[ -f "$HOME/.cache/speclab/zoo-data/train/sotu.u16" ] || $PY models/train/prepare_data.py --skip-tokenizer
# PARALLEL=1 trains the three at once (what was done for the committed zoo: on a
# shared, busy 2-core box; one thread each, since under contention a second thread
# mostly waits at OpenMP barriers).
for name in tiny-target-5m tiny-draft-0.5m tiny-draft-2m; do
  if [ "${PARALLEL:-0}" = 1 ]; then
    nice -n 15 $PY models/train/train_tiny.py --name $name --threads 1 \
      --ckpt-dir "$CKPT_DIR" ${ZOO_OUT:+--out-dir "$ZOO_OUT"} >> "$LOGS/$name.log" 2>&1 &
  else
    nice -n 15 $PY models/train/train_tiny.py --name $name \
      --ckpt-dir "$CKPT_DIR" ${ZOO_OUT:+--out-dir "$ZOO_OUT"} 2>&1 | tee -a "$LOGS/$name.log"
  fi
done
wait
if [ "${TRAIN_ONLY:-0}" = 1 ]; then exit 0; fi
for name in tiny-target-5m tiny-draft-0.5m tiny-draft-2m; do
  nice -n 15 $PY models/train/eval_tiny.py "$OUT/$name"
done
if [ -n "$ZOO_OUT" ]; then exit 0; fi
for name in tiny-draft-0.5m tiny-draft-2m; do
  nice -n 15 $PY models/train/eval_alpha.py --target models/zoo/tiny-target-5m --draft models/zoo/$name
done
$PY models/train/write_cards.py
