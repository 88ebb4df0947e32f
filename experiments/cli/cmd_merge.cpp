// speclab merge OUT IN... [--allow-mixed-configs]: joins the results files of sweep shards
// (--shard I/N runs) into one, keeping each cell once (identical duplicates dropped,
// conflicting ones refused). Rows of different configs (config_hash) are refused unless
// --allow-mixed-configs, which keeps them apart (results_merge).
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "experiments/cli/commands.h"
#include "experiments/results/results_store.h"

namespace speclab {

void register_merge(CLI::App& app) {
  auto out = std::make_shared<std::string>();
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto mixed = std::make_shared<bool>(false);
  auto* c = app.add_subcommand("merge", "join shard results (results.jsonl files or their dirs)");
  c->add_option("out", *out, "merged results.jsonl to write")->required();
  c->add_option("inputs", *inputs, "shard results.jsonl files or directories")->required();
  c->add_flag("--allow-mixed-configs", *mixed,
              "keep rows of different config_hash, grouped per config (never pooled)");
  c->callback([out, inputs, mixed] {
    std::vector<std::string> files;
    for (const auto& p : *inputs)
      files.push_back(std::filesystem::is_directory(p) ? p + "/results.jsonl" : p);
    // Counted as written: the output may be a FIFO or a device, which reads back nothing.
    const size_t rows = results_merge(files, *out, *mixed);
    std::printf("%zu rows in %s\n", rows, out->c_str());
  });
}

}  // namespace speclab
