// Unigram / bigram drafters counted from a corpus with the target's tokenizer: the paper's
// "negligible cost" drafts (Table 3). q is a real distribution (interpolated bigram with an
// add-one unigram backoff), standardized with the draft's sampling parameters, so the
// verifier is exact for it like for any model.
//
// File format (little-endian), written by ngram_table_save, read with bounds checks:
//   char[8] "SPLNGRM1"; u32 order (1 or 2); u32 reserved (0); i64 vocab; i64 n_bigrams;
//   u32 unigram_count[vocab]; n_bigrams x {i32 prev; i32 next; u32 count} sorted by (prev, next).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/drafters/drafter.h"

namespace speclab {

struct NgramTable {
  int order = 2;
  int64_t vocab = 0;
  std::vector<uint32_t> unigram;  // [vocab]
  struct Bigram {
    int32_t prev, next;
    uint32_t count;
  };
  std::vector<Bigram> bigrams;  // sorted by (prev, next)

  // Counts from token sequences (each document separately: no bigram spans documents).
  static NgramTable count(const std::vector<std::vector<int32_t>>& docs, int64_t vocab, int order);
  // log P(x | prev) for every x: [vocab]. prev < 0 -> unigram.
  void log_probs(int32_t prev, float* out) const;
};

void ngram_table_save(const NgramTable& table, const std::string& path);
NgramTable ngram_table_load(const std::string& path);  // throws InputError naming the offset

class NgramDrafter : public Drafter {
 public:
  NgramDrafter(NgramTable table, std::string name);
  std::string name() const override { return name_; }
  int64_t vocab_size() const override { return table_.vocab; }
  bool deterministic() const override { return false; }
  void propose(const std::vector<int32_t>& context, int k, const SamplingParams& params,
               const DraftStopRule& stop, const RngKey& key, DraftProposal* out) override;
  void reset() override {}

 private:
  NgramTable table_;
  std::string name_;
};

// Loads the table at path and checks its vocabulary equals the target's.
std::unique_ptr<Drafter> ngram_drafter_load(const std::string& path, int64_t target_vocab);

}  // namespace speclab
