#!/usr/bin/env python3
"""Writes tests/data/tiny-llama32/: a tiny, randomly initialised, Llama-3.2-shaped HF checkpoint.

Shapes exercise every Llama 3.2 specific the C++ loader must handle:
  vocab 128256 (the real Llama 3 vocabulary, so the real tokenizer drives it), hidden 48,
  4 query heads x head_dim 16 = 64 != hidden (q_proj [64, 48], o_proj [48, 64]),
  GQA with 2 KV heads (k_proj/v_proj [32, 48]), intermediate 96, 2 layers,
  llama3 rope scaling (factor 32, theta 500000), tied embeddings (no lm_head.weight), BF16 weights.

Weights: transformers' own LlamaForCausalLM init under torch.manual_seed(0) with
initializer_range 0.2 (10x the default, so attention scores and logits are far from uniform),
then every RMSNorm weight is set to 1 + 0.2 * N(0, 1) (HF initialises them to exactly 1, which
would hide a loader that drops them). Stored in BF16 via save_pretrained(safe_serialization=True).

config.json is rewritten in the format of the real meta-llama/Llama-3.2-1B config.json
(`rope_theta` + `rope_scaling`, `torch_dtype`), which transformers >= 5 no longer writes itself
(it writes `rope_parameters`); the script checks that transformers reads it back identically.

The tokenizer is deliberately not copied here (Llama 3 Community License): tests pass
the Llama 3 tokenizer.json separately (see docs/models-and-tokenizers.md).

Run from the repository root:  nice -n 10 /opt/speclab-venv/bin/python models/train/make_tiny_llama32.py
"""
import json
import os
import sys

import torch
from safetensors import safe_open
from transformers import LlamaConfig, LlamaForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_DIR = os.path.join(ROOT, "tests", "data", "tiny-llama32")

SEED = 0
INIT_STD = 0.2
NORM_JITTER = 0.2

# The config.json we write, key for key in the style of meta-llama/Llama-3.2-1B.
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 128000,
    "eos_token_id": [128001, 128008, 128009],
    "head_dim": 16,
    "hidden_act": "silu",
    "hidden_size": 48,
    "initializer_range": INIT_STD,
    "intermediate_size": 96,
    "max_position_embeddings": 131072,
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "num_key_value_heads": 2,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
        "factor": 32.0,
        "high_freq_factor": 4.0,
        "low_freq_factor": 1.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "rope_theta": 500000.0,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "vocab_size": 128256,
}


def make_config():
    kw = {k: v for k, v in CONFIG.items() if k not in ("architectures", "torch_dtype", "model_type")}
    return LlamaConfig(**kw)


def main():
    cfg = CONFIG
    assert cfg["head_dim"] * cfg["num_attention_heads"] != cfg["hidden_size"], "head_dim must be explicit"
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(make_config())  # HF init: N(0, initializer_range) for linears/embedding
    with torch.no_grad():
        gen = torch.Generator().manual_seed(SEED + 1)
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + NORM_JITTER * torch.randn(p.shape, generator=gen))
    model = model.to(torch.bfloat16)
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr(), "not tied"

    os.makedirs(OUT_DIR, exist_ok=True)
    model.save_pretrained(OUT_DIR, safe_serialization=True)
    for extra in ("generation_config.json",):
        path = os.path.join(OUT_DIR, extra)
        if os.path.exists(path):
            os.remove(path)  # the C++ side never reads it; keep the directory minimal
    import transformers

    written = dict(CONFIG)
    written["transformers_version"] = transformers.__version__
    with open(os.path.join(OUT_DIR, "config.json"), "w") as f:
        json.dump(dict(sorted(written.items())), f, indent=2)
        f.write("\n")

    # Checks: tied (no lm_head.weight), BF16 everywhere, size, and that transformers reads our
    # hand-written config back to the same model (rope parameters included).
    st_path = os.path.join(OUT_DIR, "model.safetensors")
    os.chmod(st_path, 0o644)  # save_pretrained writes 0600
    with safe_open(st_path, "pt") as f:
        names = sorted(f.keys())
        for n in names:
            t = f.get_tensor(n)
            assert t.dtype == torch.bfloat16, (n, t.dtype)
            print(f"  {n:45s} {str(list(t.shape)):14s} bf16")
        print("  metadata:", f.metadata())
    assert "lm_head.weight" not in names, "lm_head.weight present: embeddings not tied"
    size = os.path.getsize(st_path)
    print(f"model.safetensors: {size} bytes, {len(names)} tensors")
    assert size < 13_000_000, size

    reloaded = LlamaForCausalLM.from_pretrained(OUT_DIR, dtype=torch.float32)
    rc = reloaded.config
    rp = getattr(rc, "rope_parameters", None) or rc.rope_scaling
    print("transformers reads back: rope", rp, "head_dim", rc.head_dim, "tied", rc.tie_word_embeddings)
    assert rp["rope_type"] == "llama3" and rp["factor"] == 32.0 and rp.get("rope_theta", getattr(rc, "rope_theta", None)) == 500000.0
    sd_ref = {k: v.float() for k, v in model.state_dict().items()}
    for k, v in reloaded.state_dict().items():
        assert torch.equal(v, sd_ref[k]), k
    assert reloaded.lm_head.weight.data_ptr() == reloaded.model.embed_tokens.weight.data_ptr()
    print("ok:", OUT_DIR)
    return 0


if __name__ == "__main__":
    sys.exit(main())
