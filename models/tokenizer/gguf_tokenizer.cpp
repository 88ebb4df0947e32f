// tokenizer_from_gguf: the vocabulary stored in GGUF metadata (tokenizer.ggml.*), as
// llama.cpp writes it, into a BpeTokenizer ("gpt2") or SpmVocabTokenizer ("llama").
#include <algorithm>

#include "core/error.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "models/tokenizer/regex_pretokenizer.h"
#include "models/tokenizer/spm_vocab_tokenizer.h"
#include "models/tokenizer/tokenizer_factory.h"

namespace speclab {

namespace {

constexpr const char* kTokensKey = "tokenizer.ggml.tokens";

void check_same_length(const GgufFile& gguf, const char* key, size_t n, size_t n_tokens) {
  SPECLAB_INPUT_CHECK(n == n_tokens, gguf.path(), ": metadata key '", key, "' has ", n,
                      " entries, expected ", n_tokens, " (one per ", kTokensKey, ")");
}

int32_t optional_token_id(const GgufFile& gguf, const char* key, int64_t def, size_t n_tokens) {
  const int64_t id = gguf.get_int_or(key, def);
  // llama.cpp writes -1 (as u32 0xFFFFFFFF in some converters) for "none".
  if (id == -1 || id == 0xFFFFFFFFll) return -1;
  SPECLAB_INPUT_CHECK(id >= 0 && id < static_cast<int64_t>(n_tokens), gguf.path(),
                      ": metadata key '", key, "' is ", id, ", expected a token id below ",
                      n_tokens);
  return static_cast<int32_t>(id);
}

bool optional_bool(const GgufFile& gguf, const char* key, bool def) {
  return gguf.has(key) ? gguf.get_bool(key) : def;
}

std::vector<SpmTokenType> read_token_types(const GgufFile& gguf, size_t n_tokens) {
  const char* key = "tokenizer.ggml.token_type";
  if (!gguf.has(key)) return std::vector<SpmTokenType>(n_tokens, SpmTokenType::kNormal);
  const std::vector<int64_t> raw = gguf.get_int_array(key);
  check_same_length(gguf, key, raw.size(), n_tokens);
  std::vector<SpmTokenType> types(n_tokens);
  for (size_t i = 0; i < n_tokens; ++i) {
    SPECLAB_INPUT_CHECK(raw[i] >= 0 && raw[i] <= 6, gguf.path(), ": metadata key '", key, "'[", i,
                        "] is ", raw[i], ", expected a token type 0..6");
    types[i] = static_cast<SpmTokenType>(raw[i]);
  }
  return types;
}

// tokenizer.ggml.pre -> the regexes llama.cpp applies for that pre-tokenizer name.
// Also sets ignore_merges for the Llama 3 family.
void set_pretokenizer(const GgufFile& gguf, BpeVocabulary& vocab) {
  const char* key = "tokenizer.ggml.pre";
  const std::string pre = gguf.has(key) ? gguf.get_string(key) : "default";
  if (pre == "llama-bpe" || pre == "llama3") {
    vocab.pretokenizer_patterns = {kLlama3PretokenizerPattern};
    vocab.ignore_merges = true;
  } else if (pre == "default" || pre == "gpt2" || pre == "gpt-2") {
    vocab.pretokenizer_patterns = {kGpt2PretokenizerPattern};
  } else if (pre == "smollm" || pre == "starcoder" || pre == "refact" || pre == "codeshell" ||
             pre == "command-r") {
    // Digits one by one, then GPT-2's pattern (the HF tokenizers put a Digits step first).
    vocab.pretokenizer_patterns = {kSingleDigitPattern, kGpt2PretokenizerPattern};
  } else {
    fail_input(gguf.path(), ": metadata key '", key, "' is '", pre,
               "', expected one of llama-bpe, llama3, default, gpt2, smollm, starcoder, refact, "
               "codeshell, command-r");
  }
}

std::unique_ptr<Tokenizer> bpe_from_gguf(const GgufFile& gguf, std::vector<std::string> tokens) {
  const size_t n_tokens = tokens.size();
  BpeVocabulary vocab;
  vocab.source = gguf.path();
  vocab.vocab_key = kTokensKey;
  vocab.merges_key = "tokenizer.ggml.merges";
  const std::vector<SpmTokenType> types = read_token_types(gguf, n_tokens);
  for (size_t id = 0; id < n_tokens; ++id) {
    // Control tokens are special; user-defined ones are split out of text but are not.
    if (types[id] == SpmTokenType::kControl || types[id] == SpmTokenType::kUserDefined) {
      vocab.added.push_back(
          {static_cast<int32_t>(id), tokens[id], types[id] == SpmTokenType::kControl});
    }
  }
  const std::vector<std::string> merges = gguf.get_string_array(vocab.merges_key);
  vocab.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& m = merges[i];
    const size_t space = m.find(' ', 1);  // a piece may itself start with a space in theory
    SPECLAB_INPUT_CHECK(space != std::string::npos, gguf.path(), ": metadata key '",
                        vocab.merges_key, "'[", i, "] is '", m,
                        "', expected two pieces separated by a space");
    vocab.merges.emplace_back(m.substr(0, space), m.substr(space + 1));
  }
  vocab.pieces = std::move(tokens);
  set_pretokenizer(gguf, vocab);
  vocab.bos_id = optional_token_id(gguf, "tokenizer.ggml.bos_token_id", -1, n_tokens);
  vocab.eos_id = optional_token_id(gguf, "tokenizer.ggml.eos_token_id", -1, n_tokens);
  vocab.unk_id = optional_token_id(gguf, "tokenizer.ggml.unknown_token_id", -1, n_tokens);
  vocab.add_bos = optional_bool(gguf, "tokenizer.ggml.add_bos_token", false);
  return std::make_unique<BpeTokenizer>(std::move(vocab));
}

std::unique_ptr<Tokenizer> spm_from_gguf(const GgufFile& gguf, std::vector<std::string> tokens) {
  const size_t n_tokens = tokens.size();
  SpmVocabulary vocab;
  vocab.source = gguf.path();
  const char* scores_key = "tokenizer.ggml.scores";
  const std::vector<double> scores = gguf.get_float_array(scores_key);
  check_same_length(gguf, scores_key, scores.size(), n_tokens);
  vocab.scores.assign(scores.begin(), scores.end());
  vocab.types = read_token_types(gguf, n_tokens);
  vocab.pieces = std::move(tokens);
  // SentencePiece's fixed ids are llama.cpp's defaults when the keys are absent.
  vocab.bos_id = optional_token_id(gguf, "tokenizer.ggml.bos_token_id", 1, n_tokens);
  vocab.eos_id = optional_token_id(gguf, "tokenizer.ggml.eos_token_id", 2, n_tokens);
  vocab.unk_id = optional_token_id(gguf, "tokenizer.ggml.unknown_token_id", 0, n_tokens);
  vocab.add_space_prefix = optional_bool(gguf, "tokenizer.ggml.add_space_prefix", true);
  vocab.add_bos = optional_bool(gguf, "tokenizer.ggml.add_bos_token", true);
  return std::make_unique<SpmVocabTokenizer>(std::move(vocab));
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& gguf) {
  const std::string model = gguf.get_string("tokenizer.ggml.model");
  std::vector<std::string> tokens = gguf.get_string_array(kTokensKey);
  SPECLAB_INPUT_CHECK(!tokens.empty(), gguf.path(), ": metadata key '", kTokensKey,
                      "' is empty, expected the vocabulary");
  if (model == "gpt2") return bpe_from_gguf(gguf, std::move(tokens));
  if (model == "llama") return spm_from_gguf(gguf, std::move(tokens));
  fail_input(gguf.path(), ": metadata key 'tokenizer.ggml.model' is '", model,
             "', expected 'llama' (SentencePiece) or 'gpt2' (byte-level BPE)");
}

}  // namespace speclab
