#!/usr/bin/env python3
"""Train one member of the tiny Llama zoo and export it as an HF Llama directory.

Data: the token streams written by prepare_data.py (~/.cache/speclab/zoo-data).
Each batch holds B windows of 257 tokens; every window is drawn from one of
the three corpora with fixed probabilities MIX (bible 0.4, moby 0.2, sotu 0.4:
not proportional to size, so the small Moby-Dick corpus is not drowned by the
State of the Union addresses), at a uniformly random offset. The batch for step s is a pure function of
(seed, s), so a resumed run sees exactly the data an uninterrupted one would.

Optimizer: AdamW (betas 0.9/0.95, weight decay 0.1 on matrices), linear warmup
then cosine decay to 10% of the peak LR, gradient clipping at 1.0.
Checkpoints: <ckpt-dir>/<name>.pt every --ckpt-every steps; rerunning the same
command resumes from it.

Reproduce (all three, sequentially, then eval and cards):  sh models/train/train_zoo.sh
One model:  python models/train/train_tiny.py --name tiny-target-5m
Reproduction check without touching the committed zoo (fresh checkpoints, scratch export):
  python models/train/train_tiny.py --name tiny-target-5m --ckpt-dir /tmp/ck --out-dir /tmp/zoo
  (or ZOO_OUT=/tmp/zoo CKPT_DIR=/tmp/ck PARALLEL=1 sh models/train/train_zoo.sh; then
  models/train/check_reproduction.py compares the eval.json files)
Throughput: python models/train/train_tiny.py --bench
"""
import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_llama import TinyConfig, TinyLlama, export_hf, config_dict  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.expanduser("~/.cache/speclab/zoo-data")
CKPT = os.path.expanduser("~/.cache/speclab/zoo-ckpt")
CORPORA = ("bible", "moby", "sotu")
MIX = (0.4, 0.2, 0.4)
SEQ = 256

# name -> (architecture, batch size, steps, peak lr, seed).
# Token budgets were sized from the measured throughput so that all three runs fit
# in ~60 minutes on the shared 2-core development VM (AMD EPYC, avx512_bf16).
# `--bench` on a lightly loaded box, training tokens/s, fp32 -> bf16 autocast:
#   6.5M target first planned (hidden 288) 2,526 -> 5,140; tiny-draft-2m 8,890 -> 13,932; tiny-draft-0.5m 34,358 -> 45,599.
# On the day the zoo was trained, other engineers were compiling at normal priority
# (load average 10-15 on the 2 cores): all niced processes of this session together
# got ~0.28 of a core, and under that contention a step cost ~2x the CPU time of the
# idle-box bench. So: 200 steps x 16 x 256 = 819,200 tokens (~0.2 epoch of the 3.9M-
# token training split) for every model, one thread each, the three concurrently
# (train_zoo.sh PARALLEL=1), and a 5.2M-parameter target rather than the 6.5M first
# planned (hidden 288, intermediate 768, 6 heads / 2 KV heads).
ZOO = {
    "tiny-target-5m": dict(cfg=TinyConfig(hidden_size=256, intermediate_size=640, num_hidden_layers=6,
                                          num_attention_heads=8, num_key_value_heads=4),
                           batch=16, steps=200, lr=2e-3, seed=1),
    "tiny-draft-2m": dict(cfg=TinyConfig(hidden_size=128, intermediate_size=384, num_hidden_layers=6,
                                         num_attention_heads=4, num_key_value_heads=2),
                          batch=16, steps=200, lr=3e-3, seed=2),
    "tiny-draft-0.5m": dict(cfg=TinyConfig(hidden_size=64, intermediate_size=192, num_hidden_layers=2,
                                           num_attention_heads=2, num_key_value_heads=1),
                            batch=16, steps=200, lr=4e-3, seed=3),
}


def load_streams(part):
    return {c: np.fromfile(os.path.join(DATA, part, c + ".u16"), dtype="<u2") for c in CORPORA}


def get_batch(streams, seed, step, batch):
    """(seed, step) -> (x, y) int64 tensors of shape (batch, SEQ)."""
    rng = np.random.default_rng([seed, step])
    which = rng.choice(len(CORPORA), size=batch, p=MIX)
    rows = []
    for w in which:
        s = streams[CORPORA[w]]
        off = int(rng.integers(0, len(s) - SEQ - 1))
        rows.append(s[off:off + SEQ + 1].astype(np.int64))
    t = torch.from_numpy(np.stack(rows))
    return t[:, :-1], t[:, 1:]


def lr_at(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    prog = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * prog)))


def make_optimizer(model, lr):
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.95), eps=1e-8)


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


@torch.no_grad()
def quick_val(model, streams, n_batches=4, batch=8, autocast=False):
    model.eval()
    out = {}
    for c in CORPORA:
        s = {c: streams[c]}
        losses = []
        for i in range(n_batches):
            x, y = get_batch({CORPORA[0]: s[c], CORPORA[1]: s[c], CORPORA[2]: s[c]}, 999, i, batch)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                logits = model(x)
            losses.append(F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                          y.reshape(-1)).item())
        out[c] = float(np.mean(losses))
    model.train()
    return out


def bench(args):
    streams = load_streams("train")
    res = {}
    for name, spec in ZOO.items():
        for ac in (False, True):
            torch.manual_seed(0)
            model = TinyLlama(spec["cfg"])
            opt = make_optimizer(model, 1e-3)
            n = 0
            for step in range(args.bench_steps + 2):
                if step == 2:
                    t0 = time.time()
                x, y = get_batch(streams, 0, step, spec["batch"])
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=ac):
                    logits = model(x)
                loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                if step >= 2:
                    n += x.numel()
            tps = n / (time.time() - t0)
            res[f"{name} autocast_bf16={ac}"] = round(tps)
            print(f"{name:18s} params {model.num_params():>9,d} autocast_bf16={ac}: {tps:8.0f} tokens/s",
                  flush=True)
    return res


def train(args):
    spec = ZOO[args.name]
    cfg, batch, steps, peak, seed = spec["cfg"], spec["batch"], spec["steps"], spec["lr"], spec["seed"]
    if args.steps:
        steps = args.steps
    warmup = max(20, steps // 20)
    streams = load_streams("train")
    held = load_streams("heldout")
    torch.manual_seed(seed)
    model = TinyLlama(cfg)
    opt = make_optimizer(model, peak)
    os.makedirs(args.ckpt_dir, exist_ok=True)
    ckpt_path = os.path.join(args.ckpt_dir, args.name + ".pt")
    step0, wall0, log = 0, 0.0, []
    if os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path, weights_only=False)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        step0, wall0, log = ck["step"], ck["wall"], ck["log"]
        print(f"resumed {args.name} at step {step0}", flush=True)
    print(f"{args.name}: {model.num_params():,d} params, {steps} steps x {batch}x{SEQ} tokens, "
          f"lr {peak}, seed {seed}, autocast_bf16 {args.autocast}", flush=True)
    t_start = time.time() - wall0
    model.train()
    if args.export_only:  # safety net: export the last checkpoint as it is
        steps = step0
    for step in range(step0, steps):
        lr = lr_at(step, steps, peak, warmup)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = get_batch(streams, seed, step, batch)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(args.autocast)):
            logits = model(x)
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step == steps - 1:
            el = time.time() - t_start
            rec = {"step": step, "loss": round(loss.item(), 4), "lr": lr, "wall_s": round(el, 1),
                   "tokens": (step + 1) * batch * SEQ}
            if step % 200 == 0 or step == steps - 1:
                rec["val"] = quick_val(model, held, autocast=bool(args.autocast))
            log.append(rec)
            print(json.dumps(rec), flush=True)
        if (step + 1) % args.ckpt_every == 0 and step + 1 < steps:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step + 1,
                        "wall": time.time() - t_start, "log": log}, ckpt_path + ".tmp")
            os.replace(ckpt_path + ".tmp", ckpt_path)
    wall = time.time() - t_start if not args.export_only else wall0
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": steps, "wall": wall,
                "log": log}, ckpt_path + ".tmp")
    os.replace(ckpt_path + ".tmp", ckpt_path)

    import sentencepiece as spm
    tok = os.path.join(REPO, "models", "zoo", "tokenizer.model")
    sp = spm.SentencePieceProcessor(model_file=tok)
    out_dir = os.path.join(args.out_dir or os.path.join(REPO, "models", "zoo"), args.name)
    export_hf(model, out_dir, tok, sp.bos_id(), sp.eos_id(), sp.pad_id())
    meta = {"name": args.name, "params": model.num_params(), "arch": config_dict(cfg),
            "batch": batch, "seq_len": SEQ, "steps": steps, "tokens_seen": steps * batch * SEQ,
            "peak_lr": peak, "warmup": warmup, "seed": seed, "autocast_bf16": args.autocast,
            "wall_s": round(wall, 1), "tokens_per_s": round(steps * batch * SEQ / wall),
            "cpu": cpu_model(), "cores": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__, "final_loss_log": log[-1],
            "planned_steps": spec["steps"], "stopped_early": steps < spec["steps"]}
    with open(os.path.join(out_dir, "train_meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(json.dumps(meta), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", choices=sorted(ZOO))
    ap.add_argument("--bench", action="store_true", help="measure training tokens/s of every config")
    ap.add_argument("--bench-steps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=0, help="override the step budget (testing)")
    ap.add_argument("--ckpt-dir", default=CKPT)
    ap.add_argument("--ckpt-every", type=int, default=100)
    ap.add_argument("--out-dir", default="",
                    help="export to OUT_DIR/<name> instead of models/zoo/<name> (a reproduction run)")
    ap.add_argument("--autocast", type=int, default=1, help="bf16 autocast on CPU (1) or fp32 (0)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--export-only", action="store_true",
                    help="export the last checkpoint without training further (an interrupted run)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.bench:
        bench(args)
    elif args.name:
        train(args)
    else:
        ap.error("--name or --bench")


if __name__ == "__main__":
    main()
