#include "models/formats/hf_hub_cache.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace speclab {

namespace {

namespace fs = std::filesystem;

bool id_part_ok(const std::string& part) {
  if (part.empty() || part[0] == '.' || part[0] == '-') return false;
  for (const char c : part) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

bool hf_model_id_like(const std::string& text) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos || text.find('/', slash + 1) != std::string::npos) return false;
  return id_part_ok(text.substr(0, slash)) && id_part_ok(text.substr(slash + 1));
}

std::vector<std::string> hf_hub_cache_dirs() {
  std::vector<std::string> dirs;
  auto add = [&](const std::string& d) {
    if (d.empty()) return;
    for (const auto& seen : dirs)
      if (seen == d) return;
    dirs.push_back(d);
  };
  add(env_or_empty("HF_HUB_CACHE"));
  if (const std::string home = env_or_empty("HF_HOME"); !home.empty()) add(home + "/hub");
  if (const std::string xdg = env_or_empty("XDG_CACHE_HOME"); !xdg.empty())
    add(xdg + "/huggingface/hub");
  if (const std::string home = env_or_empty("HOME"); !home.empty())
    add(home + "/.cache/huggingface/hub");
  return dirs;
}

std::string hf_resolve_model_path(const std::string& path) {
  std::error_code ec;
  if (!hf_model_id_like(path) || fs::exists(path, ec)) return path;
  const size_t slash = path.find('/');
  const std::string repo_dir =
      "models--" + path.substr(0, slash) + "--" + path.substr(slash + 1);  // HF's folder name
  const std::vector<std::string> dirs = hf_hub_cache_dirs();
  for (const auto& hub : dirs) {
    const fs::path repo = fs::path(hub) / repo_dir;
    std::ifstream ref(repo / "refs" / "main");
    std::string hash;
    if (!(ref >> hash)) continue;  // not downloaded into this cache
    const fs::path snapshot = repo / "snapshots" / hash;
    SPECLAB_INPUT_CHECK(fs::is_directory(snapshot, ec), path, ": ",
                        (repo / "refs" / "main").string(), " names revision ", hash, " but ",
                        snapshot.string(), " is missing (an incomplete download?)");
    return snapshot.string();
  }
  std::string searched;
  for (const auto& d : dirs) searched += (searched.empty() ? "" : ", ") + d;
  fail_input(path, ": no such file or directory, and not in the Hugging Face cache (looked for ",
             repo_dir, "/refs/main in ", searched.empty() ? "no folder: HOME is unset" : searched,
             "); speclab does not download models (huggingface-cli download ", path,
             " fetches it, or give a local path)");
}

}  // namespace speclab
