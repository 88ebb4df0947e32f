// Golden cell ids and config hashes: every committed config (configs/*.yaml), plus a few
// `--set` variants that exercise the special axes (draft_temperature "same" and its dedupe,
// synthetic acceptance, trees at the first gamma only), loaded and expanded, compared to
// tests/data/sweep/cell_ids.json. The data file was written by this test on the tree before
// the sweep axes moved into one table (experiments/config/sweep_axes.h), so a passing test means
// that table reproduces the ids, rows and hashes `--resume` and the result files rely on,
// and that Cell::from_json reads those rows back.
//
// Regenerate (only when an id change is intended, and say so in the commit):
//   SPECLAB_WRITE_SWEEP_GOLDEN=1 build/test_experiments --gtest_filter='SweepGolden.*'
// $HOME is pinned during the test: some configs expand ${HOME} into drafter specs, which
// are part of the cell identity.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "experiments/config/sweep.h"

namespace speclab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* const kDataFile = SPECLAB_SOURCE_DIR "/tests/data/sweep/cell_ids.json";
const char* const kPinnedHome = "/home/speclab-golden";

// The variants beyond the committed configs: (config, overrides).
const std::vector<std::pair<std::string, std::vector<std::string>>> kVariants = {
    {"configs/default.yaml",
     {"sweep.drafter=[draft-2m, lookup]", "sweep.gamma=2", "sweep.temperature=[0, 0.5]",
      "sweep.draft_temperature=[same, 0.5, 0]", "sweep.top_k=[0, 40]", "sweep.top_p=[1.0, 0.9]"}},
    {"configs/default.yaml",
     {"sweep.drafter=lookup", "sweep.temperature=1", "sweep.gamma=[3, 1]",
      "sweep.lenience=[1.0, 0.5]", "sweep.gamma_policy=[fixed, entropy]", "sweep.p_min=[0, 0.2]",
      "sweep.synthetic_acceptance=[off, 0.5, [0.9, 0.6]]",
      "sweep.tree=[off, 2x2, \"3x1:sample\"]"}},
    {"configs/default.yaml", {"sweep.tree=[3x2x1, off]", "sweep.gamma=[2, 5]"}},
};

// Sets $HOME for the object's lifetime.
struct PinnedHome {
  std::optional<std::string> old;
  PinnedHome() {
    if (const char* h = std::getenv("HOME")) old = h;
    ::setenv("HOME", kPinnedHome, 1);
  }
  ~PinnedHome() {
    if (old)
      ::setenv("HOME", old->c_str(), 1);
    else
      ::unsetenv("HOME");
  }
};

std::string key_of(const std::string& config, const std::vector<std::string>& overrides) {
  std::string key = config;
  for (const auto& o : overrides) key += " --set " + o;
  return key;
}

// {config_hash, cells: [row...]} or {error: "..."} for one config.
nlohmann::json expand_one(const std::string& config, const std::vector<std::string>& overrides) {
  nlohmann::json out;
  try {
    const ExperimentConfig cfg =
        experiment_config_load(std::string(SPECLAB_SOURCE_DIR) + "/" + config, overrides);
    out["config_hash"] = cfg.config_hash();
    nlohmann::json cells = nlohmann::json::array();
    if (cfg.sweep)
      for (const Cell& c : sweep_expand(cfg)) cells.push_back(c.to_json());
    out["cells"] = cells;
  } catch (const InputError& e) {
    // Error texts name absolute paths; keep only that it failed.
    out["error"] = "InputError";
  }
  return out;
}

std::vector<std::pair<std::string, std::vector<std::string>>> all_inputs() {
  std::vector<std::string> configs;
  for (const auto& e : fs::directory_iterator(fs::path(SPECLAB_SOURCE_DIR) / "configs"))
    if (e.path().extension() == ".yaml")
      configs.push_back("configs/" + e.path().filename().string());
  std::sort(configs.begin(), configs.end());
  std::vector<std::pair<std::string, std::vector<std::string>>> inputs;
  for (const auto& c : configs) inputs.push_back({c, {}});
  for (const auto& v : kVariants) inputs.push_back(v);
  return inputs;
}

TEST(SweepGolden, CellIdsRowsAndConfigHashesAreUnchanged) {
  PinnedHome home;
  if (std::getenv("SPECLAB_WRITE_SWEEP_GOLDEN")) {
    nlohmann::json data = nlohmann::json::object();
    for (const auto& [config, overrides] : all_inputs())
      data[key_of(config, overrides)] = expand_one(config, overrides);
    fs::create_directories(fs::path(kDataFile).parent_path());
    // One cell per line: diffs name the cells that moved.
    std::ofstream out(kDataFile);
    out << "{\n";
    size_t k = 0;
    for (const auto& [key, entry] : data.items()) {
      out << (k++ ? ",\n" : "") << json(key).dump() << ": {";
      if (entry.contains("error")) {
        out << "\"error\": " << entry["error"].dump() << "}";
        continue;
      }
      out << "\"config_hash\": " << entry["config_hash"].dump() << ", \"cells\": [";
      for (size_t i = 0; i < entry["cells"].size(); ++i)
        out << (i ? "," : "") << "\n  " << entry["cells"][i].dump();
      out << "]}";
    }
    out << "\n}\n";
    GTEST_SKIP() << "wrote " << kDataFile;
  }
  std::ifstream in(kDataFile);
  ASSERT_TRUE(in) << kDataFile;
  const nlohmann::json data = nlohmann::json::parse(in);
  ASSERT_GE(data.size(), 18u);
  size_t n_cells = 0;
  for (const auto& [config, overrides] : all_inputs()) {
    const std::string key = key_of(config, overrides);
    if (!data.contains(key)) continue;  // a config added after the data file
    const nlohmann::json& want = data.at(key);
    const nlohmann::json got = expand_one(config, overrides);
    ASSERT_EQ(got.contains("error"), want.contains("error")) << key;
    if (want.contains("error")) continue;
    EXPECT_EQ(got["config_hash"], want["config_hash"]) << key;
    ASSERT_EQ(got["cells"].size(), want["cells"].size()) << key;
    for (size_t i = 0; i < want["cells"].size(); ++i) {
      // dump(): the JSON types too (4 vs 4.0), which the result files keep.
      EXPECT_EQ(got["cells"][i].dump(), want["cells"][i].dump()) << key << " cell " << i;
      // Cell::from_json reads the old code's rows back to the same row.
      EXPECT_EQ(Cell::from_json(want["cells"][i]).to_json().dump(), want["cells"][i].dump())
          << key << " cell " << i;
      ++n_cells;
    }
  }
  EXPECT_GT(n_cells, 100u);
}

}  // namespace
}  // namespace speclab
