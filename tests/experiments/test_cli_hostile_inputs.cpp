// Hostile files and arguments through the real binary: JSON nested 200,000 deep in every JSON
// input the CLI reads, special files (/dev/zero, a FIFO) where a regular file is expected,
// bytes that are not UTF-8 in the error line, a NUL byte in a YAML scalar. Each is exit code 2
// with one line on stderr that names the file and what was wrong; none hangs or crashes.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

using testing_util::CliResult;
using testing_util::run_speclab;
using testing_util::ScratchDir;

void expect_refused(const CliResult& r, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.one_line_error()) << "not one line: " << r.err;
  for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << r.err;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const std::string kDeep = std::string(200000, '[') + std::string(200000, ']');

std::string zoo(const std::string& name) {
  return std::string(SPECLAB_SOURCE_DIR) + "/models/zoo/" + name;
}

// A small real sweep on the zoo pair; `prompts` is the prompts.file value.
std::string zoo_config(const ScratchDir& d, const std::string& prompts) {
  return d.write("cfg.yaml",
                 "name: hostile\n"
                 "question: \"q\"\n"
                 "target: " +
                     zoo("tiny-target-5m") +
                     "\n"
                     "drafters:\n"
                     "  d: " +
                     zoo("tiny-draft-0.5m") +
                     "\n"
                     "prompts:\n"
                     "  file: " +
                     prompts +
                     "\n"
                     "generation:\n"
                     "  max_new_tokens: 8\n"
                     "  warmup: 0\n"
                     "  threads: 1\n"
                     "  ctx: 128\n"
                     "sweep:\n"
                     "  drafter: [d]\n"
                     "  gamma: [2]\n"
                     "  temperature: [0]\n");
}

// A result row as `run` writes them (enough for merge and check to read).
const char* kRow = R"({"cell_id": "c1", "alpha": 0.5})";

// Seen: --out '' ran into results/<name>, and --trace '', --profiles '', --bands '', --junit ''
// and table --table '' were as if not given. Expected: an empty value is refused, naming the
// option, before anything runs or is written.
TEST(CliHostileInputs, EmptyOptionValuesAreRefused) {
  ScratchDir d;
  const std::string gate = std::string(SPECLAB_SOURCE_DIR) + "/configs/gate.yaml";
  const std::string baseline = std::string(SPECLAB_SOURCE_DIR) + "/results/baselines/gate.jsonl";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"run '" + gate + "' --no-plots --out ''", "--out"},
      {"run '" + gate + "' --no-plots --out '" + d.file("o") + "' --trace ''", "--trace"},
      {"predict '" + gate + "' --out '" + d.file("o") + "' --profiles ''", "--profiles"},
      {"check '" + gate + "' --baseline '" + baseline + "' --bands ''", "--bands"},
      {"check '" + gate + "' --baseline '" + baseline + "' --junit ''", "--junit"},
      {"table '" + baseline + "' --table ''", "--table"},
      {"table '" + baseline + "' --out ''", "--out"},
  };
  for (const auto& [args, option] : cases) {
    SCOPED_TRACE(args);
    expect_refused(run_speclab(args), {"arguments: " + option +
                                       ": an empty value (expected one; leave the option "
                                       "out for its default)"});
  }
  EXPECT_TRUE(std::filesystem::is_empty(d.path));
}

// Seen: `run --out` and `predict --out` naming a link to nothing refused it, then removed the
// link (the refused run's clean-up took it for a folder it had made). Expected: the link stays.
TEST(CliHostileInputs, AnOutputFolderThatIsALinkToNothingStays) {
  ScratchDir d;
  const std::string gate = std::string(SPECLAB_SOURCE_DIR) + "/configs/gate.yaml";
  std::filesystem::create_symlink(d.file("nowhere"), d.file("dangling"));
  for (const std::string& verb : {std::string("run"), std::string("predict")}) {
    SCOPED_TRACE(verb);
    expect_refused(run_speclab(verb + " '" + gate + "' --out '" + d.file("dangling") + "'" +
                               (verb == "run" ? " --no-plots" : "")),
                   {d.file("dangling"), "is a symbolic link to nothing"});
    EXPECT_TRUE(std::filesystem::is_symlink(d.file("dangling")));
  }
}

TEST(CliHostileInputs, DevZeroAsConfig) {
  expect_refused(run_speclab("run /dev/zero --no-plots"),
                 {"/dev/zero: is a character device, expected a regular file (config file)"});
}

TEST(CliHostileInputs, FifoAsConfigDoesNotHang) {
  ScratchDir d;
  ASSERT_EQ(mkfifo(d.file("cfg.yaml").c_str(), 0600), 0);
  expect_refused(run_speclab("run '" + d.file("cfg.yaml") + "' --no-plots"),
                 {d.file("cfg.yaml"), "is a FIFO (named pipe), expected a regular file"});
}

// Seen: memory grew to GBs, then a misleading "no prompts".
TEST(CliHostileInputs, DevZeroAsPromptsFile) {
  ScratchDir d;
  expect_refused(run_speclab("run '" + zoo_config(d, "/dev/zero") + "' --no-plots --out '" +
                             d.file("out") + "'"),
                 {"/dev/zero: is a character device, expected a regular file (prompt file)"});
  EXPECT_FALSE(testing_util::file_exists(d.file("out/results.jsonl")));
}

TEST(CliHostileInputs, PromptLineNestedDeep) {
  ScratchDir d;
  const std::string prompts = d.write(
      "p.jsonl", "{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \"b\", \"text\": " + kDeep + "}\n");
  expect_refused(
      run_speclab("run '" + zoo_config(d, prompts) + "' --no-plots --out '" + d.file("out") + "'"),
      {prompts + ":2: JSON nested deeper than 256 levels"});
}

// Seen: OOM-killed at 15 GB.
TEST(CliHostileInputs, DevZeroAsReplayTrace) {
  expect_refused(run_speclab("simulate --replay /dev/zero --gamma 2"),
                 {"/dev/zero: is a character device, expected a regular file (trace file)"});
}

TEST(CliHostileInputs, ReplayTraceNestedDeep) {
  ScratchDir d;
  const std::string t = d.write("t.jsonl", "{\"n_draft\": 2, \"n_accepted\": " + kDeep + "}\n");
  expect_refused(run_speclab("simulate --replay '" + t + "' --gamma 2"),
                 {t + ":1: JSON nested deeper than 256 levels"});
}

TEST(CliHostileInputs, DevZeroAsTokenizer) {
  expect_refused(run_speclab("tokenize --tokenizer /dev/zero --text hi"),
                 {"/dev/zero: is a character device, expected a regular file"});
}

TEST(CliHostileInputs, MergeRowNestedDeep) {
  ScratchDir d;
  const std::string a = d.write("a.jsonl", std::string(kRow) + "\n");
  const std::string b =
      d.write("b.jsonl", std::string(kRow) + "\n{\"cell_id\": \"c2\", \"x\": " + kDeep + "}\n");
  expect_refused(run_speclab("merge '" + d.file("m.jsonl") + "' '" + a + "' '" + b + "'"),
                 {b + ":2: JSON nested deeper than 256 levels"});
  EXPECT_FALSE(testing_util::file_exists(d.file("m.jsonl")));
}

TEST(CliHostileInputs, CheckBaselineRowNestedDeep) {
  ScratchDir d;
  d.write("p.jsonl", "{\"id\": \"a\", \"text\": \"x\"}\n");
  const std::string base = d.write("base.jsonl", "{\"cell_id\": \"c\", \"x\": " + kDeep + "}\n");
  expect_refused(run_speclab("check '" + zoo_config(d, "p.jsonl") + "' --baseline '" + base + "'"),
                 {base + ":1: JSON nested deeper than 256 levels"});
}

TEST(CliHostileInputs, DevZeroAsBaseline) {
  ScratchDir d;
  d.write("p.jsonl", "{\"id\": \"a\", \"text\": \"x\"}\n");
  expect_refused(run_speclab("check '" + zoo_config(d, "p.jsonl") + "' --baseline /dev/zero"),
                 {"/dev/zero: is a character device, expected a regular file (results file)"});
}

// Seen: invalid UTF-8 from the input quoted raw in the error line.
TEST(CliHostileInputs, InvalidUtf8InTheErrorLineIsEscaped) {
  ScratchDir d;
  const CliResult r = run_speclab("run '" + d.path.string() + "/cfg\xff\xfe.yaml' --no-plots");
  expect_refused(r, {"cfg\\xff\\xfe.yaml: cannot open config file (no such file)"});
  EXPECT_EQ(r.err.find('\xff'), std::string::npos) << "raw byte in: " << r.err;
}

// Seen: a NUL byte inside a YAML scalar was accepted (and cut the path it was in short).
TEST(CliHostileInputs, NulByteInYamlScalar) {
  ScratchDir d;
  const std::string cfg = zoo_config(d, std::string("p.jsonl\0x", 9));
  expect_refused(run_speclab("run '" + cfg + "' --no-plots --out '" + d.file("out") + "'"),
                 {cfg + ":7: NUL byte (the config must be text)"});
}

// Seen: `--draft-temperature nan` or `-5` accepted, silently "same as target"; NaN passed
// CLI::Range for every float flag.
TEST(CliHostileInputs, NumericFlagsRefuseNanInfinityAndOutOfRange) {
  const std::string base = "generate --target synthetic:tiny --prompt-ids 1,2 --draft lookup ";
  for (const std::string flag :
       {"--draft-temperature", "--temperature", "--top-p", "--p-min", "--lenience"})
    for (const std::string value : {"nan", "inf", "-inf", "-5"})
      expect_refused(run_speclab(base + flag + " " + value),
                     {"speclab: arguments: " + flag, "'" + value + "' is not a finite number in"});
}

// Seen: `--tree ""` accepted as "no tree".
TEST(CliHostileInputs, EmptyTreeShapeIsAnError) {
  expect_refused(
      run_speclab("generate --target synthetic:tiny --prompt-ids 1,2 --draft lookup --tree ''"),
      {"--tree", "empty value (expected a tree shape such as 3x2x1 or 2x2:sample)"});
}

// Seen: `--ctx 1000000000` ended in std::bad_alloc (exit 3).
TEST(CliHostileInputs, GenerateContextBeyondTheModelIsRefused) {
  expect_refused(run_speclab("generate --target synthetic:tiny --prompt-ids 1,2 --ctx 1000000000"),
                 {"--ctx", "1000000000 not in range"});
  const std::string target = zoo("tiny-target-5m");
  expect_refused(run_speclab("generate --target '" + target + "' --prompt-ids 1,2 --ctx 100000"),
                 {"--ctx: 100000 exceeds the target's context length 256 (" + target + ")"});
}

std::string with_line(std::string config, const std::string& after, const std::string& line) {
  config.insert(config.find(after) + after.size(), line);
  return config;
}

// Seen: `generation.repeats: 1000000000` accepted, then running forever without progress.
TEST(CliHostileInputs, RepeatsBeyondTheLimitNamesTheKey) {
  ScratchDir d;
  d.write("p.jsonl", "{\"id\": \"a\", \"text\": \"x\"}\n");
  std::string cfg =
      with_line(slurp(zoo_config(d, "p.jsonl")), "generation:\n", "  repeats: 1000000000\n");
  d.write("cfg.yaml", cfg);
  expect_refused(
      run_speclab("run '" + d.file("cfg.yaml") + "' --no-plots --out '" + d.file("out") + "'"),
      {"generation.repeats: expected an integer in 1..1000, got 1000000000"});
}

// Seen: a sweep of 10^9 cells: no message, memory grew, then "internal error: bad_alloc".
TEST(CliHostileInputs, SweepOfTooManyCellsNamesTheKey) {
  ScratchDir d;
  d.write("p.jsonl", "{\"id\": \"a\", \"text\": \"x\"}\n");
  auto list = [](double scale) {
    std::string s = "[";
    for (int i = 1; i <= 1000; ++i) s += (i > 1 ? ", " : "") + std::to_string(i * scale);
    return s + "]";
  };
  std::string cfg = slurp(zoo_config(d, "p.jsonl"));
  cfg.replace(cfg.find("  temperature: [0]"), 18, "  temperature: " + list(0.001));
  cfg += "  top_p: " + list(0.001) + "\n  p_min: " + list(0.0009) + "\n";
  d.write("cfg.yaml", cfg);
  const CliResult r =
      run_speclab("run '" + d.file("cfg.yaml") + "' --no-plots --out '" + d.file("out") + "'");
  expect_refused(r, {"sweep: the axes' lengths multiply to more than 10000 cells (the limit)"});
}

}  // namespace
}  // namespace speclab
