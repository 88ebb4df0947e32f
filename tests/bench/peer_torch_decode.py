#!/usr/bin/env python3
"""The peer to beat on a GPU: decode time of the Llama-3.2 1B and 3B shapes (BF16, random
weights) in a plain PyTorch/transformers loop, one token per forward call with the KV cache.

    python3 tests/bench/peer_torch_decode.py [--tokens 64] [--prompt 32] [--device cuda]

Prints one JSON line per shape: ms/token (median over the decode steps), the weight bytes read
per token and the resulting GB/s, and T(k)/T(1) for k = 1, 2, 4, 8, 16 (k tokens in one
forward against the same cache, then cropped back). Needs torch and transformers (on the
device machine's image, not a speclab dependency); speclab's own figures come from
speclab_bench (BM_CudaForward) in the same session.
"""
import argparse
import json
import statistics
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

# The shapes of models/llama/llama_synthetic.cpp (Llama 3.2: tied embeddings, vocab 128256).
SHAPES = {
    "llama-3.2-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=64),
    "llama-3.2-3b": dict(hidden_size=3072, intermediate_size=8192, num_hidden_layers=28,
                         num_attention_heads=24, num_key_value_heads=8, head_dim=128),
}


def timed(fn, device):
    torch.cuda.synchronize(device) if device.startswith("cuda") else None
    t0 = time.perf_counter()
    out = fn()
    torch.cuda.synchronize(device) if device.startswith("cuda") else None
    return out, time.perf_counter() - t0


def measure(name, shape, n_tokens, n_prompt, device):
    cfg = LlamaConfig(vocab_size=128256, tie_word_embeddings=True, rope_theta=500000.0,
                      max_position_embeddings=4096, torch_dtype="bfloat16", **shape)
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(device=device, dtype=torch.bfloat16).eval()
    weight_bytes = sum(p.numel() * p.element_size() for n, p in model.named_parameters()
                       if "norm" not in n)  # the tied head is read once per token
    prompt = torch.randint(0, 128256, (1, n_prompt), device=device)
    with torch.no_grad():
        out = model(prompt, use_cache=True)
        cache = out.past_key_values
        tok = out.logits[:, -1:].argmax(-1)
        steps = []
        for _ in range(n_tokens):
            out, dt = timed(lambda: model(tok, past_key_values=cache, use_cache=True), device)
            cache = out.past_key_values
            tok = out.logits[:, -1:].argmax(-1)
            steps.append(dt)
        t1 = statistics.median(steps[4:])
        tk = {}
        base = cache.get_seq_length()
        for k in (1, 2, 4, 8, 16):
            times = []
            for _ in range(8):
                ids = torch.randint(0, 128256, (1, k), device=device)
                _, dt = timed(lambda: model(ids, past_key_values=cache, use_cache=True), device)
                cache.crop(base)
                times.append(dt)
            tk[k] = statistics.median(times[2:])
    del model
    torch.cuda.empty_cache() if device.startswith("cuda") else None
    return {"shape": name, "dtype": "bf16", "torch": torch.__version__,
            "device": torch.cuda.get_device_name(0) if device.startswith("cuda") else device,
            "ms_per_token": 1e3 * t1, "weight_GB": weight_bytes / 1e9,
            "GB_per_s": weight_bytes / t1 / 1e9,
            "T_k_over_T_1": {k: tk[k] / tk[1] for k in tk}, "T_k_ms": {k: 1e3 * v for k, v in tk.items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    for name, shape in SHAPES.items():
        print(json.dumps(measure(name, shape, a.tokens, a.prompt, a.device)), flush=True)


if __name__ == "__main__":
    main()
