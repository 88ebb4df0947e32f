// N-gram drafter tables: counts and probabilities on a hand-made corpus, a save/load round
// trip, and every malformed file refused with an InputError naming the file (and offset).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/drafters/ngram_drafter.h"

namespace speclab {
namespace {

std::string temp_file(const std::string& name) {
  return ::testing::TempDir() + "speclab_ngram_" + name;
}

TEST(NgramTable, CountsAndInterpolatedProbabilities) {
  // vocab 4; bigrams (0,1) x2, (1,2) x1, (1,0) x1; unigrams 0:2 1:3 2:1 (N = 6).
  const NgramTable t = NgramTable::count({{0, 1, 2}, {1, 0, 1}}, 4, 2);
  EXPECT_EQ(t.unigram, (std::vector<uint32_t>{2, 3, 1, 0}));
  ASSERT_EQ(t.bigrams.size(), 3u);
  std::vector<float> lp(4);
  t.log_probs(1, lp.data());
  // P_u = (c + 1) / (6 + 4); P(x|1) = (c(1,x) + P_u(x)) / (c(1,.) + 1) with c(1,.) = 2.
  const double pu[4] = {0.3, 0.4, 0.2, 0.1};
  const double c1[4] = {1, 0, 1, 0};
  double total = 0;
  for (int x = 0; x < 4; x++) {
    const double want = (c1[x] + pu[x]) / 3.0;
    EXPECT_NEAR(std::exp(lp[x]), want, 1e-6) << x;
    total += std::exp(lp[x]);
  }
  EXPECT_NEAR(total, 1.0, 1e-6);
}

TEST(NgramTable, SaveLoadRoundTrip) {
  const NgramTable t = NgramTable::count({{0, 1, 2, 3, 1, 2}}, 5, 2);
  const std::string path = temp_file("roundtrip.bin");
  ngram_table_save(t, path);
  const NgramTable u = ngram_table_load(path);
  EXPECT_EQ(u.vocab, 5);
  EXPECT_EQ(u.unigram, t.unigram);
  ASSERT_EQ(u.bigrams.size(), t.bigrams.size());
  for (size_t i = 0; i < u.bigrams.size(); i++) EXPECT_EQ(u.bigrams[i].count, t.bigrams[i].count);
}

void expect_load_error(const std::string& path, const std::string& what) {
  try {
    ngram_table_load(path);
    FAIL() << "expected InputError containing '" << what << "'";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(NgramTable, MalformedFilesAreRefused) {
  const NgramTable t = NgramTable::count({{0, 1, 2, 3}}, 4, 2);
  const std::string good = temp_file("good.bin");
  ngram_table_save(t, good);
  std::ifstream in(good, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto write = [](const std::string& name, const std::string& data) {
    const std::string p = temp_file(name);
    std::ofstream(p, std::ios::binary) << data;
    return p;
  };
  expect_load_error(write("short.bin", bytes.substr(0, 20)), "shorter than the 32-byte");
  std::string bad_magic = bytes;
  bad_magic[0] = 'X';
  expect_load_error(write("magic.bin", bad_magic), "not an n-gram table");
  std::string bad_order = bytes;
  bad_order[8] = 7;
  expect_load_error(write("order.bin", bad_order), "order 7");
  expect_load_error(write("truncated.bin", bytes.substr(0, bytes.size() - 1)), "header implies");
  std::string bad_id = bytes;
  bad_id[32 + 4 * 4] = 9;  // first bigram's prev id -> 9, outside vocab 4
  expect_load_error(write("id.bin", bad_id), "outside the vocabulary");
  EXPECT_THROW(ngram_drafter_load(good, 5), InputError);  // vocabulary differs from the target's
}

}  // namespace
}  // namespace speclab
