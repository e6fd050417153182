// How --generate picks the next token from one position's logits (train/generation.cpp): the
// options, and the draw itself, a pure function of the logits, the options and a key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hpctrain {

struct SamplingOptions {
  std::string prompt;  // the text the sample continues ("" allowed)
  // --chat: the user's message, through the checkpoint's chat template (instead of prompt);
  // --system: a system message before it. --chat-file: a conversation file instead of both
  // (data/chat_template.hpp's parse_conversation). --interactive: after each reply the next user
  // message is a line of standard input (rank 0's), until its end.
  std::string chat, system, chat_file;
  bool interactive = false;
  std::int64_t tokens = 200;
  double temperature = 1.0;          // logits / temperature before the softmax (0: the likeliest token, greedy)
  std::int64_t top_k = 0;            // sample among the k most likely tokens (0: all)
  double top_p = 1.0;                // then among the fewest likeliest holding this share of the probability (1: all)
  double min_p = 0.0;                // then among those at least this times as likely as the likeliest (0: all)
  bool kv_cache = true;              // reuse the keys and values of the positions run before (false: --no-kv-cache)
  std::int64_t prefill_chunk = 512;  // with kv_cache: the most prompt positions one forward runs (0: all)
  std::int64_t samples = 1;          // continuations of the prompt, side by side (nanoGPT's num_samples)
  // Hugging Face's repetition_penalty (CTRL's): before the draw, the logit of each token already in
  // the sequence (the prompt's too) divided by it when positive, multiplied by it when not (1: none).
  double repetition_penalty = 1.0;
  // Hugging Face's no_repeat_ngram_size: a token that would repeat an n-gram of the sequence is
  // never drawn (0: none).
  std::int64_t no_repeat_ngram = 0;
  // Which of temperature, top_k and top_p the command line gave: the others may come from the
  // checkpoint's generation_config.json (sampling_defaults).
  bool temperature_given = true, top_k_given = true, top_p_given = true, min_p_given = true,
       repetition_penalty_given = true, no_repeat_ngram_given = true;
  // A sample ends early at one of these tokens (not printed): generation_config.json's
  // eos_token_id, unless ignore_eos (--ignore-eos).
  std::vector<std::uint32_t> stop_ids;
  bool ignore_eos = false;
};

// `o` with the sampling defaults of a Hugging Face generation_config.json (`json`, the text of the
// file an imported checkpoint keeps) for the options the command line left out, as Hugging Face's
// generate() takes them: do_sample = false is greedy (temperature 0), else temperature, top_k,
// top_p and min_p; repetition_penalty and no_repeat_ngram_size either way; and eos_token_id (one id or a list) ends a
// sample, unless o.ignore_eos. `applied` lists what it set ("" when nothing) and the settings hpctrain does not apply
// (beams, typical_p, ...); bad_input naming `origin` for a value of the wrong type or out of range.
SamplingOptions sampling_defaults(SamplingOptions o, const std::string& json, const std::string& origin,
                                  std::string& applied);

// bad_input for options out of range (temperature >= 0, tokens and top_k >= 0, top_p in (0, 1],
// samples >= 1, repetition_penalty > 0, min_p in [0, 1], no_repeat_ngram >= 0, prefill_chunk >= 0).
void check_sampling_options(const SamplingOptions& o);

// The next token: with temperature 0 the likeliest (the lowest id among equals); else a draw from
// softmax(logits / temperature) over the top_k likeliest (all with 0), then over the fewest of
// those holding top_p of their probability, then over those at least min_p times as likely as the
// likeliest (Hugging Face's order), with a uniform number made from `key`. Over the whole
// vocabulary (top_k 0, top_p 1) the draw walks the tokens in id order and sorts nothing; with
// top_k or top_p it walks them likeliest first (equal logits: the lower id first), sorting only
// as many as it needs.
std::uint32_t draw_token(const std::vector<float>& logits, const SamplingOptions& o, std::uint64_t key);

// Hugging Face's RepetitionPenaltyLogitsProcessor: the logit of each token in `seen` (once however
// often it occurs; ids past the logits ignored) divided by `penalty` when positive, multiplied by
// it when not, in float32.
void penalize_repeats(std::vector<float>& logits, const std::vector<std::uint32_t>& seen, double penalty);

// Hugging Face's NoRepeatNGramLogitsProcessor: -inf for each token that would end an n-gram already
// in `seq` (its last n - 1 tokens followed by it somewhere before; n = 1: every token in it).
void ban_repeated_ngrams(std::vector<float>& logits, const std::vector<std::uint32_t>& seq, std::int64_t n);

}  // namespace hpctrain
