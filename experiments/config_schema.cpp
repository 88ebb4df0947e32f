#include "experiments/config_schema.h"

#include <sstream>

namespace speclab {

const std::vector<ConfigKey>& config_schema() {
  static const std::vector<ConfigKey> keys = {
      {"name", "string of [A-Za-z0-9._-]", "required", "",
       "the experiment's name; results go to `results/<name>/`"},
      {"question", "one-line string", "required", "",
       "the question the config answers (also in the file's `# Question:` header)"},
      {"target", "model path", "required unless `simulate` is given", "",
       "the target model: an HF model directory, a Hugging Face model id (org/name, found in "
       "the local HF cache; never downloaded), a .gguf file, or `synthetic:<shape>[:dtype]`"},
      {"drafters", "mapping name -> drafter spec", "required with a target", "",
       "the drafters the sweep may name: a model path or id, lookup[:n=N,min=M], "
       "self:skip=A-B[+C-D], ngram:PATH (docs/cli.md has the grammar)"},
      {"prompts", "section", "required with a target unless measure.cost_only", "",
       "the prompt sets"},
      {"prompts.file", "path or list of paths", "required", "",
       "JSONL files of {id, text, task?} (configs/prompts/README.md); a list runs the sets one "
       "after the other, ids unique across them"},
      {"prompts.limit", "integer >= 0", "0", "0", "the first N prompts of each file (0 = all)"},
      {"prompts.chat_template", "true or false", "false", "false",
       "wrap each text in the target's chat format (ChatML or Llama 3, chosen by the "
       "tokenizer's special tokens)"},
      {"prompts.tokenizer", "tokenizer path or model id", "unset (the target's tokenizer)", "",
       "encode the prompts with this tokenizer.json, tokenizer.model, .gguf or model directory "
       "instead (for targets without one, the synthetic shapes); its vocabulary must fit the "
       "target's"},
      {"generation", "section", "optional", "", "how each request is generated"},
      {"generation.max_new_tokens", "integer >= 1", "64", "64", "tokens generated per request"},
      {"generation.seed", "integer >= 0", "0", "0",
       "seed of the Philox streams (with the request and position: results do not depend on "
       "threads or timing)"},
      {"generation.repeats", "integer >= 1", "1", "1", "timed runs per prompt"},
      {"generation.warmup", "integer >= 0", "1", "1", "untimed warm-up prompts per cell"},
      {"generation.threads", "integer >= 0", "0", "0", "CPU threads (0 = all cores)"},
      {"generation.ctx", "integer > max_new_tokens", "1024", "1024",
       "KV-cache length; at most the target's (and each draft's) context length"},
      {"generation.ignore_eos", "true or false", "false", "false",
       "generate max_new_tokens even past EOS (equal lengths across cells)"},
      {"generation.backend", "cpu or cuda", "cpu", "cpu",
       "where the target and the model drafters (draft models, self-speculation) run; cuda needs a "
       "CUDA build and device"},
      {"measure", "section", "optional", "", "what is measured besides the speculative runs"},
      {"measure.baseline", "true or false", "true", "true",
       "also run the target alone, interleaved with the speculative runs (the speedup needs it)"},
      {"measure.cost_curve_max_k", "integer >= max(sweep.gamma)+1", "max(sweep.gamma)+1", "",
       "measure T(k) for k = 1..this (Theorem 3.8 needs T(gamma+1))"},
      {"measure.bootstrap_resamples", "integer >= 1", "1000", "1000",
       "percentile-bootstrap resamples over prompts for the speedup interval"},
      {"measure.confidence", "number in (0, 1)", "0.95", "0.95", "level of the intervals"},
      {"measure.cost_only", "true or false", "false", "false",
       "measure the cost curve T(k) and c only: no prompts, no speculative runs"},
      {"sweep", "section", "required with a target", "",
       "the cells: the cross product of the axes; each axis is a list or a scalar"},
      {"sweep.drafter", "list of names from `drafters`", "required", "", "the drafters"},
      {"sweep.gamma", "list of integers in 1..64", "[4]", "[4]",
       "tokens drafted per round (gamma_policy heuristic: the first gamma; entropy: gamma_max)"},
      {"sweep.temperature", "list of numbers >= 0", "[0]", "[0]",
       "target temperature (0 = greedy)"},
      {"sweep.draft_temperature", "list of \"same\" or numbers >= 0", "[same]", "[same]",
       "the drafts' temperature; same = the cell's temperature"},
      {"sweep.top_k", "list of integers >= 0", "[0]", "[0]", "top-k filter (0 = off)"},
      {"sweep.top_p", "list of numbers in (0, 1]", "[1.0]", "[1.0]", "top-p filter (1 = off)"},
      {"sweep.lenience", "list of numbers in (0, 1]", "[1.0]", "[1.0]",
       "paper A.5 lenience (1 = exact speculative sampling)"},
      {"sweep.gamma_policy", "list of fixed, heuristic, entropy", "[fixed]", "[fixed]",
       "how gamma changes between rounds (core/gamma_policy.h)"},
      {"sweep.p_min", "list of numbers in [0, 1]", "[0.0]", "[0.0]",
       "stop drafting when the draft's top probability falls below this (0 = never)"},
      {"sweep.synthetic_acceptance", "list of off, numbers in (0, 1], or lists of them", "[off]",
       "[off]",
       "timing only: accept each draft with this probability (a list: per draft position, "
       "the last repeating) instead of the exact test; the output is not the target's"},
      {"sweep.tree", "list of off or tree shapes (3x2x1, 2x2:sample)", "[off]", "[off]",
       "tree speculation; tree cells take the first gamma only and the exact settings"},
      {"simulate", "section", "optional", "", "simulator-only configs (no target)"},
      {"simulate.table", "paper-table1", "required", "", "the table `speclab simulate` prints"},
      {"gate", "section", "optional", "", "the acceptance gate of `speclab check`"},
      {"gate.sigmas", "number > 0", "4", "4",
       "tolerance in combined standard errors before a cell's alpha or tau counts as moved"},
  };
  return keys;
}

std::vector<std::string> config_schema_children(const std::string& section) {
  std::vector<std::string> children;
  const std::string prefix = section.empty() ? "" : section + ".";
  for (const auto& k : config_schema()) {
    if (k.path.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = k.path.substr(prefix.size());
    if (!rest.empty() && rest.find('.') == std::string::npos) children.push_back(rest);
  }
  return children;
}

std::string config_reference_markdown() {
  std::ostringstream md;
  md << "# Config reference\n\n"
     << "<!-- Generated by `speclab config-reference` from experiments/config_schema.cpp; do "
        "not edit. A test (ConfigSchema.ReferenceIsCurrent) fails when this file is stale. -->\n\n"
     << "Every key of an experiment file (`configs/*.yaml`). Loading is strict: an unknown key, "
        "a missing required key, a wrong type or an out-of-range value is one line naming the "
        "file, line and key, exit code 2 ([bad-input.md](bad-input.md)). Strings expand "
        "`${VAR}` (an error when unset; `${VAR:?hint}` adds the hint) and a leading `~/`. "
        "Relative paths resolve against the current directory when they exist there, else "
        "against the repository root; an `org/name` that is no local path is a Hugging Face "
        "model id. `speclab run CONFIG --set key.path=value` overrides any key (the value is "
        "YAML: `--set sweep.gamma=[2,4]`). Each sweep axis is a list (a scalar is a list of "
        "one); lists must be non-empty without duplicates.\n";
  auto section_of = [](const std::string& path) {
    const size_t dot = path.find('.');
    return dot == std::string::npos ? std::string() : path.substr(0, dot);
  };
  std::string current = "-";
  for (const auto& k : config_schema()) {
    const std::string section = section_of(k.path);
    if (section != current) {
      current = section;
      md << "\n## " << (section.empty() ? "Top level" : "`" + section + "`") << "\n\n"
         << "| key | type | default | meaning |\n| --- | --- | --- | --- |\n";
    }
    md << "| `" << k.path << "` | " << k.type << " | " << k.fallback << " | " << k.meaning
       << " |\n";
  }
  return md.str();
}

}  // namespace speclab
