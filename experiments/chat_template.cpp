#include "experiments/chat_template.h"

#include "core/error.h"

namespace speclab {

namespace {
bool has_single_token(const Tokenizer& tok, const std::string& text) {
  return tok.encode(text, /*add_bos=*/false, /*parse_special=*/true).size() == 1 &&
         tok.encode(text, false, true)[0] >= 0 && tok.is_special(tok.encode(text, false, true)[0]);
}
}  // namespace

std::string chat_template_apply(const Tokenizer& tok, const std::string& user_text) {
  if (has_single_token(tok, "<|im_start|>"))
    return "<|im_start|>user\n" + user_text + "<|im_end|>\n<|im_start|>assistant\n";
  if (has_single_token(tok, "<|start_header_id|>"))
    return "<|start_header_id|>user<|end_header_id|>\n\n" + user_text +
           "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
  fail_input("prompts.chat_template: the target's tokenizer has no known chat format ",
             "(expected ChatML <|im_start|> or Llama 3 <|start_header_id|> tokens)");
}

}  // namespace speclab
