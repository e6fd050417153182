// Hugging Face checkpoints in and out (checkpoint/hf_weights.hpp): the folder's files, the
// layouts' shared helpers and the dispatch to a layout by config.json's model_type or the deck's
// [model] arch (checkpoint/hf_layouts.hpp).
#include "hpctrain/checkpoint/hf_weights.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <vector>

#include "hpctrain/checkpoint/checkpointing.hpp"
#include "hpctrain/checkpoint/export.hpp"
#include "hpctrain/checkpoint/hf_layouts.hpp"
#include "hpctrain/comm/agreement.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/json_depth.hpp"
#include "hpctrain/io/checkpoint_file.hpp"
#include "hpctrain/io/output_file.hpp"
#include "hpctrain/io/safetensors.hpp"
#include "hpctrain/io/staged_folder.hpp"
#include "hpctrain/model/arch.hpp"

namespace hpctrain {

namespace hf {

// A config.json number that must be a whole number (rope_theta 500000.0 is one).
std::int64_t whole(const Json& cfg, const std::string& key, const std::string& file, std::int64_t fallback) {
  if (!cfg.contains(key) || cfg[key].is_null()) {
    if (fallback >= 0) return fallback;
    throw bad_input(file + ": no \"" + key + "\"");
  }
  const Json& v = cfg[key];
  // (at most 2^31 - 1: a size past what any layer indexes; found by tests/fuzz/fuzz_hf_config.cpp)
  if (!v.is_number() || std::fabs(v.get<double>() - std::round(v.get<double>())) > 0 || v.get<double>() < 0 ||
      v.get<double>() > 2147483647.0)
    throw bad_input(file + ": \"" + key + "\" = " + v.dump() +
                    " is not a whole number in 0..2147483647, which hpctrain needs");
  return static_cast<std::int64_t>(std::llround(v.get<double>()));
}

void expect_layers(std::int64_t layers, std::size_t tensors, const std::string& file, const std::string& key) {
  if (layers > static_cast<std::int64_t>(tensors))
    throw bad_input(file + ": \"" + key + "\" = " + std::to_string(layers) + ", but the weights hold " +
                    std::to_string(tensors) + " tensors (several a layer)");
}

void expect_value(const Json& cfg, const std::string& key, const Json& want, const std::string& file,
                  const std::string& model) {
  if (cfg.contains(key) && !cfg[key].is_null() && cfg[key] != want)
    throw bad_input(file + ": \"" + key + "\" = " + cfg[key].dump() + "; hpctrain's " + model + " computes " +
                    want.dump());
}

LazyTensor take(Tensors& hf, const std::string& name, const Shape& shape, const std::string& dir) {
  auto it = hf.find(name);
  if (it == hf.end() && name.rfind("model.", 0) == 0) it = hf.find(name.substr(6));
  if (it == hf.end()) throw bad_input(dir + ": tensor " + name + " " + shape_string(shape) + " is missing");
  LazyTensor t = std::move(it->second);
  hf.erase(it);
  if (t.shape != shape)
    throw bad_input(dir + ": tensor " + name + " is " + shape_string(t.shape) + "; config.json makes it " +
                    shape_string(shape));
  return t;
}

LazyTensor rows_of(std::string name, std::vector<LazyTensor> parts) {
  LazyTensor t{std::move(name), parts.front().shape, {}};
  t.shape[0] = 0;
  for (const LazyTensor& p : parts) t.shape[0] += p.shape[0];
  t.rows = [parts = std::move(parts), width = t.row_width()](std::int64_t first, std::int64_t count, float* out) {
    std::int64_t at = 0;  // the first row of part p
    for (const LazyTensor& p : parts) {
      const std::int64_t lo = std::max(first, at), hi = std::min(first + count, at + p.shape[0]);
      if (lo < hi) p.rows(lo - at, hi - lo, out + (lo - first) * width);
      at += p.shape[0];
    }
  };
  return t;
}

LazyTensor rows_slice(const LazyTensor& t, std::string name, std::int64_t first, std::int64_t count) {
  LazyTensor out{std::move(name), t.shape, {}};
  out.shape[0] = count;
  out.rows = [src = t, first](std::int64_t f, std::int64_t c, float* to) { src.rows(first + f, c, to); };
  return out;
}

LazyTensor transposed(const LazyTensor& t, std::string name) {
  HPCT_CHECK(t.shape.size() == 2, "transposed: " + t.name + " " + shape_string(t.shape) + " is not a matrix");
  const std::int64_t a = t.shape[0], b = t.shape[1];
  LazyTensor out{std::move(name), {b, a}, {}};
  // Rows j of [b, a] are columns j of the source: every source row is read (in blocks of at most
  // 4 MiB, so a piece's memory is the piece), and each call reads the whole source.
  out.rows = [src = t, a, b](std::int64_t first, std::int64_t count, float* to) {
    const std::int64_t block = std::max<std::int64_t>(1, (std::int64_t{1} << 20) / std::max<std::int64_t>(1, b));
    std::vector<float> v(static_cast<std::size_t>(std::min(block, a) * b));
    for (std::int64_t i0 = 0; i0 < a; i0 += block) {
      const std::int64_t n = std::min(block, a - i0);
      src.rows(i0, n, v.data());
      for (std::int64_t i = i0; i < i0 + n; ++i)
        for (std::int64_t j = first; j < first + count; ++j)
          to[(j - first) * a + i] = v[static_cast<std::size_t>((i - i0) * b + j)];
    }
  };
  return out;
}

LazyTensor rows_ordered(const LazyTensor& t, std::string name, std::vector<std::int64_t> order) {
  HPCT_CHECK(static_cast<std::int64_t>(order.size()) == t.row_count(), "rows_ordered: one source row a row");
  LazyTensor out{std::move(name), t.shape, {}};
  out.rows = [src = t, order = std::move(order), width = t.row_width()](std::int64_t first, std::int64_t count,
                                                                        float* to) {
    // One read of the source rows the asked ones come from (GLM's order moves rows within a head: a
    // span as long as the rows asked), then each row from it; a wider span row by row.
    const auto at = [&](std::int64_t r) { return order[static_cast<std::size_t>(first + r)]; };
    std::int64_t lo = at(0), hi = at(0) + 1;
    for (std::int64_t r = 1; r < count; ++r) lo = std::min(lo, at(r)), hi = std::max(hi, at(r) + 1);
    if (hi - lo > 2 * count) {
      for (std::int64_t r = 0; r < count; ++r) src.rows(at(r), 1, to + r * width);
      return;
    }
    std::vector<float> span(static_cast<std::size_t>((hi - lo) * width));
    src.rows(lo, hi - lo, span.data());
    for (std::int64_t r = 0; r < count; ++r) std::copy_n(span.data() + (at(r) - lo) * width, width, to + r * width);
  };
  return out;
}

LazyTensor renamed(LazyTensor t, std::string name) {
  t.name = std::move(name);
  return t;
}

}  // namespace hf

namespace {
using hf::Json;
using hf::Tensors;

Json read_json(const std::string& path) {
  const std::string text = read_text_file(path, "Hugging Face file");
  check_json_depth(text, path);
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    throw bad_input(path + ": not JSON (" + e.what() + ")");
  }
}

Tensors read_hf_tensors(const std::string& dir) {
  const std::string index = dir + "/model.safetensors.index.json", single = dir + "/model.safetensors";
  std::set<std::string> files;
  std::error_code ec;
  if (std::filesystem::exists(index, ec)) {
    const Json j = read_json(index);
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      throw bad_input(index + ": no \"weight_map\" object (tensor name -> shard file)");
    for (const auto& [name, file] : j["weight_map"].items()) files.insert(dir + "/" + file.get<std::string>());
  } else if (std::filesystem::exists(single, ec)) {
    files.insert(single);
  } else {
    throw bad_input(dir + ": no model.safetensors or model.safetensors.index.json");
  }
  Tensors out;
  for (const std::string& f : files)
    for (LazyTensor& t : safetensors_tensors(f)) {
      const std::string name = t.name;
      if (!out.emplace(name, std::move(t)).second) throw bad_input(f + ": tensor " + name + " is in two shards");
    }
  return out;
}

std::string layer_type_of(const std::string& name) {  // (the checkpoint records each tensor's layer type)
  if (name == "tok_emb.weight") return "embedding";
  if (name == "pos_emb.weight") return "position_embedding";
  if (name == "lm_head.weight") return "lm_head";
  if (name.find("ln_") != std::string::npos) return "layernorm";
  if (name.find("norm") != std::string::npos) return "rmsnorm";
  if (name.find("attn") != std::string::npos) return "attention";
  return "linear";
}

// The layout of config.json's model_type.
using ImportFn = hf::Imported (*)(const Json&, Tensors, const std::string&, const std::string&);
ImportFn import_layout(const Json& cfg, const std::string& file) {
  const std::string type = hf::typed_keys(file, [&] { return cfg.value("model_type", std::string()); });
  if (!hf::llama_class(type).empty()) return hf::llama_import;  // (Llama's and its relatives', hf_llama.cpp)
  if (type == "gpt2") return hf::gpt2_import;
  throw bad_input(file + ": \"model_type\" = \"" + type + "\": the architectures imported are " + hf::llama_classes() +
                  " and gpt2 (GPT2LMHeadModel)");
}

// Hugging Face's names for the tokenizer files a checkpoint stores (GPT2Tokenizer's vocab.json and
// merges.txt are OpenAI's encoder.json and vocab.bpe, byte for byte; tokenizer.json as it is).
std::string hf_tokenizer_name(const std::string& ours) {
  return ours == "encoder.json" ? "vocab.json" : ours == "vocab.bpe" ? "merges.txt" : ours;
}

// tokenizer_config.json for GPT-2's files (as the Hub's gpt2 folder has it): without it
// AutoTokenizer takes the model_type's own class (LlamaTokenizerFast for an arch = llama export,
// which has no vocab.json reader) and no model_max_length; <|endoftext|> is GPT-2's every special token.
std::string gpt2_tokenizer_config(long context) {
  const Json c = {{"tokenizer_class", "GPT2Tokenizer"}, {"model_max_length", context},  {"bos_token", "<|endoftext|>"},
                  {"eos_token", "<|endoftext|>"},       {"unk_token", "<|endoftext|>"}, {"add_bos_token", false},
                  {"add_prefix_space", false},          {"errors", "replace"}};
  return c.dump(2) + "\n";
}

// The [model] section a trained checkpoint records for `deck` (every key, as --print-ini writes
// them, the layers string resolved): what a resume compares.
std::string model_section(const std::string& deck, const std::string& layers, const std::string& file) {
  Config c =
      parse_config("[model]\n" + deck, file, {}, [](const std::string&) { return std::optional<std::string>(); });
  for (ResolvedKey& k : c.resolved)
    if (k.name == "model.layers") k.value = layers;
  const std::string ini = effective_ini(c);
  const std::size_t from = ini.find("[model]\n"), to = ini.find("\n[", from);
  return ini.substr(from, to == std::string::npos ? std::string::npos : to + 1 - from);
}
}  // namespace

std::string import_hf(Communicator& comm, const std::string& dir, const std::string& out,
                      const StoredTokenizer& tokenizer) {
  check_output_file(out, "--import-hf " + dir + " --out " + out);
  std::vector<LazyTensor> tensors;  // (read from the folder as the checkpoint writes them)
  CheckpointInfo info;
  const auto lines = compute_on_root(comm, [&] {
    const std::string config = dir + "/config.json";
    const Json cfg = read_json(config);
    const ImportFn layout = import_layout(cfg, config);
    hf::Imported model = layout(cfg, read_hf_tensors(dir), config, dir);
    tensors = std::move(model.tensors);
    Config imported;
    imported.model = model.model;
    const std::string deck = changed_keys_ini(imported, "model");
    info.run.ini = model_section(deck, arch_layers(model.model), config);
    info.run.ini_file = dir;
    info.run.optimizer = "none";
    info.run.model_summary = "imported from Hugging Face's " + dir;
    std::error_code ec;
    for (const char* name :
         {"tokenizer_config.json", "special_tokens_map.json", "generation_config.json", "chat_template.jinja"})
      if (std::filesystem::is_regular_file(dir + "/" + name, ec))
        info.run.hf_files.emplace_back(name, read_text_file(dir + "/" + name, "Hugging Face file"));
    info.run.tokenizer = tokenizer.tokenizer;
    info.run.vocabulary = tokenizer.vocabulary;
    info.run.tokenizer_files = tokenizer.files;
    std::int64_t values = 0;
    for (const LazyTensor& t : tensors) values += numel(t.shape);
    return std::vector<std::string>{"imported " + dir + ": " + std::to_string(tensors.size()) + " tensors, " +
                                        std::to_string(values) + " parameters, to " + out + " (step 0)",
                                    "[model]\n" + deck};
  });
  std::vector<CheckpointTensor> ct;
  for (const LazyTensor& t : tensors)
    ct.push_back({"model/" + t.name, t.shape, nullptr, 0, false, {}, layer_type_of(t.name), t.rows});
  const std::string partial = out + ".partial";
  try {
    write_checkpoint(comm, partial, info, ct, {}, WriterPlace{0, 1, 0, 1}, IntervalSums{});
  } catch (...) {  // (a tensor refused while it is read, a full disk: nothing half-written is left)
    std::error_code ec;
    std::filesystem::remove(partial, ec);
    throw;
  }
  if (comm.rank() == 0) std::filesystem::rename(partial, out);
  comm.barrier();
  return lines.at(0) + "\n" + lines.at(1).substr(0, lines.at(1).size() - 1);
}

std::string export_hf(const Config& cfg, Runtime& rt, const std::string& dir) {
  if (cfg.model.arch == Arch::layers)
    throw bad_input(
        "--export-hf " + dir + ": [model] arch = layers; the Hugging Face layouts written are " +
        "LlamaForCausalLM's and its relatives' (arch = llama: Mistral's, Qwen2's, Qwen3's, Gemma's, Gemma 2's and " +
        "Gemma 3's by its keys, docs/fine-tuning.md) and GPT2LMHeadModel's (arch = gpt)");
  const auto lines = compute_on_root(rt.world(), [&] {
    const std::string path = resume_selection(cfg);
    if (path.empty()) throw bad_input("--export-hf " + dir + ": no checkpoint to export");
    const CheckpointFile file(path);
    const std::vector<LazyTensor> ours = checkpoint_tensors(file, &cfg);  // (read as they are written)
    std::int64_t vocab = 0;
    for (const LazyTensor& t : ours)
      if (t.name == "tok_emb.weight") vocab = t.shape[0];
    const hf::Exported hf = cfg.model.arch == Arch::llama ? hf::llama_export(ours, cfg.model, vocab)
                                                          : hf::gpt2_export(ours, cfg.model, vocab);
    const DType stored = export_dtype(cfg);
    Json config = hf.config;
    config["torch_dtype"] = torch_dtype_name(stored);
    std::vector<std::string> files;
    bool gpt2_files = false;  // (GPT-2's BPE: encoder.json, vocab.bpe)
    for (const auto& [name, bytes] : file.info().run.tokenizer_files) gpt2_files |= name == "encoder.json";
    const long context = cfg.model.block_size;
    const auto write = [&](const std::string& to) {  // (a new folder, which then replaces `dir` as a whole)
      files = write_safetensors_folder(to, hf.tensors, {{"format", "pt"}}, stored, cfg.checkpoint.export_shard_size);
      write_text_file(to + "/config.json", config.dump(2) + "\n");
      for (const auto& [name, bytes] : file.info().run.tokenizer_files)
        write_text_file(to + "/" + hf_tokenizer_name(name), bytes);
      bool configured = false;  // (an imported tokenizer_config.json goes out as it came)
      for (const auto& [name, bytes] : file.info().run.hf_files)  // (as the import found them)
        if (name.find('/') == std::string::npos)
          write_text_file(to + "/" + name, bytes), configured |= name == "tokenizer_config.json";
      if (!configured && gpt2_files) write_text_file(to + "/tokenizer_config.json", gpt2_tokenizer_config(context));
    };
    replace_folder(dir, "--export-hf " + dir, write, safetensors_layout_file);  // (an earlier export's weights go)
    const std::string weights =
        files.size() == 1 ? files[0]
                          : std::to_string(files.size() - 1) + " shards " + files[0] + " ... and " + files.back();
    std::string tokenizer;
    for (const auto& [name, bytes] : file.info().run.tokenizer_files) tokenizer += ", " + hf_tokenizer_name(name);
    if (gpt2_files) tokenizer += ", tokenizer_config.json";
    if (tokenizer.empty())  // (llm.c's shards carry ids alone; a byte or char vocabulary has no such file)
      tokenizer = "; no tokenizer file: the run's data stored none (copy its tokenizer's files in)";
    return std::vector<std::string>{"exported " + path + " to " + dir + ": config.json, " + weights + " (" +
                                    std::to_string(hf.tensors.size()) + " " + torch_dtype_name(stored) + " tensors)" +
                                    tokenizer};
  });
  return lines.at(0);
}

}  // namespace hpctrain
