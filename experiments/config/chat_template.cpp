#include "experiments/config/chat_template.h"

#include "core/error.h"

namespace speclab {

namespace {
bool has_single_token(const Tokenizer& tok, const std::string& text) {
  const auto ids = tok.encode(text, /*add_bos=*/false, /*parse_special=*/true);
  return ids.size() == 1 && ids[0] >= 0 && tok.is_special(ids[0]);
}

std::string chatml(const std::string& user_text) {
  return "<|im_start|>user\n" + user_text + "<|im_end|>\n<|im_start|>assistant\n";
}

std::string llama3(const std::string& user_text) {
  return "<|start_header_id|>user<|end_header_id|>\n\n" + user_text +
         "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
}
}  // namespace

const std::vector<std::string>& chat_template_names() {
  static const std::vector<std::string> names = {"chatml", "llama3"};
  return names;
}

std::string chat_template_apply(const Tokenizer& tok, const std::string& user_text,
                                const std::string& name, const std::string& what) {
  const bool has_chatml = has_single_token(tok, "<|im_start|>");
  const bool has_llama3 = has_single_token(tok, "<|start_header_id|>");
  if (name == "auto") {
    if (has_chatml) return chatml(user_text);
    if (has_llama3) return llama3(user_text);
    fail_input(what, ": the tokenizer has no known chat format ",
               "(expected ChatML <|im_start|> or Llama 3 <|start_header_id|> tokens)");
  }
  if (name == "chatml") {
    SPECLAB_INPUT_CHECK(
        has_chatml, what,
        ": chatml needs the tokenizer's <|im_start|> special token, which it lacks");
    return chatml(user_text);
  }
  if (name == "llama3") {
    SPECLAB_INPUT_CHECK(has_llama3, what,
                        ": llama3 needs the tokenizer's <|start_header_id|> special token, which "
                        "it lacks");
    return llama3(user_text);
  }
  fail_input(what, ": unknown chat template '", name, "' (expected auto, none, chatml or llama3)");
}

std::string chat_template_apply(const Tokenizer& tok, const std::string& user_text) {
  return chat_template_apply(tok, user_text, "auto", "prompts.chat_template");
}

}  // namespace speclab
