// The schema of every configuration key: its section, type, allowed range or values, meaning
// and the Config field it is stored in. One static table (config_schema()) drives parsing,
// validation, the --dry-run listing, --help and docs/configuration.md. A key's default is
// stated once, as the initializer of its Config field; the table reads its default text off a
// default-constructed Config.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "hpctrain/config/config.hpp"

namespace hpctrain {

enum class ValueKind { integer, real, boolean, choice, text, path, size, real_pair };

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kMaxCount = 9.0e15;  // upper bound of counts: exactly representable, far above any sane one

struct KeySpec {
  std::string section;
  std::string key;
  ValueKind kind = ValueKind::text;
  double min = 0, max = 0;  // integer/real bounds (inclusive unless min_exclusive)
  bool bounded = false;
  bool min_exclusive = false;
  std::vector<std::string> choices;  // for ValueKind::choice: the enum's spellings (choices_of)
  std::string default_value;         // show(Config{}), as a person writes it
  std::string help;
  // Checks a canonical value beyond its kind and bounds (throws std::invalid_argument), if set.
  std::function<void(const std::string&)> check;
  // Stores an already validated, canonical value into the config.
  std::function<void(Config&, const std::string&)> apply;
  // The field's value as text that apply reads back.
  std::function<std::string(const Config&)> show;
  // An old name kept working: its value is taken as this key's ("section.key"), with a one-line
  // warning naming the new key; giving both is an error. Such entries have no apply of their own.
  std::string renamed_to;
  // An old name whose values were spelled otherwise: its spelling -> this key's ("true" ->
  // "optimizer"); another value is refused with the spellings it takes.
  std::map<std::string, std::string> old_values;
  // [model] keys of typed architectures: the arch names that take the key ("gpt llama"); a deck
  // giving it with another [model] arch is refused (config.cpp). Empty: every arch takes it.
  std::string archs;

  std::string name() const { return section + "." + key; }
  // Modifiers for the table.
  KeySpec& range(double lo, double hi);              // inclusive
  KeySpec& above(double lo, double hi = kInfinity);  // > lo and <= hi
  KeySpec& as(ValueKind k);                          // path, size: a string or integer field read as such
  KeySpec& of_archs(const char* names);              // archs
};

// Appends the old names of keys (config/old_names.cpp): renamed keys, and shard_optimizer's
// boolean as [parallel] shard's values. Used once, by the schema's construction.
void add_old_names(std::vector<KeySpec>& keys);
// All keys in display order, each section's old names last in it. Built once.
const std::vector<KeySpec>& config_schema();
// The current name of "section.key": the key an old name was renamed to, else `name` itself.
std::string current_key_name(const std::string& name);
// An old name's value spellings (KeySpec::old_values; empty for any other name).
const std::map<std::string, std::string>& old_spellings(const std::string& name);

// What a key whose value differs from a checkpoint's means when a run resumes from it
// (docs/training.md, "One folder, one experiment"): experiment keys define what is trained (the
// model, the data, the optimizer, global_batch, the seed, precision) and must match for the
// automatic resume; schedule keys (train.steps, train.epochs) may change with --resume-changed;
// layout keys (parallel.*, kernels.*, micro-batches, the device, model.groups) never block
// (elastic resume); free keys (logging, checkpoint cadence, evaluation) do not matter.
enum class ResumeRole { experiment, schedule, layout, free };
ResumeRole resume_role(const std::string& key);

// Validates `raw` against `spec`; returns the canonical text (paths with
// `${VAR}` expanded through `env`). On failure throws a plain
// std::invalid_argument whose what() says what is allowed; the caller adds
// the file and key.
std::string canonical_value(const KeySpec& spec, const std::string& raw, const EnvLookup& env);

// Human description of a key's type: "integer >= 1", "one of: auto|cpu|cuda", ...
std::string describe_type(const KeySpec& spec);

// "4096", "512M", "2G" (K/M/G/T = 2^10..2^40) -> bytes; std::invalid_argument otherwise.
std::uint64_t parse_byte_size(const std::string& text);
// A finite number (all of `text` but white space); std::invalid_argument otherwise.
double parse_real(const std::string& text);
// The shortest text that reads back as `d` exactly.
std::string format_real(double d);
// "key=value,key=value" -> pairs (spaces around items ignored); std::invalid_argument when an
// item is not key=value.
std::vector<std::pair<std::string, std::string>> parse_key_values(const std::string& text);

// `s` without leading and trailing white space.
std::string trim(const std::string& s);

// The `--help` section listing every key with type, default and meaning.
std::string config_help();
// The same as a Markdown page (docs/configuration.md is this output: `trainer --config-reference`;
// a test fails when the file is stale).
std::string config_reference_markdown();

}  // namespace hpctrain
