// speclab generate through the executable: greedy output equals the transformers reference
// for every drafter, JSON stats are consistent, and each bad input exits 2 with one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tests/experiments/cli_runner.h"
#include "tests/external_test_data.h"

namespace speclab {
namespace {

using testing_util::CliResult;
using testing_util::ids_arg;
using testing_util::run_speclab;
const auto& have = testing_util::file_exists;

const std::string kTiny = std::string(SPECLAB_SOURCE_DIR) + "/tests/data/tiny-llama32";
const std::string kSpm = std::string(SPECLAB_SOURCE_DIR) + "/tests/data/tiny_spm_bpe.model";
const std::string kLlama3Tok = speclab::testing::external_data("llama3-tokenizer/tokenizer.json");

// The greedy continuation of the golden "plain" SmolLM2 prompt, autoregressive and with each
// drafter, must be transformers' token for token (tests/golden/smollm2.json).
TEST(CliGenerate, SmolLM2GreedyMatchesTransformersForEveryDrafter) {
  const std::string gguf = testing_util::smollm2_gguf();
  if (!have(gguf)) GTEST_SKIP() << gguf << " absent: run `bash .ci/install`";
  std::ifstream f(std::string(SPECLAB_SOURCE_DIR) + "/tests/golden/smollm2.json");
  const auto golden = nlohmann::json::parse(f);
  const auto& p = golden["prompts"][0];
  const auto ids = p["ids"].get<std::vector<int32_t>>();
  const auto want = p["greedy"].get<std::vector<int32_t>>();
  for (const std::string draft : {"", "lookup:n=3", "self:skip=14-15+26-27"}) {
    const CliResult r = run_speclab("generate --target '" + gguf + "' --prompt-ids " +
                                    ids_arg(ids) + " --temperature 0 --ignore-eos --json " +
                                    "--max-new-tokens " + std::to_string(want.size()) +
                                    (draft.empty() ? "" : " --gamma 4 --draft " + draft));
    ASSERT_EQ(r.exit_code, 0) << draft << ": " << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), want) << draft;
    if (!draft.empty()) {
      EXPECT_EQ(j["accepted"].get<int64_t>() + j["rounds"].get<int64_t>(),
                static_cast<int64_t>(want.size()))
          << "every round emits accepted + 1 tokens";
      EXPECT_GE(j["alpha_empirical"].get<double>(), 0.0);
      EXPECT_LE(j["alpha_empirical"].get<double>(), 1.0);
    }
  }
}

TEST(CliGenerate, TinyLlama32WithSeparateTokenizer) {
  if (kLlama3Tok.empty())
    GTEST_SKIP() << speclab::testing::external_data_skip_reason("llama3-tokenizer/tokenizer.json");
  const CliResult r = run_speclab("generate --target '" + kTiny + "' --tokenizer '" + kLlama3Tok +
                                  "' --prompt 'Hello world' --max-new-tokens 8 --seed 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prompt_tokens"].get<std::vector<int32_t>>(),
            (std::vector<int32_t>{128000, 9906, 1917}));
  EXPECT_LE(j["tokens"].size(), 8u);
}

// Sampling is reproducible from the seed and changes with it.
TEST(CliGenerate, SeededSamplingIsReproducible) {
  const std::string base = "generate --target '" + kTiny +
                           "' --prompt-ids 128000,9906,1917 --max-new-tokens 12 --ignore-eos "
                           "--temperature 1 --json --draft self:skip=1 --gamma 3 --seed ";
  const auto a = nlohmann::json::parse(run_speclab(base + "7").out);
  const auto b = nlohmann::json::parse(run_speclab(base + "7").out);
  const auto c = nlohmann::json::parse(run_speclab(base + "8").out);
  EXPECT_EQ(a["tokens"], b["tokens"]);
  EXPECT_NE(a["tokens"], c["tokens"]);
}

// --synthetic-acceptance: every draft accepted at 1 (tokens per round = gamma + 1 until the
// last round); reported in the JSON; reproducible from the seed.
TEST(CliGenerate, SyntheticAcceptance) {
  const std::string base = "generate --target '" + kTiny +
                           "' --prompt-ids 128000,9906,1917 --max-new-tokens 16 --ignore-eos "
                           "--temperature 1 --json --draft self:skip=1 --gamma 3 --seed 4 ";
  const CliResult all = run_speclab(base + "--synthetic-acceptance 1");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const auto j = nlohmann::json::parse(all.out);
  EXPECT_EQ(j["synthetic_acceptance"], nlohmann::json::parse("[1.0]"));
  EXPECT_EQ(j["accepted"], j["tested"]);
  EXPECT_EQ(j["rounds"], 4);  // 16 tokens at 4 per round
  const auto a = nlohmann::json::parse(run_speclab(base + "--synthetic-acceptance 0.5,0.3").out);
  const auto b = nlohmann::json::parse(run_speclab(base + "--synthetic-acceptance 0.5,0.3").out);
  EXPECT_EQ(a["tokens"], b["tokens"]);
  EXPECT_EQ(a["synthetic_acceptance"], nlohmann::json::parse("[0.5, 0.3]"));
  EXPECT_LT(a["accepted"].get<int>(), a["tested"].get<int>());
}

// --lenience at --temperature 0 (paper A.5): the greedy rule reads the target's distribution
// before standardization, so a lower l accepts more drafts (at temperature 0 the standardized
// p is one-hot, and the rule applied to it gave every l the tau of l = 1). l = 1 is the
// target's own greedy text.
TEST(CliGenerate, GreedyLenienceAcceptsMore) {
  const std::string base = "generate --target '" + kTiny +
                           "' --prompt-ids 128000,9906,1917 --max-new-tokens 32 --ignore-eos "
                           "--temperature 0 --json ";
  const std::string draft = "--draft self:skip=1 --gamma 3 --lenience ";
  const auto plain = nlohmann::json::parse(run_speclab(base).out);
  const auto strict = nlohmann::json::parse(run_speclab(base + draft + "1").out);
  const auto half = nlohmann::json::parse(run_speclab(base + draft + "0.5").out);
  const auto loose = nlohmann::json::parse(run_speclab(base + draft + "0.1").out);
  EXPECT_EQ(strict["tokens"], plain["tokens"]);
  EXPECT_GT(half["accepted"].get<int>(), strict["accepted"].get<int>());
  EXPECT_GT(loose["accepted"].get<int>(), half["accepted"].get<int>());
  EXPECT_LT(loose["rounds"].get<int>(), strict["rounds"].get<int>());  // tau = 32 / rounds
}

struct BadCase {
  const char* what;
  std::string args;
  const char* expect;  // substring of the one-line error
};

TEST(CliGenerate, BadInputExitsTwoWithOneLine) {
  const std::string t = "generate --target '" + kTiny + "' ";
  const std::vector<BadCase> cases = {
      {"missing model", "generate --target /nonexistent/model --prompt-ids 1",
       "/nonexistent/model"},
      {"prompt and ids", t + "--prompt hi --prompt-ids 1", "exactly one of --prompt"},
      {"bad id list", t + "--prompt-ids 1,x,3", "'x' is not a non-negative token id"},
      {"id out of vocab", t + "--prompt-ids 999999", "outside the vocabulary"},
      {"no tokenizer", t + "--prompt hello", "no tokenizer"},
      {"prompt too long", t + "--prompt-ids 1,2,3,4,5,6,7,8,9,10 --ctx 8", "context"},
      {"gamma 0", t + "--prompt-ids 1 --draft lookup --gamma 0", "--gamma"},
      {"lenience", t + "--prompt-ids 1 --draft lookup --lenience 1.5", "--lenience"},
      {"top-p", t + "--prompt-ids 1 --top-p 1.5", "--top-p"},
      // 0 passed the flag and stopped in the sampler without naming it.
      {"top-p 0", t + "--prompt-ids 1 --top-p 0", "--top-p: '0' is not a finite number in (0, 1]"},
      {"lenience 0", t + "--prompt-ids 1 --draft lookup --lenience 0",
       "--lenience: '0' is not a finite number in (0, 1]"},
      {"unknown policy", t + "--prompt-ids 1 --draft lookup --gamma-policy wild", "--gamma-policy"},
      {"lookup option", t + "--prompt-ids 1 --draft lookup:q=3", "unknown option 'q'"},
      {"self skip range", t + "--prompt-ids 1 --draft self:skip=0-9", "outside 0..1"},
      {"skip all", t + "--prompt-ids 1 --draft self:skip=0-1", "skips every layer"},
      {"missing ngram", t + "--prompt-ids 1 --draft ngram:/nonexistent.ngram",
       "/nonexistent.ngram"},
      {"unknown flag", t + "--prompt-ids 1 --frobnicate", "frobnicate"},
      {"synthetic 0", t + "--prompt-ids 1 --draft lookup --synthetic-acceptance 0",
       "--synthetic-acceptance: '0' (expected a number in (0, 1]"},
      {"synthetic list", t + "--prompt-ids 1 --draft lookup --synthetic-acceptance 0.9,1.1",
       "--synthetic-acceptance: '1.1' (expected a number in (0, 1]"},
      {"synthetic word", t + "--prompt-ids 1 --draft lookup --synthetic-acceptance often",
       "--synthetic-acceptance: 'often'"},
      {"synthetic trailing comma", t + "--prompt-ids 1 --draft lookup --synthetic-acceptance 0.5,",
       "--synthetic-acceptance: '0.5,'"},
      // Seen: what a config refuses ran here (the sampler holds these as floats: 1e-320 is 0);
      // a seed of -1 wrapped; a top-k of -1 printed a 300-digit range.
      {"temperature below float", t + "--prompt-ids 1 --temperature 1e-320",
       "--temperature: '1e-320' is below 1e-30 (the sampler computes in float, where it is 0)"},
      {"lenience below float", t + "--prompt-ids 1 --draft lookup --lenience 1e-320",
       "--lenience: '1e-320' is below 1e-30"},
      {"synthetic below float", t + "--prompt-ids 1 --draft lookup --synthetic-acceptance 1e-320",
       "--synthetic-acceptance: '1e-320' (expected a number in (0, 1] of at least 1e-30"},
      {"seed -1", t + "--prompt-ids 1 --seed -1",
       "--seed: '-1' is not a whole number in [0, 18446744073709551615]"},
      {"seed overflow", t + "--prompt-ids 1 --seed 18446744073709551616",
       "--seed: '18446744073709551616'"},
      {"top-k -1", t + "--prompt-ids 1 --top-k -1", "--top-k: Value -1 not in range 0 to 16777216"},
      {"top-k above vocabulary", t + "--prompt-ids 1 --top-k 1000000",
       "--top-k: 1000000 exceeds the target's vocabulary of"},
      {"show drafts with prompts",
       t + "--prompts '" + std::string(SPECLAB_SOURCE_DIR) +
           "/configs/prompts/tiny-in-domain.jsonl' --draft lookup --show-drafts",
       "--show-drafts: marks one request's drafts; it does not combine with --prompts"},
      {"prompt not UTF-8", t + "--prompt \"$(printf 'a\\377b')\"",
       "--prompt: invalid UTF-8 byte 0xFF at byte 1"},
      {"synthetic no draft", t + "--prompt-ids 1 --synthetic-acceptance 0.5",
       "--synthetic-acceptance: needs --draft"},
      // Options of the drafting loop without a drafter are refused, not ignored.
      {"gamma no draft", t + "--prompt-ids 1 --gamma 4", "--gamma: needs --draft"},
      {"policy no draft", t + "--prompt-ids 1 --gamma-policy heuristic",
       "--gamma-policy: needs --draft"},
      {"lenience no draft", t + "--prompt-ids 1 --lenience 0.5", "--lenience: needs --draft"},
      {"p-min no draft", t + "--prompt-ids 1 --p-min 0.2", "--p-min: needs --draft"},
      {"draft temperature no draft", t + "--prompt-ids 1 --draft-temperature 0.5",
       "--draft-temperature: needs --draft"},
      {"unknown chat template", t + "--prompt hi --chat-template fancy",
       "--chat-template: unknown chat template 'fancy' (expected auto, none, chatml or llama3)"},
      {"chat template with ids", t + "--prompt-ids 1 --chat-template auto",
       "--chat-template: wraps --prompt text"},
      {"tokenizer without chat format",
       t + "--tokenizer '" + kSpm + "' --prompt hi --chat-template auto",
       "--chat-template: the tokenizer has no known chat format"},
      {"tokenizer without llama3 tokens",
       t + "--tokenizer '" + kSpm + "' --prompt hi --chat-template llama3",
       "--chat-template: llama3 needs the tokenizer's <|start_header_id|> special token"},
  };
  for (const auto& c : cases) {
    const CliResult r = run_speclab(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.what << ": " << r.err;
    EXPECT_TRUE(r.one_line_error()) << c.what << ": " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.what << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.what;
  }
}

// --chat-template wraps --prompt like prompts.chat_template does for run: "auto" finds
// SmolLM2's ChatML tokens, "chatml" names them, "none" leaves the text alone.
TEST(CliGenerate, ChatTemplateWrapsThePrompt) {
  const std::string gguf = testing_util::smollm2_gguf();
  if (!have(gguf)) GTEST_SKIP() << gguf << " absent: run `bash .ci/install`";
  auto prompt_of = [&](const std::string& tmpl) {
    const CliResult r = run_speclab("generate --target '" + gguf +
                                    "' --prompt Hi --max-new-tokens 1 --temperature 0 --json" +
                                    (tmpl.empty() ? "" : " --chat-template " + tmpl));
    EXPECT_EQ(r.exit_code, 0) << tmpl << ": " << r.err;
    return nlohmann::json::parse(r.out)["prompt_tokens"].get<std::vector<int32_t>>();
  };
  const auto plain = prompt_of(""), none = prompt_of("none");
  const auto chatml = prompt_of("chatml"), automatic = prompt_of("auto");
  EXPECT_EQ(plain, none);
  EXPECT_EQ(chatml, automatic);
  const CliResult im_start =
      run_speclab("tokenize --tokenizer '" + gguf + "' --text '<|im_start|>' --no-bos");
  ASSERT_EQ(im_start.exit_code, 0) << im_start.err;
  const int32_t im_start_id = std::stoi(im_start.out);
  EXPECT_EQ(std::count(chatml.begin(), chatml.end(), im_start_id), 2);  // user, assistant
  EXPECT_EQ(std::count(plain.begin(), plain.end(), im_start_id), 0);
  const CliResult llama3 = run_speclab("generate --target '" + gguf +
                                       "' --prompt Hi --max-new-tokens 1 --chat-template llama3");
  EXPECT_EQ(llama3.exit_code, 2);
  EXPECT_TRUE(llama3.one_line_error()) << llama3.err;
}

TEST(CliGenerate, DraftWithAnotherVocabularyIsRefused) {
  const std::string gguf = testing_util::smollm2_gguf();
  if (!have(gguf)) GTEST_SKIP() << gguf << " absent";
  const CliResult r =
      run_speclab("generate --target '" + kTiny + "' --prompt-ids 1,2 --draft '" + gguf + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.one_line_error()) << r.err;
  EXPECT_NE(r.err.find("vocabulary"), std::string::npos) << r.err;
}

// Seen: a draft with a shorter context and another vocabulary printed the note that the
// context was shortened, then the vocabulary error (two lines). Expected: the error alone.
TEST(CliGenerate, DraftWithAnotherVocabularyIsRefusedBeforeAnyNote) {
  const std::string zoo = std::string(SPECLAB_SOURCE_DIR) + "/models/zoo/";
  const std::string draft = zoo + "tiny-draft-0.5m";
  const CliResult r =
      run_speclab("generate --target '" + zoo +
                  "smollm2-draft-distill' --prompt-ids 1,2 --draft '" + draft + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.one_line_error()) << r.err;
  EXPECT_NE(r.err.find("draft '" + draft + "': vocabulary of 4096 tokens, the target has 49152"),
            std::string::npos)
      << r.err;
}

// Sampled at a high temperature, SmolLM2's byte-level tokens often end a continuation inside a
// multi-byte character (or produce bytes that are no UTF-8): --json still prints one valid JSON
// line, those bytes as U+FFFD, exit 0 (dumping them as they were threw: "internal error", exit 3).
TEST(CliGenerate, JsonOutputShowsBytesThatAreNoUtf8AsReplacementCharacters) {
  const std::string gguf = testing_util::smollm2_gguf();
  if (!have(gguf)) GTEST_SKIP() << gguf << " absent: run `bash .ci/install`";
  int replaced = 0;
  for (int seed = 1; seed <= 12; seed++) {
    const CliResult r = run_speclab("generate --target '" + gguf +
                                    "' --prompt Hi --max-new-tokens 48 --ignore-eos "
                                    "--temperature 5 --json --seed " +
                                    std::to_string(seed));
    ASSERT_EQ(r.exit_code, 0) << "seed " << seed << ": " << r.err;
    const auto j = nlohmann::json::parse(r.out);  // throws on invalid UTF-8 or a torn line
    EXPECT_EQ(j["tokens"].size(), 48u);
    if (j["text"].get<std::string>().find("\xEF\xBF\xBD") != std::string::npos) replaced++;
  }
  // The case this test is for happened (in 12 of seeds 1-24 on a Zen 5 machine).
  EXPECT_GE(replaced, 1);
}

}  // namespace
}  // namespace speclab
