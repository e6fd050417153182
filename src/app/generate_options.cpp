// --generate's options (generate_options.hpp).
#include "generate_options.hpp"

#include "hpctrain/core/error.hpp"

namespace po = boost::program_options;

namespace hpctrain {

po::options_description generate_options() {
  po::options_description o("Options of --generate");
  o.add_options()("prompt", po::value<std::string>()->default_value(""), "--generate: the text to continue")(
      "chat", po::value<std::string>(),
      "--generate: a user's message, put through the checkpoint's chat template (an imported instruct model's "
      "tokenizer_config.json chat_template or chat_template.jinja) instead of --prompt; the reply alone is printed")(
      "system", po::value<std::string>(), "--generate --chat or --interactive: a system message before the user's")(
      "chat-file", po::value<std::string>(),
      "--generate: a conversation (JSON: [{\"role\": ..., \"content\": ...}, ...], or {\"messages\": [...]} with the "
      "template's other variables beside it: tools, enable_thinking, ...) put through the chat template; the reply "
      "alone is printed")(
      "interactive",
      "--generate: chat: after each reply the next user message is a line of standard input (rank 0's), until it "
      "ends; the conversation so far goes through the chat template each time")(
      "tokens", po::value<std::int64_t>()->default_value(200), "--generate: how many tokens to sample")(
      "temperature", po::value<double>()->default_value(1.0),
      "--generate: divide the logits by this (0: always the likeliest token, greedy)")(
      "top-k", po::value<std::int64_t>()->default_value(0), "--generate: sample among the k likeliest (0: all)")(
      "top-p", po::value<double>()->default_value(1.0),
      "--generate: then among the fewest likeliest holding this share of the probability (nucleus; 1: all)")(
      "min-p", po::value<double>()->default_value(0.0),
      "--generate: then among those at least this times as likely as the likeliest (0: all)")(
      "no-repeat-ngram", po::value<std::int64_t>()->default_value(0),
      "--generate: never draw a token that would repeat an n-gram of the text (Hugging Face's no_repeat_ngram_size; "
      "0: none)")("repetition-penalty", po::value<double>()->default_value(1.0),
                  "--generate: divide the logits of tokens already in the text by this (multiply the negative ones; "
                  "Hugging Face's repetition_penalty; 1: none)")(
      "no-kv-cache", "--generate: run the whole context for every token (the same tokens, slower; for comparison)")(
      "prefill-chunk", po::value<std::int64_t>()->default_value(512),
      "--generate with the key/value cache: run a prompt this many positions at a time (llama.cpp's micro-batch), "
      "so the forwards hold this many and a sliding-window layer's cache 2 (window - 1) more; 0: the whole prompt "
      "in one forward")("ignore-eos",
                        "--generate: draw --tokens tokens even past an imported checkpoint's end-of-text token "
                        "(generation_config.json's eos_token_id, which otherwise ends a sample)")(
      "samples", po::value<std::int64_t>()->default_value(1),
      "--generate: continue the prompt this many times (side by side, a micro-batch's rows at a time), separated by "
      "a line of dashes");
  return o;
}

SamplingOptions read_generate_options(const po::variables_map& vm) {
  SamplingOptions o;
  o.prompt = vm["prompt"].as<std::string>();
  if (vm.count("chat")) o.chat = vm["chat"].as<std::string>();
  if (vm.count("system")) o.system = vm["system"].as<std::string>();
  if (vm.count("chat-file")) o.chat_file = vm["chat-file"].as<std::string>();
  o.interactive = vm.count("interactive") > 0;
  if ((!o.chat.empty()) + (!o.chat_file.empty()) + (!vm["prompt"].defaulted()) > 1)
    throw bad_input("command line: --prompt, --chat and --chat-file: give one (--chat and --chat-file go through the " +
                    std::string("chat template)"));
  if (o.interactive && !vm["prompt"].defaulted())
    throw bad_input(
        "command line: --interactive chats through the chat template: give --chat or --chat-file (or "
        "neither), not --prompt");
  if (!o.system.empty() && !o.chat_file.empty())
    throw bad_input("command line: --system and --chat-file: the file holds the conversation, its system message too");
  if (!o.system.empty() && o.chat.empty() && !o.interactive)
    throw bad_input("command line: --system is for --chat or --interactive (a --chat-file holds its system message)");
  o.tokens = vm["tokens"].as<std::int64_t>();
  o.temperature = vm["temperature"].as<double>();
  o.top_k = vm["top-k"].as<std::int64_t>();
  o.top_p = vm["top-p"].as<double>();
  o.repetition_penalty = vm["repetition-penalty"].as<double>();
  o.min_p = vm["min-p"].as<double>();
  o.no_repeat_ngram = vm["no-repeat-ngram"].as<std::int64_t>();
  o.kv_cache = vm.count("no-kv-cache") == 0;
  o.prefill_chunk = vm["prefill-chunk"].as<std::int64_t>();
  o.samples = vm["samples"].as<std::int64_t>();
  o.ignore_eos = vm.count("ignore-eos") > 0;
  o.temperature_given = !vm["temperature"].defaulted();  // (the others: generation_config.json's)
  o.top_k_given = !vm["top-k"].defaulted();
  o.top_p_given = !vm["top-p"].defaulted();
  o.repetition_penalty_given = !vm["repetition-penalty"].defaulted();
  o.min_p_given = !vm["min-p"].defaulted();
  o.no_repeat_ngram_given = !vm["no-repeat-ngram"].defaulted();
  return o;
}

}  // namespace hpctrain
