#!/usr/bin/env python3
"""Tests of the layer-pruned draft of distill_smollm2_draft.py (`train --init prune`), run by
ctest as pruned_draft_is_teacher_early_exit (exit 77 = skipped without PyTorch / transformers):

  - a small random transformers LlamaForCausalLM (GQA 6 query / 2 KV heads, RoPE theta 100000,
    tied embeddings, 5 layers) through tiny_from_hf equals transformers' own logits;
  - pruned_student(teacher, 3) equals transformers' early exit: the same HF model with its layer
    list cut to the first 3 (then its final norm and tied head), at every position;
  - planted errors it must see: a student built from layers 1..3 instead of 0..2, and a student
    whose q_proj / k_proj rows are in llama.cpp's GGUF order (each head's two RoPE halves
    interleaved, the permutation transformers' GGUF reader undoes) must both differ;
  - --freeze-embedding: a training step's loss (batch_loss) sends no gradient into the tied
    embedding / head and a nonzero one into every kept layer.
"""
import copy
import os
import sys

try:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError:
    print("SKIP: PyTorch or transformers is not installed")
    sys.exit(77)
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from distill_smollm2_draft import batch_loss, position_weights, pruned_student, tiny_from_hf  # noqa: E402
from export_draft_gguf import permute_rope_rows  # noqa: E402

TOPK = 32


def hf_early_exit(hf, n):
    """transformers' own forward with only the first n decoder layers kept."""
    cut = copy.deepcopy(hf)
    cut.model.layers = torch.nn.ModuleList(list(cut.model.layers)[:n])
    cut.config.num_hidden_layers = n
    return cut


def main():
    torch.manual_seed(7)
    cfg = LlamaConfig(vocab_size=101, hidden_size=48, intermediate_size=96, num_hidden_layers=5,
                      num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=64,
                      rms_norm_eps=1e-5, rope_theta=100000.0, tie_word_embeddings=True)
    hf = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():  # larger weights than the init: attention and RoPE matter to the output
        for name, p in hf.named_parameters():
            if p.dim() == 2:
                p.mul_(6.0)
            elif name.endswith("norm.weight"):
                p.copy_(1.0 + 0.3 * torch.randn_like(p))
    ids = torch.from_numpy(np.random.default_rng(3).integers(0, 101, (2, 23)))
    failures = []
    with torch.no_grad():
        teacher = tiny_from_hf(hf)
        d_full = (teacher(ids) - hf(ids).logits).abs().max().item()
        if d_full > 1e-4:
            failures.append(f"tiny_from_hf: |d logit| {d_full:.2e} against transformers")
        student = pruned_student(teacher, 3)
        want = hf_early_exit(hf, 3)(ids).logits
        got = student(ids)
        d = (got - want).abs().max().item()
        if d > 1e-4:
            failures.append(f"pruned_student(3): |d logit| {d:.2e} against transformers' 3-layer early exit")
        if (want - hf(ids).logits).abs().max().item() < 1e-2:
            failures.append("the early exit equals the full model: the comparison cannot see a layer mix-up")
        # planted error 1: layers 1..3 instead of 0..2
        shifted = pruned_student(teacher, 3)
        sd = teacher.state_dict()
        shifted.load_state_dict({k: (sd[k.replace(f"layers.{k.split('.')[2]}.", f"layers.{int(k.split('.')[2]) + 1}.")]
                                     if k.startswith("model.layers.") else v)
                                 for k, v in shifted.state_dict().items()})
        if (shifted(ids) - want).abs().max().item() < 1e-2:
            failures.append("planted error (layers 1..3) was not detected")
        # planted error 2: Q and K rows in llama.cpp's order
        permuted = pruned_student(teacher, 3)
        for layer in permuted.model.layers:
            a = layer.self_attn
            a.q_proj.weight.copy_(permute_rope_rows(a.q_proj.weight, cfg.num_attention_heads))
            a.k_proj.weight.copy_(permute_rope_rows(a.k_proj.weight, cfg.num_key_value_heads))
        if (permuted(ids) - want).abs().max().item() < 1e-2:
            failures.append("planted error (Q/K rows in GGUF order) was not detected")
        q0, q1 = (m.model.layers[0].self_attn.q_proj.weight for m in (permuted, student))
        if torch.equal(q0, q1):
            failures.append("permute_rope_rows left q_proj unchanged")
    # a training step with the embedding frozen
    student.model.embed_tokens.weight.requires_grad_(False)
    toks = ids[0].numpy().astype(np.int64)
    rng = np.random.default_rng(1)
    rec = {"name": "c", "tokens": toks, "idx": rng.integers(0, 101, (len(toks), TOPK)).astype(np.int64),
           "val": rng.normal(size=(len(toks), TOPK)).astype(np.float32), "w": position_weights(len(toks), 8, 0.5)}
    loss, _ = batch_loss(student, [rec], 0.5)
    loss.backward()
    if student.model.embed_tokens.weight.grad is not None:
        failures.append("--freeze-embedding: the embedding / head received a gradient")
    for i, layer in enumerate(student.model.layers):
        g = layer.mlp.down_proj.weight.grad
        if g is None or g.abs().max().item() == 0:
            failures.append(f"--freeze-embedding: layer {i} received no gradient")
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print(f"ok: pruned student = transformers' 3-layer early exit (|d logit| {d:.1e}); "
          "planted errors (shifted layers, GGUF Q/K order) detected; frozen head gets no gradient")


if __name__ == "__main__":
    main()
