// The tokenizer interface every model carries.
//
// Implementations (one per file):
//   sentencepiece_tokenizer  tokenizer.model through libsentencepiece
//   bpe_tokenizer            HF tokenizer.json byte-level BPE (Llama 3, GPT-2 / SmolLM2 style)
//                            and GGUF "gpt2" vocabularies
//   spm_vocab_tokenizer      GGUF "llama" (SentencePiece) vocabularies
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace speclab {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Text -> ids. add_bos prepends the BOS id when the tokenizer has one.
  // Special tokens written in the text (e.g. "<|eot_id|>") are recognised as single ids
  // when parse_special is true.
  virtual std::vector<int32_t> encode(const std::string& text, bool add_bos,
                                      bool parse_special = true) const = 0;
  // Ids -> text. Special/control tokens are rendered by their text when skip_special is false.
  virtual std::string decode(const std::vector<int32_t>& ids, bool skip_special = false) const = 0;

  virtual int64_t vocab_size() const = 0;
  // The stored string of one id ("Ġthe", "▁the", "<|eot_id|>").
  virtual std::string piece(int32_t id) const = 0;
  virtual bool is_special(int32_t id) const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when none
  virtual int32_t eos_id() const = 0;  // -1 when none
  virtual std::string kind() const = 0;  // "sentencepiece", "bpe", "spm-vocab"
};

}  // namespace speclab
