// The CPU kernel path chosen by name: SPECLAB_MATMUL_ISA (checked before any verb runs, with
// the streaming and prefetch variables), `generate --matmul-isa` and `generation.matmul_isa`. A
// misspelt name or a path the CPU lacks is bad input (one line, exit 2), never a run of the default
// path under another name; a chosen path is the one the products run on and the one the output
// records.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/cpu_matmul.h"
#include "core/error.h"
#include "tests/experiments/cli_runner.h"

namespace speclab {
namespace {

using testing_util::CliResult;
using testing_util::run_speclab;
using testing_util::ScratchDir;

// A named path this CPU lacks ("" when it runs them all).
std::string a_path_this_cpu_lacks() {
  for (MatmulIsa isa : {MatmulIsa::kAmxBf16, MatmulIsa::kAvx512Bf16, MatmulIsa::kAvx512Vnni,
                        MatmulIsa::kAvx512, MatmulIsa::kAvx2}) {
    const bool runs = matmul_force_isa(isa);
    matmul_force_isa(MatmulIsa::kBest);
    if (!runs) {
      const char* names[] = {"",           "generic",    "avx2",   "avx512",
                             "avx512bf16", "avx512vnni", "amxbf16"};
      return names[static_cast<int>(isa)];
    }
  }
  return "";
}

TEST(MatmulIsaParse, NamesEveryPathAndRefusesOthersNamingWhere) {
  // "best" is the default path itself, so that forcing it overrides SPECLAB_MATMUL_ISA.
  const MatmulIsa best = matmul_isa_parse("best", "k");
  EXPECT_NE(best, MatmulIsa::kBest);
  ASSERT_TRUE(matmul_force_isa(best));
  const std::string best_name = matmul_isa();
  matmul_force_isa(MatmulIsa::kBest);
  EXPECT_EQ(best_name, matmul_isa()) << "without SPECLAB_MATMUL_ISA, kBest is the same path";
  EXPECT_EQ(matmul_isa_parse("generic", "k"), MatmulIsa::kGeneric);  // every CPU runs it
  for (const char* name :
       {"best", "generic", "avx2", "avx512", "avx512bf16", "avx512vnni", "amxbf16"}) {
    EXPECT_TRUE(matmul_isa_name_known(name)) << name;
  }
  for (const char* name : {"", "AVX512", "avx512vnnii", "int8", "avx512 "}) {
    EXPECT_FALSE(matmul_isa_name_known(name)) << name;
    try {
      matmul_isa_parse(name, "--matmul-isa");
      ADD_FAILURE() << "no InputError for '" << name << "'";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--matmul-isa: unknown kernel path '") +
                                           name + "'"),
                std::string::npos)
          << e.what();
    }
  }
  // Each path the CPU runs parses to itself; matmul_force_isa accepts what the parse returns.
  for (MatmulIsa isa : {MatmulIsa::kGeneric, MatmulIsa::kAvx2, MatmulIsa::kAvx512,
                        MatmulIsa::kAvx512Bf16, MatmulIsa::kAvx512Vnni, MatmulIsa::kAmxBf16}) {
    if (!matmul_force_isa(isa)) continue;
    const std::string name = matmul_isa();
    matmul_force_isa(MatmulIsa::kBest);
    EXPECT_EQ(matmul_isa_parse(name, "k"), isa) << name;
  }
  matmul_force_isa(MatmulIsa::kBest);
}

TEST(MatmulIsaParse, APathThisCpuLacksIsRefusedNamingThePathsItRuns) {
  const std::string lacking = a_path_this_cpu_lacks();
  if (lacking.empty()) {
    // This CPU runs every path: each parses (the refusal cannot be shown here).
    EXPECT_EQ(matmul_isa_parse("amxbf16", "k"), MatmulIsa::kAmxBf16);
    return;
  }
  try {
    matmul_isa_parse(lacking, "generation.matmul_isa");
    ADD_FAILURE() << "no InputError for '" << lacking << "'";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("generation.matmul_isa: this CPU lacks the instructions of the '" +
                        lacking + "' kernel path (it runs: best, generic"),
              std::string::npos)
        << what;
  }
}

TEST(CliMatmulIsa, AnUnknownEnvironmentNameStopsEveryVerbBeforeItRuns) {
  const CliResult r = run_speclab("--version", "SPECLAB_MATMUL_ISA=avx512vnnii");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.one_line_error()) << r.err;
  EXPECT_NE(r.err.find("SPECLAB_MATMUL_ISA: unknown kernel path 'avx512vnnii'"), std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  // Empty is unset; a known name runs.
  EXPECT_EQ(run_speclab("--version", "SPECLAB_MATMUL_ISA=").exit_code, 0);
  EXPECT_EQ(run_speclab("--version", "SPECLAB_MATMUL_ISA=generic").exit_code, 0);
  const std::string lacking = a_path_this_cpu_lacks();
  if (!lacking.empty()) {
    const CliResult l = run_speclab("--version", "SPECLAB_MATMUL_ISA=" + lacking);
    EXPECT_EQ(l.exit_code, 2);
    EXPECT_TRUE(l.one_line_error()) << l.err;
    EXPECT_NE(l.err.find("this CPU lacks the instructions of the '" + lacking + "'"),
              std::string::npos)
        << l.err;
  }
}

TEST(CliMatmulIsa, MisspeltStreamingPrefetchOrLayoutStopsEveryVerb) {
  const CliResult s = run_speclab("--version", "SPECLAB_MATMUL_STREAM=whole");
  EXPECT_EQ(s.exit_code, 2);
  EXPECT_TRUE(s.one_line_error()) << s.err;
  EXPECT_NE(s.err.find("SPECLAB_MATMUL_STREAM: unknown value 'whole' (expected rows, rows-ahead "
                       "or segments)"),
            std::string::npos)
      << s.err;
  const CliResult p = run_speclab("--version", "SPECLAB_MATMUL_PREFETCH=L2");
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_TRUE(p.one_line_error()) << p.err;
  EXPECT_NE(p.err.find("SPECLAB_MATMUL_PREFETCH: unknown value 'L2' (expected l1 or l2)"),
            std::string::npos)
      << p.err;
  const CliResult l = run_speclab("--version", "SPECLAB_MATMUL_LAYOUT=pair");
  EXPECT_EQ(l.exit_code, 2);
  EXPECT_TRUE(l.one_line_error()) << l.err;
  EXPECT_NE(l.err.find("SPECLAB_MATMUL_LAYOUT: unknown value 'pair' (expected rows or pairs)"),
            std::string::npos)
      << l.err;
  for (const char* ok : {"SPECLAB_MATMUL_STREAM=rows-ahead", "SPECLAB_MATMUL_STREAM=",
                         "SPECLAB_MATMUL_PREFETCH=l2", "SPECLAB_MATMUL_LAYOUT=rows"}) {
    EXPECT_EQ(run_speclab("--version", ok).exit_code, 0) << ok;
  }
}

TEST(CliMatmulIsa, GenerateRunsOnTheNamedPathAndSaysSo) {
  const std::string gen =
      "generate --target synthetic:tiny --prompt-ids 1,2,3 --max-new-tokens 4 --temperature 0 "
      "--json";
  const CliResult generic = run_speclab(gen + " --matmul-isa generic");
  ASSERT_EQ(generic.exit_code, 0) << generic.err;
  const auto gj = nlohmann::json::parse(generic.out);
  EXPECT_EQ(gj["matmul_isa"], "generic");
  // The layout a load chose is reported beside it (every BF16 matrix of the tiny shape fits).
  for (const char* layout : {"rows", "pairs"}) {
    const CliResult g = run_speclab(gen, std::string("SPECLAB_MATMUL_LAYOUT=") + layout);
    ASSERT_EQ(g.exit_code, 0) << g.err;
    EXPECT_EQ(nlohmann::json::parse(g.out)["target_weights_layout"],
              std::string(layout) == "rows" ? "rows" : "row pairs")
        << layout;
    const CliResult i = run_speclab("inspect synthetic:tiny --json",
                                    std::string("SPECLAB_MATMUL_LAYOUT=") + layout);
    ASSERT_EQ(i.exit_code, 0) << i.err;
    EXPECT_EQ(nlohmann::json::parse(i.out)["weights_layout"],
              std::string(layout) == "rows" ? "rows" : "row pairs")
        << layout;
  }
  // The option wins over the environment, "best" included.
  const CliResult over = run_speclab(gen + " --matmul-isa generic", "SPECLAB_MATMUL_ISA=best");
  ASSERT_EQ(over.exit_code, 0) << over.err;
  EXPECT_EQ(nlohmann::json::parse(over.out)["matmul_isa"], "generic");
  const CliResult best_over = run_speclab(gen + " --matmul-isa best", "SPECLAB_MATMUL_ISA=generic");
  ASSERT_EQ(best_over.exit_code, 0) << best_over.err;
  EXPECT_EQ(nlohmann::json::parse(best_over.out)["matmul_isa"], matmul_isa());
  // The default path's greedy tokens are the generic path's (both keep FP32 activations).
  const CliResult best = run_speclab(gen);
  ASSERT_EQ(best.exit_code, 0) << best.err;
  const auto bj = nlohmann::json::parse(best.out);
  EXPECT_EQ(bj["tokens"], gj["tokens"]);
  EXPECT_EQ(bj["matmul_isa"], matmul_isa());

  const CliResult bad = run_speclab(gen + " --matmul-isa int8");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(bad.one_line_error()) << bad.err;
  EXPECT_NE(bad.err.find("--matmul-isa: unknown kernel path 'int8'"), std::string::npos) << bad.err;
  EXPECT_TRUE(bad.out.empty()) << bad.out;
}

std::string tiny_config(const std::string& generation_extra) {
  return testing_util::tiny_zoo_config_head("isa", 2) +
         "generation:\n"
         "  max_new_tokens: 8\n"
         "  warmup: 0\n"
         "  threads: 1\n"
         "  ctx: 256\n"
         "  ignore_eos: true\n" +
         generation_extra +
         "measure:\n"
         "  bootstrap_resamples: 20\n"
         "sweep:\n"
         "  drafter: [d]\n"
         "  gamma: [2]\n"
         "  temperature: [0]\n";
}

TEST(CliMatmulIsa, ConfigKeyChoosesThePathTheRowsRecord) {
  ScratchDir d;
  const std::string cfg = d.write("isa.yaml", tiny_config("  matmul_isa: generic\n"));
  const CliResult r = run_speclab("run '" + cfg + "' --out '" + d.file("out") + "' --no-plots");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = testing_util::read_jsonl(d.file("out/results.jsonl"));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["run_matmul_isa"], "generic");
  EXPECT_EQ(rows[0]["greedy_outputs_match"], true);  // exactness holds on the chosen path
}

TEST(CliMatmulIsa, ConfigKeyWithAnUnknownPathIsRefusedBeforeAnyCell) {
  ScratchDir d;
  const std::string cfg = d.write("isa.yaml", tiny_config("  matmul_isa: avx-512\n"));
  const CliResult r = run_speclab("run '" + cfg + "' --out '" + d.file("out") + "' --no-plots");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.one_line_error()) << r.err;
  EXPECT_NE(r.err.find("generation.matmul_isa: expected best, generic, avx2, avx512, avx512bf16, "
                       "avx512vnni or amxbf16, got 'avx-512'"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(testing_util::file_exists(d.file("out/results.jsonl")));
  const std::string lacking = a_path_this_cpu_lacks();
  if (!lacking.empty()) {
    const std::string cfg2 = d.write("isa2.yaml", tiny_config("  matmul_isa: " + lacking + "\n"));
    const CliResult l = run_speclab("run '" + cfg2 + "' --out '" + d.file("out2") + "' --no-plots");
    EXPECT_EQ(l.exit_code, 2);
    EXPECT_TRUE(l.one_line_error()) << l.err;
    EXPECT_NE(l.err.find("generation.matmul_isa: this CPU lacks the instructions of the '" +
                         lacking + "'"),
              std::string::npos)
        << l.err;
    EXPECT_FALSE(testing_util::file_exists(d.file("out2/results.jsonl")));
  }
}

}  // namespace
}  // namespace speclab
