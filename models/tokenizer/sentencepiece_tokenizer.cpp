// tokenizer_load_sentencepiece: a SentencePiece tokenizer.model run by libsentencepiece.
// libsentencepiece never turns text into control ids ("</s>" in text stays text), so
// with parse_special the control pieces are split out first, as llama.cpp does.
#include <sentencepiece_processor.h>

#include <filesystem>
#include <memory>

#include "core/error.h"
#include "core/input_file.h"
#include "models/tokenizer/special_token_splitter.h"
#include "models/tokenizer/tokenizer_factory.h"

namespace speclab {

namespace {

// Llama 2's tokenizer.model has 500 KB, Gemma's 4 MB; 256 MB is not a tokenizer.
constexpr uint64_t kMaxTokenizerModelBytes = 256ull << 20;

class SentencePieceTokenizer : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(const std::string& path) : path_(path) {
    const std::string bytes =
        input_file_read(path, "SentencePiece tokenizer.model", kMaxTokenizerModelBytes);
    sentencepiece::util::Status status;
    try {
      status = processor_.LoadFromSerializedProto(bytes);
    } catch (const std::exception& e) {
      // libsentencepiece's trie builder throws on some malformed models (an empty piece:
      // "darts.h: failed to insert key: zero-length key"), found by fuzzing.
      fail_input(path, ": not a usable SentencePiece model (", e.what(), ")");
    }
    SPECLAB_INPUT_CHECK(status.ok(), path, ": not a SentencePiece model protobuf (",
                        status.ToString(), ")");
    std::vector<SpecialTokenSplitter::Entry> entries;
    for (int id = 0; id < processor_.GetPieceSize(); ++id) {
      if (processor_.IsControl(id)) entries.push_back({processor_.IdToPiece(id), id, true});
    }
    splitter_ = std::make_unique<SpecialTokenSplitter>(std::move(entries));
  }

  std::vector<int32_t> encode(const std::string& text, bool add_bos,
                              bool parse_special) const override {
    std::vector<int32_t> ids;
    if (add_bos && bos_id() >= 0) ids.push_back(bos_id());
    for (const TextFragment& fragment : splitter_->split(text, parse_special)) {
      if (fragment.token_id >= 0) {
        ids.push_back(fragment.token_id);
        continue;
      }
      std::vector<int> piece_ids;
      const auto status = processor_.Encode(
          absl::string_view(fragment.text.data(), fragment.text.size()), &piece_ids);
      SPECLAB_INPUT_CHECK(status.ok(), path_, ": sentencepiece could not encode text (",
                          status.ToString(), ")");
      ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
    }
    return ids;
  }

  std::string decode(const std::vector<int32_t>& ids, bool skip_special) const override {
    // Runs of ordinary ids go through libsentencepiece (which drops control ids); control
    // ids are rendered by their piece here when asked for.
    std::string text;
    std::vector<int> run;
    auto flush = [&] {
      if (run.empty()) return;
      std::string decoded;
      const auto status = processor_.Decode(run, &decoded);
      SPECLAB_INPUT_CHECK(status.ok(), path_, ": sentencepiece could not decode (",
                          status.ToString(), ")");
      text += decoded;
      run.clear();
    };
    for (int32_t id : ids) {
      SPECLAB_INPUT_CHECK(id >= 0 && id < vocab_size(), path_, ": cannot decode token id ", id,
                          ", expected 0 <= id < ", vocab_size());
      if (processor_.IsControl(id)) {
        flush();
        if (!skip_special) text += processor_.IdToPiece(id);
      } else {
        run.push_back(id);
      }
    }
    flush();
    return text;
  }

  int64_t vocab_size() const override { return processor_.GetPieceSize(); }
  std::string piece(int32_t id) const override {
    SPECLAB_INPUT_CHECK(id >= 0 && id < vocab_size(), path_, ": token id ", id,
                        " out of range [0, ", vocab_size(), ")");
    return processor_.IdToPiece(id);
  }
  bool is_special(int32_t id) const override {
    return id >= 0 && id < vocab_size() && (processor_.IsControl(id) || processor_.IsUnknown(id));
  }
  int32_t bos_id() const override { return processor_.bos_id(); }
  int32_t eos_id() const override { return processor_.eos_id(); }
  std::string kind() const override { return "sentencepiece"; }

 private:
  std::string path_;
  sentencepiece::SentencePieceProcessor processor_;
  std::unique_ptr<SpecialTokenSplitter> splitter_;
};

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_load_sentencepiece(const std::string& model_path) {
  return std::make_unique<SentencePieceTokenizer>(model_path);
}

}  // namespace speclab
