// Tokenizers read from GGUF metadata: the Llama 2 SentencePiece vocabulary (llama.cpp's
// vectors), the SmolLM2 GPT-2-style BPE (vectors made by transformers), and bad metadata.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "models/formats/gguf.h"
#include "models/tokenizer/spm_vocab_tokenizer.h"
#include "models/tokenizer/tokenizer_factory.h"
#include "tests/formats/expect_input_error.h"
#include "tests/formats/file_writers.h"
#include "tests/tokenizer/tokenizer_test_util.h"

namespace speclab {
namespace {

using testing::external_data;

const std::string kSpmGguf = "llama2-spm-vocab/ggml-vocab-llama-spm.gguf";

std::string smollm2_path() {
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/root") + "/.cache/speclab/SmolLM2-135M-Instruct.Q4_1.gguf";
}

// Encodes Moby-Dick whole and the shipped SOTU addresses (every tenth, tests/data/corpus); each
// must decode to itself.
void expect_corpus_round_trip(const Tokenizer& tokenizer, const char* label) {
  std::string moby;
  for (const auto& f : testing::corpus_files("moby-dick")) {
    const std::string chapter = testing::read_file_bytes(f);
    moby += chapter;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto ids = tokenizer.encode(moby, false);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[%s speed] Moby-Dick %zu bytes -> %zu tokens in %.3f s (%.2f MB/s)\n", label,
              moby.size(), ids.size(), seconds, moby.size() / seconds / 1e6);
  EXPECT_LT(seconds, 5.0);
  EXPECT_EQ(tokenizer.decode(ids), moby);
  const auto sotu = testing::corpus_files("sotu");
  ASSERT_FALSE(sotu.empty());
  for (size_t i = 0; i < sotu.size(); ++i) {
    const std::string text = testing::read_file_bytes(sotu[i]);
    EXPECT_EQ(tokenizer.decode(tokenizer.encode(text, false)), text) << sotu[i];
  }
}

class SpmGgufTokenizer : public ::testing::Test {
 protected:
  void SetUp() override {
    if (external_data(kSpmGguf).empty())
      GTEST_SKIP() << testing::external_data_skip_reason(kSpmGguf);
    gguf_ = GgufFile::open(external_data(kSpmGguf));
    tokenizer_ = tokenizer_from_gguf(*gguf_);
  }
  std::unique_ptr<GgufFile> gguf_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(SpmGgufTokenizer, MatchesLlamaCppVectors) {
  const auto vectors = testing::read_vocab_vectors(external_data(kSpmGguf + ".inp"),
                                                   external_data(kSpmGguf + ".out"));
  ASSERT_EQ(vectors.size(), 46u);
  int n_match = 0;
  for (const auto& v : vectors) {
    const auto ids = tokenizer_->encode(v.text, /*add_bos=*/false);
    EXPECT_EQ(testing::ids_to_string(ids), testing::ids_to_string(v.ids))
        << "text: '" << v.text << "'";
    n_match += ids == v.ids;
    // SPM decode removes the space prefix the encoder added, so every vector round-trips.
    EXPECT_EQ(tokenizer_->decode(ids), v.text);
  }
  std::printf("[llama2 spm vectors] %d / %zu match\n", n_match, vectors.size());
}

TEST_F(SpmGgufTokenizer, SpecialIdsBosAndBytes) {
  EXPECT_EQ(tokenizer_->kind(), "spm-vocab");
  EXPECT_EQ(tokenizer_->vocab_size(), 32000);
  EXPECT_EQ(tokenizer_->bos_id(), 1);
  EXPECT_EQ(tokenizer_->eos_id(), 2);
  EXPECT_TRUE(tokenizer_->is_special(1));
  EXPECT_FALSE(tokenizer_->is_special(15043));
  EXPECT_EQ(tokenizer_->piece(15043), "\xE2\x96\x81Hello");
  EXPECT_EQ(tokenizer_->encode("Hello world", true), (std::vector<int32_t>{1, 15043, 3186}));
  // "</s>" in text is one control token when parse_special is set, plain text otherwise.
  EXPECT_EQ(tokenizer_->encode("Hi</s>", false), (std::vector<int32_t>{6324, 2}));
  EXPECT_GT(tokenizer_->encode("Hi</s>", false, false).size(), 2u);
  EXPECT_EQ(tokenizer_->decode({1, 15043, 3186, 2}, /*skip_special=*/true), "Hello world");
  // A character missing from the vocabulary is spelled in byte tokens <0xXX> (id = byte + 3).
  const auto ids = tokenizer_->encode("\xF0\x9F\xA6\x99", false);  // 🦙
  EXPECT_EQ(ids, (std::vector<int32_t>{29871, 0xF0 + 3, 0x9F + 3, 0xA6 + 3, 0x99 + 3}));
  EXPECT_EQ(tokenizer_->decode(ids), "\xF0\x9F\xA6\x99");
}

TEST_F(SpmGgufTokenizer, RoundTripsCorpus) { expect_corpus_round_trip(*tokenizer_, "llama2 spm"); }

class SmolLM2GgufTokenizer : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(smollm2_path())) {
      GTEST_SKIP() << "SmolLM2 GGUF absent (fetched by .ci/install): " << smollm2_path();
    }
    gguf_ = GgufFile::open(smollm2_path());
    tokenizer_ = tokenizer_from_gguf(*gguf_);
  }
  std::unique_ptr<GgufFile> gguf_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(SmolLM2GgufTokenizer, MatchesTransformersVectors) {
  const std::string path =
      std::string(SPECLAB_SOURCE_DIR) + "/tests/data/smollm2_tokenizer_vectors.jsonl";
  std::istringstream lines(testing::read_file_bytes(path));
  int n = 0, n_match = 0, n_converter_differs = 0;
  for (std::string line; std::getline(lines, line);) {
    const auto row = nlohmann::json::parse(line);
    const std::string text = row.at("text").get<std::string>();
    const auto expected = row.at("ids").get<std::vector<int32_t>>();
    const auto ids = tokenizer_->encode(text, /*add_bos=*/false);
    EXPECT_EQ(testing::ids_to_string(ids), testing::ids_to_string(expected))
        << "text: '" << text << "'";
    EXPECT_EQ(tokenizer_->decode(ids), text);
    ++n;
    n_match += ids == expected;
    // Lines where transformers' GGUF converter (which drops SmolLM2's Digits pre-tokenizer
    // step) disagrees with the model's own tokenizer; see make_tokenizer_vectors.py.
    if (row.contains("ids_gguf_converter")) {
      ++n_converter_differs;
      EXPECT_EQ(tokenizer_->decode(row.at("ids_gguf_converter").get<std::vector<int32_t>>()), text);
    }
  }
  std::printf(
      "[smollm2 vectors] %d / %d match (%d where the transformers GGUF converter differs)\n",
      n_match, n, n_converter_differs);
  EXPECT_GE(n, 200);
  EXPECT_EQ(n_converter_differs, 1);  // only "ied 4 ½ months": ½ is a digit to \p{N}
}

TEST_F(SmolLM2GgufTokenizer, SpecialIds) {
  EXPECT_EQ(tokenizer_->kind(), "bpe");
  EXPECT_EQ(tokenizer_->vocab_size(), 49152);
  EXPECT_EQ(tokenizer_->bos_id(), 1);
  EXPECT_EQ(tokenizer_->eos_id(), 2);
  EXPECT_TRUE(tokenizer_->is_special(1));  // <|im_start|>
  // tokenizer.ggml.add_bos_token is false: add_bos=true adds nothing (as transformers does).
  EXPECT_EQ(tokenizer_->encode("hi", true), tokenizer_->encode("hi", false));
}

TEST_F(SmolLM2GgufTokenizer, RoundTripsCorpus) { expect_corpus_round_trip(*tokenizer_, "smollm2"); }

// Malformed metadata: each error names the file and the key.
class BadGgufTokenizer : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::temp_dir();
    // A minimal valid "gpt2" vocabulary: the 256 byte characters, one merge, one special.
    for (int b = 0; b < 256; ++b) tokens_.push_back(byte_piece(b));
    tokens_.push_back("ab");
    tokens_.push_back("<|end|>");
    types_.assign(tokens_.size(), 1);
    types_.back() = 3;
  }
  static std::string byte_piece(int b) {
    // The GPT-2 byte alphabet: printable bytes are themselves; others are U+0100 + k.
    static std::vector<std::string> table = [] {
      std::vector<std::string> t(256);
      int extra = 0;
      for (int c = 0; c < 256; ++c) {
        const bool printable = (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE;
        const uint32_t cp = printable ? c : 256 + extra++;
        std::string s;
        if (cp < 0x80) {
          s += static_cast<char>(cp);
        } else {
          s += static_cast<char>(0xC0 | (cp >> 6));
          s += static_cast<char>(0x80 | (cp & 0x3F));
        }
        t[c] = s;
      }
      return t;
    }();
    return table[b];
  }
  testing::GgufWriter base_writer(bool with_tokens = true) const {
    testing::GgufWriter w;
    w.str("tokenizer.ggml.model", "gpt2");
    w.str("tokenizer.ggml.pre", "gpt2");
    if (with_tokens) w.str_array("tokenizer.ggml.tokens", tokens_);
    w.array<int32_t>("tokenizer.ggml.token_type", testing::kGgufI32, types_);
    w.str_array("tokenizer.ggml.merges", {"a b"});
    return w;
  }
  std::unique_ptr<Tokenizer> load(const testing::GgufWriter& w) {
    const std::string path = dir_ + "/vocab.gguf";
    testing::write_bytes(path, w.build());
    gguf_ = GgufFile::open(path);
    return tokenizer_from_gguf(*gguf_);
  }
  std::string dir_;
  std::vector<std::string> tokens_;
  std::vector<int32_t> types_;
  std::unique_ptr<GgufFile> gguf_;
};

TEST_F(BadGgufTokenizer, ValidMinimalVocabularyWorks) {
  auto tok = load(base_writer());
  EXPECT_EQ(tok->encode("ab<|end|>", false), (std::vector<int32_t>{256, 257}));
  EXPECT_EQ(tok->encode("ba", false),
            (std::vector<int32_t>{'b', 'a'}));  // byte pieces sit at their byte value
}

TEST_F(BadGgufTokenizer, MissingTokens) {
  testing::expect_input_error([&] { load(base_writer(false)); },
                              {"vocab.gguf", "tokenizer.ggml.tokens"});
}

TEST_F(BadGgufTokenizer, TokenTypeLengthMismatch) {
  types_.pop_back();
  testing::expect_input_error([&] { load(base_writer()); },
                              {"vocab.gguf", "tokenizer.ggml.token_type", "expected 258"});
}

TEST_F(BadGgufTokenizer, ScoresLengthMismatch) {
  auto w = base_writer();
  w.kvs.erase(w.kvs.begin());  // replace tokenizer.ggml.model
  w.str("tokenizer.ggml.model", "llama");
  w.array<float>("tokenizer.ggml.scores", testing::kGgufF32, std::vector<float>(10, 0.f));
  testing::expect_input_error([&] { load(w); },
                              {"vocab.gguf", "tokenizer.ggml.scores", "10", "expected 258"});
}

TEST_F(BadGgufTokenizer, MergeOfUnknownPiece) {
  auto w = base_writer();
  w.str_array("tokenizer.ggml.merges", {"a b", "x yz"});
  w.kvs.erase(w.kvs.begin() + 4);  // drop the first merges key so the bad one is read
  testing::expect_input_error([&] { load(w); }, {"vocab.gguf", "tokenizer.ggml.merges[1]", "'yz'"});
}

TEST_F(BadGgufTokenizer, UnknownPreTokenizer) {
  auto w = base_writer();
  w.kvs.erase(w.kvs.begin() + 1);
  w.str("tokenizer.ggml.pre", "mystery-pre");
  testing::expect_input_error([&] { load(w); },
                              {"vocab.gguf", "tokenizer.ggml.pre", "mystery-pre"});
}

TEST_F(BadGgufTokenizer, UnknownModel) {
  auto w = base_writer();
  w.kvs.erase(w.kvs.begin());
  w.str("tokenizer.ggml.model", "rwkv");
  testing::expect_input_error([&] { load(w); }, {"vocab.gguf", "tokenizer.ggml.model", "rwkv"});
}

TEST_F(BadGgufTokenizer, TokenTypeOutOfRange) {
  types_[3] = 42;
  testing::expect_input_error([&] { load(base_writer()); },
                              {"vocab.gguf", "tokenizer.ggml.token_type", "[3]", "42"});
}

TEST_F(BadGgufTokenizer, BosIdOutOfRange) {
  auto w = base_writer();
  w.u32("tokenizer.ggml.bos_token_id", 5000);
  testing::expect_input_error([&] { load(w); },
                              {"vocab.gguf", "tokenizer.ggml.bos_token_id", "5000"});
}

}  // namespace
}  // namespace speclab

namespace speclab {
namespace {

// The SPM encoder cuts text into words at "▁" runs when no piece spans such a cut; adding
// one piece that does ("x▁y") forces the whole-fragment merge loop. Both must agree.
TEST(SpmVocabTokenizerTest, WordCutsMatchWholeFragmentMerging) {
  if (external_data(kSpmGguf).empty()) GTEST_SKIP() << testing::external_data_skip_reason(kSpmGguf);
  auto gguf = GgufFile::open(external_data(kSpmGguf));
  SpmVocabulary vocab;
  vocab.source = gguf->path();
  vocab.pieces = gguf->get_string_array("tokenizer.ggml.tokens");
  for (double s : gguf->get_float_array("tokenizer.ggml.scores")) vocab.scores.push_back(s);
  for (int64_t t : gguf->get_int_array("tokenizer.ggml.token_type")) {
    vocab.types.push_back(static_cast<SpmTokenType>(t));
  }
  vocab.bos_id = 1;
  vocab.eos_id = 2;
  vocab.unk_id = 0;
  SpmVocabulary spanning = vocab;
  // Unreachable by merges ("\x01" is only a byte token), so it changes no result.
  spanning.pieces.push_back("\x01\xE2\x96\x81\x01");
  spanning.scores.push_back(-1e9f);
  spanning.types.push_back(SpmTokenType::kNormal);
  const SpmVocabTokenizer cut(std::move(vocab));
  const SpmVocabTokenizer whole(std::move(spanning));
  std::string text;
  const auto chapters = testing::corpus_files("moby-dick");
  for (size_t i = 0; i < 3; ++i) text += testing::read_file_bytes(chapters[i]);
  text += "  double  spaces\t\ttabs \n\n newlines   ";
  EXPECT_EQ(cut.encode(text, true), whole.encode(text, true));
}

}  // namespace
}  // namespace speclab
