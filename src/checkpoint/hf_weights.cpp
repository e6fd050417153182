// Hugging Face checkpoints in and out (checkpoint/hf_weights.hpp).
#include "hpctrain/checkpoint/hf_weights.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "hpctrain/checkpoint/checkpointing.hpp"
#include "hpctrain/checkpoint/export.hpp"
#include "hpctrain/comm/agreement.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/io/checkpoint_file.hpp"
#include "hpctrain/io/safetensors.hpp"
#include "hpctrain/model/arch.hpp"

namespace hpctrain {

namespace {
using Json = nlohmann::json;
using Tensors = std::map<std::string, NamedTensor>;

Json read_json(const std::string& path) {
  try {
    return Json::parse(read_text_file(path, "Hugging Face file"));
  } catch (const Json::exception& e) {
    throw bad_input(path + ": not JSON (" + e.what() + ")");
  }
}

// ---- config.json <-> LlamaDims ----

// A config.json number that must be a whole number (rope_theta 500000.0 is one).
std::int64_t whole(const Json& cfg, const std::string& key, const std::string& file, std::int64_t fallback = -1) {
  if (!cfg.contains(key) || cfg[key].is_null()) {
    if (fallback >= 0) return fallback;
    throw bad_input(file + ": no \"" + key + "\"");
  }
  const Json& v = cfg[key];
  if (!v.is_number() || std::fabs(v.get<double>() - std::round(v.get<double>())) > 0 || v.get<double>() < 0)
    throw bad_input(file + ": \"" + key + "\" = " + v.dump() + " is not a whole number >= 0, which hpctrain needs");
  return static_cast<std::int64_t>(std::llround(v.get<double>()));
}

void expect_value(const Json& cfg, const std::string& key, const Json& want, const std::string& file) {
  if (cfg.contains(key) && !cfg[key].is_null() && cfg[key] != want)
    throw bad_input(file + ": \"" + key + "\" = " + cfg[key].dump() + "; hpctrain's Llama computes " + want.dump());
}

LlamaDims llama_dims(const Json& c, const std::string& file) {
  const std::string type = c.value("model_type", "");
  if (type != "llama")
    throw bad_input(file + ": \"model_type\" = \"" + type + "\": the architectures imported are llama " +
                    "(LlamaForCausalLM)");
  LlamaDims d;
  d.n_layer = whole(c, "num_hidden_layers", file);
  d.n_head = whole(c, "num_attention_heads", file);
  d.n_kv_heads = whole(c, "num_key_value_heads", file, d.n_head);
  d.n_embd = whole(c, "hidden_size", file);
  d.ffn_dim = whole(c, "intermediate_size", file);
  d.vocab_size = whole(c, "vocab_size", file);
  d.rope_theta = whole(c, "rope_theta", file, 10000);
  d.tie_embeddings = c.value("tie_word_embeddings", false);
  if (d.n_head < 1 || d.n_embd % d.n_head != 0 || d.n_kv_heads < 1 || d.n_head % d.n_kv_heads != 0)
    throw bad_input(file + ": hidden_size " + std::to_string(d.n_embd) + ", num_attention_heads " +
                    std::to_string(d.n_head) + ", num_key_value_heads " + std::to_string(d.n_kv_heads) +
                    " do not divide into heads");
  expect_value(c, "head_dim", d.n_embd / d.n_head, file);
  expect_value(c, "hidden_act", "silu", file);
  expect_value(c, "attention_bias", false, file);
  expect_value(c, "mlp_bias", false, file);
  const double eps = c.value("rms_norm_eps", 1e-6), k = -std::log10(eps);
  if (std::fabs(k - std::round(k)) > 1e-9)
    throw bad_input(file + ": \"rms_norm_eps\" = " + std::to_string(eps) +
                    " is not a power of ten, which hpctrain needs");
  d.norm_eps_exp = static_cast<int>(std::lround(k));
  if (c.contains("rope_scaling") && !c["rope_scaling"].is_null()) {
    const Json& s = c["rope_scaling"];
    const std::string kind = s.value("rope_type", s.value("type", ""));
    if (kind != "llama3")
      throw bad_input(file + ": \"rope_scaling\" of type \"" + kind + "\": hpctrain computes llama3's (or none)");
    d.rope_factor = whole(s, "factor", file + " rope_scaling");
    d.rope_low = whole(s, "low_freq_factor", file + " rope_scaling");
    d.rope_high = whole(s, "high_freq_factor", file + " rope_scaling");
    d.rope_context = whole(s, "original_max_position_embeddings", file + " rope_scaling");
  }
  return d;
}

Json llama_config(const ModelConfig& m, std::int64_t vocab) {
  Json c{{"architectures", {"LlamaForCausalLM"}},
         {"model_type", "llama"},
         {"hidden_act", "silu"},
         {"attention_bias", false},
         {"mlp_bias", false},
         {"num_hidden_layers", m.n_layer},
         {"num_attention_heads", m.n_head},
         {"num_key_value_heads", m.n_kv_heads ? m.n_kv_heads : m.n_head},
         {"hidden_size", m.n_embd},
         {"head_dim", m.n_embd / m.n_head},
         {"intermediate_size", m.ffn_dim},
         {"rms_norm_eps", m.norm_eps},
         {"rope_theta", static_cast<double>(m.rope_theta)},
         {"max_position_embeddings", m.block_size},
         {"vocab_size", vocab},
         {"tie_word_embeddings", m.tie_embeddings},
         {"torch_dtype", "float32"},
         {"rope_scaling", nullptr}};
  const RopeScalingKey r = rope_scaling_of(m.rope_scaling);
  if (r.factor > 0)
    c["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", static_cast<double>(r.factor)},
                         {"low_freq_factor", static_cast<double>(r.low)},
                         {"high_freq_factor", static_cast<double>(r.high)},
                         {"original_max_position_embeddings", r.context}};
  return c;
}

std::string llama_ini(const LlamaDims& d, std::int64_t context) {
  std::string ini = "[model]\narch = llama\n";
  auto line = [&](const std::string& k, const std::string& v) { ini += k + " = " + v + "\n"; };
  line("n_layer", std::to_string(d.n_layer));
  line("n_head", std::to_string(d.n_head));
  line("n_kv_heads", std::to_string(d.n_kv_heads));
  line("n_embd", std::to_string(d.n_embd));
  line("ffn_dim", std::to_string(d.ffn_dim));
  line("rope_theta", std::to_string(d.rope_theta));
  line("rope_scaling", d.rope_factor > 0
                           ? "llama3(" + std::to_string(d.rope_factor) + ", " + std::to_string(d.rope_low) + ", " +
                                 std::to_string(d.rope_high) + ", " + std::to_string(d.rope_context) + ")"
                           : "none");
  char eps[32];
  std::snprintf(eps, sizeof(eps), "%g", std::pow(10.0, -d.norm_eps_exp));  // as the configuration prints it
  line("norm_eps", eps);
  line("vocab_size", std::to_string(d.vocab_size));
  line("tie_embeddings", d.tie_embeddings ? "true" : "false");
  line("mlp", "swiglu");
  line("qk_norm", "false");
  line("zero_init", "false");
  line("attention_mask", "causal");
  line("block_size", std::to_string(context));
  line("vocab_multiple", "1");
  line("groups", "auto");
  return ini;
}

// ---- The tensors ----

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
    for (NamedTensor& t : read_safetensors(f)) {
      const std::string name = t.name;
      if (!out.emplace(name, std::move(t)).second) throw bad_input(f + ": tensor " + name + " is in two shards");
    }
  return out;
}

// Takes Hugging Face's tensor `name` of `shape` out of `hf` (the "model." prefix optional).
NamedTensor take(Tensors& hf, const std::string& name, const Shape& shape, const std::string& dir) {
  auto it = hf.find(name);
  if (it == hf.end() && name.rfind("model.", 0) == 0) it = hf.find(name.substr(6));
  if (it == hf.end()) throw bad_input(dir + ": tensor " + name + " " + shape_string(shape) + " is missing");
  NamedTensor t = std::move(it->second);
  hf.erase(it);
  if (t.shape != shape)
    throw bad_input(dir + ": tensor " + name + " is " + shape_string(t.shape) + "; config.json makes it " +
                    shape_string(shape));
  return t;
}

NamedTensor rows_of(std::string name, const std::vector<NamedTensor>& parts) {
  NamedTensor t{std::move(name), parts.front().shape, {}};
  t.shape[0] = 0;
  for (const NamedTensor& p : parts) {
    t.shape[0] += p.shape[0];
    t.data.insert(t.data.end(), p.data.begin(), p.data.end());
  }
  return t;
}

NamedTensor rows_slice(const NamedTensor& t, std::string name, std::int64_t first, std::int64_t count) {
  const std::int64_t width = numel(t.shape) / t.shape[0];
  NamedTensor out{std::move(name), t.shape, {}};
  out.shape[0] = count;
  out.data.assign(t.data.begin() + first * width, t.data.begin() + (first + count) * width);
  return out;
}

// Hugging Face name -> hpctrain name pairs that are the same tensor (shape [out, in] both).
std::vector<std::pair<std::string, std::string>> direct_names(const LlamaDims& d) {
  std::vector<std::pair<std::string, std::string>> out{{"model.embed_tokens.weight", "tok_emb.weight"},
                                                       {"model.norm.weight", "norm.weight"}};
  for (std::int64_t i = 0; i < d.n_layer; ++i) {
    const std::string hf = "model.layers." + std::to_string(i) + ".", us = "h." + std::to_string(i) + ".";
    out.emplace_back(hf + "input_layernorm.weight", us + "input_layernorm.weight");
    out.emplace_back(hf + "post_attention_layernorm.weight", us + "post_attention_layernorm.weight");
    out.emplace_back(hf + "self_attn.o_proj.weight", us + "self_attn.proj.weight");
    out.emplace_back(hf + "mlp.down_proj.weight", us + "mlp.down.weight");
  }
  if (!d.tie_embeddings) out.emplace_back("lm_head.weight", "lm_head.weight");
  return out;
}

Shape direct_shape(const std::string& hf, const LlamaDims& d) {
  if (hf.find("embed_tokens") != std::string::npos || hf == "lm_head.weight") return {d.vocab_size, d.n_embd};
  if (hf.find("o_proj") != std::string::npos) return {d.n_embd, d.n_embd};
  if (hf.find("down_proj") != std::string::npos) return {d.n_embd, d.ffn_dim};
  return {d.n_embd};
}

std::vector<NamedTensor> llama_from_hf(Tensors hf, const LlamaDims& d, const std::string& dir) {
  std::vector<NamedTensor> out;
  for (const auto& [theirs, ours] : direct_names(d)) {
    NamedTensor t = take(hf, theirs, direct_shape(theirs, d), dir);
    t.name = ours;
    out.push_back(std::move(t));
  }
  const std::int64_t hd = d.n_embd / d.n_head, kv = d.n_kv_heads * hd, c = d.n_embd;
  for (std::int64_t i = 0; i < d.n_layer; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".", us = "h." + std::to_string(i) + ".";
    out.push_back(rows_of(us + "self_attn.qkv.weight", {take(hf, p + "self_attn.q_proj.weight", {c, c}, dir),
                                                        take(hf, p + "self_attn.k_proj.weight", {kv, c}, dir),
                                                        take(hf, p + "self_attn.v_proj.weight", {kv, c}, dir)}));
    out.push_back(rows_of(us + "mlp.gate_up.weight", {take(hf, p + "mlp.gate_proj.weight", {d.ffn_dim, c}, dir),
                                                      take(hf, p + "mlp.up_proj.weight", {d.ffn_dim, c}, dir)}));
  }
  if (d.tie_embeddings) hf.erase("lm_head.weight");  // (some files carry the tied copy)
  for (const auto& [name, t] : hf)
    if (name.find("rotary_emb.inv_freq") == std::string::npos)
      throw bad_input(dir + ": tensor " + name + " " + shape_string(t.shape) + " is not a parameter of " +
                      "LlamaForCausalLM with this config.json");
  return out;
}

std::string layer_type_of(const std::string& name) {
  if (name == "tok_emb.weight") return "embedding";
  if (name == "lm_head.weight") return "lm_head";
  if (name.find("norm") != std::string::npos) return "rmsnorm";
  if (name.find("self_attn") != std::string::npos) return "attention";
  return "linear";
}

std::vector<NamedTensor> llama_to_hf(const std::vector<NamedTensor>& ours, const ModelConfig& m) {
  LlamaDims d;
  d.n_layer = m.n_layer, d.tie_embeddings = m.tie_embeddings;
  std::map<std::string, std::string> to_hf;
  for (const auto& [theirs, mine] : direct_names(d)) to_hf[mine] = theirs;
  const std::int64_t hd = m.n_embd / m.n_head, kv = (m.n_kv_heads ? m.n_kv_heads : m.n_head) * hd;
  std::vector<NamedTensor> out;
  for (const NamedTensor& t : ours) {
    if (const auto it = to_hf.find(t.name); it != to_hf.end()) {
      out.push_back({it->second, t.shape, t.data});
      continue;
    }
    const std::string layer = "model.layers." + t.name.substr(2, t.name.find('.', 2) - 2) + ".";
    if (t.name.find("self_attn.qkv.weight") != std::string::npos) {
      out.push_back(rows_slice(t, layer + "self_attn.q_proj.weight", 0, m.n_embd));
      out.push_back(rows_slice(t, layer + "self_attn.k_proj.weight", m.n_embd, kv));
      out.push_back(rows_slice(t, layer + "self_attn.v_proj.weight", m.n_embd + kv, kv));
    } else if (t.name.find("mlp.gate_up.weight") != std::string::npos) {
      out.push_back(rows_slice(t, layer + "mlp.gate_proj.weight", 0, m.ffn_dim));
      out.push_back(rows_slice(t, layer + "mlp.up_proj.weight", m.ffn_dim, m.ffn_dim));
    } else {
      throw bad_input("--export-hf: the checkpoint's tensor " + t.name + " has no place in LlamaForCausalLM");
    }
  }
  return out;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) throw bad_input("--export-hf: cannot write " + path);
}
}  // namespace

std::string import_hf(Communicator& comm, const std::string& dir, const std::string& out) {
  std::vector<NamedTensor> tensors;
  CheckpointInfo info;
  const auto lines = compute_on_root(comm, [&] {
    const std::string config = dir + "/config.json";
    const Json cfg = read_json(config);  // (read once: its dimensions, then the context)
    const LlamaDims d = llama_dims(cfg, config);
    tensors = llama_from_hf(read_hf_tensors(dir), d, dir);
    const std::string deck = llama_ini(d, whole(cfg, "max_position_embeddings", config, 2048));
    // The checkpoint records the keys as a trained one does (what a resume compares), the log the deck's.
    info.run.ini = deck + "layers = " + llama_layers(d) + "\nbias = true\ndropout = 0\n";
    info.run.ini_file = dir;
    info.run.optimizer = "none";
    info.run.model_summary = "imported from Hugging Face's " + dir;
    std::error_code ec;
    if (std::filesystem::is_regular_file(dir + "/tokenizer.json", ec)) {
      info.run.tokenizer = "bpe";
      info.run.tokenizer_files = {{"tokenizer.json", read_text_file(dir + "/tokenizer.json", "tokenizer file")}};
    }
    std::int64_t values = 0;
    for (const NamedTensor& t : tensors) values += numel(t.shape);
    return std::vector<std::string>{"imported " + dir + ": " + std::to_string(tensors.size()) + " tensors, " +
                                        std::to_string(values) + " parameters, to " + out + " (step 0)",
                                    deck};
  });
  std::vector<CheckpointTensor> ct;
  for (const NamedTensor& t : tensors)
    ct.push_back({"model/" + t.name, t.shape, t.data.data(), 0, false, {}, layer_type_of(t.name)});
  const std::string partial = out + ".partial";
  write_checkpoint(comm, partial, info, ct, {}, WriterPlace{0, 1, 0, 1}, IntervalSums{});
  if (comm.rank() == 0) std::filesystem::rename(partial, out);
  comm.barrier();
  return lines.at(0) + "\n" + lines.at(1).substr(0, lines.at(1).size() - 1);
}

std::string export_hf(const Config& cfg, Runtime& rt, const std::string& dir) {
  if (cfg.model.arch != Arch::llama)
    throw bad_input("--export-hf " + dir + ": [model] arch = " + name_of(cfg.model.arch) +
                    "; the Hugging Face layout written is LlamaForCausalLM's (arch = llama)");
  return compute_on_root(rt.world(),
                         [&] {
                           const std::string path = resume_selection(cfg);
                           if (path.empty()) throw bad_input("--export-hf " + dir + ": no checkpoint to export");
                           const CheckpointFile file(path);
                           const std::vector<NamedTensor> ours = checkpoint_tensors(file, &cfg);
                           const std::vector<NamedTensor> hf = llama_to_hf(ours, cfg.model);
                           std::int64_t vocab = 0;
                           for (const NamedTensor& t : ours)
                             if (t.name == "tok_emb.weight") vocab = t.shape[0];
                           std::filesystem::create_directories(dir);
                           write_text(dir + "/config.json", llama_config(cfg.model, vocab).dump(2) + "\n");
                           write_safetensors(dir + "/model.safetensors", hf, {{"format", "pt"}});
                           for (const auto& [name, bytes] : file.info().run.tokenizer_files)
                             if (name == "tokenizer.json") write_text(dir + "/tokenizer.json", bytes);
                           return std::vector<std::string>{"exported " + path + " to " + dir +
                                                           ": config.json, model.safetensors (" +
                                                           std::to_string(hf.size()) + " float32 tensors)"};
                         })
      .at(0);
}

}  // namespace hpctrain
