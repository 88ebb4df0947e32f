#!/usr/bin/env python3
"""Tests of make_category_prompts.py (stdlib only; run by ctest as prompt_sets_reproducible):

  - rerunning it into a temp folder gives the committed configs/prompts/*.jsonl byte for byte;
  - --coding twice gives the same bytes, equal to <cache>/prompts/coding.jsonl written by
    .ci/install, from a HumanEval file whose sha256 is the one .ci/install pins;
  - every shipped prompt set has a valid `category` on every line;
  - the passages come from the held-out tails: none of them occurs in the training part of
    its corpus (a wrong slice would put training text in the prompts).
"""
import filecmp
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import make_category_prompts as mcp  # noqa: E402

SCRIPT = os.path.join(HERE, "make_category_prompts.py")
PROMPTS = os.path.join(REPO, "configs", "prompts")
CATEGORY = re.compile(r"^[A-Za-z0-9._-]{1,40}$")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def test_rerun_matches_committed():
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, SCRIPT, "--out", tmp], check=True)
        names = sorted(os.listdir(tmp))
        check(names == sorted(mcp.FILE.values()), f"files written: {names}")
        for n in names:
            check(filecmp.cmp(os.path.join(tmp, n), os.path.join(PROMPTS, n), shallow=False),
                  f"configs/prompts/{n} differs from a rerun of make_category_prompts.py")


def test_coding_reproducible():
    he = os.path.join(mcp.CACHE, "HumanEval.jsonl.gz")
    if not os.path.isfile(he):
        check(False, f"{he} missing: run .ci/install (it fetches HumanEval)")
        return
    pinned = re.search(r"HUMANEVAL_SHA=([0-9a-f]{64})",
                       open(os.path.join(REPO, ".ci", "install")).read()).group(1)
    check(hashlib.sha256(open(he, "rb").read()).hexdigest() == pinned,
          f"{he}: sha256 is not the one .ci/install pins")
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        for d in (a, b):
            subprocess.run([sys.executable, SCRIPT, "--coding", "--humaneval", he, "--out", d],
                           check=True)
        check(filecmp.cmp(os.path.join(a, "coding.jsonl"), os.path.join(b, "coding.jsonl"),
                          shallow=False), "--coding twice gave different bytes")
        installed = os.path.join(mcp.CACHE, "prompts", "coding.jsonl")
        check(os.path.isfile(installed) and
              filecmp.cmp(os.path.join(a, "coding.jsonl"), installed, shallow=False),
              f"{installed} missing or not what --coding writes (rerun .ci/install)")
        rows = [json.loads(l) for l in open(os.path.join(a, "coding.jsonl"), encoding="utf-8")]
        check(len(rows) == 164, f"coding.jsonl has {len(rows)} prompts, expected 164")
        check(all(r["category"] == "coding" and "def " in r["text"] and
                  ('"""' in r["text"] or "'''" in r["text"]) for r in rows),
              "a coding prompt lacks its category, signature or docstring")


def test_shipped_categories():
    for n in sorted(os.listdir(PROMPTS)):
        if not n.endswith(".jsonl"):
            continue
        for i, line in enumerate(open(os.path.join(PROMPTS, n), encoding="utf-8"), 1):
            c = json.loads(line).get("category")
            check(isinstance(c, str) and CATEGORY.match(c) is not None,
                  f"configs/prompts/{n}:{i}: category {c!r} is not a valid name")


def test_passages_are_held_out():
    # Training text of each corpus as the repository has it: Moby-Dick before chapter 130, the
    # addresses before 2010, the Bible before Titus 2.
    moby_dir = os.path.join(mcp.CORPUS, "moby-dick")
    train = {
        "moby": " ".join(mcp.read(os.path.join(moby_dir, n)) for n in sorted(os.listdir(moby_dir))
                         if re.fullmatch(r"chapter_(\d+)\.txt", n) and int(n[8:-4]) < 130),
        "sotu": " ".join(mcp.read(os.path.join(mcp.CORPUS, "sotu", n))
                         for n in sorted(os.listdir(os.path.join(mcp.CORPUS, "sotu")))
                         if int(n[:4]) < 2010),
    }
    raw = subprocess.run(["bible", "gen1:1-tit1:16"], check=True, capture_output=True,
                         text=True).stdout
    train["bible"] = re.sub(r"\s+", " ", re.sub(r"(?m)^\s+\d+ ", " ", raw))
    for corpus in mcp.CORPORA:
        text = re.sub(r"\s+", " ", train[corpus])
        for p in mcp.passage_pool(corpus, 16):
            # its longest sentence / verse: long enough not to be a common phrase
            probe = max(re.split(r"(?<=[.!?])\s+|\n", p), key=lambda s: len(s.split()))
            check(len(probe.split()) >= 10 and probe not in text,
                  f"{corpus}: passage text found in the training part: {probe[:60]!r}")


if __name__ == "__main__":
    for t in (test_rerun_matches_committed, test_coding_reproducible, test_shipped_categories,
              test_passages_are_held_out):
        t()
    print("make_category_prompts:", "FAILED" if failures else "ok",
          f"({len(failures)} failures)" if failures else "")
    sys.exit(1 if failures else 0)
