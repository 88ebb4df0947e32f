// Hugging Face model ids resolved through a local hub cache that the test builds itself
// (models--org--name/refs/main -> snapshots/<hash>/), in each of the places speclab looks.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "models/formats/hf_hub_cache.h"
#include "tests/formats/expect_input_error.h"

namespace speclab {
namespace {

namespace fs = std::filesystem;

// Sets or unsets one environment variable for the test's lifetime.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A scratch folder with a fake HOME and a hub cache layout inside it.
class HfHubCache : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() / (std::string("speclab_hf_") + info->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // <hub>/models--org--name/{refs/main, snapshots/<hash>/config.json}; returns the snapshot.
  static fs::path add_model(const fs::path& hub, const std::string& org, const std::string& name,
                            const std::string& hash, bool with_snapshot = true) {
    const fs::path repo = hub / ("models--" + org + "--" + name);
    fs::create_directories(repo / "refs");
    std::ofstream(repo / "refs" / "main") << hash;  // the hub writes no trailing newline
    const fs::path snapshot = repo / "snapshots" / hash;
    if (with_snapshot) {
      fs::create_directories(snapshot);
      std::ofstream(snapshot / "config.json") << "{}";
    }
    return snapshot;
  }

  fs::path root_;
};

TEST(HfModelIdLike, OnlyOrgSlashName) {
  EXPECT_TRUE(hf_model_id_like("meta-llama/Llama-3.2-3B-Instruct"));
  EXPECT_TRUE(hf_model_id_like("HuggingFaceTB/SmolLM2-135M-Instruct"));
  EXPECT_TRUE(hf_model_id_like("a_b/c.d"));
  for (const char* not_id : {"", "llama", "/abs/path", "./rel/x", "a/b/c", "a/", "/b", "../x",
                             ".hidden/x", "a/.x", "-a/b", "a b/c", "synthetic:tiny", "a/b:c"}) {
    EXPECT_FALSE(hf_model_id_like(not_id)) << not_id;
  }
}

TEST_F(HfHubCache, ResolvesThroughEachCacheLocationInOrder) {
  const std::string id = "meta-llama/Llama-3.2-3B-Instruct";
  const fs::path home = root_ / "home", hf_home = root_ / "hf-home", hub = root_ / "hub";
  const fs::path in_home =
      add_model(home / ".cache/huggingface/hub", "meta-llama", "Llama-3.2-3B-Instruct", "aaa1");
  {  // only ~/.cache/huggingface/hub
    ScopedEnv a("HOME", home.string()), b("HF_HOME", std::nullopt), c("HF_HUB_CACHE", std::nullopt),
        d("XDG_CACHE_HOME", std::nullopt);
    EXPECT_EQ(hf_resolve_model_path(id), in_home.string());
  }
  const fs::path in_hf_home =
      add_model(hf_home / "hub", "meta-llama", "Llama-3.2-3B-Instruct", "bbb2");
  {  // $HF_HOME/hub comes before ~/.cache
    ScopedEnv a("HOME", home.string()), b("HF_HOME", hf_home.string()),
        c("HF_HUB_CACHE", std::nullopt), d("XDG_CACHE_HOME", std::nullopt);
    EXPECT_EQ(hf_resolve_model_path(id), in_hf_home.string());
  }
  const fs::path in_hub = add_model(hub, "meta-llama", "Llama-3.2-3B-Instruct", "ccc3");
  {  // $HF_HUB_CACHE comes first
    ScopedEnv a("HOME", home.string()), b("HF_HOME", hf_home.string()),
        c("HF_HUB_CACHE", hub.string()), d("XDG_CACHE_HOME", std::nullopt);
    EXPECT_EQ(hf_resolve_model_path(id), in_hub.string());
    // A cache that lacks the model is passed over: the next one that has it answers.
    const fs::path other = add_model(home / ".cache/huggingface/hub", "org", "only-in-home", "d4");
    EXPECT_EQ(hf_resolve_model_path("org/only-in-home"), other.string());
  }
}

TEST_F(HfHubCache, LocalPathsAndNonIdsAreKept) {
  ScopedEnv a("HF_HUB_CACHE", (root_ / "hub").string());
  add_model(root_ / "hub", "org", "name", "h1");
  for (const std::string p : {"synthetic:tiny", "/no/such/model", "models/zoo/x", "x.gguf"})
    EXPECT_EQ(hf_resolve_model_path(p), p);
  // An existing local folder shaped like an id wins over the cache.
  const fs::path cwd = fs::current_path();
  fs::current_path(root_);
  fs::create_directories(root_ / "org" / "name");
  EXPECT_EQ(hf_resolve_model_path("org/name"), "org/name");
  fs::current_path(cwd);
}

TEST_F(HfHubCache, AbsentIdSaysWhereItLookedAndThatNothingIsDownloaded) {
  ScopedEnv a("HOME", (root_ / "home").string()), b("HF_HOME", (root_ / "hf").string()),
      c("HF_HUB_CACHE", (root_ / "hub").string()), d("XDG_CACHE_HOME", std::nullopt);
  testing::expect_input_error(
      [] { hf_resolve_model_path("meta-llama/Llama-3.2-3B-Instruct"); },
      {"meta-llama/Llama-3.2-3B-Instruct", "models--meta-llama--Llama-3.2-3B-Instruct/refs/main",
       (root_ / "hub").string(), (root_ / "hf" / "hub").string(),
       (root_ / "home" / ".cache/huggingface/hub").string(), "speclab does not download"});
}

TEST_F(HfHubCache, RefWithoutItsSnapshotIsAnError) {
  ScopedEnv a("HF_HUB_CACHE", (root_ / "hub").string());
  add_model(root_ / "hub", "org", "half", "deadbeef", /*with_snapshot=*/false);
  testing::expect_input_error([] { hf_resolve_model_path("org/half"); },
                              {"org/half", "refs/main", "deadbeef", "is missing"});
}

}  // namespace
}  // namespace speclab
