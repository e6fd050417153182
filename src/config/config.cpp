// Loading the configuration: INI text through Boost.Program_options, then
// `--set` overrides, then per-key validation from the schema and the checks
// that involve several keys. Every failure is one bad_input line naming the
// file (and line), the key, the value and what is allowed.
#include "hpctrain/config/config.hpp"

#include <algorithm>
#include <boost/program_options.hpp>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "hpctrain/config/rope_scaling.hpp"
#include "hpctrain/config/schema.hpp"
#include "hpctrain/core/error.hpp"

namespace po = boost::program_options;

namespace hpctrain {

namespace {

// Line numbers of sections and keys, for messages (Boost does not report them).
struct LineIndex {
  std::map<std::string, std::vector<int>> key_lines;  // "section.key" -> every line it is on
  std::map<std::string, int> section_line;            // "section" -> first line
  std::vector<std::string> lines;

  explicit LineIndex(const std::string& text) {
    std::istringstream in(text);
    std::string line, section;
    for (int n = 1; std::getline(in, line); ++n) {
      lines.push_back(line);
      std::string t = trim(line.substr(0, line.find('#')));
      if (t.empty() || t[0] == ';') continue;
      if (t.front() == '[' && t.back() == ']') {
        section = trim(t.substr(1, t.size() - 2));
        section_line.emplace(section, n);
        continue;
      }
      const auto eq = t.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = trim(t.substr(0, eq));
      key_lines[section.empty() ? key : section + "." + key].push_back(n);
    }
  }
  int line_of_text(const std::string& needle) const {
    for (std::size_t i = 0; i < lines.size(); ++i)
      if (trim(lines[i]) == trim(needle)) return static_cast<int>(i) + 1;
    return 0;
  }
};

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest(const std::string& word, const std::vector<std::string>& options) {
  std::string best;
  std::size_t best_d = 3;  // suggest only near misses
  for (const auto& o : options) {
    const auto d = edit_distance(word, o);
    if (d < best_d) best_d = d, best = o;
  }
  if (best.empty())  // one name the start of the other ([optimizer] for [optim])
    for (const auto& o : options)
      if (o.size() >= 3 && word.size() >= 3 && (word.rfind(o, 0) == 0 || o.rfind(word, 0) == 0)) return o;
  return best;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out;
}

// "section.key" unknown: explain whether the section or the key is wrong.
std::string unknown_key_message(const std::string& name, const std::vector<KeySpec>& schema) {
  std::vector<std::string> sections;
  for (const auto& s : schema)
    if (sections.empty() || sections.back() != s.section) sections.push_back(s.section);
  const auto dot = name.find('.');
  if (dot == std::string::npos) return "key '" + name + "' is outside any section (sections: " + join(sections) + ")";
  const std::string section = name.substr(0, dot), key = name.substr(dot + 1);
  if (std::find(sections.begin(), sections.end(), section) == sections.end()) {
    const auto near = closest(section, sections);
    return "unknown section [" + section + "]" + (near.empty() ? "" : " (did you mean [" + near + "]?)") +
           "; sections: " + join(sections);
  }
  std::vector<std::string> keys;  // today's names only
  for (const auto& s : schema)
    if (s.section == section && s.renamed_to.empty()) keys.push_back(s.key);
  const auto near = closest(key, keys);
  return "unknown key '" + key + "' in [" + section + "]" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
         "; keys in [" + section + "]: " + join(keys);
}

// "parallel.pipeline_parallel" -> "[parallel] pipeline_parallel", as messages name keys.
std::string section_key(const std::string& name) {
  const auto dot = name.find('.');
  return "[" + name.substr(0, dot) + "] " + name.substr(dot + 1);
}

struct RawValue {
  std::string text;
  std::string source;  // "file" or "--set"
  std::string where;   // "file.ini:12" or "--set"
};

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

Faults faults_from_environment(const EnvLookup& env) {
  // `text` as a whole number >= 0 (all of it), or bad_input quoting the variable's whole value.
  auto integer = [](const char* var, const std::string& text, const std::string& value, const char* expected) {
    try {
      std::size_t used = 0;
      const long long v = std::stoll(text, &used);
      if (v >= 0 && used == text.size()) return static_cast<std::int64_t>(v);
    } catch (const std::exception&) {
    }
    throw bad_input(std::string(var) + "='" + value + "': expected " + expected);
  };
  auto number = [&](const char* var) -> std::optional<std::int64_t> {
    const auto v = env(var);
    if (!v) return std::nullopt;
    return integer(var, *v, *v, "a whole number >= 0");
  };
  auto at = [&](const char* var) {
    Faults::At a;
    const auto v = env(var);
    if (!v) return a;
    const auto colon = v->find(':');
    if (colon == std::string::npos) throw bad_input(std::string(var) + "='" + *v + "': expected RANK:STEP");
    a.rank = static_cast<int>(integer(var, v->substr(0, colon), *v, "RANK:STEP"));
    a.step = integer(var, v->substr(colon + 1), *v, "RANK:STEP");
    return a;
  };
  Faults f;
  f.signal = at("HPCTRAIN_TEST_SIGNAL");
  f.stall = at("HPCTRAIN_TEST_STALL");
  f.flip_bit = at("HPCTRAIN_TEST_FLIP_BIT");
  f.nan = at("HPCTRAIN_TEST_NAN");
  f.nan_steps = number("HPCTRAIN_TEST_NAN_STEPS").value_or(1);
  f.spike = at("HPCTRAIN_TEST_SPIKE");
  f.kill_in_write = at("HPCTRAIN_TEST_KILL_IN_WRITE");
  f.fail_write = number("HPCTRAIN_TEST_FAIL_WRITE").value_or(-1);
  f.fail_checkpoint = number("HPCTRAIN_TEST_FAIL_CHECKPOINT").value_or(-1);
  f.no_flock = env("HPCTRAIN_TEST_NO_FLOCK").has_value();
  if (const auto n = number("HPCTRAIN_TEST_FREE_BYTES")) f.free_bytes = static_cast<std::uint64_t>(*n);
  return f;
}

std::string read_text_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad_input(what + " '" + path + "' cannot be read: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw bad_input(what + " '" + path + "' cannot be read");
  return ss.str();
}

namespace {
// [model] arch against the keys that go with it (KeySpec::archs): gpt and llama take their
// dimensions (and no layers string), layers takes none of them. arch = llama's keys together.
void check_llama(const ModelConfig& m, const std::function<std::string(const std::string&)>& where_of) {
  if (m.ffn_dim < 1) throw bad_input(where_of("model.ffn_dim") + ": [model] arch = llama needs [model] ffn_dim >= 1");
  if (m.n_kv_heads != 0 && m.n_head % m.n_kv_heads != 0)
    throw bad_input(where_of("model.n_kv_heads") + ": [model] n_kv_heads = " + std::to_string(m.n_kv_heads) +
                    " must divide n_head = " + std::to_string(m.n_head));
  if ((m.attention_width() / m.n_head) % 2 != 0)
    throw bad_input(where_of(m.head_dim ? "model.head_dim" : "model.n_embd") +
                    ": [model] arch = llama needs an even head width (rotary pairs), got " +
                    std::to_string(m.attention_width() / m.n_head));
  if (m.qk_norm_weight && !m.qk_norm)
    throw bad_input(where_of("model.qk_norm_weight") + ": [model] qk_norm_weight = true weights the QK-norm: set " +
                    "[model] qk_norm = true too");
  if (m.qk_norm_whole && !m.qk_norm_weight)
    throw bad_input(where_of("model.qk_norm_whole") + ": [model] qk_norm_whole = true spans the weighted QK-norm: " +
                    "set [model] qk_norm = true and qk_norm_weight = true too");
  if (m.post_norm && m.sandwich_norm)
    throw bad_input(where_of("model.post_norm") + ": [model] post_norm and sandwich_norm are two placements of the " +
                    "norms (OLMo 2's after the sublayers only, Gemma 2's before and after): set one");
  const long width = m.attention_width() / m.n_head, rotated = m.rope_dims ? m.rope_dims : width;
  if (m.rope_dims % 2 != 0 || m.rope_dims > width)
    throw bad_input(where_of("model.rope_dims") + ": [model] rope_dims = " + std::to_string(m.rope_dims) +
                    ": the rotated columns of a head of " + std::to_string(width) + ", an even number at most that");
  if (const RopeScaling& r = m.rope_scaling;
      !r.short_factor.empty() && static_cast<long>(r.short_factor.size()) != rotated / 2)
    throw bad_input(where_of("model.rope_scaling") + ": [model] rope_scaling longrope gives " +
                    std::to_string(r.short_factor.size()) + " factors for " + std::to_string(rotated / 2) +
                    " rotated pairs (head width or rope_dims, halved)");
  if (m.attention_multiplier > 0 && m.query_pre_attn_scalar > 0)
    throw bad_input(where_of("model.attention_multiplier") + ": [model] attention_multiplier and " +
                    "query_pre_attn_scalar both scale the scores (Granite's and Gemma 2's): set one");
  if (m.rope_local_theta > 0 && m.global_every < 1)
    throw bad_input(where_of("model.rope_local_theta") + ": [model] rope_local_theta needs [model] global_every >= 1 " +
                    "(the period of the global layers, Gemma 3's 6)");
  if (m.global_every > 0 && m.rope_local_theta < 1 && m.sliding_window < 1)
    throw bad_input(where_of("model.global_every") + ": [model] global_every needs [model] rope_local_theta or " +
                    "sliding_window (what makes the local layers local: Gemma 3's 10000 and 512)");
}

// The arch names of KeySpec::archs, "gpt llama" -> "gpt or llama".
std::string arch_names(const std::string& archs) {
  std::string out = archs;
  if (const auto space = out.find(' '); space != std::string::npos) out.replace(space, 1, " or ");
  return out;
}

void check_architecture(const Config& cfg, const std::map<std::string, RawValue>& given,
                        const std::function<std::string(const std::string&)>& where_of) {
  const ModelConfig& m = cfg.model;
  const std::string arch = name_of(m.arch);
  for (const KeySpec& k : config_schema()) {  // (keys of other architectures)
    if (k.archs.empty() || !given.count(k.name()) || (" " + k.archs + " ").find(" " + arch + " ") != std::string::npos)
      continue;
    const bool dims = m.arch == Arch::layers;
    throw bad_input(where_of(k.name()) + ": [model] " + k.key + " is a key of arch = " + arch_names(k.archs) +
                    ", not of arch = " + arch + (dims ? ": set [model] arch (or leave the key out)" : "") +
                    (m.arch == Arch::llama && (k.key == "bias" || k.key == "dropout")
                         ? " (arch = llama has no dropout; biases: [model] qkv_bias, Qwen2's)"
                         : ""));
  }
  if (m.arch == Arch::layers) return;
  if (!m.layers.empty())
    throw bad_input(where_of("model.layers") + ": [model] arch = " + arch +
                    " builds the layers: leave [model] layers out");
  for (const auto& [key, v] :
       {std::pair<const char*, long>{"n_layer", m.n_layer}, {"n_head", m.n_head}, {"n_embd", m.n_embd}})
    if (v < 1)
      throw bad_input(where_of(std::string("model.") + key) + ": [model] arch = " + arch + " needs [model] " + key +
                      " >= 1");
  if (m.n_embd % m.n_head != 0)
    throw bad_input(where_of("model.n_embd") + ": [model] n_embd = " + std::to_string(m.n_embd) +
                    " does not divide into n_head = " + std::to_string(m.n_head) + " heads");
  if (m.arch == Arch::llama) check_llama(m, where_of);
}
}  // namespace

namespace {
// Every key the file and the overrides give, by its current name; old names add a warning each.
std::map<std::string, RawValue> given_keys(const std::string& ini_text, const std::string& origin,
                                           const std::vector<std::string>& overrides,
                                           std::vector<std::string>& warnings) {
  const auto& schema = config_schema();
  const LineIndex index(ini_text);
  auto at_line = [&](int line) { return origin + (line > 0 ? ":" + std::to_string(line) : ""); };
  auto current = [&](const std::string& name, const std::string& where) {
    const std::string now = current_key_name(name);
    if (now != name && old_spellings(name).empty())
      warnings.push_back(where + ": " + section_key(name) + " is now called " + section_key(now) +
                         " (same meaning); the old name still works");
    return now;
  };
  // An old key whose values were spelled otherwise (KeySpec::old_values): the new key's spelling.
  auto spelled = [&](const std::string& name, const std::string& text, const std::string& where) {
    const auto& values = old_spellings(name);
    if (values.empty()) return text;
    const auto it = values.find(trim(text));
    std::string known;
    for (const auto& [was, now] : values) known += (known.empty() ? "" : "|") + was;
    if (it == values.end())
      throw bad_input(where + ": " + section_key(name) + " = '" + trim(text) + "': expected one of " + known);
    warnings.push_back(where + ": " + section_key(name) + " = " + trim(text) + " is now " +
                       section_key(current_key_name(name)) + " = " + it->second + "; the old key still works");
    return it->second;
  };
  po::options_description desc;
  for (const auto& s : schema) desc.add_options()(s.name().c_str(), po::value<std::string>());
  std::map<std::string, RawValue> given;
  try {
    std::istringstream in(ini_text);
    const auto parsed = po::parse_config_file(in, desc, /*allow_unregistered=*/true);
    std::map<std::string, std::size_t> seen;  // occurrences so far, to point at the right line
    for (const auto& opt : parsed.options) {
      const auto it = index.key_lines.find(opt.string_key);
      const std::size_t nth = seen[opt.string_key]++;
      const int line = it != index.key_lines.end() && nth < it->second.size() ? it->second[nth] : 0;
      const std::string where = at_line(line);
      if (opt.unregistered) throw bad_input(where + ": " + unknown_key_message(opt.string_key, schema));
      const std::string key = current(opt.string_key, where);
      if (given.count(key))
        throw bad_input(where + ": key '" + opt.string_key + "' is given twice" +
                        (key != opt.string_key ? " (" + section_key(key) + " is its new name)" : ""));
      given[key] = {spelled(opt.string_key, opt.value.empty() ? "" : opt.value.front(), where), "file", where};
    }
  } catch (const po::invalid_config_file_syntax& e) {
    const int line = index.line_of_text(e.tokens());
    throw bad_input(at_line(line) + ": cannot parse line '" + trim(e.tokens()) +
                    "': expected 'key = value', a [section] header or a # comment");
  } catch (const po::error& e) {
    throw bad_input(origin + ": cannot parse: " + e.what());
  }
  for (const auto& o : overrides) {
    const auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0) throw bad_input("--set '" + o + "': expected section.key=value");
    const std::string name = trim(o.substr(0, eq));
    const bool known = std::any_of(schema.begin(), schema.end(), [&](const KeySpec& s) { return s.name() == name; });
    if (!known) throw bad_input("--set " + name + ": " + unknown_key_message(name, schema));
    given[current(name, "--set")] = {spelled(name, o.substr(eq + 1), "--set"), "--set", "--set"};
  }
  return given;
}

// Checks involving several keys.
void check_together(const Config& cfg, const std::map<std::string, RawValue>& given) {
  auto where_of = [&](const std::string& name) {
    const auto it = given.find(name);
    return it == given.end() ? cfg.origin : it->second.where;
  };
  if (cfg.train.steps == 0 && cfg.train.epochs == 0)
    throw bad_input(where_of("train.epochs") + ": [train] epochs = 0 and steps = 0: nothing to train; set one > 0");
  if (cfg.train.micro_batch > 0 && cfg.train.micro_batches != 1)  // (1 = the default, as --print-ini writes it)
    throw bad_input(where_of("train.micro_batch") +
                    ": [train] micro_batch and micro_batches are both set; give one (micro_batch: rows per "
                    "micro-batch, whatever the rank count; micro_batches: how many)");
  if (cfg.train.global_batch % cfg.train.micro_batches != 0)
    throw bad_input(where_of("train.micro_batches") +
                    ": [train] micro_batches = " + std::to_string(cfg.train.micro_batches) +
                    " does not divide global_batch = " + std::to_string(cfg.train.global_batch));
  check_architecture(cfg, given, where_of);
  if (cfg.run.device == DeviceKind::cpu && cfg.parallel.comm == CommBackend::nccl)
    throw bad_input(where_of("parallel.comm") +
                    ": [parallel] comm = nccl needs device = cuda (or auto on a GPU "
                    "machine), but [run] device = cpu");
}
}  // namespace

Config parse_config(const std::string& ini_text, const std::string& origin, const std::vector<std::string>& overrides,
                    const EnvLookup& env) {
  Config cfg;
  cfg.origin = origin;
  cfg.ini_text = ini_text;
  const auto given = given_keys(ini_text, origin, overrides, cfg.warnings);
  for (const auto& s : config_schema()) {
    if (!s.renamed_to.empty()) continue;
    const auto it = given.find(s.name());
    const bool is_given = it != given.end();
    const std::string raw = is_given ? it->second.text : s.default_value;
    std::string value;
    try {
      value = canonical_value(s, raw, env);
      if (s.check) s.check(value);
      s.apply(cfg, value);
    } catch (const std::invalid_argument& e) {
      const std::string where = is_given ? it->second.where : origin + " (default)";
      throw bad_input(where + ": [" + s.section + "] " + s.key + " = '" + trim(raw) + "': " + e.what());
    }
    cfg.resolved.push_back({s.name(), value, is_given ? it->second.source : "default"});
  }
  // Keys whose default depends on another key.
  if (cfg.checkpoint.dir.empty()) {
    cfg.checkpoint.dir = cfg.run.out_dir + "/checkpoints";
    for (auto& k : cfg.resolved)
      if (k.name == "checkpoint.dir") k.value = cfg.checkpoint.dir;
  }
  check_together(cfg, given);
  return cfg;
}

std::string effective_ini(const Config& cfg) {
  std::ostringstream os;
  std::string section;
  for (const ResolvedKey& k : cfg.resolved) {
    const auto dot = k.name.find('.');
    if (k.name.substr(0, dot) != section) {
      section = k.name.substr(0, dot);
      os << (os.tellp() > 0 ? "\n" : "") << '[' << section << "]\n";
    }
    os << k.name.substr(dot + 1) << " = " << k.value << '\n';
  }
  return os.str();
}

std::string changed_keys_ini(const Config& cfg, const std::string& section) {
  std::string out;
  for (const KeySpec& k : config_schema()) {
    if (k.section != section || !k.show || !k.renamed_to.empty()) continue;
    const std::string value = k.show(cfg);
    if (value != k.default_value) out += k.key + " = " + value + "\n";
  }
  return out;
}

std::map<std::string, std::string> ini_values(const std::string& ini_text, const std::string& origin) {
  std::map<std::string, std::string> out;
  try {
    std::istringstream in(ini_text);
    for (const auto& opt : po::parse_config_file(in, po::options_description(), /*allow_unregistered=*/true).options)
      out[opt.string_key] = opt.value.empty() ? "" : opt.value.front();
  } catch (const po::error& e) {
    throw bad_input(origin + ": cannot parse its configuration: " + e.what());
  }
  return out;
}

const std::string& Config::resolved_value(const std::string& name) const {
  for (const auto& k : resolved)
    if (k.name == name) return k.value;
  throw Error(ExitCode::internal, Scope::this_rank, "no configuration key " + name);
}

}  // namespace hpctrain
