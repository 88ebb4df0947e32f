#include "models/decode/law_check_round.h"

#include "core/error.h"

namespace speclab {

namespace {

// u of token x under row p at absolute position `position`, or -1 when p(x) = 0.
float pit_at(const float* p, int64_t vocab, int32_t x, RngKey base, uint64_t position) {
  SPECLAB_ASSERT(x >= 0 && x < vocab);
  if (p[x] == 0.0f) return -1.0f;
  const double v = rng_uniform(rng_key_at(base, position, kRngLawCheck));
  return static_cast<float>(law_pit(p, vocab, x, v));
}

}  // namespace

void law_check_chain_round(const float* p, int64_t vocab, RngKey base, RoundRecord* rec) {
  const int n_draft = static_cast<int>(rec->drafted.size());
  SPECLAB_ASSERT(rec->n_accepted >= 0 && rec->n_accepted <= n_draft);
  rec->law_u.resize(static_cast<size_t>(rec->n_accepted) + 1);
  for (int i = 0; i <= rec->n_accepted; i++) {
    const int32_t x = i < rec->n_accepted ? rec->drafted[i] : rec->next_token;
    rec->law_u[i] = pit_at(p + i * vocab, vocab, x, base, base.position + i);
  }
  rec->law_u_draft.resize(static_cast<size_t>(n_draft));
  for (int i = 0; i < n_draft; i++)
    rec->law_u_draft[i] = pit_at(p + i * vocab, vocab, rec->drafted[i], base, base.position + i);
}

void law_check_tree_round(const float* p, int64_t vocab, const std::vector<int32_t>& path,
                          RngKey base, RoundRecord* rec) {
  const size_t n = path.size();
  SPECLAB_ASSERT(rec->drafted.size() == n);
  rec->law_u.resize(n + 1);
  for (size_t i = 0; i <= n; i++) {
    const int32_t row = i == 0 ? 0 : path[i - 1];  // the parent's node: root, then the path
    const int32_t x = i < n ? rec->drafted[i] : rec->next_token;
    rec->law_u[i] = pit_at(p + row * vocab, vocab, x, base, base.position + i);
  }
  rec->law_u_draft.clear();
}

void law_check_tally_add(const GenerationResult& g, LawCheckTally* tally) {
  for (const RoundRecord& r : g.rounds) {
    if (r.law_u.empty()) continue;
    SPECLAB_ASSERT(r.n_emitted <= static_cast<int>(r.law_u.size()));
    for (int i = 0; i < r.n_emitted; i++) {
      if (r.law_u[i] < 0.0f)
        tally->impossible++;
      else
        tally->add_emitted(i, r.law_u[i]);
    }
    tally->rounds++;
    for (float u : r.law_u_draft)
      if (u >= 0.0f) tally->add_drafted(u);
  }
}

}  // namespace speclab
