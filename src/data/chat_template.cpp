// Chat templates of imported checkpoints (data/chat_template.hpp).
#include "hpctrain/data/chat_template.hpp"

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/jinja.hpp"

namespace hpctrain {

namespace {
const std::string* file_named(const TokenizerFiles& files, const std::string& name) {
  for (const auto& [n, text] : files)
    if (n == name) return &text;
  return nullptr;
}

nlohmann::ordered_json parsed(const std::string& text, const std::string& where) {
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw bad_input(where + ": not JSON (" + e.what() + ")");
  }
}

// tokenizer_config.json's chat_template: a string, or [{"name": ..., "template": ...}] ("default").
std::string template_of(const nlohmann::ordered_json& config, const std::string& where) {
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array())
    for (const auto& entry : *it)
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry["template"].is_string())
        return entry["template"].get<std::string>();
  throw bad_input(where + ": chat_template is neither a string nor a list with a \"default\" template");
}
}  // namespace

std::string apply_chat_template(const TokenizerFiles& files, const std::string& origin,
                                const nlohmann::ordered_json& messages, bool add_generation_prompt) {
  const std::string* config_text = file_named(files, "tokenizer_config.json");
  const std::string* jinja_text = file_named(files, "chat_template.jinja");
  const std::string config_where = origin + " tokenizer_config.json";
  const nlohmann::ordered_json config =
      config_text ? parsed(*config_text, config_where) : nlohmann::ordered_json::object();
  const std::string where = jinja_text ? origin + " chat_template.jinja" : config_where;
  const std::string text = jinja_text ? *jinja_text : template_of(config, config_where);
  if (text.empty())
    throw bad_input(origin + " holds no chat template (Hugging Face's chat_template.jinja or tokenizer_config.json's " +
                    "chat_template, which --import-hf keeps): give the whole text with --prompt");
  // The special tokens (bos_token, eos_token, ...) as text: special_tokens_map.json's, then the
  // config's over them.
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  const std::string* map_text = file_named(files, "special_tokens_map.json");
  for (const nlohmann::ordered_json& source :
       {map_text ? parsed(*map_text, origin + " special_tokens_map.json") : nlohmann::ordered_json::object(), config}) {
    if (!source.is_object()) continue;
    for (const auto& [key, value] : source.items()) {
      if (key.size() < 6 || key.compare(key.size() - 6, 6, "_token") != 0) continue;
      if (value.is_string()) context[key] = value;
      if (value.is_object() && value.contains("content") && value["content"].is_string())
        context[key] = value["content"];
    }
  }
  context["messages"] = messages;
  context["add_generation_prompt"] = add_generation_prompt;
  return jinja::Template(text, where).render(context);
}

}  // namespace hpctrain
