// The HF tokenizer.json path against the real Llama 3 tokenizer and llama.cpp's vectors.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "core/error.h"
#include "models/tokenizer/tokenizer_factory.h"
#include "tests/tokenizer/tokenizer_test_util.h"

namespace speclab {
namespace {

using testing::external_data;

const std::string kLlama3Json = "llama3-tokenizer/tokenizer.json";

class Llama3Tokenizer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!external_data(kLlama3Json).empty()) {
      tokenizer_ = tokenizer_load_hf_json(external_data(kLlama3Json)).release();
    }
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }
  void SetUp() override {
    if (!tokenizer_) GTEST_SKIP() << testing::external_data_skip_reason(kLlama3Json);
  }
  static Tokenizer* tokenizer_;
};
Tokenizer* Llama3Tokenizer::tokenizer_ = nullptr;

TEST_F(Llama3Tokenizer, MatchesLlamaCppVectors) {
  const std::string inp = external_data("llama3-tokenizer/vectors.inp");
  const std::string out = external_data("llama3-tokenizer/vectors.out");
  if (inp.empty() || out.empty())
    GTEST_SKIP() << testing::external_data_skip_reason("llama3-tokenizer/vectors.inp, .out");
  const auto vectors = testing::read_vocab_vectors(inp, out);
  ASSERT_EQ(vectors.size(), 46u);
  int n_match = 0;
  for (const auto& v : vectors) {
    const auto ids = tokenizer_->encode(v.text, /*add_bos=*/false);
    EXPECT_EQ(testing::ids_to_string(ids), testing::ids_to_string(v.ids))
        << "text: '" << v.text << "'";
    n_match += ids == v.ids;
  }
  std::printf("[llama3 vectors] %d / %zu match\n", n_match, vectors.size());
}

TEST_F(Llama3Tokenizer, SpecialIdsAndBos) {
  EXPECT_EQ(tokenizer_->vocab_size(), 128256);
  EXPECT_EQ(tokenizer_->bos_id(), 128000);
  EXPECT_EQ(tokenizer_->eos_id(), 128009);  // tokenizer_config.json: <|eot_id|>
  EXPECT_EQ(tokenizer_->kind(), "bpe");
  EXPECT_EQ(tokenizer_->piece(128000), "<|begin_of_text|>");
  EXPECT_EQ(tokenizer_->piece(1917), "Ġworld");
  EXPECT_TRUE(tokenizer_->is_special(128009));
  EXPECT_FALSE(tokenizer_->is_special(1917));
  EXPECT_EQ(tokenizer_->encode("Hello world", true), (std::vector<int32_t>{128000, 9906, 1917}));
}

TEST_F(Llama3Tokenizer, SpecialTokensInText) {
  const std::string text = "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>";
  EXPECT_EQ(tokenizer_->encode(text, false),
            (std::vector<int32_t>{128006, 882, 128007, 271, 13347, 128009}));
  // Without parse_special the markers are ordinary text, split by the regex.
  const auto plain = tokenizer_->encode("<|eot_id|>", false, /*parse_special=*/false);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(tokenizer_->decode(plain), "<|eot_id|>");
  EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(text, true)), "<|begin_of_text|>" + text);
  EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(text, true), /*skip_special=*/true),
            "user\n\nHi");
}

TEST_F(Llama3Tokenizer, DecodeRejectsOutOfRangeId) {
  EXPECT_THROW(tokenizer_->decode({1, 128256}), InputError);
  EXPECT_THROW(tokenizer_->decode({-1}), InputError);
}

TEST_F(Llama3Tokenizer, InvalidUtf8RoundTrips) {
  const std::string bytes = "ok \xff\xfe broken \xe2\x82 end";
  EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(bytes, false)), bytes);
}

TEST_F(Llama3Tokenizer, RoundTripsCorpusAndIsFast) {
  std::string moby;
  for (const auto& f : testing::corpus_files("moby-dick")) moby += testing::read_file_bytes(f);
  ASSERT_GT(moby.size(), 1000000u);  // all of Moby-Dick (tests/data/corpus)
  const auto t0 = std::chrono::steady_clock::now();
  const auto ids = tokenizer_->encode(moby, false);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[llama3 speed] Moby-Dick %zu bytes -> %zu tokens in %.3f s (%.2f MB/s)\n",
              moby.size(), ids.size(), seconds, moby.size() / seconds / 1e6);
  EXPECT_LT(seconds, 5.0);
  EXPECT_EQ(tokenizer_->decode(ids), moby);

  const auto sotu = testing::corpus_files("sotu");
  ASSERT_FALSE(sotu.empty());
  for (size_t i = 0; i < sotu.size(); ++i) {  // the shipped tenth of the addresses
    const std::string text = testing::read_file_bytes(sotu[i]);
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(text, false)), text) << sotu[i];
  }
}

}  // namespace
}  // namespace speclab
