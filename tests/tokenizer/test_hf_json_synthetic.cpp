// tokenizer.json features on a hand-made vocabulary (both merge formats, ignore_merges,
// byte fallback, added tokens) and the malformed-file catalogue: each error names the file
// and the JSON path.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/tokenizer_factory.h"
#include "tests/formats/expect_input_error.h"
#include "tests/tokenizer/tokenizer_test_util.h"

namespace speclab {
namespace {

using nlohmann::json;

class HfJsonSynthetic : public ::testing::Test {
 protected:
  void SetUp() override {
    // ids 0..255: the byte alphabet (id == byte), then "ab", "abc", "xyz", one special.
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) {
      vocab[ByteLevelAlphabet::instance().char_of(static_cast<unsigned char>(b))] = b;
    }
    vocab["ab"] = 256;
    vocab["abc"] = 257;
    vocab["xyz"] = 258;
    doc_ = {
        {"model",
         {{"type", "BPE"},
          {"vocab", vocab},
          {"merges", json::array({"a b", json::array({"ab", "c"})})},
          {"ignore_merges", false}}},
        {"added_tokens", json::array({{{"id", 259}, {"content", "<|stop|>"}, {"special", true}}})},
        {"normalizer", nullptr},
        {"pre_tokenizer",
         {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
    };
    path_ = testing::temp_dir() + "/tokenizer.json";
  }
  std::unique_ptr<Tokenizer> load() {
    testing::write_file_bytes(path_, doc_.dump());
    return tokenizer_load_hf_json(path_);
  }
  void expect_error(const std::vector<std::string>& needles) {
    std::vector<std::string> all = {"tokenizer.json"};
    all.insert(all.end(), needles.begin(), needles.end());
    testing::expect_input_error([&] { load(); }, all);
  }
  json doc_;
  std::string path_;
};

TEST_F(HfJsonSynthetic, BothMergeFormatsApply) {
  auto tok = load();
  EXPECT_EQ(tok->encode("abc", false), (std::vector<int32_t>{257}));
  EXPECT_EQ(tok->encode("abd", false), (std::vector<int32_t>{256, 'd'}));
  EXPECT_EQ(tok->encode("cab", false), (std::vector<int32_t>{'c', 256}));
  EXPECT_EQ(tok->bos_id(), -1);  // no post-processor template: nothing to prepend
  EXPECT_EQ(tok->encode("abc", true), (std::vector<int32_t>{257}));
  EXPECT_EQ(tok->eos_id(), -1);
  EXPECT_EQ(tok->encode("ab<|stop|>", false), (std::vector<int32_t>{256, 259}));
  EXPECT_TRUE(tok->is_special(259));
}

TEST_F(HfJsonSynthetic, IgnoreMergesEmitsWholeVocabularyWords) {
  EXPECT_EQ(load()->encode("xyz", false), (std::vector<int32_t>{'x', 'y', 'z'}));
  doc_["model"]["ignore_merges"] = true;
  EXPECT_EQ(load()->encode("xyz", false), (std::vector<int32_t>{258}));
}

TEST_F(HfJsonSynthetic, ByteFallbackForMissingByteCharacters) {
  // Remove the character for byte 0xC3 and add "<0xC3>" instead.
  const std::string c3 = ByteLevelAlphabet::instance().char_of(0xC3);
  doc_["model"]["vocab"].erase(c3);
  doc_["model"]["vocab"]["<0xC3>"] = 0xC3;
  doc_["model"]["byte_fallback"] = true;
  auto tok = load();
  const auto ids = tok->encode("\xC3\xA9", false);  // é
  EXPECT_EQ(ids, (std::vector<int32_t>{0xC3, 0xA9}));
  EXPECT_EQ(tok->piece(0xC3), "<0xC3>");
  EXPECT_EQ(tok->decode(ids), "\xC3\xA9");
  // Without byte fallback (and no unk token) the vocabulary cannot spell every byte: it
  // loads (SmolLM2's exported tokenizer.json is like this), and text with the byte is refused.
  doc_["model"]["byte_fallback"] = false;
  auto strict = load();
  EXPECT_EQ(strict->decode(strict->encode("ab", false)), "ab");  // "ab" is one merged piece
  try {
    strict->encode("\xC3\xA9", false);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("byte 0xc3"), std::string::npos) << e.what();
  }
}

TEST_F(HfJsonSynthetic, PostProcessorTemplateGivesBos) {
  doc_["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", json::array({{{"SpecialToken", {{"id", "<|stop|>"}, {"type_id", 0}}}},
                              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}};
  auto tok = load();
  EXPECT_EQ(tok->bos_id(), 259);
  EXPECT_EQ(tok->encode("ab", true), (std::vector<int32_t>{259, 256}));
}

// Seen: these were read past, so the file encoded differently from Hugging Face's tokenizers
// without a word. Expected: each set option refused, naming its JSON path; the neutral values
// real files carry (null, "", 0) load.
TEST_F(HfJsonSynthetic, UnsupportedModelOptionsAreRefusedNotIgnored) {
  doc_["model"]["continuing_subword_prefix"] = "";
  doc_["model"]["end_of_word_suffix"] = nullptr;
  doc_["model"]["dropout"] = 0.0;
  EXPECT_EQ(load()->vocab_size(), 260);
  doc_["model"]["continuing_subword_prefix"] = "##";
  expect_error({"model.continuing_subword_prefix is \"##\", expected null (not supported)"});
  doc_["model"]["continuing_subword_prefix"] = nullptr;
  doc_["model"]["end_of_word_suffix"] = "</w>";
  expect_error({"model.end_of_word_suffix is \"</w>\""});
  doc_["model"]["end_of_word_suffix"] = nullptr;
  doc_["model"]["dropout"] = 0.1;
  expect_error({"model.dropout is 0.1, expected null"});
  doc_["model"]["dropout"] = nullptr;
  doc_["truncation"] = {{"max_length", 8}};
  expect_error({"truncation is set, expected null"});
  doc_["truncation"] = nullptr;
  doc_["padding"] = {{"length", 8}};
  expect_error({"padding is set, expected null"});
}

TEST_F(HfJsonSynthetic, UnknownTokenMustBeAStringInTheVocabulary) {
  doc_["model"]["unk_token"] = "xyz";
  EXPECT_EQ(load()->vocab_size(), 260);
  doc_["model"]["unk_token"] = "<unk>";
  expect_error({"model.unk_token '<unk>' is neither in model.vocab nor in added_tokens"});
  doc_["model"]["unk_token"] = 5;
  expect_error({"model.unk_token is number, expected a string"});
}

TEST_F(HfJsonSynthetic, PostProcessorsThatAddOtherTokensAreRefused) {
  const json bos = {{"SpecialToken", {{"id", "<|stop|>"}, {"type_id", 0}}}};
  const json seq = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};
  doc_["post_processor"] = {
      {"type", "Sequence"},
      {"processors",
       json::array({{{"type", "ByteLevel"}},
                    {{"type", "TemplateProcessing"}, {"single", json::array({bos, seq})}}})}};
  EXPECT_EQ(load()->bos_id(), 259);
  doc_["post_processor"] = {{"type", "TemplateProcessing"}, {"single", json::array({seq, bos})}};
  expect_error({"post_processor.single[1] adds a token after the text"});
  doc_["post_processor"] = {{"type", "TemplateProcessing"},
                            {"single", json::array({bos, bos, seq})}};
  expect_error({"post_processor.single[1] adds a second token before the text"});
  doc_["post_processor"] = {{"type", "RobertaProcessing"}, {"sep", {"</s>", 2}}};
  expect_error({"post_processor.type is 'RobertaProcessing', expected TemplateProcessing"});
  doc_["post_processor"] = {{"type", "TemplateProcessing"}, {"single", json::array({bos})}};
  expect_error({"post_processor.single has no {\"Sequence\": ...}"});
}

TEST_F(HfJsonSynthetic, DecodersOtherThanByteLevelAreRefused) {
  doc_["decoder"] = {{"type", "Sequence"}, {"decoders", json::array({{{"type", "ByteLevel"}}})}};
  EXPECT_EQ(load()->vocab_size(), 260);
  doc_["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}};
  expect_error({"decoder.type is 'WordPiece', expected ByteLevel (not supported)"});
  doc_["decoder"] = {{"type", "Sequence"}, {"decoders", json::array({{{"type", "Metaspace"}}})}};
  expect_error({"decoder.decoders[0].type is 'Metaspace'"});
}

TEST_F(HfJsonSynthetic, NotJson) {
  testing::write_file_bytes(path_, "{\"model\": [");
  testing::expect_input_error([&] { tokenizer_load_hf_json(path_); },
                              {"tokenizer.json", "not valid JSON"});
}

TEST_F(HfJsonSynthetic, MissingFile) {
  testing::expect_input_error([&] { tokenizer_load_hf_json(path_ + ".absent"); },
                              {"tokenizer.json.absent", "cannot open"});
}

TEST_F(HfJsonSynthetic, ModelTypeNotBpe) {
  doc_["model"]["type"] = "WordPiece";
  expect_error({"model.type", "'WordPiece'", "expected 'BPE'"});
}

TEST_F(HfJsonSynthetic, MergeReferencingUnknownPiece) {
  doc_["model"]["merges"].push_back("ab zz");
  expect_error({"model.merges[2]", "'zz'"});
}

TEST_F(HfJsonSynthetic, MergeResultNotInVocabulary) {
  doc_["model"]["merges"].push_back("x y");  // "xy" is not a piece
  expect_error({"model.merges[2]", "'xy'"});
}

TEST_F(HfJsonSynthetic, MalformedMergeEntry) {
  doc_["model"]["merges"].push_back(12);
  expect_error({"model.merges[2]", "expected"});
  doc_["model"]["merges"][2] = "abc";
  expect_error({"model.merges[2]", "two pieces"});
}

TEST_F(HfJsonSynthetic, VocabIdOutOfRange) {
  doc_["model"]["vocab"]["xyz"] = 99999;
  expect_error({"model.vocab['xyz']", "99999", "expected 0 <= id <"});
  doc_["model"]["vocab"]["xyz"] = -3;
  expect_error({"model.vocab['xyz']", "-3"});
}

TEST_F(HfJsonSynthetic, VocabIdDuplicate) {
  doc_["model"]["vocab"]["xyz"] = 256;
  // Which of the two names is reported depends on the object's key order; the id is fixed.
  expect_error({"model.vocab[", "has id 256", "already used"});
}

TEST_F(HfJsonSynthetic, VocabIdNotAnInteger) {
  doc_["model"]["vocab"]["xyz"] = "258";
  expect_error({"model.vocab['xyz']", "expected an integer"});
}

TEST_F(HfJsonSynthetic, AddedTokenClashesWithVocabulary) {
  doc_["added_tokens"][0]["id"] = 257;
  expect_error({"added_tokens[0]", "<|stop|>", "257", "'abc'"});
}

TEST_F(HfJsonSynthetic, UnsupportedPreTokenizerAndNormalizer) {
  doc_["pre_tokenizer"] = {{"type", "Metaspace"}};
  expect_error({"pre_tokenizer.type", "Metaspace"});
  doc_["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers", json::array({{{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}},
                                     {{"type", "ByteLevel"}, {"use_regex", false}}})}};
  expect_error({"pre-tokenizer", "does not compile"});
  doc_["pre_tokenizer"] = {{"type", "ByteLevel"}};
  doc_["normalizer"] = {{"type", "NFC"}};
  expect_error({"normalizer"});
}

TEST_F(HfJsonSynthetic, NoByteLevelStep) {
  doc_["pre_tokenizer"] = {
      {"type", "Split"}, {"pattern", {{"Regex", "\\s+"}}}, {"behavior", "Isolated"}};
  expect_error({"pre_tokenizer", "no ByteLevel"});
}

}  // namespace
}  // namespace speclab

namespace speclab {
namespace {

// Seen: a pre_tokenizer nested 200,000 deep crashed (stack overflow) in the recursive walk.
TEST_F(HfJsonSynthetic, PreTokenizerNestedDeepIsRefused) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  std::string text = doc_.dump();
  text.insert(text.rfind('}'), R"(, "pre_tokenizer": )" + deep);
  testing::write_file_bytes(path_, text);
  testing::expect_input_error([&] { tokenizer_load_hf_json(path_); },
                              {"tokenizer.json", "JSON nested deeper than 256 levels"});
}

// Seen: the loader looked at 4 bytes, so JSON after 4 spaces or a byte-order mark went to
// SentencePiece and failed with its message. Expected: JSON after any whitespace and a UTF-8
// byte-order mark loads as JSON (past the 512 bytes looked at, the JSON parser decides).
TEST_F(HfJsonSynthetic, JsonAfterWhitespaceOrAByteOrderMarkIsJson) {
  const std::string body = doc_.dump();
  for (const std::string& lead :
       {std::string("        \n\t"), std::string("\xEF\xBB\xBF\r\n  "), std::string(600, ' ')}) {
    testing::write_file_bytes(path_, lead + body);
    EXPECT_EQ(tokenizer_load(path_)->vocab_size(), 260) << lead.size() << " leading bytes";
  }
}

// Seen: a JSON array, plain text, UTF-16 and empty files all reached SentencePiece, whose
// messages ("unk is not defined") say nothing of what the file is. Expected: one line naming
// what the file is and what was expected; a real tokenizer.model still loads.
TEST(HostileTokenizerFiles, TextThatIsNotATokenizerIsNamed) {
  const std::string dir = testing::temp_dir();
  struct Case {
    std::string bytes;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {"[1, 2, 3]", "is text that does not start with '{' ('[' at byte 0)"},
      {"  \n \"tok\"", "is text that does not start with '{' ('\"' at byte 4)"},
      {"hello world\n",
       "('h' at byte 0), expected a tokenizer.json (a JSON object), a "
       "SentencePiece tokenizer.model or a .gguf file"},
      {"\xE9t\xE9", "(0xE9 at byte 0)"},
      {std::string("\xFF\xFE{\0\"\0", 6), "is UTF-16 or UTF-32 text"},
      {std::string("\xFE\xFF\0{", 4), "is UTF-16 or UTF-32 text"},
      // Seen: these reached SentencePiece ("not a SentencePiece model protobuf (Internal: ...)").
      {std::string("\0{\0\"\0m\0", 7), "is UTF-16 or UTF-32 text"},
      {std::string("{\0\"\0m\0", 6), "is UTF-16 or UTF-32 text"},
      {std::string("\x08\0\0\0\0\0\0\0{\"w\":{}}", 16),
       "is a safetensors weights file, not a tokenizer"},
      {std::string("\x01\x02\x03\x04", 4),
       "is a binary file that no tokenizer format starts with (first byte 0x01)"},
      {"", "tokenizer file is empty"},
      {" \n\t ", "tokenizer file holds only whitespace"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = dir + "/tok" + std::to_string(i) + ".model";
    testing::write_file_bytes(path, cases[i].bytes);
    testing::expect_input_error([&] { tokenizer_load(path); }, {path, cases[i].needle});
  }
  for (const char* model : {"/tests/data/tiny_spm_bpe.model", "/models/zoo/tokenizer.model"})
    EXPECT_GT(tokenizer_load(std::string(SPECLAB_SOURCE_DIR) + model)->vocab_size(), 0) << model;
}

// Seen: /dev/zero as a tokenizer read until memory ran out. Expected: named and refused.
TEST(HostileTokenizerFiles, SpecialFilesAreRefused) {
  testing::expect_input_error([] { tokenizer_load("/dev/zero"); },
                              {"/dev/zero: is a character device, expected a regular file"});
  testing::expect_input_error([] { tokenizer_load_hf_json("/dev/zero"); },
                              {"/dev/zero: is a character device"});
  testing::expect_input_error([] { tokenizer_load_sentencepiece("/dev/zero"); },
                              {"/dev/zero: is a character device"});
}

}  // namespace
}  // namespace speclab
