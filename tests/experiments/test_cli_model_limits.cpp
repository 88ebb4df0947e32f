// What a user meets naming models and machine limits on the command line: a zoo directory that
// holds its weights as one GGUF file loads as --draft and --target; a draft model with a
// shorter context than the default --ctx narrows the context (one line on stderr) while an
// explicit longer --ctx is refused; a --threads count the machine cannot start is exit 2 with
// one line, not libgomp's exit 1 in the middle of the run.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "experiments/measure/model_identity.h"
#include "models/llama/llama_model.h"
#include "tests/experiments/cli_runner.h"
#include "tests/formats/file_writers.h"

namespace speclab {
namespace {

using testing_util::CliResult;
using testing_util::run_speclab;
using testing_util::ScratchDir;

const std::string kDistillDir =
    std::string(SPECLAB_SOURCE_DIR) + "/models/zoo/smollm2-draft-distill";
const std::string kDistillGguf = kDistillDir + "/smollm2-draft-distill.Q8_0.gguf";

TEST(CliModelLimits, GgufDirectoryLoadsAsDraftAndTarget) {
  const std::string common =
      " --prompt-ids 1,504,2365,6354 --max-new-tokens 6 --temperature 0 --ignore-eos --json";
  const CliResult by_file = run_speclab("generate --target '" + kDistillGguf + "' --draft '" +
                                        kDistillGguf + "'" + common);
  ASSERT_EQ(by_file.exit_code, 0) << by_file.err;
  const CliResult by_dir =
      run_speclab("generate --target '" + kDistillDir + "' --draft '" + kDistillDir + "'" + common);
  ASSERT_EQ(by_dir.exit_code, 0) << by_dir.err;
  const auto a = nlohmann::json::parse(by_file.out), b = nlohmann::json::parse(by_dir.out);
  EXPECT_EQ(a["tokens"], b["tokens"]);
  EXPECT_EQ(b["tokens"].size(), 6u);
  // The draft is the target's own weights: every draft is accepted.
  EXPECT_EQ(b["accepted"], b["drafted"]);
  const CliResult inspect = run_speclab("inspect '" + kDistillDir + "' --json");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_EQ(nlohmann::json::parse(inspect.out)["format"], "gguf");
}

// Result rows identify the directory's model by its GGUF: the same sha256 as naming the file.
TEST(CliModelLimits, GgufDirectoryHasTheIdentityOfItsGguf) {
  const auto by_dir = model_identity(kDistillDir, kDistillDir, *llama_load(kDistillDir));
  const auto by_file = model_identity(kDistillGguf, kDistillGguf, *llama_load(kDistillGguf));
  EXPECT_EQ(by_dir.sha256, file_sha256(kDistillGguf));
  EXPECT_EQ(by_dir.sha256, by_file.sha256);
  EXPECT_EQ(by_dir.parameters, by_file.parameters);
  EXPECT_EQ(by_dir.format, "gguf");
}

TEST(CliModelLimits, DirectoryWithSeveralGgufsOrNoWeightsExitsTwo) {
  ScratchDir d;
  const std::string dir = d.file("two");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kDistillGguf, dir + "/a.gguf");
  std::filesystem::copy_file(kDistillGguf, dir + "/b.gguf");
  CliResult r =
      run_speclab("generate --target synthetic:tiny --prompt-ids 1,2 --draft '" + dir + "'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.one_line_error()) << r.err;
  EXPECT_NE(r.err.find(dir + ": 2 .gguf files (a.gguf, b.gguf) and no model.safetensors"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  const std::string empty = d.file("empty");
  std::filesystem::create_directories(empty);
  r = run_speclab("generate --target '" + empty + "' --prompt-ids 1,2");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.one_line_error()) << r.err;
  EXPECT_NE(r.err.find(empty + ": no model.safetensors, model.safetensors.index.json or .gguf "
                               "file (expected safetensors weights beside config.json, or "
                               "exactly one .gguf file)"),
            std::string::npos)
      << r.err;
}

// An HF directory with synthetic:tiny's vocabulary (256) and a 64-token context.
void write_short_context_draft(const std::string& dir) {
  std::filesystem::create_directories(dir);
  const int vocab = 256, dim = 64, hidden = 64, n_heads = 2, n_kv = 1, hd = 32;
  const nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}},
                                 {"model_type", "llama"},
                                 {"vocab_size", vocab},
                                 {"hidden_size", dim},
                                 {"intermediate_size", hidden},
                                 {"num_hidden_layers", 1},
                                 {"num_attention_heads", n_heads},
                                 {"num_key_value_heads", n_kv},
                                 {"head_dim", hd},
                                 {"max_position_embeddings", 64},
                                 {"rms_norm_eps", 1e-5},
                                 {"rope_theta", 10000.0},
                                 {"tie_word_embeddings", true},
                                 {"bos_token_id", 1},
                                 {"eos_token_id", 2}};
  testing::write_text(dir + "/config.json", config.dump(1));
  std::mt19937 gen(11);
  auto matrix = [&](const std::string& name, int rows, int cols) {
    std::normal_distribution<float> nd(0.0f, 1.0f / std::sqrt(static_cast<float>(cols)));
    std::vector<float> v(static_cast<size_t>(rows) * cols);
    for (float& x : v) x = nd(gen);
    return testing::SafetensorsTensor{name, "F32", {rows, cols}, testing::as_bytes(v)};
  };
  auto ones = [](const std::string& name, int n) {
    return testing::SafetensorsTensor{
        name, "F32", {n}, testing::as_bytes(std::vector<float>(n, 1.0f))};
  };
  const std::string p = "model.layers.0.";
  testing::write_bytes(
      dir + "/model.safetensors",
      testing::safetensors_build(
          {matrix("model.embed_tokens.weight", vocab, dim),
           matrix(p + "self_attn.q_proj.weight", n_heads * hd, dim),
           matrix(p + "self_attn.k_proj.weight", n_kv * hd, dim),
           matrix(p + "self_attn.v_proj.weight", n_kv * hd, dim),
           matrix(p + "self_attn.o_proj.weight", dim, n_heads * hd),
           matrix(p + "mlp.gate_proj.weight", hidden, dim),
           matrix(p + "mlp.up_proj.weight", hidden, dim),
           matrix(p + "mlp.down_proj.weight", dim, hidden), ones(p + "input_layernorm.weight", dim),
           ones(p + "post_attention_layernorm.weight", dim), ones("model.norm.weight", dim)}));
}

// synthetic:tiny's context is 2048, the draft's 64: without --ctx the run uses 64 and says so;
// an explicit --ctx beyond 64 is the user's request and is refused.
TEST(CliModelLimits, ShortContextDraftLimitsTheDefaultContext) {
  ScratchDir d;
  const std::string draft = d.file("short");
  write_short_context_draft(draft);
  const std::string base =
      "generate --target synthetic:tiny --prompt-ids 1,2,3 --temperature 0 "
      "--ignore-eos --json --draft '" +
      draft + "'";
  CliResult r = run_speclab(base + " --max-new-tokens 8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"].size(), 8u);
  const std::string note =
      "speclab: context limited to 64 tokens, the draft model's context "
      "length (" +
      draft + "); the default would be 2048\n";
  EXPECT_EQ(r.err.substr(0, note.size()), note) << r.err;
  // The narrowed context is the real limit: generation stops at it (the last token emitted
  // needs no cache slot, hence 64 + 1).
  r = run_speclab(base + " --max-new-tokens 500");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["stop"], "context");
  EXPECT_LE(j["tokens"].size() + 3, 65u);

  r = run_speclab(base + " --max-new-tokens 8 --ctx 128");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.one_line_error()) << r.err;
  EXPECT_NE(r.err.find("--ctx: 128 exceeds the draft model's context length 64 (" + draft + ")"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  r = run_speclab(base + " --max-new-tokens 8 --ctx 64");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("context limited"), std::string::npos) << r.err;
}

// `sh -c 'ulimit -v KB; exec speclab ARGS'`: a virtual-memory limit under which 1024 thread
// stacks cannot be mapped (a process-count limit does not bind root, the address space does).
// AddressSanitizer reserves terabytes of shadow address space at start, so no binary built
// with it starts under any `ulimit -v`: in the sanitizer build the limited runs cannot happen,
// and the two tests below say so and skip (the normal build runs them).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressLimitUsable = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressLimitUsable = false;
#else
constexpr bool kAddressLimitUsable = true;
#endif
#else
constexpr bool kAddressLimitUsable = true;
#endif

CliResult run_speclab_limited(const std::string& args, int vmem_kb) {
  ScratchDir dir;
  const std::string cmd = "sh -c \"ulimit -v " + std::to_string(vmem_kb) + " && exec '" +
                          SPECLAB_BIN + "' " + args + "\" >'" + dir.file("out") + "' 2>'" +
                          dir.file("err") + "'";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto slurp = [](const std::string& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  r.out = slurp(dir.file("out"));
  r.err = slurp(dir.file("err"));
  return r;
}

TEST(CliModelLimits, ThreadsTheMachineCannotStartExitTwo) {
  if (!kAddressLimitUsable) {
    GTEST_SKIP() << "AddressSanitizer cannot start under ulimit -v; the normal build runs this";
  }
  const std::string args =
      "generate --target synthetic:tiny --prompt-ids 1,2 --max-new-tokens 2 --threads ";
  // 1 GiB of address space: speclab itself fits, 1023 stacks of 8 MiB do not.
  CliResult r = run_speclab_limited(args + "1024", 1 << 20);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.one_line_error()) << r.err;
  EXPECT_EQ(r.err.rfind("speclab: --threads: 1024 threads cannot be started on this machine (", 0),
            0u)
      << r.err;
  EXPECT_NE(r.err.find("expected a thread count it can start"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  // Within the limit a few threads still run.
  r = run_speclab_limited(args + "2", 1 << 20);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The largest count the options allow works on a machine without such a limit.
  r = run_speclab(args + "1024");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// generation.threads reaches the same check, the line naming the key where it was written.
TEST(CliModelLimits, ConfigThreadsTheMachineCannotStartExitTwo) {
  if (!kAddressLimitUsable) {
    GTEST_SKIP() << "AddressSanitizer cannot start under ulimit -v; the normal build runs this";
  }
  ScratchDir d;
  const std::string config = d.write("threads.yaml",
                                     "name: threads-test\n"
                                     "question: \"too many threads\"\n"
                                     "target: synthetic:tiny\n"
                                     "drafters:\n"
                                     "  lookup: lookup\n"
                                     "generation:\n"
                                     "  max_new_tokens: 8\n"
                                     "  threads: 1024\n"
                                     "measure:\n"
                                     "  cost_only: true\n"
                                     "sweep:\n"
                                     "  drafter: [lookup]\n"
                                     "  gamma: [2]\n"
                                     "  temperature: [0]\n");
  const CliResult r =
      run_speclab_limited("run '" + config + "' --out '" + d.file("out") + "' --no-plots", 1 << 20);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const size_t last = r.err.rfind('\n', r.err.size() - 2);
  const std::string last_line = r.err.substr(last == std::string::npos ? 0 : last + 1);
  EXPECT_NE(last_line.find("threads.yaml:8: generation.threads: 1024 threads cannot be started"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(d.file("out") + "/results.jsonl"));
}

}  // namespace
}  // namespace speclab
