#!/usr/bin/env python3
"""Acceptance rate alpha of a draft against the target, the paper's way (Corollary 3.6).

PyTorch reference, to be recomputed later by the C++ engine (`speclab`).

For every prompt of the given prompt sets (default: tiny-in-domain and
tiny-out-of-domain), the TARGET generates --new-tokens tokens (T=0: greedy argmax;
T=1: ancestral sampling from softmax, torch.Generator seeded with (seed, prompt
index)). Then, along that target-generated text, at every generated position:

    beta = sum_x min(p(x), q(x))        (= 1 - TV(p, q), Corollary 3.6)

with p, q the standardized next-token distributions of target and draft for the
same prefix (T=0: one-hot at the argmax, so beta is 1 when the argmaxes agree and
0 otherwise; T=1: plain softmax, no top-k / top-p). alpha = mean of beta over all
generated positions (token-weighted), reported overall and per task. At T=0 also
alpha over only the positions a gamma-fixed speculative run would test (--replay-gamma;
speclab's alpha_beta averages over those). Also given:
tau(gamma) = (1 - alpha^(gamma+1)) / (1 - alpha), the expected tokens per target
call of Theorem 3.8 under the i.i.d. assumption.

Both models are loaded from their export directories (BF16 weights upcast to
FP32) with transformers' LlamaForCausalLM. Writes <draft>/alpha.json.

Reproduce:
  python models/train/eval_alpha.py --target models/zoo/tiny-target-5m --draft models/zoo/tiny-draft-2m
"""
import argparse
import json
import os
import sys
import time
from collections import defaultdict

import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eval_tiny import load_hf  # noqa: E402


def standardize(logits, temperature):  # logits: (N, V) -> probs (N, V)
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    return torch.softmax(logits.float() / temperature, dim=-1)


@torch.no_grad()
def generate(model, ids, n_new, temperature, gen):
    """Target continuation of ids (list) with a KV cache -> list of n_new token ids."""
    x = torch.tensor([ids])
    out = model(x, use_cache=True)
    past, logits = out.past_key_values, out.logits[0, -1]
    new = []
    for _ in range(n_new):
        if temperature == 0:
            t = int(logits.argmax())
        else:
            t = int(torch.multinomial(torch.softmax(logits.float() / temperature, -1), 1,
                                      generator=gen))
        new.append(t)
        out = model(torch.tensor([[t]]), past_key_values=past, use_cache=True)
        past, logits = out.past_key_values, out.logits[0, -1]
    return new


def replay_tested(beta, gamma, n_new):
    """T=0 only (beta is 0/1, acceptance is deterministic): the positions a gamma-fixed
    speculative run (speclab's round structure: k = min(gamma, tokens left - 1) drafts, stop
    at the first rejection, the correction or bonus token is never tested) would test;
    returns the betas at those positions, to compare with speclab's alpha_beta."""
    out, j = [], 0
    while j < n_new:
        k = min(gamma, n_new - j - 1)
        acc = 0
        for m in range(k):
            out.append(beta[j + m])
            if beta[j + m] < 0.5:
                break
            acc += 1
        j += acc + 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", required=True)
    ap.add_argument("--draft", required=True)
    ap.add_argument("--prompts", nargs="+", default=[
        os.path.join(REPO, "configs", "prompts", "tiny-in-domain.jsonl"),
        os.path.join(REPO, "configs", "prompts", "tiny-out-of-domain.jsonl")])
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 1.0])
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None, help="default: <draft>/alpha.json")
    ap.add_argument("--replay-gamma", type=int, default=4,
                    help="T=0: also report alpha over the positions a gamma-fixed speculative run tests")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=os.path.join(args.target, "tokenizer.model"))
    target, draft = load_hf(args.target), load_hf(args.draft)
    prompts = [json.loads(l) for f in args.prompts for l in open(f, encoding="utf-8") if l.strip()]
    t0 = time.time()
    res = {"method": "PyTorch reference (models/train/eval_alpha.py); Corollary 3.6 "
                     "alpha = E[sum_x min(p, q)] along target-generated text",
           "target": os.path.relpath(os.path.abspath(args.target), REPO),
           "draft": os.path.relpath(os.path.abspath(args.draft), REPO),
           "prompt_sets": [os.path.relpath(os.path.abspath(f), REPO) for f in args.prompts],
           "n_prompts": len(prompts), "new_tokens": args.new_tokens, "seed": args.seed,
           "by_temperature": {}}
    for temp in args.temperatures:
        sums, counts = defaultdict(float), defaultdict(int)
        replayed = []
        for i, pr in enumerate(prompts):
            ids = [sp.bos_id()] + sp.encode(pr["text"])
            gen = torch.Generator().manual_seed(args.seed * 1000003 + i)
            new = generate(target, ids, args.new_tokens, temp, gen)
            seq = torch.tensor([ids + new])
            with torch.no_grad():
                # logits at positions len(ids)-1 .. end-1 predict the generated tokens
                lp = target(seq).logits[0, len(ids) - 1:-1]
                lq = draft(seq).logits[0, len(ids) - 1:-1]
            beta = torch.minimum(standardize(lp, temp), standardize(lq, temp)).sum(-1)  # (n_new,)
            for key in ("all", pr["task"]):
                sums[key] += beta.sum().item()
                counts[key] += beta.numel()
            if temp == 0:
                replayed += replay_tested(beta.tolist(), args.replay_gamma, args.new_tokens)
        alpha = {k: round(sums[k] / counts[k], 4) for k in sums}
        a = alpha["all"]
        res["by_temperature"][f"T={temp:g}"] = {
            "alpha": alpha, "positions": dict(counts),
            "tau": {f"gamma={g}": round((1 - a ** (g + 1)) / (1 - a) if a < 1 else g + 1.0, 3)
                    for g in (1, 2, 4, 8)}}
        if replayed:
            res["by_temperature"][f"T={temp:g}"]["tested_positions_replay"] = {
                "gamma": args.replay_gamma, "alpha": round(sum(replayed) / len(replayed), 4),
                "positions": len(replayed)}
        print(f"T={temp:g}: {json.dumps(alpha)}", flush=True)
    res["wall_s"] = round(time.time() - t0, 1)
    out = args.out or os.path.join(args.draft, "alpha.json")
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
