// Text generation from a language model's checkpoint (trainer --generate, train/trainer.hpp):
// the context is the prompt's tokens (as Hugging Face's tokenizer(prompt) gives them), cropped to
// the last [model] block_size (as nanoGPT does). With the key/value cache (the default) the first
// forward runs the prompt's positions and each later one only the token drawn last (attention
// keeps the keys and values of the earlier ones: StepContext::decode_position), until the context
// fills block_size; from then on, and with --no-kv-cache throughout, each token runs the whole
// window. lm_head computes the context's last position's logits alone (Purpose::generation), and
// the token is drawn from them (train/token_draw.hpp: temperature, top-k, top-p; greedy at
// temperature 0; an imported checkpoint's generation_config.json fills the options not given)
// with a uniform number keyed by ([run] seed, sample, token number): the same text on one rank or
// on a pipeline, where the last stage draws and sends the token to the other stages. --samples N
// continues the prompt N times, side by side (as many rows at a time as a training micro-batch:
// each forward reads the weights once for them, each row its own cache) with the texts of one at
// a time; an end-of-text token of the checkpoint's generation_config.json ends a sample. With
// --chat, --chat-file or --interactive the context is a conversation through the checkpoint's
// chat template (rendered on rank 0); --interactive runs a pass per line of standard input, each
// reply joining the conversation, the key/value caches kept between passes (a pass runs the
// positions after those it shares with the last one's tokens).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/checkpoint/checkpointing.hpp"
#include "hpctrain/comm/agreement.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/hash.hpp"
#include "hpctrain/core/log.hpp"
#include "hpctrain/data/chat_template.hpp"
#include "hpctrain/data/llmc_shards.hpp"
#include "hpctrain/data/text_import.hpp"
#include "hpctrain/train/token_draw.hpp"
#include "hpctrain/train/trainer.hpp"

namespace hpctrain {

DatasetIndex generation_index(const Config& cfg, Runtime& rt, const std::string& vocab_path) {
  const auto v = compute_on_root(rt.world(), [&]() -> std::vector<std::string> {
    const std::string path = resume_selection(cfg);
    if (path.empty())
      throw bad_input(
          "--generate: no checkpoint to sample from ([checkpoint] resume = " + cfg.checkpoint.resume.text() +
          (cfg.checkpoint.resume.kind == ResumeFrom::Kind::auto_ ? ", none complete in " + cfg.checkpoint.dir : "") +
          ")");
    const CheckpointFile file(path);
    if (file.info().run.tokenizer.empty())
      throw bad_input("--generate: " + path + " holds no tokenizer: it is not a language model's checkpoint, or " +
                      "one imported from a Hugging Face folder without tokenizer.json");
    const RunRecord& run = file.info().run;
    const bool llmc = run.tokenizer_files.empty() && (run.tokenizer == "gpt2" || run.tokenizer == "llama3");
    if (llmc && vocab_path.empty())
      throw bad_input(
          "--generate: " + path + " was trained on llm.c's " + (run.tokenizer == "gpt2" ? "GPT-2" : "Llama 3") +
          " token shards, which carry no tokenizer: give it with --vocab " +
          (run.tokenizer == "gpt2" ? "DIR (GPT-2's encoder.json and vocab.bpe)" : "tokenizer.json (Llama 3's)"));
    if (!llmc && !vocab_path.empty())
      throw bad_input("--vocab " + vocab_path + ": " + path + " stores its own tokenizer (" + run.tokenizer +
                      "); --vocab is for checkpoints trained on llm.c's .bin shards");
    auto packed = [](const std::string& tokenizer, const std::string& vocabulary, const TokenizerFiles& files) {
      std::vector<std::string> out{tokenizer, vocabulary};
      for (const auto& [name, bytes] : files) out.insert(out.end(), {name, bytes});
      return out;
    };
    if (!llmc) return packed(run.tokenizer, run.vocabulary, run.tokenizer_files);
    const Vocabulary given = llmc_vocabulary(run.tokenizer, vocab_path, path);
    return packed(given.tokenizer(), given.characters(), given.files());
  });
  if (cfg.model.block_size < 1) throw bad_input("--generate: [model] block_size is not set (the model's context)");
  TokenizerFiles files;
  for (std::size_t i = 2; i + 1 < v.size(); i += 2) files.emplace_back(v[i], v[i + 1]);
  const Vocabulary vocab = Vocabulary::stored(v[0], v[1], files);
  DatasetIndex index;
  index.root = "(the checkpoint's vocabulary)";
  SplitIndex& s = index.train;
  s.name = "train";
  s.tokens = true;
  s.tokenizer = v[0];
  s.vocabulary = v[1];
  s.tokenizer_files = files;
  s.num_classes = vocab.size();
  // The ids a prompt may hold (generate checks it): those the model has rows for, all but the
  // last of Gemma 3 1B's 262,145 with its vocab_size 262,144 (with_architecture).
  const std::int64_t rows = cfg.model.arch != Arch::layers ? cfg.model.vocab_size : 0;
  if (rows > 0 && rows < s.num_classes) s.max_id = rows - 1;
  s.block_size = cfg.model.block_size;
  s.sample_shape = {s.block_size};
  s.label_width = s.block_size;
  s.sample_type = SampleType::i32;
  s.scale = {1.f};
  s.offset = {0.f};
  s.total = 1;
  return index;
}

std::int64_t Trainer::forward_context(const Tensor& context, std::int64_t len, const Tensor& run, std::int64_t from) {
  StepContext& ctx = model_->context();
  ctx.decode_position = from;
  model_->set_length(from >= 0 ? len - from : 0);  // (0: the whole window; causal attention ignores its padding)
  mark_documents(context);                         // the documents of every position attended over
  const std::int64_t last = from >= 0 ? len - from - 1 : len - 1;  // the context's last position in the run
  ctx.output_position = last;  // (lm_head computes its logits alone: Purpose::generation)
  executor_->forward(run.shape()[0], MicroBatch{run, Targets{}}, nullptr);
  return last;
}

std::vector<std::uint32_t> Trainer::next_tokens(const Tensor& context, std::int64_t len, const Tensor& run,
                                                std::int64_t from, const SamplingOptions& o, std::int64_t first_sample,
                                                std::int64_t n, const std::vector<std::vector<std::uint32_t>>& seqs) {
  const std::int64_t rows = run.shape()[0], last = forward_context(context, len, run, from);
  std::vector<std::uint32_t> next(static_cast<std::size_t>(rows), 0);
  if (executor_->holds_output()) {
    // Each sequence's last position's row alone comes to the host (one copy for all when the output
    // is one position each); rows are padded-vocabulary wide ([model] vocab_multiple) and only their
    // first id_limit() are tokens with rows (generation_index).
    const Tensor& out = model_->output();
    const std::int64_t stride = out.shape().back(), positions = out.numel() / (rows * stride);
    const std::int64_t v = index_.train.id_limit();
    const std::vector<float> all = positions == 1 ? to_host(out) : std::vector<float>();
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t row = r * positions + (model_->one_output_position() ? 0 : last);
      std::vector<float> logits = positions == 1
                                      ? std::vector<float>(all.begin() + r * stride, all.begin() + r * stride + v)
                                      : to_host(out.view(row * stride, {v}));
      const std::vector<std::uint32_t>& seq = seqs[static_cast<std::size_t>(r)];
      if (o.repetition_penalty != 1) penalize_repeats(logits, seq, o.repetition_penalty);
      if (o.no_repeat_ngram > 0) ban_repeated_ngrams(logits, seq, o.no_repeat_ngram);
      // The draw's key: ([run] seed, sample, token number); sample 0's as before there were samples.
      const std::uint64_t key = cfg_.run.seed ^ splitmix64(0x67656E + static_cast<std::uint64_t>(n) +
                                                           (static_cast<std::uint64_t>(first_sample + r) << 32));
      next[static_cast<std::size_t>(r)] = draw_token(logits, o, key);
    }
  }
  executor_->share_from_output(next);
  return next;
}

namespace {
// The conversation --chat (after --system's message) or --chat-file (read on rank 0) opens with;
// none for --prompt, and for --interactive alone (its first message comes from standard input).
Conversation opening(const SamplingOptions& o, Communicator& world) {
  Conversation chat;
  if (!o.chat_file.empty()) {
    const std::string text = compute_on_root(world, [&] {
      std::string t = read_text_file(o.chat_file, "--chat-file");
      parse_conversation(t, o.chat_file);  // (its one line, on every rank)
      return std::vector<std::string>{t};
    })[0];
    return parse_conversation(text, o.chat_file);
  }
  if (!o.system.empty()) chat.messages.push_back({{"role", "system"}, {"content", o.system}});
  if (!o.chat.empty()) chat.messages.push_back({{"role", "user"}, {"content", o.chat}});
  return chat;
}

// --interactive: the next user message, a line of rank 0's standard input (blank lines skipped;
// "> " on stderr first when it is a terminal), added to `chat` on every rank; false at the end of
// the input. `unwatched`: the watchdog would end the job while a person thinks.
bool next_user_message(Communicator& unwatched, Conversation& chat) {
  std::string text;  // "" at the end of the input, else "+" and the line
  for (std::string line; unwatched.rank() == 0 && text.empty();) {
    if (isatty(STDIN_FILENO)) std::fputs("> ", stderr);
    if (!std::getline(std::cin, line)) break;
    if (line.find_first_not_of(" \t\r") != std::string::npos) text = "+" + line;
  }
  broadcast_text_polled(unwatched, text, 0);
  if (text.empty()) return false;
  chat.messages.push_back({{"role", "user"}, {"content", text.substr(1)}});
  return true;
}

// The conversation through the chat template, rendered on rank 0 (strftime_now's date is one
// text on every rank, even at midnight).
std::string rendered(Communicator& world, const TokenizerFiles& hf_files, const std::string& target,
                     const Conversation& chat) {
  return compute_on_root(
      world, [&] { return std::vector<std::string>{apply_chat_template(hf_files, target, chat, true)}; })[0];
}

// The context --generate continues: --prompt's ids as Hugging Face's tokenizer(prompt) gives them,
// or the conversation through the checkpoint's chat template, as apply_chat_template(messages,
// add_generation_prompt=True, tokenize=True) gives them (the template writes the BOS). bad_input
// for an id without a row (below `rows`).
std::vector<std::uint32_t> prompt_ids(Communicator& world, const SamplingOptions& o, const Conversation& chat,
                                      const TokenizerFiles& hf_files, const std::string& target,
                                      const Vocabulary& vocab, std::int64_t rows) {
  const std::string what = !o.chat_file.empty() ? "--chat-file " + o.chat_file
                           : o.interactive      ? "--interactive"
                           : o.chat.empty()     ? "--prompt"
                                                : "--chat";
  std::vector<std::uint32_t> ids = chat.messages.empty()
                                       ? vocab.encode_prompt(o.prompt, what)  // (with the tokenizer's BOS)
                                       : vocab.encode_specials(rendered(world, hf_files, target, chat), what);
  // An empty prompt starts from <|endoftext|> (GPT-2, llm.c) or token 0 (nanoGPT's characters).
  if (ids.empty()) ids.push_back(vocab.end_of_text() >= 0 ? static_cast<std::uint32_t>(vocab.end_of_text()) : 0u);
  for (const std::uint32_t id : ids)  // (a model with fewer rows than its tokenizer has ids: Gemma 3 1B)
    if (static_cast<std::int64_t>(id) >= rows) {
      const std::string text = vocab.token_text(id);
      const bool printable = std::all_of(text.begin(), text.end(), [](char c) { return c >= ' ' && c <= '~'; });
      throw bad_input(what + ": token id " + std::to_string(id) + (printable ? " " + text : "") +
                      " has no row in the model ([model] vocab_size = " + std::to_string(rows) + ")");
    }
  return ids;
}
}  // namespace

int Trainer::generate(const SamplingOptions& given) {
  check_sampling_options(given);
  if (rt_.mesh().size(MeshDim::tp) > 1)
    throw bad_input("--generate draws from whole logit rows, which [parallel] tensor_parallel = " +
                    std::to_string(rt_.mesh().size(MeshDim::tp)) +
                    " splits; run it with --set parallel.tensor_parallel=1 (the checkpoint loads into any layout)");
  const SplitIndex& split = index_.train;
  const Vocabulary vocab = Vocabulary::stored(split.tokenizer, split.vocabulary, split.tokenizer_files);
  Checkpointer checkpointer(cfg_, rt_, host_dp(), *model_, *opt_, groups_);
  const std::string target = checkpointer.resume_target();
  IntervalSums sums;
  const CheckpointInfo info = checkpointer.load(target, sums, Checkpointer::LoadFor::inference);
  Conversation chat = opening(given, rt_.world());
  const bool chatting = !chat.messages.empty() || given.interactive;
  if (chatting) require_chat_template(info.run.hf_files, target);
  model_->refresh_compute_parameters();
  model_->context().training = false;
  // The options the command line left out: an imported checkpoint's generation_config.json's, as
  // Hugging Face's generate() takes them (the same file on every rank: the checkpoint's).
  SamplingOptions o = given;
  std::string applied;
  for (const auto& [name, bytes] : info.run.hf_files)
    if (name == "generation_config.json") o = sampling_defaults(given, bytes, target + " " + name, applied);
  log0("generate: " + target + " (step " + std::to_string(info.state.step) + "), " + std::to_string(o.tokens) +
       " tokens" + (o.samples > 1 ? " x " + std::to_string(o.samples) + " samples" : "") + ", temperature " +
       std::to_string(o.temperature) + ", top-k " + std::to_string(o.top_k) + ", top-p " + std::to_string(o.top_p) +
       (o.repetition_penalty != 1 ? ", repetition penalty " + std::to_string(o.repetition_penalty) : "") +
       (o.no_repeat_ngram > 0 ? ", no repeated " + std::to_string(o.no_repeat_ngram) + "-grams" : "") + ", seed " +
       std::to_string(cfg_.run.seed) + (o.kv_cache ? ", key/value cache" : ", no key/value cache") +
       (applied.empty() ? "" : " (from the checkpoint's generation_config.json: " + applied + ")") +
       (!chatting ? ""
        : o.interactive
            ? ", a conversation through its chat template (the user's lines from standard input)"
            : ", a conversation of " + std::to_string(chat.messages.size()) + " messages through its chat template"));
  // The samples run side by side, as many at a time as a training micro-batch has rows.
  const std::int64_t group =
      std::max<std::int64_t>(1, std::min(o.samples, rt_.per_rank_batch() / cfg_.train.micro_batches));
  const Device device = rt_.device().kind == DeviceKind::cuda ? Device::cuda : Device::cpu;
  const bool prints = rt_.world().rank() == 0;
  memory_.generation = true;  // (a refusal's advice)
  const std::unique_ptr<Communicator> input = o.interactive ? rt_.unwatched_world() : nullptr;
  double drawn = 0, s = 0;
  // One pass, or with --interactive one per user message, each reply added to the conversation.
  const auto user_last = [&] { return !chat.messages.empty() && chat.messages.back().at("role") == "user"; };
  while (!o.interactive || user_last() || next_user_message(*input, chat)) {
    const std::vector<std::uint32_t> ids =
        prompt_ids(rt_.world(), o, chat, info.run.hf_files, target, vocab, split.id_limit());
    // The key/value caches for the positions this pass reaches (prompt and draws, at most
    // block_size), the model's buffers and layers for the most one forward runs (with the cache
    // the prompt's, less what the last turn's caches hold: positions_for_pass), not block_size; the
    // memory check (the Trainer's leaves it to here) for them: the activations of `group` rows,
    // forward alone, and their caches (float32).
    const std::int64_t cached = positions_for_pass(ids, o);
    memory_.act = model_->activation_memory(group, cfg_.precision.dtype, device, true);
    memory_.act.gradients = 0;
    raise_if_any(rt_.world(), memory_refusal(memory_, static_cast<double>(alloc_.in_use()), cfg_, rt_));
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::uint32_t> reply;
    for (std::int64_t first = 0; first < o.samples; first += group) {
      const std::int64_t count = std::min(group, o.samples - first);
      model_->set_batch(count);
      drawn += static_cast<double>(continue_prompt(ids, o, first, count, vocab, prints, reply, cached));
    }
    s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!o.interactive) break;
    chat.messages.push_back({{"role", "assistant"}, {"content", vocab.decode(reply)}});
  }
  std::string caches;  // (the layers' own buffers: in a token model, the caches)
  if (o.kv_cache) {
    double bytes = model_->layer_own_bytes();
    rt_.world().allreduce(&bytes, &bytes, 1, DType::f64, ReduceOp::max);
    char mib[32];
    std::snprintf(mib, sizeof mib, "%.1f", bytes / (1 << 20));
    caches = ", key/value caches " + std::string(mib) + " MiB" +
             (rt_.world().size() > 1 ? " (the most on a rank)" : "") +
             (o.interactive ? ", " + std::to_string(kv_reused_) + " positions of earlier turns kept" : "");
  }
  if (prints)  // on stderr: stdout holds the text alone
    std::fprintf(stderr, "generate: %.0f tokens in %.3f s, %.1f tokens/s%s\n", drawn, s, s > 0 ? drawn / s : 0.0,
                 caches.c_str());
  return 0;
}

std::int64_t Trainer::positions_for_pass(const std::vector<std::uint32_t>& ids, const SamplingOptions& o) {
  std::int64_t cached = 0;
  if (o.interactive && o.kv_cache) {  // (one sample: --interactive refuses more)
    const std::size_t most = std::min(std::max<std::size_t>(ids.size(), 1) - 1, kv_tokens_.size());
    while (cached < static_cast<std::int64_t>(most) &&
           ids[static_cast<std::size_t>(cached)] == kv_tokens_[static_cast<std::size_t>(cached)])
      ++cached;
  }
  model_->set_positions(cache_positions(ids, o), forward_positions(ids, o, cached));
  if (cached > 0) {  // (whether the rows are there depends on the positions set: a window shorter than them)
    std::int32_t serves = model_->cache_serves(cached) ? 1 : 0;
    rt_.world().allreduce(&serves, &serves, 1, DType::i32, ReduceOp::min);
    if (!serves) model_->set_positions(cache_positions(ids, o), forward_positions(ids, o, cached = 0));
  }
  kv_reused_ += cached;
  kv_tokens_.clear();
  return cached;
}

std::int64_t Trainer::continue_prompt(const std::vector<std::uint32_t>& ids, const SamplingOptions& o,
                                      std::int64_t first, std::int64_t count, const Vocabulary& vocab, bool prints,
                                      std::vector<std::uint32_t>& reply, std::int64_t cached) {
  const std::int64_t t = index_.train.block_size;
  const std::int64_t positions = model_->positions();  // (set_positions: the most this pass reaches)
  Tensor input = Tensor::zeros({count, positions}, alloc_, DType::i32);
  Tensor fresh = Tensor::zeros({count, positions}, alloc_, DType::i32);
  std::vector<std::vector<std::uint32_t>> seqs(static_cast<std::size_t>(count), ids);
  std::vector<std::string> texts(static_cast<std::size_t>(count));  // (several: printed at the end)
  std::vector<char> stopped(static_cast<std::size_t>(count), 0);
  std::vector<std::int32_t> host;
  // One sample streams as it is drawn (rank 0; a token may end inside a UTF-8 character).
  if (prints && count == 1 && first > 0) std::fputs("---------------\n", stdout);  // (nanoGPT's separator)
  if (prints && count == 1) std::fputs(o.prompt.c_str(), stdout);
  std::int64_t kept = 0;  // tokens drawn before a stop
  bool valid = true;      // the cache holds positions 0 .. cached-1 of seqs (not after the window slid)
  for (std::int64_t n = 0; n < o.tokens; ++n) {
    // Every sequence has the same length (a stopped one runs on unseen): the last `len` tokens of each.
    const std::size_t size = seqs[0].size();
    const auto len = static_cast<std::int64_t>(std::min<std::size_t>(size, static_cast<std::size_t>(t)));
    // The cache serves while the context fits block_size; then the window slides, every position
    // moves, and each token runs the whole window (as without the cache).
    const std::int64_t from = o.kv_cache && size <= static_cast<std::size_t>(t) ? cached : -1;
    const std::int64_t width = from >= 0 ? len : positions;  // (the whole window: padded with 0 after len)
    const auto window = [&](std::int64_t begin, std::int64_t cols, Tensor& into) {
      host.assign(static_cast<std::size_t>(count * cols), 0);
      for (std::int64_t r = 0; r < count; ++r)
        for (std::int64_t i = begin; i < std::min(len, begin + cols); ++i)
          host[static_cast<std::size_t>(r * cols + i - begin)] =
              static_cast<std::int32_t>(seqs[static_cast<std::size_t>(r)][size - static_cast<std::size_t>(len - i)]);
      upload(host.data(), host.size() * sizeof(std::int32_t), into);
      return into.view(0, {count, cols});
    };
    // (with the cache a long prompt runs o.prefill_chunk positions at a time, the forwards' size:
    // Trainer::forward_positions; the last chunk's logits alone are drawn from)
    std::int64_t at = from;
    for (const std::int64_t most = model_->input_sample()[0]; at >= 0 && len - at > most; at += most)
      forward_context(window(0, at + most, input), at + most, window(at, most, fresh), at);
    const Tensor context = window(0, width, input);
    const Tensor run = at >= 0 ? window(at, len - at, fresh) : context;
    const std::vector<std::uint32_t> next = next_tokens(context, len, run, at, o, first, n, seqs);
    cached = len;
    valid = from >= 0;
    for (std::size_t r = 0; r < next.size(); ++r) {
      seqs[r].push_back(next[r]);
      if (!stopped[r]) stopped[r] = std::find(o.stop_ids.begin(), o.stop_ids.end(), next[r]) != o.stop_ids.end();
      if (stopped[r]) continue;  // (every rank: the same tokens)
      ++kept;
      if (first + static_cast<std::int64_t>(r) == 0) reply.push_back(next[r]);
      if (!prints) continue;
      const std::string text = vocab.decode({next[r]});
      if (count > 1) {
        texts[r] += text;
        continue;
      }
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    }
    if (std::find(stopped.begin(), stopped.end(), 0) == stopped.end()) break;
  }
  if (o.interactive && valid && count == 1) kv_tokens_.assign(seqs[0].begin(), seqs[0].begin() + cached);
  model_->set_length(0);
  model_->context().decode_position = -1;
  model_->context().output_position = -1;
  for (std::int64_t r = 0; prints && r < count; ++r) {
    if (count > 1 && first + r > 0) std::fputs("---------------\n", stdout);
    const std::string text = count > 1 ? o.prompt + texts[static_cast<std::size_t>(r)] : "";
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputs("\n", stdout);
  }
  if (prints) std::fflush(stdout);
  return kept;
}

}  // namespace hpctrain
