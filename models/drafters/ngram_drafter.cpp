#include "models/drafters/ngram_drafter.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "core/mapped_file.h"
#include "core/output_file.h"
#include "models/drafters/draft_sampling.h"

namespace speclab {

namespace {
constexpr char kMagic[8] = {'S', 'P', 'L', 'N', 'G', 'R', 'M', '1'};
constexpr int64_t kMaxVocab = 1 << 24;
}  // namespace

NgramTable NgramTable::count(const std::vector<std::vector<int32_t>>& docs, int64_t vocab,
                             int order) {
  NgramTable t;
  t.order = order;
  t.vocab = vocab;
  t.unigram.assign(static_cast<size_t>(vocab), 0);
  std::vector<std::pair<uint64_t, uint32_t>> pairs;  // (prev << 32 | next) keys, counted below
  std::vector<uint64_t> keys;
  for (const auto& doc : docs) {
    for (size_t i = 0; i < doc.size(); i++) {
      SPECLAB_INPUT_CHECK(doc[i] >= 0 && doc[i] < vocab, "ngram: token id ", doc[i],
                          " outside the vocabulary of ", vocab);
      t.unigram[static_cast<size_t>(doc[i])]++;
      if (order >= 2 && i > 0)
        keys.push_back((static_cast<uint64_t>(doc[i - 1]) << 32) | static_cast<uint32_t>(doc[i]));
    }
  }
  std::sort(keys.begin(), keys.end());
  for (size_t i = 0; i < keys.size();) {
    size_t j = i;
    while (j < keys.size() && keys[j] == keys[i]) j++;
    t.bigrams.push_back({static_cast<int32_t>(keys[i] >> 32),
                         static_cast<int32_t>(keys[i] & 0xffffffffu),
                         static_cast<uint32_t>(j - i)});
    i = j;
  }
  return t;
}

void NgramTable::log_probs(int32_t prev, float* out) const {
  // Add-one unigram: P_u(x) = (c(x) + 1) / (N + V).
  double total = 0;
  for (uint32_t c : unigram) total += c;
  const double denom_u = total + static_cast<double>(vocab);
  std::vector<double> p(static_cast<size_t>(vocab));
  for (int64_t x = 0; x < vocab; x++)
    p[static_cast<size_t>(x)] = (unigram[static_cast<size_t>(x)] + 1.0) / denom_u;
  if (order >= 2 && prev >= 0) {
    // Interpolated bigram: P(x|prev) = (c(prev, x) + P_u(x)) / (c(prev, .) + 1).
    auto lo = std::lower_bound(bigrams.begin(), bigrams.end(), prev,
                               [](const Bigram& b, int32_t v) { return b.prev < v; });
    auto hi = lo;
    double n_prev = 0;
    while (hi != bigrams.end() && hi->prev == prev) n_prev += (hi++)->count;
    for (int64_t x = 0; x < vocab; x++) p[static_cast<size_t>(x)] /= (n_prev + 1.0);
    for (auto it = lo; it != hi; ++it)
      p[static_cast<size_t>(it->next)] += it->count / (n_prev + 1.0);
  }
  for (int64_t x = 0; x < vocab; x++)
    out[x] = static_cast<float>(std::log(p[static_cast<size_t>(x)]));
}

void ngram_table_save(const NgramTable& t, const std::string& path) {
  std::ostringstream f;
  {
    const uint32_t order = static_cast<uint32_t>(t.order), reserved = 0;
    const int64_t n_bigrams = static_cast<int64_t>(t.bigrams.size());
    f.write(kMagic, 8);
    f.write(reinterpret_cast<const char*>(&order), 4);
    f.write(reinterpret_cast<const char*>(&reserved), 4);
    f.write(reinterpret_cast<const char*>(&t.vocab), 8);
    f.write(reinterpret_cast<const char*>(&n_bigrams), 8);
    f.write(reinterpret_cast<const char*>(t.unigram.data()),
            static_cast<std::streamsize>(t.unigram.size() * 4));
    for (const auto& b : t.bigrams) {
      f.write(reinterpret_cast<const char*>(&b.prev), 4);
      f.write(reinterpret_cast<const char*>(&b.next), 4);
      f.write(reinterpret_cast<const char*>(&b.count), 4);
    }
  }
  output_file_write_atomic(path, f.str());
}

NgramTable ngram_table_load(const std::string& path) {
  auto file = mapped_file_open(path);
  const uint8_t* data = static_cast<const uint8_t*>(file->data());
  const size_t size = file->size();
  SPECLAB_INPUT_CHECK(size >= 32, path, ": ", size,
                      " bytes, shorter than the 32-byte n-gram header");
  SPECLAB_INPUT_CHECK(std::memcmp(data, kMagic, 8) == 0, path,
                      ": offset 0: not an n-gram table (expected magic SPLNGRM1)");
  NgramTable t;
  uint32_t order;
  int64_t n_bigrams;
  std::memcpy(&order, data + 8, 4);
  std::memcpy(&t.vocab, data + 16, 8);
  std::memcpy(&n_bigrams, data + 24, 8);
  SPECLAB_INPUT_CHECK(order == 1 || order == 2, path, ": offset 8: order ", order,
                      " (expected 1 or 2)");
  SPECLAB_INPUT_CHECK(t.vocab >= 1 && t.vocab <= kMaxVocab, path, ": offset 16: vocab ", t.vocab,
                      " (expected 1..", kMaxVocab, ")");
  const uint64_t max_bigrams = (size - 32) / 12;
  SPECLAB_INPUT_CHECK(n_bigrams >= 0 && static_cast<uint64_t>(n_bigrams) <= max_bigrams, path,
                      ": offset 24: bigram count ", n_bigrams, " does not fit the file");
  const uint64_t need =
      32 + static_cast<uint64_t>(t.vocab) * 4 + static_cast<uint64_t>(n_bigrams) * 12;
  SPECLAB_INPUT_CHECK(need == size, path, ": file is ", size, " bytes, header implies ", need);
  t.order = static_cast<int>(order);
  t.unigram.resize(static_cast<size_t>(t.vocab));
  std::memcpy(t.unigram.data(), data + 32, static_cast<size_t>(t.vocab) * 4);
  const uint8_t* b = data + 32 + t.vocab * 4;
  t.bigrams.resize(static_cast<size_t>(n_bigrams));
  for (int64_t i = 0; i < n_bigrams; i++) {
    auto& e = t.bigrams[static_cast<size_t>(i)];
    std::memcpy(&e.prev, b + i * 12, 4);
    std::memcpy(&e.next, b + i * 12 + 4, 4);
    std::memcpy(&e.count, b + i * 12 + 8, 4);
    const size_t off = static_cast<size_t>(32 + t.vocab * 4 + i * 12);
    SPECLAB_INPUT_CHECK(e.prev >= 0 && e.prev < t.vocab && e.next >= 0 && e.next < t.vocab, path,
                        ": offset ", off, ": bigram (", e.prev, ", ", e.next,
                        ") outside the vocabulary");
    if (i > 0) {
      const auto& p = t.bigrams[static_cast<size_t>(i - 1)];
      SPECLAB_INPUT_CHECK(std::make_pair(p.prev, p.next) < std::make_pair(e.prev, e.next), path,
                          ": offset ", off, ": bigrams not sorted by (prev, next)");
    }
  }
  return t;
}

NgramDrafter::NgramDrafter(NgramTable table, std::string name)
    : table_(std::move(table)), name_(std::move(name)) {}

void NgramDrafter::propose(const std::vector<int32_t>& context, int k, const SamplingParams& params,
                           const DraftStopRule& stop, const RngKey& key, DraftProposal* out) {
  const auto t0 = std::chrono::steady_clock::now();
  *out = DraftProposal();
  const int64_t vocab = table_.vocab;
  std::vector<float> logp(static_cast<size_t>(vocab));  // [vocab] log P(x | prev): the logits
  int32_t prev = context.empty() ? -1 : context.back();
  for (int i = 0; i < k; i++) {
    table_.log_probs(table_.order >= 2 ? prev : -1, logp.data());
    prev = draft_sample_step(logp.data(), vocab, i, params, stop, key, out);
    if (prev < 0) break;
  }
  out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::unique_ptr<Drafter> ngram_drafter_load(const std::string& path, int64_t target_vocab) {
  NgramTable t = ngram_table_load(path);
  SPECLAB_INPUT_CHECK(t.vocab == target_vocab, path, ": n-gram table has a vocabulary of ", t.vocab,
                      " tokens, the target has ", target_vocab);
  const std::string name = str_cat(t.order == 1 ? "unigram:" : "bigram:", path);
  return std::make_unique<NgramDrafter>(std::move(t), name);
}

}  // namespace speclab
