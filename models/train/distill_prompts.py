"""Instruction prompts for distilling SmolLM2-135M-Instruct into a draft (distill_smollm2_draft.py).

Two kinds, drawn deterministically from one seed:
  passage tasks   a passage of 40-110 words from the *training* split of the zoo's corpora
                  (KJV Bible, Moby-Dick, State of the Union; prepare_data.py's train/*.txt,
                  never the held-out tails that configs/prompts/ are cut from) wrapped in an
                  instruction: copy it verbatim, summarize, extract, answer a question about it,
                  continue it, paraphrase it.
                  Also (a second random stream): discuss a shared passage (open chat about a
                  text), and edits that keep most of its words (tense, person, punctuation).
  open chat       template x topic instructions (poems, explanations, tips, recipes, emails,
                  stories, how-tos, comparisons, haiku, dialogues, short Python functions).
The instruction wordings and topics were written for speclab. They avoid the exact texts and
topics of configs/prompts/chat.jsonl and the three copy wordings of rewrite.jsonl, so that the
acceptance measured on those sets is on unseen instructions and unseen (held-out) passages.
Each prompt carries the temperature and token budget its teacher answer is generated with.
"""
import hashlib
import os
import re

import numpy as np

CORPORA = ("bible", "moby", "sotu")

COPY = [
    "Please reproduce the text below exactly as written:",
    "Write out this passage again, word for word:",
    "Echo the following text without any changes:",
    "Type out the following passage exactly:",
    "Return this text unchanged:",
    "Repeat this back to me verbatim:",
]
SUMMARIZE = [
    "Summarize the following passage in two sentences:",
    "Give a one-sentence summary of this text:",
    "What is this passage about? Answer briefly.",
    "Write a short summary of the text below:",
    "Sum up the main idea of this passage:",
]
EXTRACT = [
    "List the names of people and places mentioned in this passage:",
    "Extract the key facts from the text below as a bulleted list:",
    "Which numbers, dates or quantities appear in this text? List them.",
    "List the main nouns in the following passage:",
]
QA = [
    "Read the passage and answer: who or what is it mainly about?",
    "Based on the text below, what happens first?",
    "According to this passage, what is the speaker asking for?",
    "Read the text and answer: what feeling does it express?",
    "What question does this passage answer? Then answer it.",
]
CONTINUE = [
    "Continue this text:",
    "Write the next few sentences of this passage:",
    "Carry on writing from where this text stops:",
]
PARAPHRASE = [
    "Rewrite this passage in plain modern English:",
    "Paraphrase the following text:",
    "Explain this passage to a child:",
    "Rewrite the text below as a short list of points:",
]
DISCUSS = [  # open chat about a passage (the user shares it and asks)
    "I came across this in an old book. What is it saying?",
    "Someone quoted this to me today. What do you think it means?",
    "Could you explain this passage to me in your own words?",
    "What is your take on the following text?",
    "I have to discuss this passage in class tomorrow. Can you help me understand it?",
    "This passage confused me. What is going on in it?",
]
EDIT = [  # rewriting that keeps most of the words (copy-heavy answers)
    "Fix any spelling or punctuation mistakes in the text below and return the corrected text:",
    "Rewrite this passage in the past tense:",
    "Rewrite the text below, replacing old-fashioned words with modern ones but keeping the rest:",
    "Put each sentence of this passage on its own line:",
    "Rewrite this passage in the first person:",
    "Remove the unnecessary words from this text, keeping everything else the same:",
]
PASSAGE_FAMILIES = [("copy", COPY, 0.30), ("summarize", SUMMARIZE, 0.15), ("extract", EXTRACT, 0.12),
                    ("qa", QA, 0.13), ("continue", CONTINUE, 0.15), ("paraphrase", PARAPHRASE, 0.15)]
# drawn from a second random stream, so that adding them left the first families' prompts as they were
EXTRA_FAMILIES = [("discuss", DISCUSS, 0.15), ("edit", EDIT, 0.15)]

CHAT_TEMPLATES = [
    "Write a short poem about {}.",
    "Explain {} in simple terms.",
    "Give me three tips for {}.",
    "What is {}? Answer in a few sentences.",
    "Write a short story about {}.",
    "Describe {} in one paragraph.",
    "What are the benefits of {}?",
    "Write a short email to a friend about {}.",
    "List four facts about {}.",
    "Why do people care about {}?",
]
CHAT_TOPICS = [
    "the moon", "autumn leaves", "a mountain village", "trains", "a busy city street", "bees",
    "volcanoes", "friendship", "a rainy afternoon", "the desert", "learning to swim", "gardening",
    "a library", "bicycles", "the first day of school", "rivers", "snow", "a lighthouse",
    "photosynthesis", "gravity", "the internet", "electric cars", "recycling", "a healthy breakfast",
    "saving money", "exercise", "time management", "public speaking", "learning a new language",
    "the solar system", "honey", "owls", "a birthday party", "the ocean tides", "chess",
    "coffee", "music lessons", "a summer holiday", "wind turbines", "a small bakery",
]
EXTRA_CHAT_TEMPLATES = [
    "Tell me about {} in a few sentences.",
    "Write a haiku about {}.",
    "Give me a fun fact about {}.",
    "Explain {} to a ten-year-old.",
    "Write a short dialogue between two friends about {}.",
    "What are the pros and cons of {}?",
    "Write a product description for a book about {}.",
    "Suggest three questions a student might ask about {}.",
    "Write a limerick about {}.",
    "Write a motivational message about {}.",
]
EXTRA_CHAT_TOPICS = [
    "penguins", "the history of bread", "a quiet forest", "kites", "clouds", "a garden in spring",
    "a train journey", "origami", "rainbows", "lighthouses at dawn", "the water cycle", "dinosaurs",
    "a farmers market", "camping", "hot air balloons", "a thunderstorm", "the human heart",
    "ancient Egypt", "a violin", "mountain climbing", "a lost key", "magnets", "the Arctic",
    "a treehouse", "sunflowers", "volunteering", "board games", "a long walk", "the printing press",
    "whales", "a night market", "recycling paper", "the alphabet", "windmills", "a marathon",
    "a snowman", "the first telephone", "a map", "a picnic", "fireflies",
]
HOWTO = [
    "How do I boil an egg? Answer in numbered steps.", "How do I plant a tree?",
    "How can I learn to type faster?", "How do I write a good cover letter?",
    "How do I clean a bicycle chain?", "How can I keep a houseplant alive?",
    "How do I start running as a beginner?", "How do I make pancakes?",
    "How do I change a flat tyre on a bike?", "How can I study more effectively?",
    "How do I fold a paper airplane?", "How do I organize a small closet?",
]
COMPARE = [("a lake", "a sea"), ("a virus", "a bacterium"), ("a comet", "an asteroid"),
           ("a frog", "a toad"), ("rent", "a mortgage"), ("a poem", "a song"), ("a city", "a town"),
           ("speed", "velocity"), ("an alligator", "a crocodile"), ("tea", "coffee")]
CODE = [
    "returns the sum of a list of numbers", "checks whether a string is a palindrome",
    "counts the vowels in a string", "returns the largest of three numbers",
    "reverses the words in a sentence", "returns the factorial of n",
    "removes duplicates from a list while keeping order", "converts Celsius to Fahrenheit",
    "returns the n-th Fibonacci number", "checks whether a number is prime",
    "merges two sorted lists", "counts how often each word occurs in a text",
    "returns the average of a list", "finds the longest word in a sentence",
    "capitalizes the first letter of every word", "returns the even numbers of a list",
]


def _passages(text, corpus, rng, n):
    """n passages of 40-110 words from `text` (documents separated by blank lines)."""
    docs = [d for d in text.split("\n\n") if len(d.split()) > 150]
    out = []
    while len(out) < n:
        d = docs[int(rng.integers(len(docs)))]
        if corpus == "bible":  # whole verses, one per line (the layout of the prompt sets)
            lines = d.split("\n")[1:]
            i = int(rng.integers(max(1, len(lines) - 6)))
            take, words = [], 0
            for ln in lines[i:]:
                take.append(ln)
                words += len(ln.split())
                if words >= 40:
                    break
            p = "\n".join(take)
        else:  # whole sentences
            sents = re.split(r"(?<=[.!?])\s+", d)
            i = int(rng.integers(max(1, len(sents) - 8)))
            take, words = [], 0
            for s in sents[i:]:
                take.append(s)
                words += len(s.split())
                if words >= 40:
                    break
            p = " ".join(take)
        if 40 <= len(p.split()) <= 110:
            out.append(p)
    return out


def _text_id(family, corpus, text):
    """An id that depends on the text only (not on how many prompts were drawn)."""
    h = hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]
    return f"{family}-{corpus}-{h}" if corpus else f"{family}-{h}"


def build_prompts(data_dir, n_passage, seed, eval_texts=()):
    """-> list of dicts {id, family, text, temperature, seed, max_new_tokens}, shuffled.

    n_passage passage tasks of the first six families plus 0.3 x n_passage of the discuss / edit
    families, and the open-chat and code prompts. Ids: family, corpus and a hash of the text."""
    rng = np.random.default_rng(seed)
    texts = {c: open(os.path.join(data_dir, "train", c + ".txt"), encoding="utf-8").read() for c in CORPORA}
    prompts = []
    per_corpus = {"bible": 0.4, "moby": 0.25, "sotu": 0.35}
    fam_names = [f[0] for f in PASSAGE_FAMILIES]
    fam_p = np.array([f[2] for f in PASSAGE_FAMILIES])
    fam_p = fam_p / fam_p.sum()
    for c in CORPORA:
        k = int(round(n_passage * per_corpus[c]))
        for j, p in enumerate(_passages(texts[c], c, rng, k)):
            fi = int(rng.choice(len(fam_names), p=fam_p))
            name, wordings, _ = PASSAGE_FAMILIES[fi]
            w = wordings[int(rng.integers(len(wordings)))]
            budget = {"copy": 200, "continue": 128, "paraphrase": 160}.get(name, 128)
            prompts.append({"id": _text_id(name, c, f"{w}\n\n{p}"), "family": name, "text": f"{w}\n\n{p}",
                            "max_new_tokens": budget})
    rng2 = np.random.default_rng([seed, 2])
    for c in CORPORA:
        for name, wordings, share in EXTRA_FAMILIES:
            k = int(round(n_passage * share * per_corpus[c]))
            for p in _passages(texts[c], c, rng2, k):
                w = wordings[int(rng2.integers(len(wordings)))]
                budget = 200 if name == "edit" else 160
                prompts.append({"id": _text_id(name, c, f"{w}\n\n{p}"), "family": name, "text": f"{w}\n\n{p}",
                                "max_new_tokens": budget})
    chat = [t.format(x) for t in CHAT_TEMPLATES for x in CHAT_TOPICS]
    chat += HOWTO
    chat += [f"What is the difference between {a} and {b}?" for a, b in COMPARE]
    chat += [f"Write a Python function that {c}." for c in CODE]
    chat += [t.format(x) for t in EXTRA_CHAT_TEMPLATES for x in CHAT_TOPICS + EXTRA_CHAT_TOPICS]
    chat += [t.format(x) for t in CHAT_TEMPLATES for x in EXTRA_CHAT_TOPICS]
    for t in chat:
        fam = "code" if t.startswith("Write a Python") else "chat"
        prompts.append({"id": _text_id(fam, "", t), "family": fam, "text": t, "max_new_tokens": 192})
    banned = {t.strip().lower() for t in eval_texts}
    seen = set()
    prompts = [p for p in prompts if p["text"].strip().lower() not in banned
               and not (p["text"] in seen or seen.add(p["text"]))]
    order = rng.permutation(len(prompts))
    prompts = [prompts[i] for i in order]
    # a quarter of the answers sampled at T=1 (seeded), the rest greedy: T=0 is the aim, T=1 the spread
    for i, p in enumerate(prompts):
        p["temperature"] = 1.0 if rng.random() < 0.25 else 0.0
        p["seed"] = int(seed * 100003 + i)
    return prompts
