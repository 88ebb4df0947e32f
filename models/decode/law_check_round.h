// The in-run law check's share of a round (core/law_check.h): where a round was verified on the
// host, the target's standardized rows p are at hand, and every token the round produced is
// priced under its own row: u = the randomized PIT of the token, v from stream kRngLawCheck at
// the token's absolute position. Nothing here feeds a decoding decision or draws from the
// decoders' streams, so outputs are the same with the check on or off; the decoders time the
// check and leave its seconds out of their decode and host times (RoundRecord::law_check_s).
//
// Chain round, p: [n_draft + 1, vocab], row i = p(. | context, d_1..d_i):
//   law_u[i]        i = 0..n_accepted: token i of the round (d_1..d_n accepted, then the
//                   correction or bonus) under row i
//   law_u_draft[i]  i = 0..n_draft - 1: d_{i+1} under row i, accepted or not: what a verifier
//                   that accepts every draft would have emitted (the check's named wrong law)
// Tree round, p: [n_nodes, vocab] by node: token i of the round under the row of its parent on
// the accepted path (the root for i = 0); no law_u_draft (a tree has no single chain to accept).
// A token of probability 0 under its row gets u = -1 (impossible under p).
#pragma once

#include <cstdint>
#include <vector>

#include "core/law_check.h"
#include "core/rng.h"
#include "models/decode/generation.h"

namespace speclab {

// Fills rec->law_u and rec->law_u_draft from the round's drafted, n_accepted and next_token.
void law_check_chain_round(const float* p, int64_t vocab, RngKey base, RoundRecord* rec);

// Fills rec->law_u; path: the accepted nodes (root excluded) in depth order, rec->drafted their
// tokens.
void law_check_tree_round(const float* p, int64_t vocab, const std::vector<int32_t>& path,
                          RngKey base, RoundRecord* rec);

// Adds one generation's checked rounds to the tally: the u of each emitted token (the first
// n_emitted of law_u: tokens cut by a stop were never emitted) at its position in the round, a
// token of probability 0 as impossible; and every drafted u (drafted tokens of probability 0,
// which the check would reject outright, are left out, so the power it gives is a lower bound).
// Rounds without the check (verified on the device, or law_check off) add nothing.
void law_check_tally_add(const GenerationResult& g, LawCheckTally* tally);

}  // namespace speclab
