// The pieces the tokenizers are built from: GPT-2's byte alphabet, the regex pre-tokenizer
// (including invalid UTF-8), and the special-token splitter.
#include <gtest/gtest.h>

#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/regex_pretokenizer.h"
#include "models/tokenizer/special_token_splitter.h"

namespace speclab {
namespace {

TEST(ByteLevelAlphabetTest, KnownCharactersAndBijection) {
  const auto& a = ByteLevelAlphabet::instance();
  EXPECT_EQ(a.char_of(' '), "\xC4\xA0");   // Ġ U+0120
  EXPECT_EQ(a.char_of('\n'), "\xC4\x8A");  // Ċ U+010A
  EXPECT_EQ(a.char_of('a'), "a");
  EXPECT_EQ(a.char_of(0xAD), "\xC5\x83");  // soft hyphen is the 68th mapped byte: U+0143
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_EQ(a.decode(a.encode(all)), all);
}

std::vector<std::string> split(const RegexPretokenizer& pre, const std::string& text) {
  std::vector<std::string> out;
  for (auto piece : pre.split(text)) out.emplace_back(piece);
  return out;
}

TEST(RegexPretokenizerTest, Llama3Pattern) {
  RegexPretokenizer pre({kLlama3PretokenizerPattern}, "test", "pattern");
  EXPECT_EQ(
      split(pre, "Hello world's 12345!!\n\n  x"),
      (std::vector<std::string>{"Hello", " world", "'s", " ", "123", "45", "!!\n\n", " ", " x"}));
}

TEST(RegexPretokenizerTest, DigitsThenGpt2) {
  RegexPretokenizer pre({kSingleDigitPattern, kGpt2PretokenizerPattern}, "test", "pattern");
  EXPECT_EQ(split(pre, "a 42 b"), (std::vector<std::string>{"a", " ", "4", "2", " b"}));
}

TEST(RegexPretokenizerTest, InvalidUtf8BytesBecomeOwnPieces) {
  RegexPretokenizer pre({kGpt2PretokenizerPattern}, "test", "pattern");
  const std::string text =
      "ab\xFF"
      "cd \xE2\x82";
  const auto pieces = split(pre, text);
  EXPECT_EQ(pieces, (std::vector<std::string>{"ab", "\xFF", "cd", " ", "\xE2", "\x82"}));
}

TEST(SpecialTokenSplitterTest, LongestMatchAndParseSpecialFlag) {
  SpecialTokenSplitter splitter({{"<a>", 1, true}, {"<a><b>", 2, true}, {"[u]", 3, false}});
  auto f = splitter.split("x<a><b>y<a>[u]", true);
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f[0].text, "x");
  EXPECT_EQ(f[1].token_id, 2);  // the longer token wins at the same position
  EXPECT_EQ(f[2].text, "y");
  EXPECT_EQ(f[3].token_id, 1);
  EXPECT_EQ(f[4].token_id, 3);
  // Without parse_special only non-special (user-defined) tokens are split out.
  f = splitter.split("x<a>[u]", false);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].text, "x<a>");
  EXPECT_EQ(f[1].token_id, 3);
}

}  // namespace
}  // namespace speclab
