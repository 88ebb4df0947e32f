// Wrapping a user message in an instruct model's chat format: ChatML (<|im_start|>, SmolLM2)
// or Llama 3 (<|start_header_id|>), named or chosen by the special tokens the tokenizer knows.
#pragma once

#include <string>
#include <vector>

#include "models/tokenizer/tokenizer.h"

namespace speclab {

// The named templates, for help texts and errors: "chatml", "llama3".
const std::vector<std::string>& chat_template_names();

// The prompt text for one user turn followed by the assistant's header. `name` is "auto" (by
// the tokenizer's special tokens) or one of chat_template_names(). InputError, naming `what`
// (the option or config key), for an unknown name, or when the tokenizer lacks the chosen
// format's special tokens.
std::string chat_template_apply(const Tokenizer& tokenizer, const std::string& user_text,
                                const std::string& name, const std::string& what);

// The same with name "auto" and what "prompts.chat_template" (the config key).
std::string chat_template_apply(const Tokenizer& tokenizer, const std::string& user_text);

}  // namespace speclab
