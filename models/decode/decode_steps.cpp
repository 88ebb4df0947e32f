#include "models/decode/decode_steps.h"

#include <algorithm>

#include "core/error.h"

namespace speclab {

void decode_check_prompt(const GenerationRequest& request, const TokenRunner& target) {
  const int64_t n_prompt = static_cast<int64_t>(request.prompt.size());
  SPECLAB_INPUT_CHECK(n_prompt >= 1, "prompt: empty (need at least one token)");
  SPECLAB_INPUT_CHECK(n_prompt < target.max_ctx(), "prompt: ", n_prompt,
                      " tokens do not fit the context of ", target.max_ctx(), " tokens");
}

void decode_check_drafter(const Drafter& drafter, const TokenRunner& target) {
  SPECLAB_INPUT_CHECK(drafter.vocab_size() == target.vocab(), "draft '", drafter.name(),
                      "': vocabulary of ", drafter.vocab_size(), " tokens, the target has ",
                      target.vocab());
}

bool decode_commit_token(const GenerationRequest& request, int32_t token,
                         std::vector<int32_t>* context, GenerationResult* result) {
  if (context) context->push_back(token);
  result->tokens.push_back(token);
  if (std::find(request.stop_ids.begin(), request.stop_ids.end(), token) !=
      request.stop_ids.end()) {
    result->stop = StopReason::kEos;
    return true;
  }
  if (static_cast<int64_t>(result->tokens.size()) >= request.max_new_tokens) {
    result->stop = StopReason::kMaxTokens;
    return true;
  }
  return false;
}

}  // namespace speclab
