#include "models/tokenizer/spm_vocab_tokenizer.h"

#include <cctype>
#include <cstdio>
#include <queue>

#include "core/error.h"
#include "models/tokenizer/utf8.h"

namespace speclab {

namespace {
const std::string kSpaceMark = "\xE2\x96\x81";  // "▁" U+2581, SentencePiece's space
// Bounds the chunk cache (see BpeTokenizer): clearing it only costs speed.
constexpr size_t kMaxCachedChunks = 1 << 18;

std::string escape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
    if (c == ' ') {
      out += kSpaceMark;
    } else {
      out += c;
    }
  }
  return out;
}

std::string unescape_spaces(const std::string& piece) {
  std::string out;
  out.reserve(piece.size());
  for (size_t pos = 0; pos < piece.size();) {
    if (piece.compare(pos, kSpaceMark.size(), kSpaceMark) == 0) {
      out += ' ';
      pos += kSpaceMark.size();
    } else {
      out += piece[pos++];
    }
  }
  return out;
}
}  // namespace

SpmVocabTokenizer::SpmVocabTokenizer(SpmVocabulary vocab) : vocab_(std::move(vocab)) {
  const auto n_vocab = static_cast<int64_t>(vocab_.pieces.size());
  SPECLAB_INPUT_CHECK(n_vocab > 0 && n_vocab < INT32_MAX, vocab_.source, ": vocabulary has ",
                      n_vocab, " pieces, expected 1 .. 2^31-1");
  SPECLAB_INPUT_CHECK(vocab_.scores.size() == vocab_.pieces.size(), vocab_.source, ": ",
                      vocab_.scores.size(), " scores for ", n_vocab,
                      " pieces, expected one score per piece");
  SPECLAB_INPUT_CHECK(vocab_.types.size() == vocab_.pieces.size(), vocab_.source, ": ",
                      vocab_.types.size(), " token types for ", n_vocab,
                      " pieces, expected one type per piece");
  for (int32_t special : {vocab_.bos_id, vocab_.eos_id, vocab_.unk_id}) {
    SPECLAB_INPUT_CHECK(special >= -1 && special < n_vocab, vocab_.source, ": special token id ",
                        special, " out of range, expected -1 (none) or < ", n_vocab);
  }

  id_of_piece_.reserve(vocab_.pieces.size());
  byte_ids_.assign(256, -1);
  byte_of_id_.assign(vocab_.pieces.size(), -1);
  std::vector<SpecialTokenSplitter::Entry> entries;
  for (int32_t id = 0; id < n_vocab; ++id) {
    const std::string& p = vocab_.pieces[id];
    const auto type = vocab_.types[id];
    if (type == SpmTokenType::kByte) {
      unsigned int byte = 0;
      char tail = 0;
      SPECLAB_INPUT_CHECK(
          // %2X also takes a sign ("<0x-1>" reads 0xffffffff): hex digits only, found by
          // fuzzing (an out-of-bounds write into byte_ids_).
          p.size() == 6 && std::isxdigit(static_cast<unsigned char>(p[3])) &&
              std::isxdigit(static_cast<unsigned char>(p[4])) &&
              std::sscanf(p.c_str(), "<0x%2X%c", &byte, &tail) == 2 && tail == '>' && byte < 256,
          vocab_.source, ": token ", id, " '", p,
          "' has type BYTE, expected a piece of the form <0xXX>");
      byte_ids_[byte] = id;
      byte_of_id_[id] = static_cast<int16_t>(byte);
      continue;  // byte tokens never take part in merges
    }
    if (type == SpmTokenType::kControl || type == SpmTokenType::kUserDefined) {
      entries.push_back({p, id, type == SpmTokenType::kControl});
    }
    // A repeated piece keeps its first id, as SentencePiece does.
    if (type != SpmTokenType::kControl && type != SpmTokenType::kUnused) {
      id_of_piece_.emplace(p, id);
    }
  }
  splitter_ = std::make_unique<SpecialTokenSplitter>(std::move(entries));

  words_start_at_space_mark_ = true;
  for (int32_t id = 0; id < n_vocab && words_start_at_space_mark_; ++id) {
    const std::string& p = vocab_.pieces[id];
    for (size_t pos = p.find(kSpaceMark, 1); pos != std::string::npos;
         pos = p.find(kSpaceMark, pos + 1)) {
      if (pos < kSpaceMark.size() ||
          p.compare(pos - kSpaceMark.size(), kSpaceMark.size(), kSpaceMark) != 0) {
        words_start_at_space_mark_ = false;
        break;
      }
    }
  }
}

int32_t SpmVocabTokenizer::id_of_piece(std::string_view piece) const {
  auto it = id_of_piece_.find(piece);
  return it == id_of_piece_.end() ? -1 : it->second;
}

std::string SpmVocabTokenizer::piece(int32_t id) const {
  SPECLAB_INPUT_CHECK(id >= 0 && id < vocab_size(), vocab_.source, ": token id ", id,
                      " out of range [0, ", vocab_size(), ")");
  return vocab_.pieces[id];
}

bool SpmVocabTokenizer::is_special(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return false;
  return vocab_.types[id] == SpmTokenType::kControl || vocab_.types[id] == SpmTokenType::kUnknown;
}

std::vector<int32_t> SpmVocabTokenizer::encode(const std::string& text, bool add_bos,
                                               bool parse_special) const {
  std::vector<int32_t> ids;
  if (add_bos && vocab_.add_bos && vocab_.bos_id >= 0) ids.push_back(vocab_.bos_id);
  bool after_special = true;  // the text's start counts as following a special token
  for (const TextFragment& fragment : splitter_->split(text, parse_special)) {
    if (fragment.token_id >= 0) {
      ids.push_back(fragment.token_id);
      after_special = true;
      continue;
    }
    std::string raw = (vocab_.add_space_prefix && after_special) ? " " : "";
    raw += fragment.text;
    encode_fragment(escape_spaces(raw), ids);
    after_special = false;
  }
  return ids;
}

void SpmVocabTokenizer::encode_fragment(const std::string& text, std::vector<int32_t>& out) const {
  if (!words_start_at_space_mark_) {
    encode_chunk(text, out);
    return;
  }
  // Cut before every "▁" that follows another character than "▁".
  size_t chunk_start = 0;
  for (size_t pos = text.find(kSpaceMark, 1); pos != std::string::npos;
       pos = text.find(kSpaceMark, pos + kSpaceMark.size())) {
    if (pos >= kSpaceMark.size() &&
        text.compare(pos - kSpaceMark.size(), kSpaceMark.size(), kSpaceMark) == 0) {
      continue;
    }
    encode_chunk(std::string_view(text).substr(chunk_start, pos - chunk_start), out);
    chunk_start = pos;
  }
  encode_chunk(std::string_view(text).substr(chunk_start), out);
}

// Merge loop over a doubly linked list of symbols (byte ranges of `text`). Candidate pairs
// sit in a max-heap by (score, -left position); an entry is stale when either side changed
// length since it was queued.
void SpmVocabTokenizer::encode_chunk(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  const std::string key(text);
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t out_start = out.size();
  struct Symbol {
    int prev, next;
    size_t begin, size;  // byte range in text; size 0 once merged into its left neighbour
  };
  std::vector<Symbol> symbols;
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = utf8_sequence_length(text, pos);
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({index - 1, -1, pos, len});
    if (index > 0) symbols[index - 1].next = index;
    pos += len;
  }
  if (symbols.empty()) return;

  struct Candidate {
    float score;
    int left, right;
    size_t size;  // total bytes of the pair when queued
    bool operator<(const Candidate& o) const {
      return score != o.score ? score < o.score : left > o.left;
    }
  };
  std::priority_queue<Candidate> queue;
  auto push_pair = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const size_t size = symbols[left].size + symbols[right].size;
    const int32_t id = id_of_piece(text.substr(symbols[left].begin, size));
    if (id >= 0) queue.push({vocab_.scores[id], left, right, size});
  };
  for (size_t i = 1; i < symbols.size(); ++i)
    push_pair(static_cast<int>(i) - 1, static_cast<int>(i));

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[c.left];
    Symbol& right = symbols[c.right];
    if (left.size == 0 || right.size == 0 || left.size + right.size != c.size) continue;
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.left;
    push_pair(left.prev, c.left);
    push_pair(c.left, left.next);
  }

  for (int i = 0; i >= 0; i = symbols[i].next) {
    const std::string_view piece = text.substr(symbols[i].begin, symbols[i].size);
    const int32_t id = id_of_piece(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    // Only unmerged single characters can miss the vocabulary: spell them in bytes.
    for (unsigned char b : piece) {
      const int32_t byte_id = byte_ids_[b];
      if (byte_id >= 0) {
        out.push_back(byte_id);
      } else if (vocab_.unk_id >= 0) {
        out.push_back(vocab_.unk_id);
        break;  // one <unk> per character, as SentencePiece emits
      }
    }
  }
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_.size() >= kMaxCachedChunks) cache_.clear();
  cache_.emplace(key, std::vector<int32_t>(out.begin() + out_start, out.end()));
}

std::string SpmVocabTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string text;
  bool fragment_start = true;  // where encode() inserted a space prefix
  for (int32_t id : ids) {
    SPECLAB_INPUT_CHECK(id >= 0 && id < vocab_size(), vocab_.source, ": cannot decode token id ",
                        id, ", expected 0 <= id < ", vocab_size());
    const auto type = vocab_.types[id];
    if (type == SpmTokenType::kControl || type == SpmTokenType::kUserDefined) {
      if (!(skip_special && type == SpmTokenType::kControl)) text += vocab_.pieces[id];
      fragment_start = true;
      continue;
    }
    if (type == SpmTokenType::kUnknown && skip_special) continue;
    std::string rendered = byte_of_id_[id] >= 0 ? std::string(1, static_cast<char>(byte_of_id_[id]))
                                                : unescape_spaces(vocab_.pieces[id]);
    if (fragment_start && vocab_.add_space_prefix && !rendered.empty() && rendered[0] == ' ') {
      rendered.erase(0, 1);
    }
    fragment_start = false;
    text += rendered;
  }
  return text;
}

}  // namespace speclab
