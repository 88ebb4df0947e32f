#!/usr/bin/env python3
"""Render models/zoo/<name>/MODEL_CARD.md from the JSON that the commands wrote:
train_meta.json (train_tiny.py), eval.json (eval_tiny.py), alpha.json (eval_alpha.py).
Every number in a card comes from one of those files.

Reproduce:  python models/train/write_cards.py
"""
import json
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ZOO = os.path.join(REPO, "models", "zoo")
TARGET = "tiny-target-5m"
DATA_META = os.path.expanduser("~/.cache/speclab/zoo-data/meta.json")


def load(d, name):
    p = os.path.join(d, name)
    return json.load(open(p)) if os.path.exists(p) else None


def card(name):
    d = os.path.join(ZOO, name)
    tm, ev, al = load(d, "train_meta.json"), load(d, "eval.json"), load(d, "alpha.json")
    cfg = json.load(open(os.path.join(d, "config.json")))
    size = os.path.getsize(os.path.join(d, "model.safetensors"))
    role = "target" if "target" in name else "draft"
    a = tm["arch"]
    L = [f"# {name}", ""]
    L.append(f"A tiny Llama-architecture {role} model of the speclab zoo, trained from scratch on the "
             "King James Bible, Moby-Dick and the US State of the Union addresses (all public domain), "
             "for speculative-decoding experiments (the zoo mirrors the paper's Table 3 setting: one "
             "target, drafts of clearly different cost). It is a laboratory specimen, not a useful "
             "language model.")
    L += ["", "## Model", ""]
    L.append(f"- parameters: **{tm['params']:,}** (tied input/output embeddings counted once)")
    L.append(f"- architecture: Llama (RMSNorm, RoPE theta {a['rope_theta']:g} in the HF rotate_half "
             f"layout, SwiGLU, GQA, no biases, tied embeddings): hidden {a['hidden_size']}, "
             f"{a['num_hidden_layers']} layers, {a['num_attention_heads']} query heads / "
             f"{a['num_key_value_heads']} KV heads, head_dim {cfg['head_dim']}, intermediate "
             f"{a['intermediate_size']}, vocab {a['vocab_size']}, context {a['max_position_embeddings']}")
    L.append(f"- files: `config.json` (HF LlamaForCausalLM), `model.safetensors` (BF16, HF tensor names, "
             f"{size / 1e6:.2f} MB, no `lm_head.weight`: tied), `tokenizer.model` (SentencePiece BPE, "
             f"4096 pieces, byte fallback; bos {cfg['bos_token_id']}, eos {cfg['eos_token_id']}, "
             f"pad {cfg['pad_token_id']}, unk 0; the same file as `models/zoo/tokenizer.model`)")
    L.append("- load: `transformers.LlamaForCausalLM.from_pretrained(dir)`; "
             "`sentencepiece.SentencePieceProcessor(model_file=dir + '/tokenizer.model')`; "
             "prepend BOS to prompts, as in training")
    L += ["", "## Training", ""]
    L.append("- data: `models/train/prepare_data.py` - KJV Bible (verse numbers stripped, one verse per "
             "line, one document per chapter), Moby-Dick (one document per chapter), State of the Union "
             "addresses 1790-2009 (one document per address); the last 5% of each corpus's documents "
             "in reading / year order is held out (Titus 2 - Revelation 22; chapters 130-135 + "
             "epilogue; 2010-2021). Each document is BOS + text + EOS.")
    L.append("- sampling: windows of 257 tokens at random offsets, corpus chosen per window with "
             "probabilities bible 0.4 / moby 0.2 / sotu 0.4; the batch of step s is a function of "
             f"(seed {tm['seed']}, s)")
    L.append(f"- tokens seen: **{tm['tokens_seen']:,}** ({tm['steps']} steps x batch {tm['batch']} x "
             f"{tm['seq_len']} tokens)")
    L.append(f"- optimizer: AdamW (0.9, 0.95), weight decay 0.1 on matrices, peak LR {tm['peak_lr']:g}, "
             f"{tm['warmup']} warmup steps, cosine decay to 10%, grad clip 1.0, bf16 autocast on CPU "
             "(FP32 master weights)")
    L.append(f"- wall time: **{tm['wall_s'] / 60:.1f} min** ({tm['tokens_per_s']:,} tokens/s) on a "
             f"{tm['cores']}-core x86-64 VM (`lscpu`: {tm['cpu']}), torch {tm['torch']}, "
             f"{tm['torch_threads']} thread(s), niced and shared with other jobs (compiles), so the "
             "time is an upper bound for this machine")
    fl = tm["final_loss_log"]
    L.append(f"- final training loss {fl['loss']:.3f} (one batch)")
    L += ["", "## Held-out perplexity", ""]
    if ev:
        L.append(f"Computed by `models/train/eval_tiny.py` from the shipped BF16 weights (upcast to FP32), "
                 f"non-overlapping 256-token windows, first {ev['max_tokens_per_corpus']:,} tokens of each "
                 "held-out tail:")
        L += ["", "| corpus | perplexity | tokens scored |", "| --- | ---: | ---: |"]
        for c, v in ev["perplexity"].items():
            L.append(f"| {c} | {v:.2f} | {ev['scored_tokens'][c]:,} |")
    else:
        L.append("(not computed yet: run `models/train/eval_tiny.py`)")
    if role == "draft":
        L += ["", f"## Acceptance rate against {TARGET}", ""]
        if al:
            L.append("Computed with the **PyTorch reference** `models/train/eval_alpha.py` (the C++ engine "
                     "`speclab` will recompute these): the target generates "
                     f"{al['new_tokens']} tokens after each of the {al['n_prompts']} prompts of "
                     f"{', '.join('`' + p + '`' for p in al['prompt_sets'])}; alpha is the mean over "
                     "those positions of sum_x min(p(x), q(x)) (Corollary 3.6), p and q the standardized "
                     "target and draft distributions (T=0: one-hot argmax; T=1: softmax). "
                     "tau(gamma) = (1 - alpha^(gamma+1)) / (1 - alpha) is the expected number of tokens "
                     "per target call of Theorem 3.8 under the i.i.d. assumption.")
            tasks = sorted(k for k in next(iter(al["by_temperature"].values()))["alpha"] if k != "all")
            L += ["", "| temperature | alpha (all) | " + " | ".join(tasks) + " | tau(g=2) | tau(g=4) |",
                  "| --- | ---: | " + " | ".join("---:" for _ in tasks) + " | ---: | ---: |"]
            for t, r in al["by_temperature"].items():
                L.append(f"| {t} | **{r['alpha']['all']:.3f}** | "
                         + " | ".join(f"{r['alpha'][k]:.3f}" for k in tasks)
                         + f" | {r['tau']['gamma=2']:.2f} | {r['tau']['gamma=4']:.2f} |")
        else:
            L.append("(not computed yet: run `models/train/eval_alpha.py`)")
    L += ["", "## Notes", "",
          "- Undertrained for lack of time: ~0.2 epoch on a CPU shared with compile jobs (see "
          "`models/train/train_tiny.py`). Greedy (T=0) continuations of the target fall into "
          "repetition loops within a few tokens (e.g. \"and the LORD, and the LORD, ...\", "
          "\"the United States, and the United States, ...\"), and T=1 samples are barely English.",
          "- So T=0 alphas measure agreement on those loops (high on the Bible and the addresses, "
          "low on Moby-Dick), and alpha at T=1 is higher than at T=0: these models' next-token "
          "distributions are broad, so their overlap sum_x min(p, q) is large even where their "
          "argmaxes differ. Expect both to move once the zoo is trained longer.",
          "- The larger draft has the higher alpha at both temperatures, as its size suggests."
          if role == "draft" else
          "- The drafts' alphas against this target are in their cards and in `README.md` here."]
    L += ["", "## Reproduce", "", "```",
          "python models/train/prepare_data.py          # splits + tokenizer (-> models/zoo/tokenizer.model)",
          f"nice -n 15 python models/train/train_tiny.py --name {name} --threads {tm['torch_threads']}",
          f"python models/train/eval_tiny.py models/zoo/{name}"]
    if role == "draft":
        L.append(f"python models/train/eval_alpha.py --target models/zoo/{TARGET} --draft models/zoo/{name}")
    L += ["python models/train/write_cards.py", "```", "",
          "(`sh models/train/train_zoo.sh` runs the whole zoo; `PARALLEL=1`, as done here, trains the three models concurrently.) Seeds are fixed; an interrupted "
          "training resumes from `~/.cache/speclab/zoo-ckpt/` with the same data order. Bitwise "
          "equality of the weights across machines is not promised (CPU bf16 kernels differ).", "",
          "## Licence", "",
          "Training text is public domain. Weights, tokenizer and card: released with speclab "
          "under the project's licence.", ""]
    with open(os.path.join(d, "MODEL_CARD.md"), "w") as f:
        f.write("\n".join(L))


def readme(names):
    """models/zoo/README.md: the family at a glance (numbers from the same JSON files)."""
    L = ["# The tiny zoo", "",
         "Llama-architecture models trained from scratch for speclab's speculative-decoding "
         "experiments: one target and two drafts of clearly different cost, sharing one "
         "SentencePiece tokenizer (`tokenizer.model`, BPE, 4096 pieces, byte fallback) and one "
         "training set (KJV Bible + Moby-Dick + State of the Union addresses, all public domain, "
         "last 5% of each held out). Each directory is an HF Llama export (`config.json`, BF16 "
         "`model.safetensors`, `tokenizer.model`) with a `MODEL_CARD.md`; `train_meta.json`, "
         "`eval.json`, `alpha.json` are the raw outputs the cards are rendered from.", "",
         "| model | params | layers x hidden | tokens seen | train wall (min) | ppl bible | ppl moby | "
         "ppl sotu | alpha T=0 | alpha T=1 |",
         "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name in names:
        d = os.path.join(ZOO, name)
        tm, ev, al = load(d, "train_meta.json"), load(d, "eval.json"), load(d, "alpha.json")
        pp = ev["perplexity"] if ev else {}
        a0 = al["by_temperature"].get("T=0", {}).get("alpha", {}).get("all") if al else None
        a1 = al["by_temperature"].get("T=1", {}).get("alpha", {}).get("all") if al else None
        f = lambda v: "-" if v is None else f"{v:.3f}" if v < 1.5 else f"{v:.1f}"
        L.append(f"| [{name}]({name}/MODEL_CARD.md) | {tm['params']:,} | {tm['arch']['num_hidden_layers']} x "
                 f"{tm['arch']['hidden_size']} | {tm['tokens_seen']:,} | {tm['wall_s'] / 60:.1f} | "
                 f"{f(pp.get('bible'))} | {f(pp.get('moby'))} | {f(pp.get('sotu'))} | {f(a0)} | {f(a1)} |")
    L += ["", f"alpha: draft vs `{TARGET}`, Corollary 3.6, PyTorch reference "
          "(`models/train/eval_alpha.py`) on `configs/prompts/tiny-in-domain.jsonl` + "
          "`tiny-out-of-domain.jsonl`; the C++ engine recomputes it.", "",
          "Also here: [smollm2-draft-7m](smollm2-draft-7m/MODEL_CARD.md), a small draft for "
          "SmolLM2-135M(-Instruct) that uses SmolLM2's tokenizer (Apache-2.0), trained by "
          "`models/train/train_smollm2_draft.py` (hard labels, 307k tokens: a placeholder).", "",
          "Rebuild everything: `sh models/train/train_zoo.sh` (see `models/train/`); "
          "`PARALLEL=1` trains the three at once, as was done here.", ""]
    with open(os.path.join(ZOO, "README.md"), "w") as fh:
        fh.write("\n".join(L))


def main():
    names = []
    for name in sorted(os.listdir(ZOO)):
        if os.path.exists(os.path.join(ZOO, name, "train_meta.json")) and not name.startswith("smollm2"):
            card(name)
            names.append(name)
            print("wrote", os.path.join("models/zoo", name, "MODEL_CARD.md"))
    order = lambda n: (0 if "target" in n else 1, -json.load(open(os.path.join(ZOO, n, "train_meta.json")))["params"])
    readme(sorted(names, key=order))
    print("wrote models/zoo/README.md")


if __name__ == "__main__":
    main()
