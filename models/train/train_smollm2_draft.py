#!/usr/bin/env python3
"""A small draft for SmolLM2-135M(-Instruct): same corpora, SmolLM2's tokenizer, hard labels.

Retired recipe: the model it makes, smollm2-draft-7m (256-token context, accepted about 0.14 at
T=0), is no longer in the repository; models/zoo/smollm2-draft-distill (distill_smollm2_draft.py)
supersedes it. The script stays as the record of that first recipe; its card and alpha commands
name configs/zoo-alpha-smollm2.yaml, which now measures the distilled draft instead.

Tokenizer: SmolLM2's 49,152-token GPT-2-style BPE, read from the GGUF metadata of
SmolLM2-135M-Instruct.Q4_1.gguf by transformers (AutoTokenizer ..., gguf_file=...),
saved into the export as tokenizer.json (+ tokenizer_config.json,
special_tokens_map.json). Apache-2.0 (SmolLM2, HuggingFaceTB).

Data: the train / held-out text of prepare_data.py; to keep tokenization cheap on
the shared CPU only the first --chars characters of each corpus's training text
are tokenized (documents = lines' groups as written there, no BOS/EOS: SmolLM2
uses none for plain text). Windows of 257 tokens, corpus mixture 0.4/0.2/0.4 as
for the tiny zoo. Training on hard labels (next-token cross-entropy), no
distillation from SmolLM2's logits.

Reproduce:  python models/train/prepare_data.py --skip-tokenizer &&
            nice -n 15 python models/train/train_smollm2_draft.py
Reproduction check (scratch export, then compare with the committed perplexities):
            nice -n 15 python models/train/train_smollm2_draft.py --out-dir /tmp/zoo-repro/out
            python models/train/check_reproduction.py /tmp/zoo-repro/out --names smollm2-draft-7m
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_llama import TinyConfig, TinyLlama, export_hf  # noqa: E402
from train_tiny import lr_at, make_optimizer, cpu_model, CORPORA, MIX, SEQ  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.expanduser("~/.cache/speclab/zoo-data")
GGUF_DIR = os.path.expanduser("~/.cache/speclab")
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
NAME = "smollm2-draft-7m"


def tokenize(tok, part, chars):
    out = {}
    for c in CORPORA:
        text = open(os.path.join(DATA, part, c + ".txt"), encoding="utf-8").read()[:chars]
        docs = text.split("\n\n")
        ids = []
        for enc in tok(docs, add_special_tokens=False)["input_ids"]:
            ids.extend(enc)
            ids.extend(tok("\n\n", add_special_tokens=False)["input_ids"])
        out[c] = np.asarray(ids, dtype=np.int64)
    return out


def acceptance_section(out_dir):
    """Card lines: alpha against SmolLM2 measured by speclab (alpha_speclab.json), if present."""
    p = os.path.join(out_dir, "alpha_speclab.json")
    L = ["## Acceptance rate against SmolLM2-135M-Instruct", ""]
    if not os.path.exists(p):
        return L + ["Not measured yet: `speclab run configs/zoo-alpha-smollm2.yaml`, then "
                    "`models/train/collect_speclab_alpha.py`."]
    sa = json.load(open(p))
    g = next(iter(sa["by_temperature"].values()))["gamma"]
    L.append(f"Measured by speclab itself (C++): `{sa['command']}` (`{sa['config']}`: target "
             f"`{sa['target']}`, speculative decoding with gamma {g}, the {sa['n_prompts']} held-out prompts "
             "of `configs/prompts/tiny-in-domain.jsonl` + `tiny-out-of-domain.jsonl` as plain text, "
             f"{sa['new_tokens']} new tokens each, seed {sa['seed']}, ctx 256), then "
             "`models/train/collect_speclab_alpha.py`. alpha is the result row's `alpha_beta` "
             "(Corollary 3.6): the mean of sum_x min(p(x), q(x)) over every drafted position that "
             "reached the accept test, given the accepted (target-distributed) prefix; T=0: p, q "
             "one-hot argmaxes, so beta is 1 where the argmaxes agree. No PyTorch reference was computed "
             "for this pair (`eval_alpha.py` handles the tiny family's SentencePiece tokenizer only).")
    L += ["", "| temperature | alpha (Corollary 3.6) | accepted / tested | tested positions | tokens per round |",
          "| --- | ---: | ---: | ---: | ---: |"]
    for t, r in sa["by_temperature"].items():
        L.append(f"| {t} | **{r['alpha_beta']:.3f}** | {r['alpha_empirical']:.3f} | {r['tested']:,} | "
                 f"{r['tokens_per_round']:.2f} |")
    L += ["", "Low, as expected of a 307k-token hard-label placeholder next to a 135M-parameter model "
          "trained on trillions of tokens: it mostly proposes frequent tokens and short collocations. "
          "Higher at T=1 than at T=0: at T=1 beta counts the overlap of two broad distributions, at "
          "T=0 only exact argmax agreement. Consistent with the single-prompt `speclab generate` "
          "example in the top-level README (about 0.15 at T=0, 0.21 at T=1 over 48 tokens). Although "
          "this draft has more parameters than the tiny drafts, its alpha is far lower: most of its "
          "parameters are the 49,152-token embedding, and its target is a real 135M model."]
    return L


def reproduction_lines(out_dir):
    """Card lines from reproduction.json (check_reproduction.py --record), if present."""
    p = os.path.join(out_dir, "reproduction.json")
    if not os.path.exists(p):
        return []
    rp = json.load(open(p))
    L = ["", "## Reproduction", "",
         "A from-scratch rerun of this script with the same seed into a scratch directory "
         f"(`--out-dir`), on {rp['machine']}, {rp.get('rerun_threads')} thread(s); held-out perplexities "
         "(first 8,192 SmolLM2 tokens per corpus) of the rerun vs. the committed weights:", "",
         "| corpus | committed ppl | rerun ppl | relative difference |", "| --- | ---: | ---: | ---: |"]
    for c, r in rp["perplexity"].items():
        L.append(f"| {c} | {r['committed']:.1f} | {r['rerun']:.1f} | {r['rel_diff']:.2%} |")
    L += ["", f"- stated tolerance: |rerun - committed| / committed <= {rp['rel_tol']:.0%} per corpus "
          f"(`models/train/check_reproduction.py`); measured maximum {rp['max_rel_diff']:.2%}: "
          f"{'within' if rp['passed'] else 'OUTSIDE'} the tolerance"]
    if rp.get("rerun_total_wall_min"):
        L.append(f"- rerun wall time: {rp['rerun_total_wall_min']:.0f} min (tokenization, training, "
                 "export and evaluation)")
    if rp.get("note"):
        L.append(f"- {rp['note']}")
    L.append("- why a tolerance: bf16 autocast on the CPU rounds differently with other kernels "
             "(AVX-512 BF16 or not), thread counts and torch versions, and training amplifies those "
             "last-bit differences; the perplexities compared are also rounded to one decimal in "
             "`train_meta.json`.")
    return L


def write_card(out_dir):
    tm = json.load(open(os.path.join(out_dir, "train_meta.json")))
    cfg = json.load(open(os.path.join(out_dir, "config.json")))
    size = os.path.getsize(os.path.join(out_dir, "model.safetensors"))
    L = [f"# {NAME}", "",
         "A small Llama-architecture draft for **SmolLM2-135M / SmolLM2-135M-Instruct**: it shares SmolLM2's "
         "tokenizer, so speclab can pair it with that target. Trained from scratch by speclab on the tiny "
         "zoo's corpora (KJV Bible, Moby-Dick, State of the Union addresses; public domain). A very "
         "undertrained laboratory specimen: it mostly knows token frequencies and short collocations.",
         "", "## Model", "",
         f"- parameters: **{tm['params']:,}**, of which {cfg['vocab_size'] * cfg['hidden_size']:,} are the "
         "tied embedding (49,152 x 128)",
         f"- Llama: hidden {cfg['hidden_size']}, {cfg['num_hidden_layers']} layers, "
         f"{cfg['num_attention_heads']} query / {cfg['num_key_value_heads']} KV heads, head_dim "
         f"{cfg['head_dim']}, intermediate {cfg['intermediate_size']}, RoPE theta 10000 (HF rotate_half), "
         "tied embeddings, context 256 (SmolLM2 itself uses theta 100000 and context 8192; this draft "
         "only needs its own positions to be consistent)",
         f"- files: `config.json`, `model.safetensors` (BF16, HF names, {size / 1e6:.1f} MB), "
         "`tokenizer.json` + `tokenizer_config.json` + `chat_template.jinja` (SmolLM2's tokenizer, "
         f"saved by transformers from the GGUF metadata of `{GGUF_NAME}`); bos "
         f"{cfg['bos_token_id']}, eos {cfg['eos_token_id']}",
         "", "## Training", "",
         "- hard labels (next-token cross-entropy on the corpus text); **no distillation** from SmolLM2's logits",
         f"- data: the first {sum(tm['train_tokens_available'].values()):,} SmolLM2 tokens of the tiny zoo's "
         "training split (first 1.5M characters of each corpus; held-out tails untouched), windows of 257 "
         "tokens, corpus mixture bible 0.4 / moby 0.2 / sotu 0.4",
         f"- tokens seen: **{tm['tokens_seen']:,}** ({tm['steps']} steps x batch {tm['batch']} x 256), AdamW, "
         f"peak LR {tm['lr']:g}, cosine, seed {tm['seed']}, bf16 autocast",
         f"- wall time: {tm['wall_s'] / 60:.1f} min on a 2-core x86-64 VM (`lscpu`: {tm['cpu']}), "
         f"{tm['threads']} thread, niced, shared with compile jobs",
         "", "## Held-out perplexity", "",
         "First 8,192 SmolLM2 tokens of each held-out tail, from the exported BF16 weights "
         "(`eval_tiny.perplexity`, 256-token windows): "
         + ", ".join(f"{c} {v:.1f}" for c, v in tm["heldout_ppl_first_8192_tokens"].items()) + ".",
         ""] + acceptance_section(out_dir) + reproduction_lines(out_dir) + [
         "", "## Reproduce", "", "```",
         "python models/train/prepare_data.py --skip-tokenizer",
         "nice -n 15 python models/train/train_smollm2_draft.py      # trains, exports, writes this card",
         "speclab run configs/zoo-alpha-smollm2.yaml --no-plots       # alpha (then collect_speclab_alpha.py)",
         "python models/train/train_smollm2_draft.py --card-only      # re-render this card",
         "```", "", "## Licence", "",
         "The tokenizer files are SmolLM2's (HuggingFaceTB), **Apache-2.0**. Training text public domain. "
         "Weights and card: released with speclab under the project's licence.", ""]
    with open(os.path.join(out_dir, "MODEL_CARD.md"), "w") as f:
        f.write("\n".join(L))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--chars", type=int, default=1_500_000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--card-only", action="store_true", help="re-render MODEL_CARD.md only")
    ap.add_argument("--out-dir", default="",
                    help="export to OUT_DIR/%s instead of models/zoo/%s (a reproduction run)" % (NAME, NAME))
    args = ap.parse_args()
    if args.card_only:
        return write_card(os.path.join(REPO, "models", "zoo", NAME))
    torch.set_num_threads(args.threads)
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(GGUF_DIR, gguf_file=GGUF_NAME)
    t0 = time.time()
    train, held = tokenize(tok, "train", args.chars), tokenize(tok, "heldout", 200_000)
    print("tokenized", {c: len(v) for c, v in train.items()}, f"{time.time() - t0:.0f}s", flush=True)
    cfg = TinyConfig(vocab_size=len(tok), hidden_size=128, intermediate_size=384, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2)
    torch.manual_seed(args.seed)
    model = TinyLlama(cfg)
    opt = make_optimizer(model, args.lr)
    warmup = max(10, args.steps // 20)
    t0 = time.time()
    for step in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.steps, args.lr, warmup)
        rng = np.random.default_rng([args.seed, step])
        rows = []
        for w in rng.choice(len(CORPORA), size=args.batch, p=MIX):
            s = train[CORPORA[w]]
            off = int(rng.integers(0, len(s) - SEQ - 1))
            rows.append(s[off:off + SEQ + 1])
        t = torch.from_numpy(np.stack(rows))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(t[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), t[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 25 == 0 or step == args.steps - 1:
            print(json.dumps({"step": step, "loss": round(loss.item(), 4), "wall_s": round(time.time() - t0, 1)}),
                  flush=True)
    wall = time.time() - t0
    out_dir = os.path.join(args.out_dir or os.path.join(REPO, "models", "zoo"), NAME)
    export_hf(model, out_dir, None, tok.bos_token_id, tok.eos_token_id, tok.pad_token_id)
    tok.save_pretrained(out_dir)
    # held-out perplexity from the shipped BF16 weights, as eval_tiny.py does
    from eval_tiny import load_hf, perplexity
    m = load_hf(out_dir)
    ppl = {c: round(perplexity(m, held[c][:8192])[0], 1)
           for c in CORPORA}
    meta = {"name": NAME, "params": model.num_params(), "steps": args.steps, "batch": args.batch,
            "tokens_seen": args.steps * args.batch * SEQ, "train_tokens_available": {c: int(len(v)) for c, v in train.items()},
            "lr": args.lr, "seed": args.seed, "wall_s": round(wall, 1), "cpu": cpu_model(),
            "threads": args.threads, "heldout_ppl_first_8192_tokens": ppl}
    with open(os.path.join(out_dir, "train_meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(json.dumps(meta), flush=True)
    write_card(out_dir)


if __name__ == "__main__":
    main()
