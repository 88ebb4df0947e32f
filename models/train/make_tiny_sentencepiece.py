"""A tiny SentencePiece model for the tokenizer.model tests (tests/data/tiny_spm_bpe.model).

BPE model type like Llama 2's tokenizer.model, 400 pieces (256 of them byte pieces), byte fallback, trained on the
first Moby-Dick chapters. Deterministic: same corpus and options give the same file.

Usage: /opt/speclab-venv/bin/python models/train/make_tiny_sentencepiece.py
"""
import os

import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "../../tests/data/corpus/moby-dick")
OUT_PREFIX = os.path.join(HERE, "../../tests/data/tiny_spm_bpe")


def main():
    text = ""
    for n in range(1, 6):
        with open(os.path.join(CORPUS, f"chapter_{n}.txt"), encoding="utf-8") as f:
            text += f.read()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(line for line in text.split("\n") if line.strip()),
        model_prefix=OUT_PREFIX,
        model_type="bpe",
        vocab_size=400,
        byte_fallback=True,
        character_coverage=1.0,
        num_threads=1,
        bos_id=1, eos_id=2, unk_id=0, pad_id=-1,
        user_defined_symbols=["<sep>"],
        # Llama 2's settings: no normalization, spaces kept as they are (exact round trips).
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        minloglevel=2,
    )
    os.remove(OUT_PREFIX + ".vocab")  # the .model holds everything the tests need
    print("wrote", OUT_PREFIX + ".model")


if __name__ == "__main__":
    main()
