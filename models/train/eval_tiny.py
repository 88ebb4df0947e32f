#!/usr/bin/env python3
"""Held-out perplexity of an exported zoo model, per corpus, from the shipped BF16 weights.

Loads the export directory with transformers' LlamaForCausalLM (so this also checks
that the export is a valid HF Llama directory), upcasts the BF16 weights to FP32 for
the arithmetic, and scores the held-out token streams of prepare_data.py in
non-overlapping windows of 256 tokens (the first token of each window is context
only, so a window scores 255 predictions). At most --max-tokens tokens per corpus
(from the start of its held-out tail). Writes <dir>/eval.json and prints it.

Reproduce:  python models/train/eval_tiny.py models/zoo/tiny-target-5m
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

DATA = os.path.expanduser("~/.cache/speclab/zoo-data")
CORPORA = ("bible", "moby", "sotu")


def load_hf(path):
    from transformers import LlamaForCausalLM
    model = LlamaForCausalLM.from_pretrained(path, torch_dtype=torch.bfloat16)
    return model.float().eval()  # exact upcast of the shipped BF16 values


@torch.no_grad()
def perplexity(model, ids, window=256, batch=16):
    n = (len(ids) // window) * window
    x = torch.from_numpy(ids[:n].astype(np.int64)).view(-1, window)
    nll, count = 0.0, 0
    for i in range(0, x.shape[0], batch):
        xb = x[i:i + batch]
        logits = model(xb).logits[:, :-1].float()
        nll += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), xb[:, 1:].reshape(-1),
                               reduction="sum").item()
        count += xb[:, 1:].numel()
    return math.exp(nll / count), count


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("--max-tokens", type=int, default=16384)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.time()
    model = load_hf(args.model_dir)
    res = {"weights": "model.safetensors (BF16) upcast to FP32", "window": 256,
           "max_tokens_per_corpus": args.max_tokens, "perplexity": {}, "scored_tokens": {}}
    for c in CORPORA:
        ids = np.fromfile(os.path.join(DATA, "heldout", c + ".u16"), dtype="<u2")[:args.max_tokens]
        ppl, n = perplexity(model, ids)
        res["perplexity"][c] = round(ppl, 2)
        res["scored_tokens"][c] = n
    res["wall_s"] = round(time.time() - t0, 1)
    with open(os.path.join(args.model_dir, "eval.json"), "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    json.dump(res, sys.stdout)
    print()


if __name__ == "__main__":
    main()
