#!/usr/bin/env python3
"""Measure what a SmolLM2 draft of a given shape costs per call in speclab, before training it.

A draft's cost per token does not depend on its weights, so each candidate shape is exported
with random weights (BF16 HF Llama, SmolLM2's vocabulary of 49,152, tied head) into a scratch
directory and run by `speclab generate` as the draft of SmolLM2-135M-Instruct (Q4_1 GGUF),
greedy, gamma 4, --ignore-eos. Per shape it prints the draft's seconds per call
(draft_s / draft_calls) and c = that / the target's seconds per single-token call, measured in
the same invocation loop (baseline `speclab generate` without a draft, interleaved with the
drafts so that both see the same machine load). The layer-pruned alternative (SmolLM2's own
first layers and head) is measured as `self:skip=K-29`, which runs exactly those tensors.

  python models/train/measure_draft_cost.py --speclab build/bin/speclab --out /tmp/draft-cost.json
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_llama import TinyConfig, TinyLlama, export_hf  # noqa: E402

GGUF = os.path.expanduser("~/.cache/speclab/SmolLM2-135M-Instruct.Q4_1.gguf")
PROMPT = ("The old sailor looked out over the grey water and said that the whale had come back "
          "every winter for")
# (hidden, layers, heads, kv heads, intermediate)
SHAPES = [(128, 2, 4, 2, 384), (192, 4, 6, 2, 512), (256, 4, 8, 4, 768), (256, 6, 8, 4, 768),
          (320, 4, 10, 5, 864)]
PRUNED_KEEP = [4, 8]


def gen(speclab, draft, threads, tokens):
    cmd = [speclab, "generate", "--target", GGUF, "--prompt", PROMPT, "--temperature", "0",
           "--max-new-tokens", str(tokens), "--ignore-eos", "--json", "--threads", str(threads),
           "--ctx", "2048"]
    if draft:
        cmd += ["--draft", draft, "--gamma", "4"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--speclab", default="build/bin/speclab")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cands = []
        for h, L, nh, nkv, inter in SHAPES:
            cfg = TinyConfig(vocab_size=49152, hidden_size=h, intermediate_size=inter, num_hidden_layers=L,
                             num_attention_heads=nh, num_key_value_heads=nkv, max_position_embeddings=2048,
                             rope_theta=100000.0)
            torch.manual_seed(0)
            m = TinyLlama(cfg)
            d = os.path.join(tmp, f"h{h}-l{L}")
            export_hf(m, d, None, 1, 2, 2)
            cands.append((f"hidden {h} x {L} layers", d, m.num_params()))
        for k in PRUNED_KEEP:
            cands.append((f"SmolLM2 first {k} layers + head (self:skip={k}-29)", f"self:skip={k}-29", None))
        for name, spec, params in cands:
            base = gen(args.speclab, "", args.threads, args.tokens)
            r = gen(args.speclab, spec, args.threads, args.tokens)
            t_target = base["decode_s"] / base["target_calls"]
            t_draft = r["draft_s"] / max(1, r["draft_calls"])
            t_verify = r["verify_s"] / max(1, r["target_calls"])
            row = {"draft": name, "params": params, "draft_ms_per_call": round(1e3 * t_draft, 3),
                   "target_ms_per_call": round(1e3 * t_target, 3), "c": round(t_draft / t_target, 4),
                   "verify5_over_target1": round(t_verify / t_target, 3)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    load = open("/proc/loadavg").read().split()[:3]
    res = {"command": " ".join(sys.argv), "threads": args.threads, "loadavg": load, "rows": rows}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
