// The house's layers, checked from the includes (docs/design.md, "Layers and rooms"):
//   core -> models -> experiments: a file includes only its own layer and the ones before it;
//   inside experiments/, the rooms config -> results -> predict -> measure -> cli likewise;
//   inside core/ (and each folder of models/), no file includes one that includes it back.
// A wrong include fails here naming the file and the include, before it grows into a cycle.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace speclab {
namespace {

namespace fs = std::filesystem;
const std::string kSrc = SPECLAB_SOURCE_DIR;

// Project includes ("core/x.h", "experiments/results/y.h") of every source under `top`,
// keyed by the file's path relative to the repository.
std::map<std::string, std::vector<std::string>> includes_under(const std::string& top) {
  std::map<std::string, std::vector<std::string>> out;
  static const std::regex include_line(R"re(^\s*#\s*include\s+"([^"]+)")re");
  for (const auto& e : fs::recursive_directory_iterator(kSrc + "/" + top)) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".h" && ext != ".cpp" && ext != ".cu" && ext != ".cuh"))
      continue;
    const std::string rel = fs::relative(e.path(), kSrc).string();
    std::ifstream in(e.path());
    auto& incs = out[rel];
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_search(line, m, include_line)) incs.push_back(m[1]);
    }
  }
  return out;
}

// The rank of a path in an ordered list of prefixes (-1: none).
int rank_of(const std::string& path, const std::vector<std::string>& order) {
  for (size_t i = 0; i < order.size(); i++)
    if (path.rfind(order[i], 0) == 0) return static_cast<int>(i);
  return -1;
}

std::string list(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "  " + x + "\n";
  return s;
}

TEST(SourceLayout, LayersPointOneWay) {
  const std::vector<std::string> layers = {"core/", "models/", "experiments/"};
  std::vector<std::string> wrong;
  for (const std::string top : {"core", "models", "experiments"})
    for (const auto& [file, incs] : includes_under(top))
      for (const auto& inc : incs) {
        const int from = rank_of(file, layers), to = rank_of(inc, layers);
        if (to > from) wrong.push_back(file + " includes " + inc);
      }
  EXPECT_TRUE(wrong.empty()) << "includes against core -> models -> experiments:\n" << list(wrong);
}

TEST(SourceLayout, ExperimentRoomsPointOneWay) {
  const std::vector<std::string> rooms = {"experiments/config/", "experiments/results/",
                                          "experiments/predict/", "experiments/measure/",
                                          "experiments/cli/"};
  std::vector<std::string> wrong, homeless;
  for (const auto& [file, incs] : includes_under("experiments")) {
    const int from = rank_of(file, rooms);
    if (from < 0) homeless.push_back(file);
    for (const auto& inc : incs)
      if (inc.rfind("experiments/", 0) == 0 && rank_of(inc, rooms) > from)
        wrong.push_back(file + " includes " + inc);
  }
  EXPECT_TRUE(homeless.empty()) << "files of experiments/ outside its rooms:\n" << list(homeless);
  EXPECT_TRUE(wrong.empty()) << "includes against config -> results -> predict -> measure -> cli:\n"
                             << list(wrong);
}

// No include cycle between the files of one folder (core/, core/cuda/, each models/ folder):
// a header that needs its includer's declarations means one concept in two files.
TEST(SourceLayout, NoIncludeCyclesWithinAFolder) {
  std::map<std::string, std::vector<std::string>> graph;  // file stem -> included stems
  auto stem = [](const std::string& p) {
    const fs::path path(p);
    return (path.parent_path() / path.stem()).string();
  };
  for (const std::string top : {"core", "models"})
    for (const auto& [file, incs] : includes_under(top))
      for (const auto& inc : incs)
        if (fs::path(inc).parent_path() == fs::path(file).parent_path() && stem(inc) != stem(file))
          graph[stem(file)].push_back(stem(inc));
  std::map<std::string, int> state;  // 0 unseen, 1 on the path, 2 done
  std::vector<std::string> path, cycles;
  std::function<void(const std::string&)> visit = [&](const std::string& n) {
    state[n] = 1;
    path.push_back(n);
    for (const auto& m : graph[n]) {
      if (state[m] == 1) {
        std::string c;
        for (auto it = std::find(path.begin(), path.end(), m); it != path.end(); ++it)
          c += *it + " -> ";
        cycles.push_back(c + m);
      } else if (state[m] == 0) {
        visit(m);
      }
    }
    path.pop_back();
    state[n] = 2;
  };
  std::vector<std::string> nodes;
  for (const auto& [n, _] : graph) nodes.push_back(n);
  for (const auto& n : nodes)
    if (state[n] == 0) visit(n);
  EXPECT_TRUE(cycles.empty()) << "include cycles:\n" << list(cycles);
}

}  // namespace
}  // namespace speclab
