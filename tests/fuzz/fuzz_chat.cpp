// Chat templates (data/jinja.hpp, data/chat_template.hpp): the text of a model folder's
// chat_template.jinja, which a downloaded model brings, rendered as --chat and --chat-file render
// it. The input's bytes up to the first NUL are the template; what follows it, if anything, is a
// --chat-file (parse_conversation), else a fixed conversation (a system prompt, two user turns, an
// assistant reply; and the same without the system prompt) is used. The special tokens come from a
// tokenizer_config.json beside the template. A template either renders or is refused with one line; a hang (libFuzzer's
// -timeout), a crash, a stack overflow or memory without bound (-rss_limit_mb) is a finding.
#include <nlohmann/json.hpp>

#include "fuzz_target.hpp"
#include "hpctrain/data/chat_template.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hpctrain;
  const std::string all = fuzz::text(data, size);
  const std::size_t nul = all.find('\0');
  const TokenizerFiles files{
      {"tokenizer_config.json", R"({"bos_token": "<s>", "eos_token": {"content": "</s>"}, "pad_token": null})"},
      {"chat_template.jinja", all.substr(0, nul)}};
  // (text contents, as every chat template reads them; a system message first, and the turns
  // without it for the templates that refuse one, Gemma's)
  Conversation chat, turns;
  chat.messages = nlohmann::ordered_json::parse(R"([
      {"role": "system", "content": "You are terse."},
      {"role": "user", "content": "  What is 2+2?\n"},
      {"role": "assistant", "content": "4"},
      {"role": "user", "content": "And 3+3?"}])");
  turns.messages = nlohmann::ordered_json(chat.messages.begin() + 1, chat.messages.end());
  if (nul != std::string::npos) {
    fuzz::expect_refusal_only("conversation",
                              [&] { chat = parse_conversation(all.substr(nul + 1), "fuzz/chat.json"); });
    turns = chat;
  }
  for (const Conversation* c : {&chat, &turns})
    for (const bool prompt : {false, true})
      fuzz::expect_refusal_only("chat_template", [&] { (void)apply_chat_template(files, "fuzz", *c, prompt); });
  return 0;
}
