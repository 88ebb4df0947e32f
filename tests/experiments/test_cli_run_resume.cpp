// `speclab run` under interruption, for real (fork/exec of SPECLAB_BIN):
//   - SIGKILL at random moments, several times, each followed by `--resume`: the final
//     results.jsonl holds exactly the cells of an uninterrupted run, each once, every line
//     a complete JSON row;
//   - SIGINT: exit code 130 and only complete rows; --resume completes the sweep;
//   - a second run on the same --out while one holds it: exit 2, the message names the lock.
//
// The model is built here, so the test depends on no trained file: a 2-layer random Llama
// (config.json + model.safetensors) with the committed 400-piece SentencePiece fixture as
// its tokenizer.model (prompts are tokenized with the target's tokenizer, and synthetic:
// models have none). Drafters: prompt lookup and self-speculation (skip layer 1).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/experiments/experiments_test_util.h"
#include "tests/formats/file_writers.h"

namespace speclab {
namespace {

using testing_util::ScratchDir;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A random-weight Llama in an HF directory: vocab 400 (the fixture's), dim 128, 2 layers.
void write_tiny_model(const std::string& dir) {
  fs::create_directories(dir);
  const int vocab = 400, dim = 128, hidden = 256, n_layers = 2, n_heads = 4, n_kv = 2, hd = 32;
  nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}},
                           {"model_type", "llama"},
                           {"vocab_size", vocab},
                           {"hidden_size", dim},
                           {"intermediate_size", hidden},
                           {"num_hidden_layers", n_layers},
                           {"num_attention_heads", n_heads},
                           {"num_key_value_heads", n_kv},
                           {"head_dim", hd},
                           {"max_position_embeddings", 512},
                           {"rms_norm_eps", 1e-5},
                           {"rope_theta", 10000.0},
                           {"tie_word_embeddings", true},
                           {"bos_token_id", 1},
                           {"eos_token_id", 2}};
  std::ofstream(dir + "/config.json") << config.dump(1);
  std::mt19937 gen(7);
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
  std::vector<testing::SafetensorsTensor> t;
  t.push_back(matrix("model.embed_tokens.weight", vocab, dim));
  for (int l = 0; l < n_layers; l++) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.push_back(matrix(p + "self_attn.q_proj.weight", n_heads * hd, dim));
    t.push_back(matrix(p + "self_attn.k_proj.weight", n_kv * hd, dim));
    t.push_back(matrix(p + "self_attn.v_proj.weight", n_kv * hd, dim));
    t.push_back(matrix(p + "self_attn.o_proj.weight", dim, n_heads * hd));
    t.push_back(matrix(p + "mlp.gate_proj.weight", hidden, dim));
    t.push_back(matrix(p + "mlp.up_proj.weight", hidden, dim));
    t.push_back(matrix(p + "mlp.down_proj.weight", dim, hidden));
    t.push_back(ones(p + "input_layernorm.weight", dim));
    t.push_back(ones(p + "post_attention_layernorm.weight", dim));
  }
  t.push_back(ones("model.norm.weight", dim));
  testing::write_bytes(dir + "/model.safetensors", testing::safetensors_build(t));
  fs::copy_file(std::string(SPECLAB_SOURCE_DIR) + "/tests/data/tiny_spm_bpe.model",
                dir + "/tokenizer.model", fs::copy_options::overwrite_existing);
}

// 2 drafters x 3 gammas x 2 temperatures = 12 cells, 3 prompts x 48 new tokens.
std::string write_config(const ScratchDir& d) {
  write_tiny_model(d.file("model"));
  d.write("prompts.jsonl",
          "{\"id\": \"p0\", \"text\": \"the quick brown fox jumps over the lazy dog\"}\n"
          "{\"id\": \"p1\", \"text\": \"once upon a time there was a little house\"}\n"
          "{\"id\": \"p2\", \"text\": \"to be or not to be, that is the question\"}\n");
  return d.write("tiny.yaml",
                 "name: resume-test\n"
                 "question: \"Does an interrupted sweep resume to the same cells?\"\n"
                 "target: model\n"
                 "drafters:\n"
                 "  lookup: \"lookup\"\n"
                 "  self: \"self:skip=1\"\n"
                 "prompts:\n"
                 "  file: prompts.jsonl\n"
                 "generation:\n"
                 "  max_new_tokens: 48\n"
                 "  seed: 0\n"
                 "  repeats: 1\n"
                 "  warmup: 0\n"
                 "  threads: 1\n"
                 "  ctx: 128\n"
                 "  ignore_eos: true\n"
                 "measure:\n"
                 "  cost_curve_max_k: 4\n"
                 "  bootstrap_resamples: 50\n"
                 "sweep:\n"
                 "  drafter: [lookup, self]\n"
                 "  gamma: [1, 2, 3]\n"
                 "  temperature: [0, 1]\n");
}

// fork/exec of `speclab run CONFIG --out OUT [extra] --no-plots`, stdout/stderr to files.
pid_t spawn_run(const std::string& config, const std::string& out, const std::string& log,
                const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {SPECLAB_BIN, "run", config, "--out", out, "--no-plots"};
  args.insert(args.end(), extra.begin(), extra.end());
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// Exit code, or 128 + signal for a process killed by a signal.
int wait_exit(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The cell ids of a results file, in order; fails the test on a torn or non-JSON line.
std::vector<std::string> cell_ids_of(const std::string& results_path, bool allow_torn_tail) {
  const std::string text = slurp(results_path);
  std::vector<std::string> ids;
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    if (nl == std::string::npos) {
      EXPECT_TRUE(allow_torn_tail) << results_path << ": torn final line: " << text.substr(at, 80);
      break;
    }
    const auto row = nlohmann::json::parse(text.substr(at, nl - at), nullptr, false);
    EXPECT_TRUE(row.is_object() && row.contains("cell_id")) << "bad row: " << text.substr(at, 80);
    if (row.is_object() && row.contains("cell_id"))
      ids.push_back(row["cell_id"].get<std::string>());
    at = nl + 1;
  }
  return ids;
}

size_t complete_rows(const std::string& results_path) {
  const std::string text = slurp(results_path);
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST(CliRunResume, SigkillAtRandomPointsThenResumeEqualsUninterrupted) {
  ScratchDir d;
  const std::string config = write_config(d);

  // Reference: one uninterrupted run.
  const auto t0 = Clock::now();
  const pid_t ref = spawn_run(config, d.file("ref"), d.file("ref.log"));
  ASSERT_EQ(wait_exit(ref), 0) << slurp(d.file("ref.log"));
  const double full_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::vector<std::string> ref_ids = cell_ids_of(d.file("ref/results.jsonl"), false);
  ASSERT_EQ(ref_ids.size(), 12u);

  // Killed runs, four times: wait until the run has appended r more rows (r random in 0..2;
  // r = 0 kills during start-up), then SIGKILL it after a random fraction of one cell's time,
  // so kills land before, inside and between cells and while a row is written. Then
  // --resume. Finally one run to completion.
  std::mt19937 gen(std::random_device{}());
  const double cell_s = full_s / 12;
  std::uniform_real_distribution<double> delay(0.0, cell_s);
  std::uniform_int_distribution<int> more_rows(0, 2);
  const std::string out = d.file("killed"), results = out + "/results.jsonl";
  auto rows_now = [&] { return fs::exists(results) ? complete_rows(results) : size_t{0}; };
  int n_killed = 0;
  std::vector<size_t> rows_at_kill;
  for (int round = 0; round < 4; round++) {
    const size_t target_rows = rows_now() + static_cast<size_t>(more_rows(gen));
    const pid_t pid =
        spawn_run(config, out, d.file("kill.log"),
                  round == 0 ? std::vector<std::string>{} : std::vector<std::string>{"--resume"});
    int status = 0;
    bool exited = false;
    while (rows_now() < target_rows && !exited) {
      exited = waitpid(pid, &status, WNOHANG) == pid;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const auto until = Clock::now() + std::chrono::duration<double>(delay(gen));
    while (!exited && Clock::now() < until) {
      exited = waitpid(pid, &status, WNOHANG) == pid;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (exited) {  // finished before the kill: a complete run; later rounds resume a done sweep
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(d.file("kill.log"));
      continue;
    }
    kill(pid, SIGKILL);
    EXPECT_EQ(wait_exit(pid), 128 + SIGKILL);
    n_killed++;
    rows_at_kill.push_back(rows_now());
    if (fs::exists(results)) cell_ids_of(results, /*allow_torn_tail=*/true);  // no bad lines
  }
  const pid_t last = spawn_run(config, out, d.file("last.log"), {"--resume"});
  ASSERT_EQ(wait_exit(last), 0) << slurp(d.file("last.log"));

  std::vector<std::string> ids = cell_ids_of(results, false);
  std::set<std::string> unique(ids.begin(), ids.end());
  EXPECT_EQ(unique.size(), ids.size()) << "duplicated rows";
  EXPECT_EQ(unique, std::set<std::string>(ref_ids.begin(), ref_ids.end()));
  EXPECT_FALSE(fs::exists(out + "/.lock")) << "lock file left by a completed run";
  std::ostringstream where;
  for (size_t r : rows_at_kill) where << r << " ";
  std::printf("[ resume ] uninterrupted %.1f s; %d kills, complete rows at each kill: %s\n", full_s,
              n_killed, where.str().c_str());
  EXPECT_GE(n_killed, 1);
  // At least one kill came after some rows and before the last (the sweep really resumed).
  EXPECT_TRUE(std::any_of(rows_at_kill.begin(), rows_at_kill.end(),
                          [](size_t r) { return r > 0 && r < 12; }));
}

TEST(CliRunResume, SigintStopsWithCompleteRowsAndExit130) {
  ScratchDir d;
  const std::string config = write_config(d);
  const std::string out = d.file("out"), results = out + "/results.jsonl";
  const pid_t pid = spawn_run(config, out, d.file("run.log"));
  // Interrupt once the first row is written (the handler is installed by then).
  const auto give_up = Clock::now() + std::chrono::seconds(300);
  int status = 0;
  bool exited = false;
  while (!(fs::exists(results) && complete_rows(results) >= 1) && Clock::now() < give_up) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_FALSE(exited) << "the run ended before it could be interrupted: "
                       << slurp(d.file("run.log"));
  kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 130) << slurp(d.file("run.log"));
  const std::string log = slurp(d.file("run.log"));
  EXPECT_NE(log.find("interrupted"), std::string::npos) << log;
  EXPECT_NE(log.find("--resume"), std::string::npos) << log;
  const std::vector<std::string> ids = cell_ids_of(results, /*allow_torn_tail=*/false);
  EXPECT_GE(ids.size(), 1u);
  EXPECT_LT(ids.size(), 12u);
  EXPECT_FALSE(fs::exists(out + "/.lock"));

  const pid_t again = spawn_run(config, out, d.file("resume.log"), {"--resume"});
  ASSERT_EQ(wait_exit(again), 0) << slurp(d.file("resume.log"));
  const std::vector<std::string> all = cell_ids_of(results, false);
  EXPECT_EQ(all.size(), 12u);
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), 12u);
}

TEST(CliRunResume, SecondRunOnTheSameOutIsRefusedNamingTheLock) {
  ScratchDir d;
  const std::string config = write_config(d);
  const std::string out = d.file("out");
  const pid_t first = spawn_run(config, out, d.file("first.log"));
  const auto give_up = Clock::now() + std::chrono::seconds(120);
  while (!fs::exists(out + "/.lock") && Clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_TRUE(fs::exists(out + "/.lock")) << slurp(d.file("first.log"));

  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, std::vector<std::string>{"--resume"}}) {
    const pid_t second = spawn_run(config, out, d.file("second.log"), extra);
    EXPECT_EQ(wait_exit(second), 2);
    const std::string err = slurp(d.file("second.log"));
    EXPECT_NE(err.find(out + "/.lock"), std::string::npos) << err;
    EXPECT_NE(err.find("in use by another speclab run"), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
  kill(first, SIGKILL);
  wait_exit(first);
  // The rows the first run wrote before the kill are intact.
  if (fs::exists(out + "/results.jsonl")) cell_ids_of(out + "/results.jsonl", true);
}

// A prompt that with max_new_tokens does not fit in generation.ctx: refused when the
// session starts, naming the prompt file, line and id, before any row is written.
TEST(CliRunRefusals, PromptLongerThanTheContextIsRefusedBeforeWork) {
  ScratchDir d;
  std::string config = slurp(write_config(d));
  config.replace(config.find("  ctx: 128"), 10, "  ctx: 64");
  d.write("tiny.yaml", config);
  std::string long_text;
  for (int i = 0; i < 30; i++) long_text += "the quick brown fox jumps over the lazy dog ";
  d.write("prompts.jsonl",
          "{\"id\": \"short\", \"text\": \"hi\"}\n{\"id\": \"long\", \"text\": \"" + long_text +
              "\"}\n");
  const pid_t pid = spawn_run(d.file("tiny.yaml"), d.file("out"), d.file("run.log"));
  EXPECT_EQ(wait_exit(pid), 2);
  const std::string log = slurp(d.file("run.log"));
  EXPECT_NE(log.find(d.file("prompts.jsonl") + ":2: prompt 'long' has"), std::string::npos) << log;
  EXPECT_NE(log.find("exceeds generation.ctx = 64"), std::string::npos) << log;
  EXPECT_EQ(complete_rows(d.file("out/results.jsonl")), 0u);
}

}  // namespace
}  // namespace speclab
