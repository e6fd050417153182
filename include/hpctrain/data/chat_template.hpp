// A Hugging Face chat template applied to messages, as transformers' apply_chat_template(messages,
// add_generation_prompt) renders it (data/jinja.hpp runs the template): the template is
// chat_template.jinja where the folder has one, else tokenizer_config.json's chat_template (a string,
// or the entry named "default" of a list); the variables are `messages`, `add_generation_prompt`
// and the config's special tokens as text (bos_token, eos_token, unk_token, pad_token, ...: a
// string, or an added token's "content").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "hpctrain/io/h5.hpp"  // TokenizerFiles

namespace hpctrain {

// What a template renders: the messages ([{"role": ..., "content": ...}, ...]) and the variables
// apply_chat_template's keyword arguments would give it (tools, documents, enable_thinking, ...:
// any name but messages and add_generation_prompt; they win over the special tokens, as there).
struct Conversation {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();
};

// A conversation file (--chat-file): JSON, either the messages' list or an object with
// "messages" and the variables beside it. bad_input naming `path` (and the message) for anything
// else: not JSON, no messages, a message that is not an object with a string "role", a variable
// named add_generation_prompt (--chat-file always asks for the reply).
Conversation parse_conversation(const std::string& text, const std::string& path);

// bad_input naming `origin` when `files` hold no chat template (apply_chat_template's first check).
void require_chat_template(const TokenizerFiles& files, const std::string& origin);

// `files`: a checkpoint's Hugging Face files (RunRecord::hf_files: name, text). bad_input naming
// `origin` when they hold no chat template, or for a template the renderer refuses or that raises.
std::string apply_chat_template(const TokenizerFiles& files, const std::string& origin, const Conversation& chat,
                                bool add_generation_prompt);

}  // namespace hpctrain
