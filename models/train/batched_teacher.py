"""Batched generation by the teacher (SmolLM2-135M-Instruct in FP32) with a KV cache, keeping its
top-K logits at every position of every sequence in the same pass.

Why: `speclab generate` answers one prompt at a time on one thread; a CPU matrix multiply over
a batch of 16-64 rows reads each weight once per step for all rows, so a batch makes many times
more teacher text per CPU minute. The logits that choose each generated token are the teacher's
distribution at that position, i.e. exactly what the teacher stage of distill_smollm2_draft.py
computes by a full forward over (prompt + answer); the prompt positions' logits come from the
prefill. So one pass gives both the answer and its soft targets.

Layout: prompts are left-padded into a (B, L) block; row b's real tokens occupy the last n_b
slots and get RoPE positions 0..n_b-1, padding slots are masked out of every attention. The
cache is preallocated (layers x (B, H_kv, L + max_new, head_dim)) and written in place; rows
that finish (EOS or their token budget) are dropped from the batch (the cache compacted) once a
quarter of the rows have finished.
Greedy rows take the argmax (ties: the lowest token id, as torch.argmax); T>0 rows sample from
softmax(logits / T) with a per-row torch.Generator seeded from the prompt's seed.

Model: models/train/tiny_llama.TinyLlama with SmolLM2's weights (distill_smollm2_draft.load_teacher),
tied head.
"""
import numpy as np
import torch
import torch.nn.functional as F

from tiny_llama import rotate_half


def _rope(cfg, pos):
    """pos (B, t) int64 -> cos, sin (B, 1, t, head_dim), HF layout (freqs, freqs)."""
    hd = cfg.head_dim
    inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, hd, 2).float() / hd))
    f = pos.float()[..., None] * inv_freq  # (B, t, hd/2)
    emb = torch.cat([f, f], dim=-1)[:, None]
    return emb.cos(), emb.sin()


class Cache:
    """Per layer K and V of shape (B, H_kv, S_max, head_dim), valid (B, S_max) bool, length used."""

    def __init__(self, cfg, B, s_max):
        hd, hk = cfg.head_dim, cfg.num_key_value_heads
        self.k = [torch.zeros(B, hk, s_max, hd) for _ in range(cfg.num_hidden_layers)]
        self.v = [torch.zeros(B, hk, s_max, hd) for _ in range(cfg.num_hidden_layers)]
        self.valid = torch.zeros(B, s_max, dtype=torch.bool)
        self.used = 0

    def select(self, rows):
        """Keep only the batch rows `rows` (1-D long tensor)."""
        self.k = [k.index_select(0, rows) for k in self.k]
        self.v = [v.index_select(0, rows) for v in self.v]
        self.valid = self.valid.index_select(0, rows)


def cached_hidden(model, ids, pos, valid_new, cache):
    """One step over t new slots: ids, pos (B, t) int64, valid_new (B, t) bool -> final-norm hidden (B, t, D).

    New slot j of row b attends to the row's valid slots up to and including itself."""
    cfg = model.cfg
    B, t = ids.shape
    s0 = cache.used
    cache.valid[:, s0:s0 + t] = valid_new
    cache.used = s0 + t
    S = cache.used
    causal = torch.ones(t, S, dtype=torch.bool).tril(diagonal=s0)  # (t, S): slot s <= s0 + j
    mask = causal[None] & cache.valid[:, None, :S]  # (B, t, S)
    # a padding query slot would see no key at all (NaN softmax): let it see its own slot; its output is never used
    own = torch.zeros(t, S, dtype=torch.bool)
    own[torch.arange(t), s0 + torch.arange(t)] = True
    mask = (mask | ((~valid_new)[:, :, None] & own[None]))[:, None]  # (B, 1, t, S)
    cos, sin = _rope(cfg, pos)
    x = model.model.embed_tokens(ids)
    H, hk, hd = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    rep = H // hk
    mask_rep = mask.repeat(1, 1, rep, 1)  # (B, 1, rep*t, S)
    for li, layer in enumerate(model.model.layers):
        a = layer.self_attn
        h = layer.input_layernorm(x)
        q = a.q_proj(h).view(B, t, H, hd).transpose(1, 2)
        k = a.k_proj(h).view(B, t, hk, hd).transpose(1, 2)
        v = a.v_proj(h).view(B, t, hk, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        cache.k[li][:, :, s0:S] = k
        cache.v[li][:, :, s0:S] = v
        # GQA without copying the cache: query heads j*rep .. j*rep+rep-1 share KV head j (HF
        # repeat_kv order), so fold them into the query-length axis: (B, H_kv, rep*t, hd)
        y = F.scaled_dot_product_attention(q.reshape(B, hk, rep * t, hd), cache.k[li][:, :, :S],
                                           cache.v[li][:, :, :S], attn_mask=mask_rep)
        y = y.view(B, H, t, hd)
        x = x + a.o_proj(y.transpose(1, 2).reshape(B, t, -1))
        x = x + layer.mlp(layer.post_attention_layernorm(x))
    return model.model.norm(x)


def head_topk(model, h, k):
    """h (N, D) -> top-k ids (N, k) int64, top-k logits (N, k) f32, logsumexp (N,) f32, argmax row logits (N, V)."""
    logits = h @ model.model.embed_tokens.weight.t()
    v, i = torch.topk(logits, k, dim=-1)
    return i, v, torch.logsumexp(logits, dim=-1), logits


def generate_batch(model, prompts, eos_id, topk, pad_id=0, chunk=256):
    """prompts: list of dicts {prompt_ids, max_new_tokens, temperature, seed}.

    -> list of dicts {answer_ids, stop ("eos" | "max_tokens", as speclab generate), idx uint16 (n, K), val f16 (n, K), lse f32 (n,)}
    where n = len(prompt_ids) + len(answer_ids) and row t holds the teacher's top-K logits and
    log-normalizer after token t (predicting token t+1). The last row (after the final answer
    token, which is never fed back) is not computed: idx 0, val -inf, lse NaN."""
    cfg = model.cfg
    B = len(prompts)
    lens = [len(p["prompt_ids"]) for p in prompts]
    L = max(lens)
    max_new = max(p["max_new_tokens"] for p in prompts)
    ids = torch.full((B, L), pad_id, dtype=torch.long)
    valid = torch.zeros(B, L, dtype=torch.bool)
    for b, p in enumerate(prompts):
        ids[b, L - lens[b]:] = torch.tensor(p["prompt_ids"])
        valid[b, L - lens[b]:] = True
    pos = (valid.long().cumsum(-1) - 1).clamp(min=0)
    gens = [torch.Generator().manual_seed(int(p["seed"])) if p["temperature"] > 0 else None for p in prompts]
    out = [{"answer_ids": [], "stop": "max_tokens", "idx": [], "val": [], "lse": []} for _ in prompts]
    cache = Cache(cfg, B, L + max_new)
    with torch.no_grad():
        h = cached_hidden(model, ids, pos, valid, cache)  # (B, L, D)
        last_logits = []
        for b in range(B):  # prompt positions in chunks (the head over 49,152 tokens dominates memory)
            hb = h[b, L - lens[b]:]
            for c in range(0, lens[b], chunk):
                i, v, lse, lg = head_topk(model, hb[c:c + chunk], topk)
                out[b]["idx"].append(i)
                out[b]["val"].append(v)
                out[b]["lse"].append(lse)
            last_logits.append(lg[-1].clone())  # not a view: the chunk's logits are freed
        logits = torch.stack(last_logits)  # (B, V): after each prompt's last token
        # cache row r holds prompt slots[r]; a finished row stays (fed padding, its output unused)
        # until a quarter of the rows are finished, then the cache is compacted: selecting cache
        # rows copies the whole cache, so doing it at every finish would cost more than the step
        slots = list(range(B))
        next_pos = torch.tensor(lens, dtype=torch.long)
        while True:
            toks = torch.argmax(logits, dim=-1).tolist()
            for r, b in enumerate(slots):
                if b is None:
                    continue
                p = prompts[b]
                if p["temperature"] > 0:
                    probs = torch.softmax(logits[r].double() / p["temperature"], dim=-1)
                    toks[r] = int(torch.multinomial(probs, 1, generator=gens[b]))
                out[b]["answer_ids"].append(toks[r])
                if toks[r] == eos_id:
                    out[b]["stop"] = "eos"
                    slots[r] = None
                elif len(out[b]["answer_ids"]) >= p["max_new_tokens"]:
                    slots[r] = None
            keep = [r for r, b in enumerate(slots) if b is not None]
            if not keep:
                break
            if len(keep) <= 0.75 * len(slots):
                rows = torch.tensor(keep, dtype=torch.long)
                cache.select(rows)
                next_pos = next_pos.index_select(0, rows)
                slots = [slots[r] for r in keep]
                toks = [toks[r] for r in keep]
            alive = torch.tensor([b is not None for b in slots])
            step_ids = torch.tensor([[t if b is not None else pad_id] for t, b in zip(toks, slots)], dtype=torch.long)
            h = cached_hidden(model, step_ids, next_pos[:, None], alive[:, None], cache)[:, 0]
            i, v, lse, logits = head_topk(model, h, topk)
            for r, b in enumerate(slots):
                if b is not None:
                    out[b]["idx"].append(i[r:r + 1])
                    out[b]["val"].append(v[r:r + 1])
                    out[b]["lse"].append(lse[r:r + 1])
            next_pos = next_pos + 1
    for o in out:
        o["idx"].append(torch.zeros(1, topk, dtype=torch.long))
        o["val"].append(torch.full((1, topk), float("-inf")))
        o["lse"].append(torch.full((1,), float("nan")))
        o["idx"] = torch.cat(o["idx"]).numpy().astype(np.uint16)
        o["val"] = torch.cat(o["val"]).numpy().astype(np.float16)
        o["lse"] = torch.cat(o["lse"]).numpy().astype(np.float32)
    return out
