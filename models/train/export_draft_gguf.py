#!/usr/bin/env python3
"""GGUF export of the distilled SmolLM2 draft: models/zoo/smollm2-draft-distill (the HF export,
BF16 safetensors, git-ignored) -> models/zoo/smollm2-draft-distill/smollm2-draft-distill.Q8_0.gguf
(committed, about 13 MB: what configs and tests load).

Layout, as llama.cpp's convert_hf_to_gguf.py writes a llama-arch model and as speclab's GGUF
loader (models/llama/llama_load.cpp) reads it:
  - metadata: general.architecture "llama" and the llama.* keys of SmolLM2-135M-Instruct's GGUF
    (context_length, embedding_length, feed_forward_length, block_count, head counts,
    rope.freq_base, rope.dimension_count, layer_norm_rms_epsilon, vocab_size) with this draft's
    values from its config.json; every tokenizer.* key (tokenizer.ggml.* and the chat template)
    copied verbatim from SmolLM2-135M-Instruct.Q4_1.gguf, whose vocabulary the draft shares.
  - tensors: token_embd (tied output: no output.weight), blk.N.{attn_q,attn_k,attn_v,
    attn_output,ffn_gate,ffn_up,ffn_down} in Q8_0 (blocks of 32: f16 scale d, 32 int8 q,
    x = d * q; gguf.quants.quantize), attn_norm / ffn_norm / output_norm in F32.
  - Q and K rows permuted as llama.cpp does for the llama arch
    (w.reshape(n_head, 2, rows / n_head / 2, cols).swapaxes(1, 2)), so each RoPE pair (i, i + d/2)
    of HF's rotate-half layout becomes adjacent rows (2i, 2i + 1); speclab rotates adjacent pairs
    for GGUF files (RopePairing::kInterleaved). n_head is the query head count for Q and the KV
    head count for K.
The BF16 -> FP32 upcast is exact, so the only change to the weights is Q8_0's rounding.

  python models/train/export_draft_gguf.py [--model DIR] [--tokenizer-gguf FILE] [--out FILE]
"""
import argparse
import json
import os
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "smollm2-draft-distill"
MODEL_DIR = os.path.join(REPO, "models", "zoo", NAME)
OUT = os.path.join(MODEL_DIR, NAME + ".Q8_0.gguf")
TOKENIZER_GGUF = os.path.expanduser("~/.cache/speclab/SmolLM2-135M-Instruct.Q4_1.gguf")


def permute_rope_rows(w, n_head):
    """llama.cpp's Q/K permutation: rows (h, half, i) -> (h, i, half) within each head (numpy arrays
    or torch tensors)."""
    rows = w.shape[0]
    return w.reshape(n_head, 2, rows // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute_rope_rows(w, n_head):
    """The inverse of permute_rope_rows (what a reader does to get HF's rotate-half layout back)."""
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


# A layer's GGUF tensor -> (HF name, rows permuted with the query / KV head count: "q" / "kv").
GGUF_TO_HF_LAYER = {
    "attn_norm": ("input_layernorm", None), "attn_q": ("self_attn.q_proj", "q"),
    "attn_k": ("self_attn.k_proj", "kv"), "attn_v": ("self_attn.v_proj", None),
    "attn_output": ("self_attn.o_proj", None), "ffn_norm": ("post_attention_layernorm", None),
    "ffn_gate": ("mlp.gate_proj", None), "ffn_up": ("mlp.up_proj", None), "ffn_down": ("mlp.down_proj", None),
}


def gguf_tensor_names(n_layers):
    """[(GGUF name, HF name, rows permuted: None / "q" / "kv")] of a tied llama-arch model, in the
    order the export writes them."""
    names = [("token_embd.weight", "model.embed_tokens.weight", None)]
    for l in range(n_layers):
        names += [(f"blk.{l}.{g}.weight", f"model.layers.{l}.{h}.weight", perm) for g, (h, perm) in GGUF_TO_HF_LAYER.items()]
    return names + [("output_norm.weight", "model.norm.weight", None)]


def load_hf(model_dir):
    import torch  # numpy has no bfloat16: read with torch, upcast (exactly) to FP32
    from safetensors.torch import load_file
    sd = load_file(os.path.join(model_dir, "model.safetensors"))
    return {k: v.to(torch.float32).numpy() for k, v in sd.items()}


def copy_field(writer, reader, key):
    import gguf
    f = reader.fields[key]
    t = f.types[0]
    if t == gguf.GGUFValueType.ARRAY:
        writer.add_array(key, f.contents())
    elif t == gguf.GGUFValueType.STRING:
        writer.add_string(key, f.contents())
    else:
        writer.add_key_value(key, f.contents(), t)


def export(model_dir, tokenizer_gguf, out):
    import gguf
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    assert cfg["model_type"] == "llama" and cfg.get("tie_word_embeddings", False), cfg
    n_head, n_kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    dim = cfg["hidden_size"]
    head_dim = cfg.get("head_dim", dim // n_head)
    assert head_dim == dim // n_head, "SmolLM2's key set has no key_length: head_dim must be dim / heads"
    assert cfg.get("rope_scaling") is None
    sd = load_hf(model_dir)
    src = gguf.GGUFReader(tokenizer_gguf)
    src_vocab = int(src.fields["llama.vocab_size"].contents())
    assert src_vocab == cfg["vocab_size"], (src_vocab, cfg["vocab_size"])

    tmp = out + ".tmp"
    w = gguf.GGUFWriter(tmp, "llama")
    w.add_type("model")
    w.add_name("SmolLM2 draft distilled from SmolLM2-135M-Instruct")
    w.add_basename(NAME)
    w.add_license("apache-2.0")
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(dim)
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_rope_freq_base(float(cfg["rope_theta"]))
    w.add_layer_norm_rms_eps(float(cfg["rms_norm_eps"]))
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_vocab_size(cfg["vocab_size"])
    w.add_rope_dimension_count(head_dim)
    for key in src.fields:
        if key.startswith("tokenizer."):
            copy_field(w, src, key)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)

    q8 = gguf.GGMLQuantizationType.Q8_0

    def add_q8(name, arr):
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        w.add_tensor(name, gguf.quants.quantize(arr, q8), raw_dtype=q8)

    def add_f32(name, arr):
        w.add_tensor(name, np.ascontiguousarray(arr, dtype=np.float32))

    heads = {"q": n_head, "kv": n_kv}
    for g, h, perm in gguf_tensor_names(cfg["num_hidden_layers"]):
        arr = sd[h] if perm is None else permute_rope_rows(sd[h], heads[perm])
        (add_f32 if arr.ndim == 1 else add_q8)(g, arr)
    assert "lm_head.weight" not in sd or np.array_equal(sd["lm_head.weight"], sd["model.embed_tokens.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, out)
    print("%s: %d bytes" % (os.path.relpath(out, REPO), os.path.getsize(out)), file=sys.stderr)


def dequantized_hf_state(gguf_path, cfg):
    """The GGUF's weights back in HF names and layout (dequantized, Q/K rows un-permuted), FP32:
    what make_draft_golden.py runs transformers on for the Q8_0 golden."""
    import gguf
    r = gguf.GGUFReader(gguf_path)
    t = {x.name: gguf.quants.dequantize(x.data, x.tensor_type).reshape([int(d) for d in reversed(x.shape)])
         for x in r.tensors}
    heads = {"q": cfg["num_attention_heads"], "kv": cfg["num_key_value_heads"]}
    sd = {h: t[g] if perm is None else unpermute_rope_rows(t[g], heads[perm])
          for g, h, perm in gguf_tensor_names(cfg["num_hidden_layers"])}
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in sd.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=MODEL_DIR, help="HF export directory (BF16 safetensors)")
    ap.add_argument("--tokenizer-gguf", default=TOKENIZER_GGUF,
                    help="the GGUF whose tokenizer.* metadata is copied (SmolLM2-135M-Instruct's)")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    export(args.model, args.tokenizer_gguf, args.out)
    check_round_trip(args.model, args.out)


def check_round_trip(model_dir, gguf_path):
    """Dequantized and un-permuted, every matrix is within half a Q8_0 step of the BF16 weights
    (plus the float16 rounding of the block scale) and the norms are exact."""
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    hf, back = load_hf(model_dir), dequantized_hf_state(gguf_path, cfg)
    for k, v in back.items():
        ref = hf[k]
        err = np.abs(v - ref)
        if v.ndim == 1:
            assert np.array_equal(v, ref), k
        else:
            step = np.abs(ref.reshape(ref.shape[0], -1, 32)).max(axis=-1, keepdims=True) / 127
            bound = (step * 0.5 * (1 + 1e-3) + 1e-8).repeat(32, axis=-1).reshape(ref.shape)
            assert (err <= bound + np.abs(ref) * 1e-3).all(), (k, float(err.max()))
    print("round trip: %d tensors within half a Q8_0 step of the BF16 weights (norms exact)" % len(back),
          file=sys.stderr)


if __name__ == "__main__":
    main()
