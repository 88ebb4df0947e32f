#include "models/decode/generation.h"

namespace speclab {

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kMaxTokens:
      return "max_tokens";
    case StopReason::kEos:
      return "eos";
    case StopReason::kContext:
      return "context";
  }
  return "?";
}

}  // namespace speclab
