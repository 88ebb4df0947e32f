// The schema table (experiments/config/config_schema.cpp) against what it describes: the committed
// docs/config-reference.md must be its current rendering, and every default it states as a
// value must be what the loader does when the key is absent.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "experiments/config/config_schema.h"
#include "experiments/config/experiment_config.h"
#include "tests/experiments/experiments_test_util.h"

namespace speclab {
namespace {

using testing_util::ScratchDir;

TEST(ConfigSchema, ReferenceIsCurrent) {
  const std::string path = std::string(SPECLAB_SOURCE_DIR) + "/docs/config-reference.md";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path << " missing: build/bin/speclab config-reference > " << path;
  std::stringstream committed;
  committed << in.rdbuf();
  EXPECT_EQ(committed.str(), config_reference_markdown())
      << path << " is stale: regenerate it with `build/bin/speclab config-reference > "
      << "docs/config-reference.md`";
}

// For each key with a literal default, `--set key=<default>` leaves the resolved config (its
// JSON, which the config hash and cell ids come from) exactly as the key's absence does.
TEST(ConfigSchema, StatedDefaultsAreTheLoadersDefaults) {
  ScratchDir dir;
  const std::string config = dir.write("c.yaml",
                                       "name: c\n"
                                       "question: \"q?\"\n"
                                       "target: synthetic:tiny\n"
                                       "drafters:\n"
                                       "  a: lookup\n"
                                       "prompts:\n"
                                       "  file: p.jsonl\n"
                                       "sweep:\n"
                                       "  drafter: [a]\n");
  const nlohmann::json absent = experiment_config_load(config).to_json();
  int n_checked = 0;
  for (const ConfigKey& k : config_schema()) {
    if (k.literal.empty()) continue;
    const nlohmann::json set = experiment_config_load(config, {k.path + "=" + k.literal}).to_json();
    EXPECT_EQ(set, absent) << k.path << ": stated default " << k.literal
                           << " is not the loader's default";
    ++n_checked;
  }
  EXPECT_GE(n_checked, 25);
}

TEST(ConfigSchema, SectionsListTheirKeysOnce) {
  std::set<std::string> seen;
  for (const ConfigKey& k : config_schema()) {
    EXPECT_TRUE(seen.insert(k.path).second) << "duplicate key " << k.path;
    const size_t dot = k.path.rfind('.');
    if (dot != std::string::npos) {
      EXPECT_TRUE(seen.count(k.path.substr(0, dot))) << k.path << " listed before its section";
    }
    EXPECT_FALSE(k.type.empty() || k.fallback.empty() || k.meaning.empty()) << k.path;
  }
  EXPECT_EQ(config_schema_children("gate"),
            (std::vector<std::string>{"sigmas", "deterministic_band"}));
}

}  // namespace
}  // namespace speclab
