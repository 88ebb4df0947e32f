#!/usr/bin/env python3
"""Tests of batched_teacher.generate_batch against the plain reference (run by ctest as
batched_teacher_matches_reference; exit 77 = skipped when PyTorch is not installed):

  - a small random Llama (GQA, RoPE theta 100000), three prompts of different lengths in one
    left-padded batch, greedy and T=1 rows, an EOS that one row hits and budgets that stop the
    others: every answer equals the reference's, which generates each prompt alone by a full
    forward over the whole sequence at every step (no cache, no padding) with the same sampling
    rule; the top-K ids, logits and log-normalizers at every position but the last equal the
    reference's full forward over (prompt + answer) (the teacher stage's definition);
  - planted error: the same prefill with the padding slots left visible to attention must give
    different hidden states for the padded rows (and the same for the unpadded one), so the
    check above can see a wrong mask;
  - distill_smollm2_draft.torch_batches takes every prompt exactly once.
"""
import os
import sys

try:
    import torch
except ImportError:
    print("SKIP: PyTorch is not installed")
    sys.exit(77)
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from batched_teacher import Cache, cached_hidden, generate_batch  # noqa: E402
from tiny_llama import TinyConfig, TinyLlama  # noqa: E402

K = 8


def reference(model, prompt, eos_id):
    """One prompt alone, full forward at every step: answer ids and the top-K table of the full sequence."""
    seq = list(prompt["prompt_ids"])
    g = torch.Generator().manual_seed(int(prompt["seed"])) if prompt["temperature"] > 0 else None
    answer = []
    with torch.no_grad():
        while True:
            logits = model(torch.tensor([seq]))[0, -1]
            if g is None:
                t = int(torch.argmax(logits))
            else:
                t = int(torch.multinomial(torch.softmax(logits.double() / prompt["temperature"], -1), 1, generator=g))
            answer.append(t)
            seq.append(t)
            if t == eos_id or len(answer) >= prompt["max_new_tokens"]:
                break
        full = model(torch.tensor([seq]))[0]
        v, i = torch.topk(full, K, dim=-1)
        return answer, i.numpy(), v.numpy(), torch.logsumexp(full, -1).numpy()


def main():
    torch.manual_seed(3)
    cfg = TinyConfig(vocab_size=101, hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                     num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=64,
                     rope_theta=100000.0)
    model = TinyLlama(cfg).eval()
    with torch.no_grad():  # larger weights than the init: sharper, more varied next-token choices
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(8.0)
    rng = np.random.default_rng(5)
    prompts = [
        {"prompt_ids": rng.integers(3, 101, 5).tolist(), "max_new_tokens": 9, "temperature": 0.0, "seed": 1},
        {"prompt_ids": rng.integers(3, 101, 13).tolist(), "max_new_tokens": 7, "temperature": 1.0, "seed": 42},
        {"prompt_ids": rng.integers(3, 101, 2).tolist(), "max_new_tokens": 11, "temperature": 0.0, "seed": 2},
    ]
    # EOS: a token the reference's first row emits after a few new tokens, so that row stops early on it
    free = reference(model, prompts[0], -1)[0]
    eos_id = next((t for k, t in enumerate(free) if k >= 2 and t not in free[:k]), free[2])
    refs = [reference(model, p, eos_id) for p in prompts]
    got = generate_batch(model, prompts, eos_id, K)
    failures = []
    for n, (p, r, o) in enumerate(zip(prompts, refs, got)):
        if o["answer_ids"] != r[0]:
            failures.append(f"row {n}: answer {o['answer_ids']} != reference {r[0]}")
            continue
        want_stop = "eos" if r[0][-1] == eos_id else "max_tokens"
        if o["stop"] != want_stop:
            failures.append(f"row {n}: stop {o['stop']} != {want_stop}")
        m = len(p["prompt_ids"]) + len(r[0]) - 1  # rows with a computed table
        if o["idx"].shape != (m + 1, K):
            failures.append(f"row {n}: table shape {o['idx'].shape} != {(m + 1, K)}")
            continue
        if not (o["idx"][:m] == r[1][:m]).all():
            failures.append(f"row {n}: top-{K} ids differ from the full forward")
        dv = np.abs(o["val"][:m].astype(np.float32) - r[2][:m]).max()
        dl = np.abs(o["lse"][:m] - r[3][:m]).max()
        if dv > 2e-2 or dl > 1e-4:  # val is stored as float16
            failures.append(f"row {n}: |d logit| {dv:.2e}, |d lse| {dl:.2e}")
        if not np.isnan(o["lse"][m]):
            failures.append(f"row {n}: the last position should be marked not computed (NaN)")
    if prompts[0]["prompt_ids"] and refs[0][0][-1] != eos_id:
        failures.append("the EOS path was not exercised")
    # planted error: padding slots not masked out
    B, L = 3, max(len(p["prompt_ids"]) for p in prompts)
    ids = torch.zeros(B, L, dtype=torch.long)
    valid = torch.zeros(B, L, dtype=torch.bool)
    for b, p in enumerate(prompts):
        n = len(p["prompt_ids"])
        ids[b, L - n:] = torch.tensor(p["prompt_ids"])
        valid[b, L - n:] = True
    with torch.no_grad():
        right = cached_hidden(model, ids, (valid.long().cumsum(-1) - 1).clamp(min=0), valid, Cache(cfg, B, L))
        pos = (valid.long().cumsum(-1) - 1).clamp(min=0)
        wrong = cached_hidden(model, ids, pos, torch.ones_like(valid), Cache(cfg, B, L))
    if torch.allclose(right[0, -1], wrong[0, -1], atol=1e-3):
        failures.append("planted error (padding visible to attention) was not detected")
    if not torch.allclose(right[1, -1], wrong[1, -1]):
        failures.append("the unpadded row should not depend on the padding mask")
    # torch_batches: each prompt once
    from distill_smollm2_draft import torch_batches
    todo = [{"id": f"p{i}", "max_new_tokens": int(rng.integers(1, 4)) * 64, "prompt_ids": [0] * int(rng.integers(1, 50))}
            for i in range(203)]
    seen = sorted(p["id"] for b in torch_batches(todo, 16) for p in b)
    if seen != sorted(p["id"] for p in todo):
        failures.append("torch_batches does not take every prompt exactly once")
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print(f"ok: 3 rows ({[len(r[0]) for r in refs]} answer tokens) equal the reference; planted error detected")


if __name__ == "__main__":
    main()
