// Byte-level BPE (GPT-2 / Llama 3 / SmolLM2), built from plain vectors so that the
// tokenizer.json and GGUF loaders share one engine.
//
// encode: split out added tokens -> regex pre-tokenize -> per piece: bytes to the byte-level
// alphabet, then apply merges lowest rank first (leftmost on ties) until none applies.
// With ignore_merges (Llama 3) a piece that is itself a vocabulary entry is emitted whole.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "models/tokenizer/regex_pretokenizer.h"
#include "models/tokenizer/special_token_splitter.h"
#include "models/tokenizer/tokenizer.h"

namespace speclab {

struct BpeAddedToken {
  int32_t id = -1;
  std::string content;  // the literal text, e.g. "<|eot_id|>"
  bool special = false;
};

// Everything a byte-level BPE tokenizer is made of, plus where it came from for messages.
struct BpeVocabulary {
  std::string source;               // file name, for error messages
  std::string vocab_key;            // e.g. "model.vocab" or "tokenizer.ggml.tokens"
  std::string merges_key;           // e.g. "model.merges" or "tokenizer.ggml.merges"
  std::vector<std::string> pieces;  // [vocab_size] id -> stored (byte-level) string
  std::vector<std::pair<std::string, std::string>> merges;  // [n_merges] in rank order
  std::vector<BpeAddedToken> added;                // ids < vocab_size; content may equal pieces[id]
  std::vector<std::string> pretokenizer_patterns;  // applied in order
  bool ignore_merges = false;
  bool byte_fallback = false;  // bytes missing from the vocabulary become "<0xXX>" tokens
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  // Whether encode(..., add_bos=true) prepends bos_id: the post-processor's template in
  // tokenizer.json, tokenizer.ggml.add_bos_token in GGUF (SmolLM2 has a BOS id but adds none).
  bool add_bos = true;
};

class BpeTokenizer : public Tokenizer {
 public:
  // Validates the vocabulary (merges name known pieces, ids in range); throws InputError.
  explicit BpeTokenizer(BpeVocabulary vocab);

  std::vector<int32_t> encode(const std::string& text, bool add_bos,
                              bool parse_special = true) const override;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const override;
  int64_t vocab_size() const override { return static_cast<int64_t>(vocab_.pieces.size()); }
  std::string piece(int32_t id) const override;
  bool is_special(int32_t id) const override;
  int32_t bos_id() const override { return vocab_.bos_id; }
  int32_t eos_id() const override { return vocab_.eos_id; }
  std::string kind() const override { return "bpe"; }

  // -1 when the string is not a vocabulary piece.
  int32_t id_of_piece(const std::string& piece) const;
  const std::vector<std::string>& pretokenizer_patterns() const {
    return vocab_.pretokenizer_patterns;
  }

 private:
  struct Merge {
    int32_t rank;
    int32_t merged_id;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  // One pre-tokenized piece (raw bytes) -> ids, appended to `out`.
  void encode_piece(const std::string& piece_bytes, std::vector<int32_t>& out) const;
  void merge_symbols(std::vector<int32_t>& symbols) const;

  BpeVocabulary vocab_;
  std::unordered_map<std::string, int32_t> id_of_piece_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> rank, result
  std::vector<int8_t> added_kind_;              // [vocab_size] 0 none, 1 added, 2 special
  std::vector<int32_t> byte_fallback_ids_;      // [256] id of "<0xXX>", -1 if absent
  std::unordered_map<int32_t, unsigned char> byte_of_fallback_id_;  // inverse of the above
  std::unique_ptr<RegexPretokenizer> pretokenizer_;
  std::unique_ptr<SpecialTokenSplitter> splitter_;

  // Pre-token results repeat a lot in natural text ("Ġthe"); caching them makes long
  // inputs several times faster. Guarded because encode() is const and may be shared.
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace speclab
