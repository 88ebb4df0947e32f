#include "models/tokenizer/bpe_tokenizer.h"

#include <cstdio>
#include <queue>

#include "core/error.h"
#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/utf8.h"

namespace speclab {

namespace {
// Bounds the pre-token cache so that a long-running process over varied text cannot grow
// without limit; clearing it only costs speed.
constexpr size_t kMaxCachedPieces = 1 << 18;

std::string byte_token_text(unsigned char byte) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "<0x%02X>", byte);
  return buf;
}
}  // namespace

BpeTokenizer::BpeTokenizer(BpeVocabulary vocab) : vocab_(std::move(vocab)) {
  const auto n_vocab = static_cast<int64_t>(vocab_.pieces.size());
  SPECLAB_INPUT_CHECK(n_vocab > 0, vocab_.source, ": ", vocab_.vocab_key,
                      ": empty vocabulary, expected at least the 256 byte pieces");
  SPECLAB_INPUT_CHECK(n_vocab < INT32_MAX, vocab_.source, ": ", vocab_.vocab_key, ": ", n_vocab,
                      " pieces, expected fewer than 2^31");
  id_of_piece_.reserve(vocab_.pieces.size());
  for (int32_t id = 0; id < n_vocab; ++id) {
    // First id wins for a repeated piece string (GGUF vocabularies may pad with copies).
    id_of_piece_.emplace(vocab_.pieces[id], id);
  }

  merges_.reserve(vocab_.merges.size());
  for (size_t rank = 0; rank < vocab_.merges.size(); ++rank) {
    const auto& [left, right] = vocab_.merges[rank];
    const int32_t left_id = id_of_piece(left);
    const int32_t right_id = id_of_piece(right);
    const int32_t merged_id = id_of_piece(left + right);
    SPECLAB_INPUT_CHECK(left_id >= 0 && right_id >= 0 && merged_id >= 0, vocab_.source, ": ",
                        vocab_.merges_key, "[", rank, "] '", left, " ", right, "': piece '",
                        left_id < 0    ? left
                        : right_id < 0 ? right
                                       : left + right,
                        "' is not in the vocabulary (", vocab_.vocab_key, ")");
    // A repeated pair keeps its first (best) rank, as HF does when building its map.
    merges_.emplace(pair_key(left_id, right_id), Merge{static_cast<int32_t>(rank), merged_id});
  }

  added_kind_.assign(vocab_.pieces.size(), 0);
  std::vector<SpecialTokenSplitter::Entry> entries;
  for (const auto& token : vocab_.added) {
    SPECLAB_INPUT_CHECK(token.id >= 0 && token.id < n_vocab, vocab_.source, ": added token '",
                        token.content, "' has id ", token.id, ", expected 0 <= id < ", n_vocab);
    added_kind_[token.id] = token.special ? 2 : 1;
    entries.push_back({token.content, token.id, token.special});
  }
  splitter_ = std::make_unique<SpecialTokenSplitter>(std::move(entries));

  for (int32_t special : {vocab_.bos_id, vocab_.eos_id, vocab_.unk_id}) {
    SPECLAB_INPUT_CHECK(special >= -1 && special < n_vocab, vocab_.source, ": special token id ",
                        special, " out of range, expected -1 (none) or < ", n_vocab);
  }

  byte_fallback_ids_.assign(256, -1);
  for (int b = 0; b < 256; ++b) {
    byte_fallback_ids_[b] = id_of_piece(byte_token_text(static_cast<unsigned char>(b)));
    if (byte_fallback_ids_[b] >= 0) byte_of_fallback_id_[byte_fallback_ids_[b]] = b;
    // Some real vocabularies (SmolLM2's) lack a few control bytes and have neither byte
    // fallback nor an unknown token: that is only an error for text that contains them
    // (checked in encode), as in HF tokenizers.
  }

  pretokenizer_ = std::make_unique<RegexPretokenizer>(vocab_.pretokenizer_patterns, vocab_.source,
                                                      "pre-tokenizer");
}

int32_t BpeTokenizer::id_of_piece(const std::string& piece) const {
  auto it = id_of_piece_.find(piece);
  return it == id_of_piece_.end() ? -1 : it->second;
}

std::string BpeTokenizer::piece(int32_t id) const {
  SPECLAB_INPUT_CHECK(id >= 0 && id < vocab_size(), vocab_.source, ": token id ", id,
                      " out of range [0, ", vocab_size(), ")");
  return vocab_.pieces[id];
}

bool BpeTokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size() && added_kind_[id] == 2;
}

std::vector<int32_t> BpeTokenizer::encode(const std::string& text, bool add_bos,
                                          bool parse_special) const {
  std::vector<int32_t> ids;
  if (add_bos && vocab_.add_bos && vocab_.bos_id >= 0) ids.push_back(vocab_.bos_id);
  for (const TextFragment& fragment : splitter_->split(text, parse_special)) {
    if (fragment.token_id >= 0) {
      ids.push_back(fragment.token_id);
      continue;
    }
    for (std::string_view piece : pretokenizer_->split(fragment.text)) {
      encode_piece(std::string(piece), ids);
    }
  }
  return ids;
}

void BpeTokenizer::encode_piece(const std::string& piece_bytes, std::vector<int32_t>& out) const {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(piece_bytes);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const auto& alphabet = ByteLevelAlphabet::instance();
  std::vector<int32_t> symbols;
  const int32_t whole_id = vocab_.ignore_merges ? id_of_piece(alphabet.encode(piece_bytes)) : -1;
  if (whole_id >= 0) {
    symbols.push_back(whole_id);
  } else {
    symbols.reserve(piece_bytes.size());
    for (unsigned char b : piece_bytes) {
      int32_t id = id_of_piece(alphabet.char_of(b));
      if (id < 0 && vocab_.byte_fallback) id = byte_fallback_ids_[b];
      if (id < 0) id = vocab_.unk_id;
      SPECLAB_INPUT_CHECK(
          id >= 0, vocab_.source, ": text contains byte 0x", std::hex, static_cast<int>(b),
          std::dec,
          " which the vocabulary cannot represent (no piece, byte fallback or unknown token)");
      symbols.push_back(id);
    }
    merge_symbols(symbols);
  }
  out.insert(out.end(), symbols.begin(), symbols.end());
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_.size() >= kMaxCachedPieces) cache_.clear();
  cache_.emplace(piece_bytes, std::move(symbols));
}

// Applies merges to a symbol sequence in place: repeatedly the adjacent pair with the lowest
// rank (the leftmost among equal ranks) becomes its merged token. A priority queue of
// candidate pairs with lazy invalidation keeps this O(n log n) for long pieces.
void BpeTokenizer::merge_symbols(std::vector<int32_t>& symbols) const {
  const int n = static_cast<int>(symbols.size());
  if (n < 2) return;
  std::vector<int> prev(n), next(n);  // [n] linked list over live symbols, -1 at the ends
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    int32_t rank;
    int left;  // position of the left symbol
    int32_t left_id, right_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto push_pair = [&](int left) {
    if (left < 0 || next[left] < 0) return;
    auto it = merges_.find(pair_key(symbols[left], symbols[next[left]]));
    if (it != merges_.end()) {
      queue.push({it->second.rank, left, symbols[left], symbols[next[left]]});
    }
  };
  for (int i = 0; i + 1 < n; ++i) push_pair(i);
  std::vector<bool> alive(n, true);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    const int right = next[c.left];
    // Stale entries: a side was merged away or changed since the pair was queued.
    if (!alive[c.left] || right < 0 || symbols[c.left] != c.left_id ||
        symbols[right] != c.right_id) {
      continue;
    }
    symbols[c.left] = merges_.at(pair_key(c.left_id, c.right_id)).merged_id;
    alive[right] = false;
    next[c.left] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.left;
    push_pair(prev[c.left]);
    push_pair(c.left);
  }
  std::vector<int32_t> merged;
  for (int i = 0; i >= 0; i = next[i]) merged.push_back(symbols[i]);
  symbols.swap(merged);
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  const auto& alphabet = ByteLevelAlphabet::instance();
  std::string text;
  for (int32_t id : ids) {
    SPECLAB_INPUT_CHECK(id >= 0 && id < vocab_size(), vocab_.source, ": cannot decode token id ",
                        id, ", expected 0 <= id < ", vocab_size());
    if (added_kind_[id] != 0) {
      // Added tokens are stored verbatim, not in the byte-level alphabet.
      if (added_kind_[id] == 2 && skip_special) continue;
      text += vocab_.pieces[id];
      continue;
    }
    if (vocab_.byte_fallback) {
      auto it = byte_of_fallback_id_.find(id);
      if (it != byte_of_fallback_id_.end()) {
        text += static_cast<char>(it->second);
        continue;
      }
    }
    text += alphabet.decode(vocab_.pieces[id]);
  }
  return text;
}

}  // namespace speclab
