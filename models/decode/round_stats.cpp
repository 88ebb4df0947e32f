#include "models/decode/round_stats.h"

#include <algorithm>

namespace speclab {

void AcceptanceStats::add(const RoundRecord& r) {
  n_rounds++;
  n_drafted += r.n_draft;
  n_accepted += r.n_accepted;
  n_emitted += r.n_emitted;
  n_tree_nodes += r.tree_nodes;
  const size_t need = static_cast<size_t>(r.n_draft);
  if (drafted_at.size() < need) {
    drafted_at.resize(need, 0);
    tested_at.resize(need, 0);
    accepted_at.resize(need, 0);
  }
  for (int i = 0; i < r.n_draft; i++) {
    drafted_at[i]++;
    if (i <= r.n_accepted) {  // every earlier draft accepted: position i was tested
      tested_at[i]++;
      n_tested++;
      if (i < static_cast<int>(r.beta.size())) {
        beta_sum += r.beta[i];
        n_beta++;
      }
    }
    if (i < r.n_accepted) accepted_at[i]++;
  }
}

std::vector<double> AcceptanceStats::conditional_acceptance() const {
  std::vector<double> a(tested_at.size(), 0.0);
  for (size_t i = 0; i < a.size(); i++)
    a[i] = tested_at[i] ? double(accepted_at[i]) / tested_at[i] : 0.0;
  return a;
}

std::vector<double> AcceptanceStats::survival() const {
  std::vector<double> s(drafted_at.size(), 0.0);
  for (size_t i = 0; i < s.size(); i++)
    s[i] = drafted_at[i] ? double(accepted_at[i]) / drafted_at[i] : 0.0;
  return s;
}

}  // namespace speclab
