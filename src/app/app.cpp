// The trainer application (app/app.hpp): command line, collective config
// loading, --help / --version / --dry-run, and error -> exit code handling.
#include "hpctrain/app/app.hpp"

#include "generate_options.hpp"

#include <cblas.h>
#include <hdf5.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "hpctrain/backend/configure.hpp"
#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/checkpoint/checkpointing.hpp"
#include "hpctrain/checkpoint/export.hpp"
#include "hpctrain/checkpoint/hf_weights.hpp"
#include "hpctrain/comm/mpi_communicator.hpp"
#include "hpctrain/comm/mpi_handles.hpp"
#include "hpctrain/comm/startup_guard.hpp"
#include "hpctrain/comm/watchdog.hpp"
#include "hpctrain/config/schema.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/log.hpp"
#include "hpctrain/core/table.hpp"
#include "hpctrain/core/version.hpp"
#include "hpctrain/data/dataset.hpp"
#include "hpctrain/data/reader.hpp"
#include "hpctrain/data/sampler.hpp"
#include "hpctrain/data/staging.hpp"
#include "hpctrain/data/store.hpp"
#include "hpctrain/data/text_import.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/model/arch.hpp"
#include "hpctrain/model/model.hpp"
#include "hpctrain/model/partition.hpp"
#include "hpctrain/parallel/pipeline.hpp"
#include "hpctrain/runtime/runtime.hpp"
#include "hpctrain/train/memory_estimate.hpp"
#include "hpctrain/train/trainer.hpp"

namespace po = boost::program_options;

namespace hpctrain {

namespace {

po::options_description cli_options() {
  po::options_description o("Options");
  o.add_options()("set", po::value<std::vector<std::string>>()->composing(),
                  "override a configuration key: --set section.key=value (repeatable)")(
      "dry-run", "check the configuration, process mesh, data, model and checkpoints, print them, and exit")(
      "eval-only", "load the checkpoint [checkpoint] resume selects and evaluate it on the test split")(
      "export", po::value<std::string>(),
      "write the weights of the checkpoint [checkpoint] resume selects to FILE in the safetensors format")(
      "import-hf", po::value<std::string>(),
      "turn the Hugging Face folder DIR (config.json, model.safetensors or its shards; LlamaForCausalLM or "
      "GPT2LMHeadModel) into the checkpoint --out FILE, for init_from, --eval-only and --generate (no configuration "
      "file; one rank)")("out", po::value<std::string>(), "--import-hf: the checkpoint file to write")(
      "export-hf", po::value<std::string>(),
      "write the checkpoint [checkpoint] resume selects (arch = llama or gpt) to the folder DIR as Hugging Face's "
      "LlamaForCausalLM or GPT2LMHeadModel reads it: config.json, model.safetensors ([checkpoint] export_dtype), "
      "tokenizer.json")(
      "generate", "language models: sample text from the checkpoint [checkpoint] resume selects (no dataset needed)")(
      "resume-changed",
      "resume the run in [run] out_dir with another train.steps or train.epochs than its checkpoint's ([checkpoint] "
      "resume_changed = true)")(
      "vocab", po::value<std::string>(),
      "--generate: the tokenizer of a checkpoint trained on llm.c's .bin shards, which carry none: GPT-2's folder "
      "(encoder.json, vocab.bpe) or a tokenizer.json (Llama 3's)")(
      "startup-timeout", po::value<double>()->default_value(300),
      "seconds the ranks may take to read the configuration and set up (devices, process mesh) before the "
      "collective watchdog runs; past it a rank says where it waits and the job ends with exit code 3 (0: no limit)")(
      "help,h", "show this help: options, every configuration key, exit codes")(
      "version", "show the version and the compiled-in backends")(
      "config-reference", "print the configuration keys as Markdown (docs/configuration.md) and exit")(
      "print-ini", "print every configuration key as this run would use it (the INI a checkpoint stores) and exit")(
      "describe-model",
      "print the model as JSON (layers, arguments, tensor names and shapes; reads the dataset) and exit")(
      "describe-layers", po::value<std::string>(),
      "print the layers string LAYERS as --describe-model does, on samples of --input-shape, and exit (no "
      "configuration file)")("input-shape", po::value<std::string>()->default_value(""),
                             "--describe-layers: the sample shape, e.g. 28,28 (token windows: T)")(
      "vocab-multiple", po::value<long>()->default_value(1),
      "--describe-layers: embedding and lm_head rows padded to a multiple ([model] vocab_multiple)");
  o.add(generate_options());
  return o;
}

}  // namespace

CliOptions parse_cli(int argc, char** argv) {
  auto visible = cli_options();
  po::options_description all;
  all.add(visible).add_options()("config", po::value<std::string>());
  po::positional_options_description pos;
  pos.add("config", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
  } catch (const po::unknown_option& e) {  // --steps 3: a configuration key's name, given as an option
    std::string name = e.get_option_name();
    name.erase(0, name.find_first_not_of('-'));
    std::replace(name.begin(), name.end(), '-', '_');
    for (const KeySpec& s : config_schema())
      if (s.key == name && s.renamed_to.empty())
        throw bad_input("command line: unrecognised option '" + e.get_option_name() + "': configuration keys go " +
                        "through --set, as in --set " + s.name() + "=VALUE (see trainer --help)");
    throw bad_input(std::string("command line: ") + e.what() + " (see trainer --help)");
  } catch (const po::error& e) {
    throw bad_input(std::string("command line: ") + e.what() + " (see trainer --help)");
  }
  CliOptions cli;
  cli.help = vm.count("help") > 0;
  cli.version = vm.count("version") > 0;
  cli.config_reference = vm.count("config-reference") > 0;
  cli.print_ini = vm.count("print-ini") > 0;
  cli.describe_model = vm.count("describe-model") > 0;
  if (vm.count("describe-layers")) cli.describe_layers = vm["describe-layers"].as<std::string>();
  cli.input_shape = vm["input-shape"].as<std::string>();
  cli.vocab_multiple = vm["vocab-multiple"].as<long>();
  cli.dry_run = vm.count("dry-run") > 0;
  cli.eval_only = vm.count("eval-only") > 0;
  cli.generate = vm.count("generate") > 0;
  if (vm.count("export")) cli.export_file = vm["export"].as<std::string>();
  if (vm.count("import-hf")) cli.import_hf = vm["import-hf"].as<std::string>();
  if (vm.count("out")) cli.out = vm["out"].as<std::string>();
  if (vm.count("export-hf")) cli.export_hf = vm["export-hf"].as<std::string>();
  if (!cli.import_hf.empty() && cli.out.empty())
    throw bad_input("command line: --import-hf " + cli.import_hf + " needs --out FILE.h5 (the checkpoint to write)");
  cli.sampling = read_generate_options(vm);
  if (vm.count("vocab")) cli.vocab = vm["vocab"].as<std::string>();
  if (!cli.vocab.empty() && !cli.generate) throw bad_input("command line: --vocab " + cli.vocab + " is for --generate");
  cli.startup_timeout_s = vm["startup-timeout"].as<double>();
  if (!(cli.startup_timeout_s >= 0))
    throw bad_input("command line: --startup-timeout must be a number of seconds >= 0 (0: no limit)");
  if (vm.count("set")) cli.sets = vm["set"].as<std::vector<std::string>>();
  if (vm.count("resume-changed")) cli.sets.push_back("checkpoint.resume_changed=true");
  if (vm.count("config")) cli.config_path = vm["config"].as<std::string>();
  if (!cli.describe_layers.empty() && cli.input_shape.empty())
    throw bad_input("command line: --describe-layers needs --input-shape (e.g. --input-shape 28,28)");
  if (!cli.help && !cli.version && !cli.config_reference && cli.describe_layers.empty() && cli.import_hf.empty() &&
      cli.config_path.empty())
    throw bad_input(
        "command line: no configuration file given (usage: trainer input.ini [--set section.key=value ...] "
        "[--dry-run]; see trainer --help)");
  return cli;
}

Config load_config(MPI_Comm comm, const std::string& path, const std::vector<std::string>& sets) {
  const auto shared = compute_on_root(comm, [&] {
    std::string text = read_text_file(path, "configuration file"), env_text;
    std::map<std::string, std::string> used;  // the variables rank 0 expanded, sent to the others
    const auto real_env = process_environment();
    parse_config(text, path, sets, [&](const std::string& name) {
      auto v = real_env(name);
      if (v) used[name] = *v;
      return v;
    });
    for (const auto& [k, v] : used) env_text += k + '\0' + v + '\0';
    return std::vector<std::string>{text, env_text};
  });
  const std::string& text = shared[0];
  const std::string& env_text = shared[1];
  std::map<std::string, std::string> env;
  for (std::size_t i = 0; i < env_text.size();) {
    const auto k_end = env_text.find('\0', i);
    const auto v_end = env_text.find('\0', k_end + 1);
    env[env_text.substr(i, k_end - i)] = env_text.substr(k_end + 1, v_end - k_end - 1);
    i = v_end + 1;
  }
  return parse_config(text, path, sets, [&](const std::string& name) -> std::optional<std::string> {
    const auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}

// [model] layers' grammar: the parser's rules and every registered layer's usage line.
std::string layer_grammar() {
  LayerRegistry registry;
  register_builtin_layers(registry);
  std::string out =
      "\nLayers ([model] layers = \"flatten dense(128) relu dense(10)\"; arch = gpt|llama build theirs):\n"
      "  type(positional, ..., key=value, ...) separated by spaces; integers only (eps=5 means 1e-5)\n"
      "  name:type(...) names a layer (tensors name.weight); repeat(N, layers...) writes layers N times,\n"
      "  {} in a name is the repetition's index (h.{}:res(...)); the loss includes the softmax\n";
  for (const auto& u : registry.usages()) out += "    " + u + "\n";
  return out;
}

namespace {
// --import-hf: the folder's tokenizer, read as --generate reads it from the checkpoint. One this
// build cannot read (a SentencePiece-style tokenizer.json: Llama 2's, TinyLlama's) does not stop
// the weights: a warning, and the checkpoint stores no tokenizer.
StoredTokenizer folder_tokenizer(const std::string& dir) {
  try {
    if (const std::optional<Vocabulary> v = Vocabulary::hf_folder(dir))
      return {v->tokenizer(), v->characters(), v->files()};
  } catch (const Error& e) {
    warn(std::string("--import-hf: the checkpoint stores no tokenizer (--generate needs one): ") + e.what());
  }
  return {};
}
}  // namespace

std::string help_text() {
  std::ostringstream os;
  os << "usage: mpirun -np N trainer input.ini [--set section.key=value ...] [--dry-run | --eval-only | --export FILE "
        "| --export-hf DIR | --generate]\n"
     << "       trainer --import-hf DIR --out FILE.h5\n"
     << "       trainer input.ini --generate [--prompt TEXT | --chat TEXT [--system TEXT] | --chat-file FILE] "
        "[--interactive] [--tokens N --temperature T "
        "--top-k K --top-p P --min-p M "
        "--repetition-penalty R --no-repeat-ngram N --samples N --ignore-eos --no-kv-cache --vocab PATH]\n"
     << "       trainer --help | --version\n\n"
     << cli_options() << "\nConfiguration keys ([section] key = value in the INI file; --set section.key=value):\n"
     << config_help() << "\nPaths may use ${VAR} (expanded from rank 0's environment; $$ is a literal $).\n"
     << layer_grammar() << "\nExit codes:\n";
  for (const auto& e : exit_code_meanings) {
    char code[8];
    std::snprintf(code, sizeof code, "%4d  ", static_cast<int>(e.code));
    os << code << e.meaning << "\n";
  }
  return os.str();
}

std::string version_text() {
  std::ostringstream os;
  os << "hpctrain " << HPCTRAIN_VERSION << " (source revision " << HPCTRAIN_SOURCE_REVISION << ")\n";
  os << "backends: cpu (" << openblas_get_config() << ")";
  if (cuda::compiled())
    os << ", cuda (CUDA runtime " << cuda::runtime_version() << ", cuBLAS, cuDNN " << cuda::cudnn_version()
       << "), nccl " << cuda::nccl_version();
  else
    os << "; cuda and nccl not compiled in";
  os << "\n";
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string mpi(lib, static_cast<std::size_t>(len));
  mpi = mpi.substr(0, mpi.find_first_of(",\n"));
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);  // (both may be called before MPI_Init; MPIX_Query_cuda_support not)
  os << "MPI: " << mpi << " (MPI " << major << "." << minor
     << "); CUDA-aware MPI headers: " << (mpi_headers_cuda_aware() ? "yes" : "no")
     << " (a run's start-up line reports the run-time answer)\n";
  unsigned h5maj = 0, h5min = 0, h5rel = 0;
  H5get_libversion(&h5maj, &h5min, &h5rel);
  os << "HDF5: " << h5maj << "." << h5min << "." << h5rel << " (parallel)\n";
  std::string why;
  const auto gpus = cuda::visible_gpus(&why);
  os << "GPUs visible: " << gpus.size() << (gpus.empty() ? " (" + why + ")" : std::string()) << "\n";
  return os.str();
}

namespace {

// --dry-run, arch = gpt: training FLOPs per token as llm.c and PaLM count them: 6 N (forward and
// backward through every parameter) + 12 n_layer n_embd block_size (attention's scores and
// weighted sums; with sliding windows the positions attended on average instead of block_size), per step, and a step's
// time at an H100/H200's 989 TFLOP/s (bf16 dense) at 100% and at 40% model FLOPs utilization.
std::string describe_flops(const Config& cfg, const Model& model) {
  if (cfg.model.arch == Arch::layers) return "";
  std::int64_t n = 0;  // (the whole model's, split over tensor-parallel ranks or not)
  for (const ParamInfo& p : model.all_param_info()) n += numel(p.global_shape);
  const double span = cfg.model.attention_span(cfg.model.block_size);  // (block_size without sliding windows)
  const double per_token = gpt_flops_per_token(n, cfg.model.n_layer, cfg.model.attention_width(), span);
  const double per_step = per_token * static_cast<double>(cfg.train.global_batch * cfg.model.block_size);
  const double peak = 989e12;
  char line[400];
  std::snprintf(line, sizeof(line),
                "Compute: %.3g FLOPs per token (6 x %lld parameters + 12 x %ld layers x %ld wide x %.6g %s), "
                "%.3g per step of %ld tokens; one H100/H200 at 989 TFLOP/s (bf16 dense): %.2f s a step at 100%% "
                "MFU, %.2f s at 40%%\n",
                per_token, static_cast<long long>(n), cfg.model.n_layer, cfg.model.attention_width(), span,
                cfg.model.sliding_window > 0 ? "positions attended, on average over the layers" : "context", per_step,
                cfg.train.global_batch * cfg.model.block_size, per_step / peak, per_step / (0.4 * peak));
  return line;
}

// [data]'s training-time augmentation, refused (one line) where the samples are not images.
void check_data_options(const Config& cfg, const SplitIndex& train) {
  const Augmentation a{cfg.data.random_crop_pad, cfg.data.random_flip, cfg.run.seed};
  if (a.on()) check_augmentation(train, a);
}

// Collective: the dataset index (validated on all ranks) and the sampler it implies.
std::string describe_data(const Config& cfg, const Runtime& rt) {
  if (cfg.data.path.empty()) return "Dataset: none ([data] path not set)\n";
  const DatasetIndex index = load_dataset_index(rt.world(), cfg.data, cfg.model.block_size);
  check_data_options(cfg, index.train);
  const Config with_model = with_architecture(cfg, index);
  const Sampler sampler(sampler_options(cfg, index.train));  // refuses a split smaller than one global batch
  const std::uint64_t need = node_cache_bytes(index.train);
  std::ostringstream os;
  os << "Dataset " << cfg.data.path << " (validated: structure on rank 0, values on all ranks)\n"
     << describe_splits(index) << "train: " << sampler.steps_per_epoch() << " steps per epoch of "
     << cfg.train.global_batch << " samples (" << rt.per_rank_batch() << " per rank); store: "
     << (need > cfg.data.cache_bytes
             ? (index.train.tokens ? "token blocks streamed (split larger than [data] cache_bytes), "
                                   : "chunk cache (split larger than [data] cache_bytes), ")
             : "node cache, ")
     << need / (1 << 20) << " MiB for the split, cache_bytes " << cfg.data.cache_bytes / (1 << 20) << " MiB\n";
  if (!with_model.model.layers.empty()) {  // shapes inferred from the data, checked like a real run
    Allocator alloc;
    LayerRegistry registry;
    register_builtin_layers(registry, LayerOptions{cfg.kernels.conv, cfg.model.vocab_multiple});
    // (this rank's blocks with [parallel] tensor_parallel: the summary and the memory are per rank;
    // no parameter or gradient buffers: a dry run reads shapes, so any deck fits a login node)
    Model model(with_model.model.layers, model_input_shape(rt.mesh(), cfg, index.train), registry, alloc, 0,
                static_cast<std::size_t>(-1), false, false, tensor_parallel_place(rt.mesh(), cfg, index.train),
                spatial_place(rt.mesh()));
    apply_train_options(model, cfg.train);  // (the summary marks frozen layers)
    os << "\nModel"
       << (cfg.model.arch == Arch::layers ? ""
                                          : std::string(" (arch = ") + name_of(cfg.model.arch) +
                                                ": [model] layers = " + with_model.model.layers + ")")
       << "\n"
       << model.summary();
    os << describe_pipeline(with_model, rt, model) << describe_memory(with_model, rt, model);
    if (rt.mesh().size(MeshDim::pp) > 1) {  // each stage's layers, as its ranks build them
      std::vector<std::unique_ptr<Model>> stages;
      for (const LayerGroup& g :
           partition_layers(layer_parameter_counts(model), rt.mesh().size(MeshDim::pp), with_model.model.groups)) {
        stages.push_back(std::make_unique<Model>(with_model.model.layers, model.input_shape(), registry, alloc, g.first,
                                                 g.last, false, false, model.tensor_parallel(),
                                                 spatial_place(rt.mesh())));
        apply_train_options(*stages.back(), cfg.train);
      }
      os << describe_stage_memory(with_model, rt, stages);
    }
    os << describe_flops(with_model, model);
    os << "\n"
       << compute_on_root(rt.world(),
                          [&] { return std::vector<std::string>{describe_checkpointing(with_model, &model)}; })[0];
  } else {
    os << "\n"
       << compute_on_root(rt.world(),
                          [&] { return std::vector<std::string>{describe_checkpointing(cfg, nullptr)}; })[0];
  }
  return os.str();
}

// Every group along dp and pp (and the other dimensions larger than 1): its name, ranks and role.
std::string mesh_groups_table(const MeshShape& shape) {
  Table groups({"communicator", "world ranks", "role"});
  for (auto it = kMeshOrder.rbegin(); it != kMeshOrder.rend(); ++it) {
    const MeshDim d = *it;
    if (d != MeshDim::dp && d != MeshDim::pp && shape.size(d) == 1) continue;
    const char* role = d == MeshDim::dp   ? "data-parallel replicas of one stage: average its gradients"
                       : d == MeshDim::pp ? "the stages of one replica: pass activations"
                       : d == MeshDim::tp ? "tensor-parallel ranks: split each layer's tensors"
                                          : "spatial ranks: split each sample";
    for (int r = 0; r < shape.world(); ++r) {
      const auto members = mesh_group_members(r, shape, d);
      if (members.front() != r) continue;  // each group once, at its first rank
      std::string ranks;
      for (int m : members) ranks += (ranks.empty() ? "" : " ") + std::to_string(m);
      groups.add_row({mesh_group_name(mesh_coords(r, shape), shape, d), ranks, role});
    }
  }
  return groups.render();
}

void print_dry_run(const Config& cfg, Runtime& rt) {
  const MeshShape& shape = rt.mesh().shape();
  const int dp = shape.size(MeshDim::dp), pp = shape.size(MeshDim::pp);
  std::ostringstream os;
  os << "hpctrain " << HPCTRAIN_VERSION << " dry run of " << cfg.origin << " on " << shape.world() << " rank(s)\n\n";
  Table keys({"key", "value", "source"});
  for (const auto& k : cfg.resolved) keys.add_row({k.name, k.value.empty() ? "(none)" : k.value, k.source});
  os << "Configuration\n" << keys.render() << "\n";
  const std::string mesh = rt.mesh_table();         // collective
  const std::string data = describe_data(cfg, rt);  // collective
  os << "Process mesh: " << shape.world() << " rank(s) = " << dp << " dp (data-parallel) x " << pp
     << " pp (pipeline stages)";
  const char* words[] = {"tensor-parallel", "spatial"};
  std::string where;  // (rank r's coordinate along each dimension larger than 1, or pp and dp)
  for (MeshDim d : kMeshOrder) {
    const std::size_t w = d == MeshDim::tp ? 0 : 1;
    if ((d == MeshDim::tp || d == MeshDim::sp) && shape.size(d) > 1)
      os << " x " << shape.size(d) << " " << dim_name(d) << " (" << words[w] << ")";
    if (shape.size(d) == 1 && d != MeshDim::pp && d != MeshDim::dp) continue;
    const int stride = shape.stride(d);
    where += std::string(where.empty() ? "" : ", ") + dim_name(d) + " = r" +
             (stride > 1 ? " / " + std::to_string(stride) : "") +
             (d == MeshDim::dp ? "" : " % " + std::to_string(shape.size(d)));
  }
  os << " (rank r: " << where << ")\n";
  os << mesh << "\n" << mesh_groups_table(shape);
  os << "\nBatch: global " << cfg.train.global_batch << " = " << dp << " data-parallel x " << rt.per_rank_batch()
     << " per rank, in " << cfg.train.micro_batches << " micro-batch(es) of "
     << rt.per_rank_batch() / cfg.train.micro_batches << "\n";
  os << "Communication: " << name_of(rt.comm_backend()) << " (requested " << name_of(cfg.parallel.comm)
     << "); CUDA-aware MPI: " << (rt.cuda_aware_mpi() ? "yes" : "no") << " (setting "
     << name_of(cfg.parallel.cuda_aware_mpi) << ", library reports " << (mpi_reports_cuda_aware() ? "yes" : "no")
     << "); watchdog: " << (cfg.parallel.watchdog_s > 0 ? cfg.resolved_value("parallel.watchdog_s") + " s" : "off")
     << "\n\n"
     << data;
  log0(os.str());
}

int report(const Error& e) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (e.scope() == Scope::every_rank) {
    if (rank == 0) std::fprintf(stderr, "hpctrain: error: %s\n", e.what());
    return static_cast<int>(e.code());
  }
  // CHECK failures already start with "[rank R on HOST]"; tag the others.
  const std::string msg = e.what();
  if (msg.rfind("[rank ", 0) == 0)
    std::fprintf(stderr, "hpctrain: error %s\n", msg.c_str());
  else
    std::fprintf(stderr, "hpctrain: error [%s]: %s\n", rank_and_host().c_str(), msg.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, static_cast<int>(e.code()));
  return static_cast<int>(e.code());
}

}  // namespace

int run_and_report(const std::function<int()>& body) {
  try {
    return body();
  } catch (const Error& e) {
    return report(e);
  } catch (const std::exception& e) {
    return report(Error(ExitCode::internal, Scope::this_rank, std::string("unexpected exception: ") + e.what()));
  }
}

namespace {
// The rank a launcher gave this process, read before MPI starts (Open MPI's mpirun, PMIx, MPICH's
// hydra, Slurm's srun, HPE's PALS); 0 for a process started alone.
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", "PALS_RANKID"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return 0;
}

// --help, --version, --config-reference and --describe-layers print what the program knows without
// starting MPI: they work where MPI cannot start (a login node without a process manager) and
// answer at once. Under a launcher, its rank 0 prints. nullopt: a mode that needs MPI, or a
// command line that does not parse, reported after MPI starts.
std::optional<int> run_without_mpi(int argc, char** argv) {
  CliOptions cli;
  try {
    cli = parse_cli(argc, argv);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!cli.help && !cli.version && !cli.config_reference && cli.describe_layers.empty()) return std::nullopt;
  const bool prints = launcher_rank() == 0;
  try {
    const std::string text = cli.help      ? help_text() + "\n"
                             : cli.version ? version_text()
                             : cli.config_reference
                                 ? config_reference_markdown()
                                 : describe_layers(cli.describe_layers, cli.input_shape, cli.vocab_multiple) + "\n";
    if (prints) std::fputs(text.c_str(), stdout);
    return 0;
  } catch (const Error& e) {
    if (prints) std::fprintf(stderr, "hpctrain: error: %s\n", e.what());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    if (prints) std::fprintf(stderr, "hpctrain: error: unexpected exception: %s\n", e.what());
    return static_cast<int>(ExitCode::internal);
  }
}
}  // namespace

int run_trainer(int argc, char** argv) {
  if (const std::optional<int> code = run_without_mpi(argc, argv)) return *code;
  std::unique_ptr<MpiSession> mpi;
  try {
    mpi = std::make_unique<MpiSession>(&argc, &argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "hpctrain: error: %s\n", e.what());
    return static_cast<int>(e.code());
  }
  return run_and_report([&] {
    const CliOptions cli = parse_cli(argc, argv);
    if (!cli.import_hf.empty()) {
      MpiCommunicator world(MPI_COMM_WORLD, MpiCommOptions{});
      if (world.size() != 1) throw bad_input("--import-hf runs on one rank (mpirun -np 1, or no mpirun)");
      log0(import_hf(world, cli.import_hf, cli.out, folder_tokenizer(cli.import_hf)));
      return 0;
    }
    StartupGuard startup(cli.startup_timeout_s);
    startup.phase("reading the configuration (rank 0 reads " + cli.config_path + ", the others wait for it)");
    Config cfg = load_config(MPI_COMM_WORLD, cli.config_path, cli.sets);
    startup.report_to(host_report_file(cfg.run.out_dir));
    cfg.faults = faults_from_environment(process_environment());  // (tests: docs/testing.md)
    for (const std::string& w : cfg.warnings)                     // (stderr where stdout is a document: JSON, INI)
      (cli.describe_model || cli.print_ini) ? warn(w) : log0("warning: " + w);
    if (cli.print_ini) {
      const std::string ini = effective_ini(cfg);
      log0(ini.substr(0, ini.size() - (!ini.empty() && ini.back() == '\n')));
      return 0;
    }
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    cfg.train.micro_batches = micro_batches_for(cfg.train, make_mesh_shape(world, cfg.parallel));
    startup.phase("setting up the ranks (node split, devices, process mesh, watchdog)");
    Runtime rt(cfg);
    startup.finish();                         // (the watchdog runs from here)
    if (rt.device().kind == DeviceKind::cpu)  // (rank 0's mask: a launcher binds every rank alike)
      if (const std::string w = threads_beyond_cpus(cfg.kernels.threads, cpus_allowed()); !w.empty())
        log0("warning: " + w);
    // Checked here too so that --dry-run reports it (the trainer checks it again).
    if (const std::string why = cuda_graphs_refusal(cfg, rt.device().kind, rt.mesh().size(MeshDim::dp)); !why.empty())
      throw bad_input(why);
    if (cli.dry_run) {
      if (cfg.model.arch == Arch::layers && cfg.model.layers.empty())  // (a check of the data and the mesh alone)
        log0("warning: [model] layers is not set: training would refuse this deck");
      print_dry_run(cfg, rt);
      return 0;
    }
    if (cli.describe_model) {
      const DatasetIndex index = load_dataset_index(rt.world(), cfg.data, cfg.model.block_size);
      log0(describe_model(cfg, index));
      return 0;
    }
    if (!cli.export_hf.empty()) {
      log0(export_hf(cfg, rt, cli.export_hf));
      return 0;
    }
    if (!cli.export_file.empty()) {  // the checkpoint alone: no dataset, no model built
      log0(export_weights(cfg, rt, cli.export_file));
      return 0;
    }
    if (cli.generate) {  // the checkpoint's vocabulary stands in for the dataset
      const DatasetIndex index = generation_index(cfg, rt, cli.vocab);
      const Config with_model = with_architecture(cfg, index);
      Trainer trainer(with_model, rt, index, Purpose::generation);
      return trainer.generate(cli.sampling);
    }
    // [data] stage_dir: the index is made from the node's copy (cfg keeps the path the user gave).
    // Its communicators are not watched: a copy may take longer than [parallel] watchdog_s.
    const bool node_leader = rt.rank_info().local_rank == 0;
    MpiComm leader_handle = MpiComm::split(MPI_COMM_WORLD, node_leader ? 0 : MPI_UNDEFINED, rt.rank_info().world_rank);
    MpiCommunicator stage_world(MPI_COMM_WORLD, MpiCommOptions{});
    std::unique_ptr<MpiCommunicator> stage_leaders =
        node_leader ? std::make_unique<MpiCommunicator>(leader_handle.get(), MpiCommOptions{}) : nullptr;
    const StagedDataset staged(cfg.data, stage_world, stage_leaders.get(), rt.rank_info().host);
    DataConfig read_from = cfg.data;
    read_from.path = staged.path();
    const DatasetIndex index = load_dataset_index(rt.world(), read_from, cfg.model.block_size);
    check_data_options(cfg, index.train);
    const Config with_model = with_architecture(cfg, index);
    Trainer trainer(with_model, rt, index, cli.eval_only ? Purpose::inference : Purpose::training);
    trainer.set_staging_seconds(staged.seconds());
    return cli.eval_only ? trainer.eval_only() : trainer.run();
  });
}

}  // namespace hpctrain
