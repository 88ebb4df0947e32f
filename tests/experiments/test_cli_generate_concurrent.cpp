// speclab generate --prompts FILE --concurrency N through the executable: every request's
// tokens are the same at every concurrency and equal its own batch-1 run, the JSON names each
// request's slot and timings, and each bad input exits 2 with one line.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

using testing_util::CliResult;
using testing_util::ids_arg;
using testing_util::run_speclab;
using testing_util::ScratchDir;

const std::string kZoo = std::string(SPECLAB_SOURCE_DIR) + "/models/zoo";
const std::string kPrompts =
    std::string(SPECLAB_SOURCE_DIR) + "/configs/prompts/tiny-in-domain.jsonl";
const std::string kBase = "generate --target '" + kZoo + "/tiny-target-5m' --prompts '" + kPrompts +
                          "' --max-new-tokens 20 --temperature 0.8 --seed 5 --json";

nlohmann::json run_json(const std::string& args) {
  const CliResult r = run_speclab(args);
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
}

TEST(CliGenerateConcurrent, EveryRequestsTokensAreTheSameAtEveryConcurrency) {
  for (const std::string& draft : std::vector<std::string>{
           "", " --draft '" + kZoo + "/tiny-draft-2m' --gamma 3", " --draft lookup --gamma 2"}) {
    const auto one = run_json(kBase + draft + " --concurrency 1");
    ASSERT_TRUE(one.contains("requests")) << draft;
    const size_t n = one["requests"].size();
    ASSERT_GE(n, 8u);
    for (int c : {3, 8}) {
      const auto many = run_json(kBase + draft + " --concurrency " + std::to_string(c));
      ASSERT_TRUE(many.contains("requests")) << draft;
      EXPECT_EQ(many["concurrency"], c);
      ASSERT_EQ(many["requests"].size(), n);
      std::set<int64_t> slots;
      for (size_t i = 0; i < n; i++) {
        const auto& a = one["requests"][i];
        const auto& b = many["requests"][i];
        EXPECT_EQ(a["id"], b["id"]);
        EXPECT_EQ(a["tokens"], b["tokens"]) << draft << " concurrency " << c << " request " << i;
        EXPECT_EQ(a["stop"], b["stop"]) << draft << " request " << i;
        if (!draft.empty()) {
          EXPECT_EQ(a["accepted"], b["accepted"]) << draft << " request " << i;
        }
        slots.insert(b["slot"].get<int64_t>());
        EXPECT_GE(b["ttft_s"].get<double>(), 0.0);
        EXPECT_GE(b["time_per_output_token_s"].get<double>(), 0.0);
      }
      EXPECT_EQ(slots.size(), static_cast<size_t>(c));  // every slot served
      EXPECT_EQ(many["tokens"], one["tokens"]);
      EXPECT_GT(many["throughput_tokens_per_s"].get<double>(), 0.0);
    }
  }
}

// Request 0 of the file is the batch-1 run of its prompt ids (request id 0, the default of a
// single generate): the check a user can make by hand.
TEST(CliGenerateConcurrent, FirstRequestEqualsASingleGenerateOfItsPromptIds) {
  const std::string draft = " --draft '" + kZoo + "/tiny-draft-2m' --gamma 4";
  const auto many = run_json(kBase + draft + " --concurrency 4");
  ASSERT_TRUE(many.contains("requests"));
  const auto ids = many["requests"][0]["prompt_tokens"].get<std::vector<int32_t>>();
  const auto single =
      run_json("generate --target '" + kZoo + "/tiny-target-5m' --prompt-ids " + ids_arg(ids) +
               " --max-new-tokens 20 --temperature 0.8 --seed 5 " + "--json" + draft);
  EXPECT_EQ(single["tokens"], many["requests"][0]["tokens"]);
}

TEST(CliGenerateConcurrent, BadInputExitsTwoWithOneLine) {
  ScratchDir d;
  const std::string target = "generate --target '" + kZoo + "/tiny-target-5m' ";
  const std::string bad_prompts =
      d.write("bad.jsonl", "{\"id\": \"a\", \"text\": \"x\"}\nnot json\n");
  struct Case {
    std::string args, expected;
    std::string env = "";
  };
  const std::vector<Case> cases = {
      {target + "--prompt-ids 1,2 --concurrency 4",
       "--concurrency: 4 requests at once need --prompts"},
      {target + "--prompts '" + kPrompts + "' --concurrency 0", "--concurrency"},
      {target + "--prompts '" + kPrompts + "' --concurrency 300", "--concurrency"},
      {target + "--prompts '" + kPrompts + "' --prompt hello",
       "exactly one of --prompt, --prompt-ids and --prompts"},
      {target + "--prompts '" + d.file("absent.jsonl") + "'", "absent.jsonl"},
      {target + "--prompts '" + bad_prompts + "'", "bad.jsonl:2"},
      {target + "--prompts '" + kPrompts + "' --draft lookup --tree 2x1",
       "--tree: tree speculation serves one request at a time"},
      {target + "--prompts '" + kPrompts + "' --draft lookup --trace '" + d.file("t.jsonl") + "'",
       "--trace: records one request"},
      {target + "--prompts '" + kPrompts + "' --concurrency 16 --ctx 256",
       "--concurrency: 16 requests of 256 positions need", "SPECLAB_MEMORY_LIMIT=100000"},
  };
  for (const Case& c : cases) {
    const CliResult r = run_speclab(c.args, c.env);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_TRUE(r.one_line_error()) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args << "\n" << r.out;
  }
}

// --backend cuda: the batched loop runs on CudaBatchedLlamaRunner. A build without the CUDA
// backend refuses it with one line (exit 2), as a CUDA build on a machine without a device
// does; on a machine with one it runs (the device tests cover its tokens:
// tests/cuda/test_cuda_batched_forward.cpp).
TEST(CliGenerateConcurrent, CudaBackendWithoutTheBackendOrADeviceExitsTwo) {
  const CliResult r = run_speclab("generate --target '" + kZoo + "/tiny-target-5m' --prompts '" +
                                  kPrompts + "' --concurrency 2 --backend cuda");
#ifndef SPECLAB_HAVE_CUDA
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.one_line_error()) << r.err;
  EXPECT_NE(r.err.find("--backend: 'cuda' requested but this build has no CUDA backend"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
#else
  if (r.exit_code == 0) GTEST_SKIP() << "a CUDA device is present: nothing to refuse";
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.one_line_error()) << r.err;
  EXPECT_NE(r.err.find("no CUDA device"), std::string::npos) << r.err;
#endif
}

}  // namespace
}  // namespace speclab
