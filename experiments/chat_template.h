// Wrapping a user message in an instruct model's chat format, chosen by the special tokens the
// tokenizer knows: ChatML (<|im_start|>, SmolLM2) or Llama 3 (<|start_header_id|>).
#pragma once

#include <string>

#include "models/tokenizer/tokenizer.h"

namespace speclab {

// The prompt text for one user turn followed by the assistant's header. InputError when the
// tokenizer has no known chat format (the config asked for prompts.chat_template).
std::string chat_template_apply(const Tokenizer& tokenizer, const std::string& user_text);

}  // namespace speclab
