#!/usr/bin/env python3
"""Golden logits and greedy continuations for models/zoo/smollm2-draft-distill, from transformers.

Writes tests/golden/smollm2-draft-distill.json + .logits.f32 in the layout of make_golden.py
(tests/golden/README.md: per prompt its ids, the full-vocabulary FP32 logits at the last two
positions, top-20 at every position, a 40-token greedy continuation and the top-2 margin at each of its steps). The export is loaded by
transformers' LlamaForCausalLM with dtype=float32 (so the BF16 weights are computed in FP32),
SDPA attention, one torch thread. Prompts: a chat-templated instruction (the format the draft
serves, "<|im_start|>user\\n...<|im_end|>\\n<|im_start|>assistant\\n", no BOS: SmolLM2 adds
none), plain text, and a chat-templated copy instruction over a long passage whose continuation
runs past position 256 (the old draft's whole context) to about 660, so the RoPE
frequencies (theta 100000) at positions beyond the training windows of the earlier draft are
checked too. test_llama_golden.cpp (LlamaGolden.SmolLM2DistillDraftQ8_0GgufStaysCloseToBf16)
compares speclab's forward of the committed Q8_0 GGUF with these (what Q8_0 costs).

With `q8_0` it writes tests/golden/smollm2-draft-distill-q8_0.json + .logits.f32 for the committed
GGUF (models/zoo/smollm2-draft-distill/smollm2-draft-distill.Q8_0.gguf, made by
export_draft_gguf.py): the same prompts through transformers' LlamaForCausalLM on that file's
weights dequantized in numpy (gguf.quants.dequantize: x = d * q per block of 32, exact in FP32) with
llama.cpp's Q/K row permutation undone, so it checks speclab's reading of the GGUF (Q8_0 blocks, the
permuted rows with adjacent RoPE pairs, the metadata) to FP32 rounding, independently of the BF16
reference, which stays the measure of what Q8_0 costs.

  python models/train/make_draft_golden.py          # BF16 export (the training output)
  python models/train/make_draft_golden.py q8_0     # the committed Q8_0 GGUF
"""
import hashlib
import json
import os
import platform
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "smollm2-draft-distill"
MODEL = os.path.join("models", "zoo", NAME)
GGUF = os.path.join(MODEL, NAME + ".Q8_0.gguf")
OUT = os.path.join(ROOT, "tests", "golden")
N_NEW, TOP_K, FULL_ROWS = 40, 20, 2


def chat(text):
    return "<|im_start|>user\n" + text + "<|im_end|>\n<|im_start|>assistant\n"


def long_passage():
    # Moby-Dick chapter 1 as shipped in tests/data/corpus (public domain): 450 of its words
    text = open(os.path.join(ROOT, "tests", "data", "corpus", "moby-dick", "chapter_1.txt"), encoding="utf-8").read()
    return " ".join(text.split()[200:650])


def load_q8_0_model(path):
    """transformers' Llama on the GGUF's dequantized weights (export_draft_gguf.dequantized_hf_state)."""
    from transformers import LlamaConfig, LlamaForCausalLM
    from export_draft_gguf import dequantized_hf_state
    cfg = json.load(open(os.path.join(path, "config.json")))
    config = LlamaConfig.from_pretrained(path)
    config._attn_implementation = "sdpa"
    model = LlamaForCausalLM(config).to(torch.float32)
    sd = {k: torch.from_numpy(v.copy()) for k, v in dequantized_hf_state(os.path.join(ROOT, GGUF), cfg).items()}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    model.tie_weights()
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    return model.eval()


def main():
    torch.set_num_threads(1)
    from transformers import AutoTokenizer, LlamaForCausalLM
    q8 = len(sys.argv) > 1 and sys.argv[1] == "q8_0"
    path = os.path.join(ROOT, MODEL)
    tok = AutoTokenizer.from_pretrained(path)
    if q8:
        model = load_q8_0_model(path)
    else:
        model = LlamaForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="sdpa").eval()
    out_name = NAME + ("-q8_0" if q8 else "")
    prompts = [
        ("chat", chat("Give me three tips for writing a clear email.")),
        ("plain", "The old sailor looked out over the grey water and said that the whale had come back"),
        ("long-copy", chat("Type out the following passage exactly:\n\n" + long_passage())),
    ]
    out_prompts, rows = [], []
    for name, text in prompts:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        x = torch.tensor([ids])
        with torch.no_grad():
            logits = model(x).logits[0].float()
            g = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=N_NEW, do_sample=False,
                               pad_token_id=tok.eos_token_id, eos_token_id=None)[0, len(ids):].tolist()
        n = len(ids)
        with torch.no_grad():  # top-2 margin of the logits each greedy token was the argmax of
            full = model(torch.tensor([ids + g[:-1]])).logits[0, n - 1:].float()
            t2 = torch.topk(full, 2, dim=-1).values
            margins = (t2[:, 0] - t2[:, 1]).tolist()
        positions = list(range(n - FULL_ROWS, n))
        top = torch.topk(logits, TOP_K, dim=-1)
        out_prompts.append({
            "name": name, "text": text, "ids": ids,
            "full_logits": {"row_offset": len(rows), "positions": positions},
            "top20": [[[int(i), float(v)] for i, v in zip(ti, tv)] for ti, tv in
                      zip(top.indices.tolist(), top.values.tolist())],
            "greedy": g, "greedy_margins": margins})
        for p in positions:
            rows.append(logits[p].numpy().astype("<f4"))
        print(name, n, "tokens; greedy:", repr(tok.decode(g)), file=sys.stderr)
    blob = np.stack(rows).astype("<f4").tobytes()
    with open(os.path.join(OUT, out_name + ".logits.f32"), "wb") as f:
        f.write(blob)
    import transformers
    meta = {"model": GGUF, "gguf_sha256": hashlib.sha256(open(os.path.join(ROOT, GGUF), "rb").read()).hexdigest()} if q8 else {
        "model": MODEL,
        "weights_sha256": hashlib.sha256(open(os.path.join(path, "model.safetensors"), "rb").read()).hexdigest()}
    meta.update({
        "logits_file": out_name + ".logits.f32", "logits_format": "float32 little-endian, row-major [rows, vocab]",
        "rows": len(rows), "vocab": int(logits.shape[-1]), "logits_sha256": hashlib.sha256(blob).hexdigest(),
        "tokenizer": "the export's tokenizer.json (SmolLM2's), add_special_tokens=False",
        "compute": ("transformers LlamaForCausalLM, float32 on the GGUF's Q8_0 weights dequantized in numpy, Q/K rows "
                    "un-permuted, SDPA, 1 torch thread") if q8 else
                   "transformers LlamaForCausalLM, dtype=float32 from the BF16 weights, SDPA, 1 torch thread",
        "greedy": f"generate(do_sample=False, max_new_tokens={N_NEW}, eos_token_id=None)",
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__, "numpy": np.__version__},
        "prompts": out_prompts})
    with open(os.path.join(OUT, out_name + ".json"), "w") as f:
        json.dump(meta, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
