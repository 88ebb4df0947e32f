// tokenizer_load_hf_json: HF tokenizers' tokenizer.json (model.type "BPE", byte-level) into a
// BpeTokenizer. Only the parts that change token ids are read: model.vocab/merges/flags,
// added_tokens, pre_tokenizer (Split regexes, Digits, ByteLevel) and the post-processor's BOS.
// Anything else that would change ids (a normalizer, another model type, a split behaviour
// other than "Isolated") is rejected rather than silently ignored.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_input.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "models/tokenizer/tokenizer_factory.h"

namespace speclab {

namespace {

using nlohmann::json;

// Llama 3's tokenizer.json (128k tokens, 280k merges) has 9 MB; a file 50x that is not one.
constexpr uint64_t kMaxTokenizerJsonBytes = 512ull << 20;

json read_json_file(const std::string& path) {
  const std::string text = input_file_read(path, "tokenizer file", kMaxTokenizerJsonBytes);
  try {
    return json_input_parse(text, path);
  } catch (const json::parse_error& e) {
    fail_input(path, ": not valid JSON at byte ", e.byte, ", expected a tokenizer JSON object");
  } catch (const json::out_of_range& e) {  // a number like 1e999 (found by fuzzing)
    fail_input(path, ": not valid JSON (", e.what(), ")");
  }
}

const json& require_member(const json& parent, const char* key, const std::string& path,
                           const std::string& json_path) {
  SPECLAB_INPUT_CHECK(parent.is_object() && parent.contains(key), path, ": ", json_path,
                      " is missing");
  return parent.at(key);
}

std::string require_string(const json& value, const std::string& path,
                           const std::string& json_path) {
  SPECLAB_INPUT_CHECK(value.is_string(), path, ": ", json_path, " is ", value.type_name(),
                      ", expected a string");
  return value.get<std::string>();
}

bool optional_bool(const json& parent, const char* key, bool def, const std::string& path,
                   const std::string& json_path) {
  if (!parent.contains(key) || parent.at(key).is_null()) return def;
  const json& v = parent.at(key);
  SPECLAB_INPUT_CHECK(v.is_boolean(), path, ": ", json_path, " is ", v.type_name(),
                      ", expected true or false");
  return v.get<bool>();
}

// Escapes a literal string for use inside a PCRE2 pattern (Split with pattern.String).
std::string regex_escape(const std::string& literal) {
  std::string out;
  for (char c : literal) {
    if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

// Appends the regex patterns a pre_tokenizer applies, in order; records whether a ByteLevel
// step is present (the only alphabet this loader supports).
void collect_pretokenizer(const json& pre, const std::string& path, const std::string& json_path,
                          std::vector<std::string>& patterns, bool& has_byte_level) {
  if (pre.is_null()) return;
  const std::string type =
      require_string(require_member(pre, "type", path, json_path), path, json_path + ".type");
  if (type == "Sequence") {
    const json& items = require_member(pre, "pretokenizers", path, json_path);
    SPECLAB_INPUT_CHECK(items.is_array(), path, ": ", json_path, ".pretokenizers is ",
                        items.type_name(), ", expected an array");
    for (size_t i = 0; i < items.size(); ++i) {
      collect_pretokenizer(items[i], path, str_cat(json_path, ".pretokenizers[", i, "]"), patterns,
                           has_byte_level);
    }
  } else if (type == "Split") {
    const json& pattern = require_member(pre, "pattern", path, json_path);
    if (pattern.is_object() && pattern.contains("Regex")) {
      patterns.push_back(require_string(pattern.at("Regex"), path, json_path + ".pattern.Regex"));
    } else if (pattern.is_object() && pattern.contains("String")) {
      patterns.push_back(
          regex_escape(require_string(pattern.at("String"), path, json_path + ".pattern.String")));
    } else {
      fail_input(path, ": ", json_path, ".pattern: expected {\"Regex\": ...} or {\"String\": ...}");
    }
    const std::string behavior =
        pre.contains("behavior") ? require_string(pre.at("behavior"), path, json_path + ".behavior")
                                 : "Isolated";
    SPECLAB_INPUT_CHECK(behavior == "Isolated", path, ": ", json_path, ".behavior is '", behavior,
                        "', expected 'Isolated' (the only split behaviour supported)");
    SPECLAB_INPUT_CHECK(!optional_bool(pre, "invert", false, path, json_path + ".invert"), path,
                        ": ", json_path, ".invert is true, expected false");
  } else if (type == "Digits") {
    const bool individual =
        optional_bool(pre, "individual_digits", false, path, json_path + ".individual_digits");
    patterns.push_back(individual ? "\\p{N}" : "\\p{N}+");
  } else if (type == "ByteLevel") {
    has_byte_level = true;
    SPECLAB_INPUT_CHECK(
        !optional_bool(pre, "add_prefix_space", false, path, json_path + ".add_prefix_space"), path,
        ": ", json_path, ".add_prefix_space is true, expected false (not supported)");
    if (optional_bool(pre, "use_regex", true, path, json_path + ".use_regex")) {
      patterns.push_back(kGpt2PretokenizerPattern);
    }
  } else {
    fail_input(path, ": ", json_path, ".type is '", type,
               "', expected Sequence, Split, Digits or ByteLevel");
  }
}

// The BOS the post-processor prepends to a single sequence (TemplateProcessing), or "".
// Supported: none, ByteLevel (offsets only), TemplateProcessing whose single template is an
// optional special token then the sequence, and a Sequence of these. Anything else would add
// tokens speclab does not (a suffix, Roberta's and Bert's <s> ... </s>): refused, not ignored.
std::string template_bos(const json& post, const std::string& path, const std::string& json_path) {
  if (post.is_null()) return "";
  SPECLAB_INPUT_CHECK(post.is_object(), path, ": ", json_path, " is ", post.type_name(),
                      ", expected an object or null");
  const std::string type = require_string(require_member(post, "type", path, json_path + ".type"),
                                          path, json_path + ".type");
  if (type == "ByteLevel") return "";
  if (type == "Sequence") {
    const json& items = require_member(post, "processors", path, json_path + ".processors");
    SPECLAB_INPUT_CHECK(items.is_array(), path, ": ", json_path, ".processors is ",
                        items.type_name(), ", expected an array");
    std::string bos;
    for (size_t i = 0; i < items.size(); ++i) {
      std::string b = template_bos(items[i], path, str_cat(json_path, ".processors[", i, "]"));
      SPECLAB_INPUT_CHECK(b.empty() || bos.empty(), path, ": ", json_path,
                          " adds more than one token before the text, expected at most one");
      if (!b.empty()) bos = std::move(b);
    }
    return bos;
  }
  SPECLAB_INPUT_CHECK(type == "TemplateProcessing", path, ": ", json_path, ".type is '", type,
                      "', expected TemplateProcessing, ByteLevel or Sequence (not supported: it "
                      "would add tokens speclab does not)");
  const json& single = require_member(post, "single", path, json_path + ".single");
  SPECLAB_INPUT_CHECK(single.is_array(), path, ": ", json_path, ".single is ", single.type_name(),
                      ", expected an array");
  std::string bos;
  bool seen_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const std::string item_path = str_cat(json_path, ".single[", i, "]");
    const json& item = single[i];
    if (item.is_object() && item.contains("Sequence")) {
      SPECLAB_INPUT_CHECK(!seen_sequence, path, ": ", item_path,
                          " is a second sequence, expected one");
      seen_sequence = true;
      continue;
    }
    SPECLAB_INPUT_CHECK(item.is_object() && item.contains("SpecialToken"), path, ": ", item_path,
                        " is ", item.dump(),
                        ", expected {\"SpecialToken\": ...} or "
                        "{\"Sequence\": ...}");
    SPECLAB_INPUT_CHECK(!seen_sequence, path, ": ", item_path,
                        " adds a token after the text, expected none (not supported)");
    SPECLAB_INPUT_CHECK(bos.empty(), path, ": ", item_path,
                        " adds a second token before the text, expected at most one (not "
                        "supported)");
    bos = require_string(
        require_member(item.at("SpecialToken"), "id", path, item_path + ".SpecialToken.id"), path,
        item_path + ".SpecialToken.id");
  }
  SPECLAB_INPUT_CHECK(seen_sequence, path, ": ", json_path,
                      ".single has no {\"Sequence\": ...}, expected the text in it");
  return bos;
}

// A model option of byte-level BPE that speclab does not implement must be absent, null or
// its neutral value; a set option would change what the text encodes to.
void require_unset(const json& model, const char* key, const std::string& path) {
  if (!model.contains(key)) return;
  const json& v = model.at(key);
  const bool neutral = v.is_null() || (v.is_string() && v.get<std::string>().empty()) ||
                       (v.is_number() && v.get<double>() == 0.0);
  SPECLAB_INPUT_CHECK(neutral, path, ": model.", key, " is ", v.dump(),
                      ", expected null (not supported)");
}

// The decoder turns ids back into text: byte-level BPE decodes with ByteLevel; another decoder
// (WordPiece's "##", Metaspace's "▁") would read the pieces differently from speclab.
void check_decoder(const json& decoder, const std::string& path, const std::string& json_path) {
  if (decoder.is_null()) return;
  SPECLAB_INPUT_CHECK(decoder.is_object(), path, ": ", json_path, " is ", decoder.type_name(),
                      ", expected an object or null");
  const std::string type = require_string(
      require_member(decoder, "type", path, json_path + ".type"), path, json_path + ".type");
  if (type == "ByteLevel") return;
  SPECLAB_INPUT_CHECK(type == "Sequence", path, ": ", json_path, ".type is '", type,
                      "', expected ByteLevel (not supported)");
  const json& items = require_member(decoder, "decoders", path, json_path + ".decoders");
  SPECLAB_INPUT_CHECK(items.is_array(), path, ": ", json_path, ".decoders is ", items.type_name(),
                      ", expected an array");
  for (size_t i = 0; i < items.size(); ++i)
    check_decoder(items[i], path, str_cat(json_path, ".decoders[", i, "]"));
}

// tokenizer_config.json's "bos_token"/"eos_token": a string or {"content": ...}.
std::string config_token(const json& config, const char* key) {
  if (!config.is_object() || !config.contains(key)) return "";
  const json& v = config.at(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v.at("content").is_string()) {
    return v.at("content").get<std::string>();
  }
  return "";
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_load_hf_json(const std::string& path) {
  const json root = read_json_file(path);
  SPECLAB_INPUT_CHECK(root.is_object(), path, ": top level is ", root.type_name(),
                      ", expected an object");
  const json& model = require_member(root, "model", path, "model");
  const std::string model_type =
      require_string(require_member(model, "type", path, "model.type"), path, "model.type");
  SPECLAB_INPUT_CHECK(model_type == "BPE", path, ": model.type is '", model_type,
                      "', expected 'BPE'");
  if (root.contains("normalizer") && !root.at("normalizer").is_null()) {
    fail_input(path, ": normalizer is set, expected null (normalizers are not supported)");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix", "dropout"})
    require_unset(model, key, path);
  for (const char* key : {"truncation", "padding"}) {
    SPECLAB_INPUT_CHECK(!root.contains(key) || root.at(key).is_null(), path, ": ", key,
                        " is set, expected null (not supported: prompts are encoded whole)");
  }

  BpeVocabulary vocab;
  vocab.source = path;
  vocab.vocab_key = "model.vocab";
  vocab.merges_key = "model.merges";

  const json& vocab_json = require_member(model, "vocab", path, "model.vocab");
  SPECLAB_INPUT_CHECK(vocab_json.is_object(), path, ": model.vocab is ", vocab_json.type_name(),
                      ", expected an object of piece -> id");
  const json empty_array = json::array();
  const json& added_json = root.contains("added_tokens") && !root.at("added_tokens").is_null()
                               ? root.at("added_tokens")
                               : empty_array;
  SPECLAB_INPUT_CHECK(added_json.is_array(), path, ": added_tokens is ", added_json.type_name(),
                      ", expected an array");
  // Ids must be dense enough to index a table: every id is below the number of entries.
  const int64_t id_limit = static_cast<int64_t>(vocab_json.size() + added_json.size());

  std::vector<bool> has_piece;
  auto place = [&](int64_t id, const std::string& piece, const std::string& json_path) {
    SPECLAB_INPUT_CHECK(id >= 0 && id < id_limit, path, ": ", json_path, " has id ", id,
                        ", expected 0 <= id < ", id_limit, " (the number of tokens)");
    if (static_cast<size_t>(id) >= vocab.pieces.size()) {
      vocab.pieces.resize(id + 1);
      has_piece.resize(id + 1, false);
    }
    return id;
  };
  for (auto it = vocab_json.begin(); it != vocab_json.end(); ++it) {
    const std::string json_path = "model.vocab['" + it.key() + "']";
    SPECLAB_INPUT_CHECK(it.value().is_number_integer(), path, ": ", json_path, " is ",
                        it.value().type_name(), ", expected an integer id");
    const int64_t id = place(it.value().get<int64_t>(), it.key(), json_path);
    SPECLAB_INPUT_CHECK(!has_piece[id], path, ": ", json_path, " has id ", id,
                        " which is already used by '", vocab.pieces[id], "'");
    vocab.pieces[id] = it.key();
    has_piece[id] = true;
  }
  for (size_t i = 0; i < added_json.size(); ++i) {
    const std::string json_path = str_cat("added_tokens[", i, "]");
    const json& entry = added_json[i];
    const json& id_json = require_member(entry, "id", path, json_path + ".id");
    SPECLAB_INPUT_CHECK(id_json.is_number_integer(), path, ": ", json_path, ".id is ",
                        id_json.type_name(), ", expected an integer");
    BpeAddedToken token;
    token.content = require_string(require_member(entry, "content", path, json_path + ".content"),
                                   path, json_path + ".content");
    token.id =
        static_cast<int32_t>(place(id_json.get<int64_t>(), token.content, json_path + ".id"));
    token.special = optional_bool(entry, "special", false, path, json_path + ".special");
    // An added token either fills a free id or names an existing piece with the same text.
    SPECLAB_INPUT_CHECK(!has_piece[token.id] || vocab.pieces[token.id] == token.content, path, ": ",
                        json_path, " '", token.content, "' has id ", token.id,
                        " which model.vocab gives to '", vocab.pieces[token.id], "'");
    vocab.pieces[token.id] = token.content;
    has_piece[token.id] = true;
    vocab.added.push_back(std::move(token));
  }

  if (model.contains("merges") && !model.at("merges").is_null()) {
    const json& merges = model.at("merges");
    SPECLAB_INPUT_CHECK(merges.is_array(), path, ": model.merges is ", merges.type_name(),
                        ", expected an array");
    vocab.merges.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
      const json& m = merges[i];
      if (m.is_string()) {
        // "left right": pieces never contain a plain space in a byte-level vocabulary.
        const std::string s = m.get<std::string>();
        const size_t space = s.find(' ');
        SPECLAB_INPUT_CHECK(
            space != std::string::npos && s.find(' ', space + 1) == std::string::npos, path,
            ": model.merges[", i, "] is '", s, "', expected two pieces separated by one space");
        vocab.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
      } else {
        SPECLAB_INPUT_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(),
                            path, ": model.merges[", i, "] is ", m.dump(),
                            ", expected \"a b\" or [\"a\", \"b\"]");
        vocab.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      }
    }
  }
  vocab.ignore_merges = optional_bool(model, "ignore_merges", false, path, "model.ignore_merges");
  vocab.byte_fallback = optional_bool(model, "byte_fallback", false, path, "model.byte_fallback");

  bool has_byte_level = false;
  if (root.contains("pre_tokenizer")) {
    collect_pretokenizer(root.at("pre_tokenizer"), path, "pre_tokenizer",
                         vocab.pretokenizer_patterns, has_byte_level);
  }
  SPECLAB_INPUT_CHECK(has_byte_level, path,
                      ": pre_tokenizer has no ByteLevel step, expected a byte-level BPE tokenizer");

  auto id_of_added = [&](const std::string& content) -> int32_t {
    for (const auto& t : vocab.added) {
      if (t.content == content) return t.id;
    }
    return -1;
  };
  if (model.contains("unk_token") && !model.at("unk_token").is_null()) {
    const std::string unk = require_string(model.at("unk_token"), path, "model.unk_token");
    auto it = vocab_json.find(unk);
    vocab.unk_id = it != vocab_json.end() ? it->get<int32_t>() : id_of_added(unk);
    SPECLAB_INPUT_CHECK(vocab.unk_id >= 0, path, ": model.unk_token '", unk,
                        "' is neither in model.vocab nor in added_tokens");
  }
  check_decoder(root.contains("decoder") ? root.at("decoder") : json(), path, "decoder");

  // BOS: what the post-processor prepends; EOS: tokenizer_config.json beside the file, if any.
  const std::string bos = template_bos(
      root.contains("post_processor") ? root.at("post_processor") : json(), path, "post_processor");
  vocab.add_bos = !bos.empty();
  if (!bos.empty()) {
    vocab.bos_id = id_of_added(bos);
    SPECLAB_INPUT_CHECK(vocab.bos_id >= 0, path, ": post_processor adds '", bos,
                        "', which is not in added_tokens");
  }
  const auto config_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    const json config = read_json_file(config_path.string());
    vocab.eos_id = id_of_added(config_token(config, "eos_token"));
    if (vocab.bos_id < 0) vocab.bos_id = id_of_added(config_token(config, "bos_token"));
  }
  if (vocab.eos_id < 0) {
    for (const char* name : {"<|end_of_text|>", "<|endoftext|>", "</s>", "<|im_end|>"}) {
      if ((vocab.eos_id = id_of_added(name)) >= 0) break;
    }
  }
  return std::make_unique<BpeTokenizer>(std::move(vocab));
}

}  // namespace speclab
