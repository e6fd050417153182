// The trainer application: command line, configuration loaded on rank 0 and
// broadcast, runtime, --dry-run / --help / --version, and the translation of
// errors into messages and exit codes. main() only calls run_trainer().
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hpctrain/config/config.hpp"
#include "hpctrain/data/dataset.hpp"
#include "hpctrain/train/token_draw.hpp"

namespace hpctrain {

struct CliOptions {
  std::string config_path;
  std::vector<std::string> sets;  // "section.key=value"
  bool dry_run = false;
  bool eval_only = false;
  bool generate = false;           // --generate: sample text from a language model's checkpoint
  bool print_ini = false;          // --print-ini: the resolved configuration as INI
  bool describe_model = false;     // --describe-model: the model as JSON
  std::string describe_layers;     // --describe-layers LAYERS: that string as JSON (no deck)
  std::string input_shape;         // ... on samples of this shape ("28,28")
  long vocab_multiple = 1;         // ... with embedding / lm_head rows padded to a multiple
  std::string export_file;         // --export FILE: the checkpoint's weights as safetensors
  std::string import_hf, out;      // --import-hf DIR --out FILE: a Hugging Face folder to a checkpoint (no deck)
  std::string export_hf;           // --export-hf DIR: the checkpoint as a Hugging Face folder
  SamplingOptions sampling;        // --generate's --prompt, --tokens, --temperature, ... as given
  std::string vocab;               // --vocab PATH: --generate's tokenizer for a checkpoint of llm.c shards
  double startup_timeout_s = 300;  // --startup-timeout: comm/startup_guard.hpp (0: no limit)
  bool help = false;
  bool version = false;
  bool config_reference = false;  // print docs/configuration.md (Markdown) and exit
};

// Throws bad_input on unknown options or a missing configuration file argument.
CliOptions parse_cli(int argc, char** argv);

// Collective over `comm`: rank 0 reads and parses the file; every rank gets
// the same Config (rank 0's environment expands ${VAR}); a bad file is a
// bad_input error on every rank.
Config load_config(MPI_Comm comm, const std::string& path, const std::vector<std::string>& sets);

// --describe-model: the model the configuration builds on `index`'s data as JSON (the
// architecture, the layers string, each layer's type and arguments with a res block's inside,
// the model-wide tensor names and shapes, the buffers), for tools/hpctrain_torch.py and people.
std::string describe_model(const Config& cfg, const DatasetIndex& index);
// --describe-layers LAYERS --input-shape D1,D2,...: the same for a layers string on samples of
// that shape, without a deck or a dataset (tools/hpctrain_torch.py's build()); bad_input names a
// malformed shape.
std::string describe_layers(const std::string& layers, const std::string& input_shape, long vocab_multiple);

std::string help_text();
std::string version_text();  // needs MPI initialized

// Runs `body` (MPI must be initialized) and turns an escaping error into its
// exit code: an every_rank error is printed once by rank 0 and returned (all
// ranks then finalize MPI); a this_rank error is printed with the rank and
// ends the job with MPI_Abort so no other rank waits forever.
int run_and_report(const std::function<int()>& body);

// The whole program; returns the process exit code.
int run_trainer(int argc, char** argv);

}  // namespace hpctrain
