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

// `files`: a checkpoint's Hugging Face files (RunRecord::hf_files: name, text). bad_input naming
// `origin` when they hold no chat template, or for a template the renderer refuses or that raises.
std::string apply_chat_template(const TokenizerFiles& files, const std::string& origin,
                                const nlohmann::ordered_json& messages, bool add_generation_prompt);

}  // namespace hpctrain
