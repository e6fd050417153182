// chat_render CASES.json: each case's rendering by hpctrain's apply_chat_template
// (data/chat_template.hpp) as one JSON object, name -> {"text": ...} or {"error": ...}; the
// cases are tests/reference/chat_templates.mjs's ({name, files, messages, variables?,
// add_generation_prompt}).
#include <fstream>
#include <iostream>
#include <sstream>

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/chat_template.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: chat_render CASES.json\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  const auto cases = nlohmann::ordered_json::parse(text.str());
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& c : cases) {
    hpctrain::TokenizerFiles files;
    for (const auto& [name, body] : c["files"].items()) files.emplace_back(name, body.get<std::string>());
    const std::string name = c["name"].get<std::string>();
    try {
      hpctrain::Conversation chat;
      chat.messages = c["messages"];
      if (c.contains("variables")) chat.variables = c["variables"];
      out[name]["text"] = hpctrain::apply_chat_template(files, name, chat, c["add_generation_prompt"].get<bool>());
    } catch (const hpctrain::Error& e) {
      out[name]["error"] = e.what();
    }
  }
  std::cout << out.dump(1) << "\n";
  return 0;
}
