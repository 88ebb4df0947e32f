// Constructing tokenizers from the files models come with. All throw InputError naming the
// file (and the JSON path or metadata key) on malformed input.
#pragma once

#include <memory>
#include <string>

#include "models/formats/gguf.h"
#include "models/tokenizer/tokenizer.h"

namespace speclab {

// HF tokenizer.json with model.type == "BPE" and a ByteLevel pre-tokenizer (Llama 3, GPT-2,
// SmolLM2), including added/special tokens, ignore_merges and byte fallback.
std::unique_ptr<Tokenizer> tokenizer_load_hf_json(const std::string& tokenizer_json_path);
// SentencePiece tokenizer.model, through libsentencepiece.
std::unique_ptr<Tokenizer> tokenizer_load_sentencepiece(const std::string& model_path);
// The vocabulary in GGUF metadata: tokenizer.ggml.model "llama" (SentencePiece pieces + scores
// + token types) or "gpt2" (byte-level BPE with tokenizer.ggml.merges; tokenizer.ggml.pre picks
// the pre-tokenizer regex: "llama-bpe", "smollm", "gpt2", ...).
std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& gguf);
// Any of the above by path: a tokenizer.json, a tokenizer.model, a .gguf file, or an HF model
// directory (its tokenizer.json, else its tokenizer.model). The file kind is taken from the
// first bytes ("GGUF", "{"), else it is read as a SentencePiece model. Throws InputError.
std::unique_ptr<Tokenizer> tokenizer_load(const std::string& path);

}  // namespace speclab
