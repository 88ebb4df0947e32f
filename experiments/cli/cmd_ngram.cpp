// speclab ngram --tokenizer PATH --corpus FILE [--corpus FILE ...] [--order 1|2] --out FILE
// Counts a unigram or bigram table from text files with a target's tokenizer, for the
// `ngram:FILE` drafter (the paper's negligible-cost drafts, Table 3).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/input_file.h"
#include "experiments/cli/commands.h"
#include "models/drafters/ngram_drafter.h"
#include "models/tokenizer/tokenizer_factory.h"

namespace speclab {

void register_ngram(CLI::App& app) {
  struct Args {
    std::string tokenizer, out;
    std::vector<std::string> corpus;
    int order = 2;
  };
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("ngram", "count a unigram/bigram drafter table from text files");
  c->add_option("--tokenizer", a->tokenizer, "the target's tokenizer (file or model directory)")
      ->required();
  c->add_option("--corpus", a->corpus, "text files (a directory: every *.txt in it)")->required();
  c->add_option("--order", a->order, "1 = unigram, 2 = bigram")->check(CLI::Range(1, 2));
  c->add_option("--out", a->out, "output table")->required();
  c->callback([a] {
    auto tok = tokenizer_load(a->tokenizer);
    std::vector<std::string> files;
    for (const auto& p : a->corpus) {
      if (std::filesystem::is_directory(p)) {
        for (const auto& e : std::filesystem::directory_iterator(p))
          if (e.path().extension() == ".txt") files.push_back(e.path().string());
      } else {
        std::error_code ec;
        SPECLAB_INPUT_CHECK(std::filesystem::exists(p, ec), p, ": no such corpus file");
        uint64_t size = 0;  // a FIFO or a device: says which (the read below would too, later)
        ::close(input_file_open(p, "corpus file", &size));
        files.push_back(p);
      }
    }
    std::sort(files.begin(), files.end());
    SPECLAB_INPUT_CHECK(!files.empty(), "--corpus: no text files found");
    for (const auto& f : files) {
      std::error_code ec;
      SPECLAB_INPUT_CHECK(!std::filesystem::equivalent(f, a->out, ec), a->out,
                          ": is also a corpus file (", f,
                          "); the table would replace it (expected another --out path)");
    }
    std::vector<std::vector<int32_t>> docs;
    int64_t n_tokens = 0;
    for (const auto& f : files) {
      // Regular files only (a FIFO or /dev/zero named *.txt would hang or fill memory).
      const std::string text = input_file_read(f, "corpus file", 4ull << 30);
      docs.push_back(tok->encode(text, /*add_bos=*/false, /*parse_special=*/false));
      n_tokens += static_cast<int64_t>(docs.back().size());
    }
    const NgramTable t = NgramTable::count(docs, tok->vocab_size(), a->order);
    ngram_table_save(t, a->out);
    std::printf("%s: order %d, vocab %lld, %lld tokens from %zu files, %zu distinct bigrams\n",
                a->out.c_str(), a->order, static_cast<long long>(t.vocab),
                static_cast<long long>(n_tokens), files.size(), t.bigrams.size());
  });
}

}  // namespace speclab
