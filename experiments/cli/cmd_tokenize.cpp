// speclab tokenize --tokenizer PATH --text TEXT [--no-bos] [--json]
// Prints the token ids space-separated; with --json one object {"ids": [...], "pieces": [...]}.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/number_checks.h"
#include "models/tokenizer/tokenizer_factory.h"

namespace speclab {

namespace {
struct TokenizeOptions {
  std::string tokenizer_path;
  std::string text;
  bool no_bos = false;
  bool json = false;
};
}  // namespace

void register_tokenize(CLI::App& app) {
  auto options = std::make_shared<TokenizeOptions>();
  auto* cmd = app.add_subcommand("tokenize", "Text -> token ids with a model's tokenizer");
  cmd->add_option("--tokenizer", options->tokenizer_path,
                  "tokenizer.json, tokenizer.model, .gguf file, or HF model directory")
      ->required();
  cmd->add_option("--text", options->text, "text to tokenize (special tokens are parsed)")
      ->required()
      ->check(utf8_text());
  cmd->add_flag("--no-bos", options->no_bos, "do not prepend the BOS token");
  cmd->add_flag("--json", options->json, "print {\"ids\": [...], \"pieces\": [...]}");
  cmd->callback([options] {
    const auto tokenizer = tokenizer_load(options->tokenizer_path);
    const auto ids = tokenizer->encode(options->text, !options->no_bos);
    if (options->json) {
      nlohmann::json out;
      out["ids"] = ids;
      auto& pieces = out["pieces"] = nlohmann::json::array();
      for (int32_t id : ids) pieces.push_back(tokenizer->piece(id));
      // Pieces may hold partial UTF-8 (byte tokens): replace invalid bytes instead of failing.
      std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return;
    }
    for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
    std::cout << "\n";
  });
}

}  // namespace speclab
