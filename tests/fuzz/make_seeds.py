#!/usr/bin/env python3
"""Writes the small valid seed files of tests/fuzz/corpus/<target>/ (standard library only).

Rerun: python3 tests/fuzz/make_seeds.py  (overwrites the seeds it makes; leaves others).
The tokenizer.model seeds are copies of committed SentencePiece models; the config seeds
are copies of configs/*.yaml plus the small files written here.
"""
import json
import os
import shutil
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")


def out(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# --- safetensors -------------------------------------------------------------------------
def safetensors(tensors):
    """tensors: list of (name, dtype, shape, bytes)."""
    header = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(data)]}
        off += len(data)
    text = json.dumps(header, separators=(",", ":"))
    text += " " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text.encode() + b"".join(t[3] for t in tensors)


f32 = lambda vals: struct.pack("<%df" % len(vals), *vals)
st = safetensors([
    ("a", "F32", [2, 3], f32([1, 2, 3, 4, 5, 6])),
    ("b", "F16", [4], b"\x00\x3c" * 4),
    ("c", "BF16", [2, 2], b"\x80\x3f" * 4),
])
out("fuzz_safetensors", "three_dtypes.safetensors", st)
out("fuzz_safetensors", "empty_tensor.safetensors", safetensors([("e", "F32", [0, 4], b"")]))
index = json.dumps({"metadata": {"total_size": 40},
                    "weight_map": {"a": "model-00001-of-00001.safetensors",
                                   "b": "model-00001-of-00001.safetensors"}})
out("fuzz_safetensors", "sharded_index", index.encode() + b"\0SHARD\0" + st)


# --- GGUF --------------------------------------------------------------------------------
def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


U32, I32, F32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9


def kv_u32(k, v):
    return gstr(k) + struct.pack("<II", U32, v)


def kv_f32(k, v):
    return gstr(k) + struct.pack("<If", F32, v)


def kv_bool(k, v):
    return gstr(k) + struct.pack("<IB", BOOL, int(v))


def kv_str(k, v):
    return gstr(k) + struct.pack("<I", STRING) + gstr(v)


def kv_strs(k, vs):
    return gstr(k) + struct.pack("<IIQ", ARRAY, STRING, len(vs)) + b"".join(gstr(v) for v in vs)


def kv_arr(k, etype, fmt, vs):
    return gstr(k) + struct.pack("<IIQ", ARRAY, etype, len(vs)) + b"".join(struct.pack("<" + fmt, v) for v in vs)


def gguf(kvs, tensors, alignment=32):
    """tensors: (name, ne innermost-first, ggml type, bytes)."""
    b = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs)
    offs, off = [], 0
    for t in tensors:
        off = (off + alignment - 1) // alignment * alignment
        offs.append(off)
        off += len(t[3])
    for (name, ne, typ, _), o in zip(tensors, offs):
        b += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        b += struct.pack("<IQ", typ, o)
    b += b"\0" * (-len(b) % alignment)
    data = b""
    for (_, _, _, d), o in zip(tensors, offs):
        data += b"\0" * (o - len(data)) + d
    return b + data


q8_block = struct.pack("<H", 0x3C00) + bytes(range(32))
q4_0_block = struct.pack("<H", 0x3C00) + bytes(range(16))
q4_1_block = struct.pack("<HH", 0x3C00, 0xBC00) + bytes(range(16))
tensors = [
    ("token_embd.weight", [4, 3], 0, f32(list(range(12)))),
    ("blk.0.f16", [4, 2], 1, b"\x00\x3c" * 8),
    ("blk.0.bf16", [4, 2], 30, b"\x80\x3f" * 8),
    ("blk.0.q8_0", [32, 2], 8, q8_block * 2),
    ("blk.0.q4_0", [64, 1], 2, q4_0_block * 2),
    ("blk.0.q4_1", [32, 2], 3, q4_1_block * 2),
]
llama_kvs = [
    kv_str("general.architecture", "llama"),
    kv_u32("general.alignment", 32),
    kv_u32("llama.context_length", 64),
    kv_u32("llama.embedding_length", 4),
    kv_u32("llama.block_count", 1),
    kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5),
]
spm_tokens = ["<unk>", "<s>", "</s>", "<0x41>", "\u2581", "\u2581H", "e", "l", "o", "\u2581world", "ll"]
spm_kvs = [
    kv_str("tokenizer.ggml.model", "llama"),
    kv_strs("tokenizer.ggml.tokens", spm_tokens),
    kv_arr("tokenizer.ggml.scores", F32, "f", [float(-i) for i in range(len(spm_tokens))]),
    kv_arr("tokenizer.ggml.token_type", I32, "i", [2, 3, 3, 6] + [1] * (len(spm_tokens) - 4)),
    kv_u32("tokenizer.ggml.bos_token_id", 1),
    kv_u32("tokenizer.ggml.eos_token_id", 2),
    kv_bool("tokenizer.ggml.add_bos_token", True),
]
out("fuzz_gguf", "llama_spm.gguf", gguf(llama_kvs + spm_kvs, tensors))
bpe_tokens = ["H", "e", "l", "o", "\u0120", "w", "r", "d", "He", "ll", "\u0120w", "<|begin_of_text|>"]
bpe_kvs = [
    kv_str("tokenizer.ggml.model", "gpt2"),
    kv_str("tokenizer.ggml.pre", "llama-bpe"),
    kv_strs("tokenizer.ggml.tokens", bpe_tokens),
    kv_arr("tokenizer.ggml.token_type", I32, "i", [1] * 11 + [3]),
    kv_strs("tokenizer.ggml.merges", ["H e", "l l", "\u0120 w"]),
    kv_u32("tokenizer.ggml.bos_token_id", 11),
]
out("fuzz_gguf", "llama_bpe.gguf", gguf(llama_kvs + bpe_kvs, tensors[:2]))
out("fuzz_gguf", "no_tensors.gguf", gguf([kv_str("general.architecture", "llama")], []))


# --- tokenizer.json ----------------------------------------------------------------------
def tok_json(extra_model=None, **kw):
    vocab = {t: i for i, t in enumerate(bpe_tokens)}
    model = {"type": "BPE", "vocab": vocab, "merges": ["H e", "l l", "\u0120 w"],
             "ignore_merges": False, "byte_fallback": False}
    model.update(extra_model or {})
    j = {"version": "1.0",
         "added_tokens": [{"id": 11, "content": "<|begin_of_text|>", "special": True,
                           "single_word": False, "lstrip": False, "rstrip": False,
                           "normalized": False}],
         "normalizer": None,
         "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                           "use_regex": True},
         "post_processor": {"type": "TemplateProcessing",
                            "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                                       {"Sequence": {"id": "A", "type_id": 0}}],
                            "pair": [], "special_tokens": {"<|begin_of_text|>": {
                                "id": "<|begin_of_text|>", "ids": [11],
                                "tokens": ["<|begin_of_text|>"]}}},
         "decoder": {"type": "ByteLevel"},
         "model": model}
    j.update(kw)
    return json.dumps(j, ensure_ascii=False, indent=1)


out("fuzz_tokenizer_json", "bytelevel_bpe.json", tok_json())
out("fuzz_tokenizer_json", "pair_merges.json",
    tok_json({"merges": [["H", "e"], ["l", "l"], ["\u0120", "w"]], "ignore_merges": True}))
out("fuzz_tokenizer_json", "split_pretok.json", tok_json(pre_tokenizer={
    "type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}))

# --- tokenizer.model ---------------------------------------------------------------------
d = os.path.join(CORPUS, "fuzz_tokenizer_model")
os.makedirs(d, exist_ok=True)
shutil.copy(os.path.join(ROOT, "tests", "data", "tiny_spm_bpe.model"), os.path.join(d, "tiny_spm_bpe.model"))

# --- experiment configs ------------------------------------------------------------------
d = os.path.join(CORPUS, "fuzz_experiment_config")
os.makedirs(d, exist_ok=True)
for name in sorted(os.listdir(os.path.join(ROOT, "configs"))):
    if name.endswith(".yaml"):
        shutil.copy(os.path.join(ROOT, "configs", name), os.path.join(d, name))

# --- hostile cases: nesting depth and special files --------------------------------------
# JSON nested deeper than the readers' limit (256), inside otherwise valid files; indexes
# naming the special files that fuzz_safetensors places beside them (a FIFO, /dev/zero).
DEEP = 1000
deep = "[" * DEEP + "2" + "]" * DEEP
deep_header = '{"w":{"dtype":"F32","shape":' + deep + ',"data_offsets":[0,8]}}'
out("fuzz_safetensors", "deep_shape.safetensors",
    struct.pack("<Q", len(deep_header)) + deep_header.encode() + b"\0" * 8)
dup_header = ('{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
              '"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}')
out("fuzz_safetensors", "duplicate_names.safetensors",
    struct.pack("<Q", len(dup_header)) + dup_header.encode() + b"\0" * 8)
for special in ("fifo", "zero"):
    idx = json.dumps({"weight_map": {"a": special + ".safetensors"}})
    out("fuzz_safetensors", "index_" + special + "_shard", idx.encode() + b"\0SHARD\0" + st)
out("fuzz_safetensors", "index_deep", ('{"weight_map":' + deep + "}").encode() + b"\0SHARD\0" + st)
out("fuzz_tokenizer_json", "deep_pretokenizer.json",
    tok_json(pre_tokenizer="DEEP").replace('"pre_tokenizer": "DEEP"', '"pre_tokenizer": ' + deep))
out("fuzz_gguf", "nested_array.gguf", gguf(
    [kv_str("general.architecture", "llama"),
     gstr("x") + struct.pack("<IIQ", ARRAY, ARRAY, 1) + struct.pack("<IQ", U32, 1) + b"\1\0\0\0"], []))
cfg_head = ("name: hostile\nquestion: \"q\"\ntarget: synthetic:tiny\ndrafters:\n  lookup: lookup\n"
            "generation:\n  max_new_tokens: 8\n  ctx: 64\n")
out("fuzz_experiment_config", "deep_flow.yaml",
    cfg_head + "measure:\n  cost_only: true\nsweep:\n  drafter: [lookup]\n  gamma: "
    + "[" * DEEP + "2" + "]" * DEEP + "\n")
out("fuzz_experiment_config", "special_paths.yaml",
    "name: hostile\nquestion: \"q\"\ntarget: /dev/zero\ndrafters:\n  n: ngram:/dev/zero\n"
    "prompts:\n  file: [/dev/zero, /dev/stdin]\n  tokenizer: /dev/zero\nsweep:\n  drafter: [n]\n")
out("fuzz_experiment_config", "nul_byte.yaml", cfg_head.replace("hostile", "hos\0tile"))
out("fuzz_experiment_config", "many_cells.yaml",
    cfg_head + "measure:\n  cost_only: true\nsweep:\n  drafter: [lookup]\n  gamma: [1, 2, 3]\n"
    "  temperature: [" + ", ".join(str(i / 100) for i in range(100)) + "]\n"
    "  top_p: [" + ", ".join(str((i + 1) / 100) for i in range(100)) + "]\n")

# --- JSON lines: prompts, result rows, replay traces -------------------------------------
out("fuzz_jsonl_inputs", "prompts.jsonl",
    '{"id": "a", "text": "hello", "task": "t"}\n{"id": "b", "text": "w\\u00f6rld"}\n')
out("fuzz_jsonl_inputs", "results.jsonl",
    '{"cell_id": "c1", "alpha": 0.5, "per_position": [1, 2]}\n{"cell_id": "c2", "x": null}\n')
out("fuzz_jsonl_inputs", "trace.jsonl",
    '{"n_draft": 3, "n_accepted": 1, "beta": [0.9, 0.5]}\n{"n_draft": 2, "n_accepted": 2}\n')
out("fuzz_jsonl_inputs", "deep.jsonl", '{"cell_id": "c", "id": "a", "text": ' + deep + "}\n")
