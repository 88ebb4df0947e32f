// SentencePiece-style tokenization from a plain vocabulary (GGUF tokenizer.ggml.model "llama":
// pieces + scores + token types), without libsentencepiece.
//
// encode: split out control/user-defined tokens; prefix each raw fragment that starts the
// text or follows a special token with a space ("add space prefix"); spaces become "▁";
// start from UTF-8 characters and repeatedly merge the adjacent pair whose concatenation is
// a vocabulary piece with the highest score (leftmost on ties); characters that are not
// pieces become byte tokens "<0xXX>" (byte fallback), or <unk> when there are none.
// This is SentencePiece's BPE model, as llama.cpp runs it on GGUF vocabularies.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "models/tokenizer/special_token_splitter.h"
#include "models/tokenizer/tokenizer.h"

namespace speclab {

// GGUF / llama.cpp token types.
enum class SpmTokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct SpmVocabulary {
  std::string source;               // file name, for error messages
  std::vector<std::string> pieces;  // [vocab_size] "▁the", "<0x0A>", "<s>"
  std::vector<float> scores;        // [vocab_size] merge priority: higher merges first
  std::vector<SpmTokenType> types;  // [vocab_size]
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  bool add_space_prefix = true;
  bool add_bos = true;  // whether encode(..., add_bos=true) prepends bos_id
};

class SpmVocabTokenizer : public Tokenizer {
 public:
  // Validates lengths and ids; throws InputError.
  explicit SpmVocabTokenizer(SpmVocabulary vocab);
  SpmVocabTokenizer(const SpmVocabTokenizer&) = delete;  // id_of_piece_ views vocab_
  SpmVocabTokenizer& operator=(const SpmVocabTokenizer&) = delete;

  std::vector<int32_t> encode(const std::string& text, bool add_bos,
                              bool parse_special = true) const override;
  // Byte tokens become their byte, "▁" a space; the space the encoder prefixed to the text is
  // removed again, so decode(encode(x)) == x.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const override;
  int64_t vocab_size() const override { return static_cast<int64_t>(vocab_.pieces.size()); }
  std::string piece(int32_t id) const override;
  bool is_special(int32_t id) const override;
  int32_t bos_id() const override { return vocab_.bos_id; }
  int32_t eos_id() const override { return vocab_.eos_id; }
  std::string kind() const override { return "spm-vocab"; }

 private:
  // One raw fragment, already prefixed and with spaces escaped, -> ids appended to `out`.
  void encode_fragment(const std::string& escaped, std::vector<int32_t>& out) const;
  // The merge loop on one chunk that no merge can cross (cached).
  void encode_chunk(std::string_view chunk, std::vector<int32_t>& out) const;
  int32_t id_of_piece(std::string_view piece) const;

  SpmVocabulary vocab_;
  // Keys view vocab_.pieces (never modified after construction): lookups of substrings of
  // the text then need no allocation, which dominates the merge loop otherwise.
  std::unordered_map<std::string_view, int32_t> id_of_piece_;
  std::vector<int32_t> byte_ids_;    // [256] id of "<0xXX>", -1 if absent
  std::vector<int16_t> byte_of_id_;  // [vocab_size] byte value of a byte token, -1 otherwise
  std::unique_ptr<SpecialTokenSplitter> splitter_;
  // True when no piece has "▁" after a character other than "▁" (checked at construction;
  // holds for Llama 2): then no merge crosses the start of a "▁" run, so the text can be
  // cut there into words that are merged independently and cached. Otherwise the merge
  // loop runs over the whole fragment, which is exact but several times slower.
  bool words_start_at_space_mark_ = false;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace speclab
