// drafter_create: the spec grammar of --draft and of the `drafter` sweep axis.
//
//   lookup[:n=N[,min=M]]      prompt lookup, n-grams of N..M tokens (default N=3, M=1)
//   self:skip=A-B[,C-D|,E]    the target with the listed layers skipped (self-speculation)
//   ngram:PATH                unigram/bigram table counted by `speclab ngram`
//   anything else             a model path (HF directory, .gguf, synthetic:<shape>)
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "core/error.h"
#include "models/drafters/drafter.h"
#include "models/drafters/model_drafter.h"
#include "models/drafters/ngram_drafter.h"
#include "models/drafters/prompt_lookup_drafter.h"
#include "models/llama/llama_model.h"

namespace speclab {

namespace {

// A model drafter that owns the model it runs.
class OwningModelDrafter : public ModelDrafter {
 public:
  OwningModelDrafter(std::unique_ptr<LlamaModel> model, const std::string& name, int64_t max_ctx,
                     const TokenRunnerFactory& make_runner)
      : ModelDrafter(*model, name, max_ctx, {}, make_runner), model_(std::move(model)) {}

 private:
  // The base holds a reference to *model_, which stays put when the unique_ptr moves in.
  std::unique_ptr<LlamaModel> model_;
};

// "n=3,min=1" -> {n: 3, min: 1}; rejects anything not key=value.
std::map<std::string, std::string> parse_options(const std::string& spec, const std::string& opts) {
  std::map<std::string, std::string> out;
  std::stringstream ss(opts);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    SPECLAB_INPUT_CHECK(eq != std::string::npos && eq > 0, "drafter '", spec, "': option '", item,
                        "' is not key=value");
    const std::string key = item.substr(0, eq);
    SPECLAB_INPUT_CHECK(out.emplace(key, item.substr(eq + 1)).second, "drafter '", spec,
                        "': option '", key, "' given twice");
  }
  // getline drops a trailing empty item: "n=3," is an empty option, not "n=3".
  SPECLAB_INPUT_CHECK(opts.empty() || opts.back() != ',', "drafter '", spec,
                      "': an empty option after the last ','");
  return out;
}

int parse_int(const std::string& spec, const std::string& s) {
  size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(s, &used);
  } catch (...) {
    used = 0;
  }
  SPECLAB_INPUT_CHECK(used == s.size() && !s.empty(), "drafter '", spec, "': '", s,
                      "' is not an integer");
  return v;
}

// lookup[:n=N,min=M]: the longest and shortest n-gram matched.
std::pair<int, int> lookup_options(const std::string& spec) {
  auto opts = parse_options(spec, spec.size() > 7 ? spec.substr(7) : "");
  int n = 3, min = 1;
  for (const auto& [k, v] : opts) {
    if (k == "n")
      n = parse_int(spec, v);
    else if (k == "min")
      min = parse_int(spec, v);
    else
      fail_input("drafter '", spec, "': unknown option '", k, "' (expected n, min)");
  }
  SPECLAB_INPUT_CHECK(min >= 1 && n >= min && n <= 64, "drafter '", spec, "': n=", n, " min=", min,
                      " (expected 1 <= min <= n <= 64)");
  return {n, min};
}

// self:skip=A-B[+C-D...]: the layer ranges skipped, as written (checked against a model's
// layer count by the caller).
std::vector<std::pair<int, int>> self_skip_ranges(const std::string& spec) {
  auto opts = parse_options(spec, spec.substr(5));
  SPECLAB_INPUT_CHECK(opts.size() == 1 && opts.count("skip"), "drafter '", spec,
                      "': expected self:skip=A-B (layers to skip, e.g. self:skip=4-11)");
  std::vector<std::pair<int, int>> ranges;
  const std::string& text = opts["skip"];
  size_t start = 0;
  while (true) {
    const size_t plus = text.find('+', start);
    const std::string range = text.substr(start, plus == std::string::npos ? plus : plus - start);
    const auto dash = range.find('-');
    const int a = parse_int(spec, range.substr(0, dash));
    const int b = dash == std::string::npos ? a : parse_int(spec, range.substr(dash + 1));
    SPECLAB_INPUT_CHECK(0 <= a && a <= b, "drafter '", spec, "': layer range ", range,
                        " (expected A-B with 0 <= A <= B)");
    ranges.emplace_back(a, b);
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  return ranges;
}

}  // namespace

std::unique_ptr<Drafter> drafter_create(const std::string& spec, const LlamaModel& target,
                                        int64_t max_ctx, const TokenRunnerFactory& make_runner) {
  const int64_t vocab = target.config.vocab_size;
  if (spec == "lookup" || spec.rfind("lookup:", 0) == 0) {
    const auto [n, min] = lookup_options(spec);
    return std::make_unique<PromptLookupDrafter>(vocab, n, min);
  }
  if (spec.rfind("self:", 0) == 0) {
    const int64_t n_layers = target.config.n_layers;
    std::vector<bool> skip(static_cast<size_t>(n_layers), false);
    int n_skipped = 0;
    for (const auto& [a, b] : self_skip_ranges(spec)) {
      SPECLAB_INPUT_CHECK(b < n_layers, "drafter '", spec, "': layer range ", a, "-", b,
                          " outside 0..", n_layers - 1);
      for (int l = a; l <= b; l++) {
        n_skipped += skip[static_cast<size_t>(l)] ? 0 : 1;
        skip[static_cast<size_t>(l)] = true;
      }
    }
    SPECLAB_INPUT_CHECK(n_skipped < n_layers, "drafter '", spec,
                        "': skips every layer (keep at least one)");
    return std::make_unique<ModelDrafter>(target, spec, max_ctx, std::move(skip), make_runner);
  }
  if (spec.rfind("ngram:", 0) == 0) {
    return ngram_drafter_load(spec.substr(6), vocab);
  }
  return drafter_create_model(llama_load(spec), spec, max_ctx, make_runner);
}

void drafter_spec_check(const std::string& spec) {
  if (spec == "lookup" || spec.rfind("lookup:", 0) == 0) {
    lookup_options(spec);
  } else if (spec.rfind("self:", 0) == 0) {
    self_skip_ranges(spec);
  } else if (spec.rfind("ngram:", 0) == 0) {
    SPECLAB_INPUT_CHECK(spec.size() > 6, "drafter '", spec, "': expected ngram:PATH");
  }
}

bool drafter_spec_is_model(const std::string& spec) {
  return !(spec == "lookup" || spec.rfind("lookup:", 0) == 0 || spec.rfind("self:", 0) == 0 ||
           spec.rfind("ngram:", 0) == 0);
}

std::unique_ptr<Drafter> drafter_create_model(std::unique_ptr<LlamaModel> model,
                                              const std::string& spec, int64_t max_ctx,
                                              const TokenRunnerFactory& make_runner) {
  SPECLAB_INPUT_CHECK(model->config.max_seq_len <= 0 || max_ctx <= model->config.max_seq_len,
                      "drafter '", spec, "': a context of ", max_ctx,
                      " tokens (generation.ctx) exceeds the draft model's context length ",
                      model->config.max_seq_len);
  return std::make_unique<OwningModelDrafter>(std::move(model), spec, max_ctx, make_runner);
}

}  // namespace speclab
