// Runs the built speclab executable (SPECLAB_BIN) and captures its exit code and output:
// the CLI tests check exit codes and the one-line error contract through it.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/experiments/experiments_test_util.h"

namespace speclab::testing_util {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
  // stderr is exactly one non-empty line (the bad-input contract).
  bool one_line_error() const { return !err.empty() && err.find('\n') == err.size() - 1; }
};

// `args` is appended to the command line as is (quote paths yourself); `env`, when given,
// sets variables for the executable through env(1), e.g. "SPECLAB_MEMORY_LIMIT=1000".
inline CliResult run_speclab(const std::string& args, const std::string& env = "") {
  ScratchDir dir;
  const std::string out_path = dir.file("stdout"), err_path = dir.file("stderr");
  const std::string cmd = (env.empty() ? std::string() : "env " + env + " ") + "'" + SPECLAB_BIN +
                          "' " + args + " >'" + out_path + "' 2>'" + err_path + "'";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto slurp = [](const std::string& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

inline bool file_exists(const std::string& p) { return std::ifstream(p).good(); }

// A file's bytes ("" when it cannot be read).
inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The rows of a JSONL file (results.jsonl, predictions.jsonl), blank lines skipped.
inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

// "1,2,3" for --prompt-ids.
inline std::string ids_arg(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); i++) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

// The head of an experiment config over the tiny zoo: name, question, the 5M target, drafter
// `d` (the 0.5M draft) plus `extra_drafters` (lines such as "  lookup: lookup\n"), and the tiny
// in-domain prompts limited to `limit`; the caller adds generation, measure and sweep.
inline std::string tiny_zoo_config_head(const std::string& name, int limit,
                                        const std::string& extra_drafters = "") {
  const std::string src = SPECLAB_SOURCE_DIR;
  return "name: " + name + "\nquestion: \"q\"\ntarget: " + src +
         "/models/zoo/tiny-target-5m\ndrafters:\n  d: " + src + "/models/zoo/tiny-draft-0.5m\n" +
         extra_drafters + "prompts:\n  file: " + src +
         "/configs/prompts/tiny-in-domain.jsonl\n  limit: " + std::to_string(limit) + "\n";
}

inline std::string smollm2_gguf() {
  const char* cache = std::getenv("SPECLAB_CACHE");
  const char* home = std::getenv("HOME");
  return (cache ? std::string(cache) : std::string(home ? home : "/root") + "/.cache/speclab") +
         "/SmolLM2-135M-Instruct.Q4_1.gguf";
}

}  // namespace speclab::testing_util
