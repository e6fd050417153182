// Chat templates of imported checkpoints (data/chat_template.hpp).
#include "hpctrain/data/chat_template.hpp"

#include "hpctrain/core/error.hpp"
#include "hpctrain/core/json_depth.hpp"
#include "hpctrain/data/jinja.hpp"

namespace hpctrain {

namespace {
const std::string* file_named(const TokenizerFiles& files, const std::string& name) {
  for (const auto& [n, text] : files)
    if (n == name) return &text;
  return nullptr;
}

// (nested no deeper than the templates' values may be: data/jinja.hpp)
nlohmann::ordered_json parsed(const std::string& text, const std::string& where) {
  check_json_depth(text, where);
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

Conversation parse_conversation(const std::string& text, const std::string& path) {
  const nlohmann::ordered_json json = parsed(text, path);
  Conversation chat;
  if (json.is_array()) {
    chat.messages = json;
  } else if (json.is_object() && json.contains("messages")) {
    for (const auto& [key, value] : json.items())
      if (key == "add_generation_prompt")
        throw bad_input(path + ": add_generation_prompt is not a variable to give (--chat-file always asks for the " +
                        "reply: the template's generation prompt is on)");
      else if (key == "messages")
        chat.messages = value;
      else
        chat.variables[key] = value;
  } else {
    throw bad_input(path + ": neither a list of messages nor an object with \"messages\" (a conversation: " +
                    R"([{"role": "user", "content": "..."}, ...]))");
  }
  if (!chat.messages.is_array() || chat.messages.empty())
    throw bad_input(path + ": \"messages\" is not a list of one message or more");
  for (std::size_t i = 0; i < chat.messages.size(); ++i) {
    const nlohmann::ordered_json& m = chat.messages[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      const std::string quoted = m.dump(-1, ' ', true);  // (ASCII, \u escapes: the cut never splits a character)
      throw bad_input(path + ": message " + std::to_string(i) + " is not an object with a string \"role\" (" +
                      (quoted.size() > 60 ? quoted.substr(0, 60) + "..." : quoted) + ")");
    }
  }
  return chat;
}

namespace {
// The template's text and where it comes from (for messages), and tokenizer_config.json's object.
struct TemplateSource {
  std::string text, where;
  nlohmann::ordered_json config;
};

TemplateSource template_source(const TokenizerFiles& files, const std::string& origin) {
  const std::string* config_text = file_named(files, "tokenizer_config.json");
  const std::string* jinja_text = file_named(files, "chat_template.jinja");
  const std::string config_where = origin + " tokenizer_config.json";
  TemplateSource s;
  s.config = config_text ? parsed(*config_text, config_where) : nlohmann::ordered_json::object();
  s.where = jinja_text ? origin + " chat_template.jinja" : config_where;
  s.text = jinja_text ? *jinja_text : template_of(s.config, config_where);
  if (s.text.empty())
    throw bad_input(origin + " holds no chat template (Hugging Face's chat_template.jinja or tokenizer_config.json's " +
                    "chat_template, which --import-hf keeps): give the whole text with --prompt");
  return s;
}
}  // namespace

void require_chat_template(const TokenizerFiles& files, const std::string& origin) { template_source(files, origin); }

std::string apply_chat_template(const TokenizerFiles& files, const std::string& origin, const Conversation& chat,
                                bool add_generation_prompt) {
  const TemplateSource from = template_source(files, origin);
  const nlohmann::ordered_json& config = from.config;
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
  for (const auto& [key, value] : chat.variables.items()) context[key] = value;
  context["messages"] = chat.messages;
  context["add_generation_prompt"] = add_generation_prompt;
  return jinja::Template(from.text, from.where).render(context);
}

}  // namespace hpctrain
