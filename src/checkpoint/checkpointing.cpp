// The trainer's side of checkpoints (checkpoint/checkpointing.hpp).
#include "hpctrain/checkpoint/checkpointing.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "hpctrain/comm/agreement.hpp"
#include "hpctrain/config/schema.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/log.hpp"
#include "hpctrain/model/partition.hpp"

namespace fs = std::filesystem;

namespace hpctrain {

Checkpointer::Checkpointer(const Config& cfg, Runtime& rt, Communicator& dp, Model& model, Optimizer& opt,
                           std::vector<LayerGroup> groups)
    : cfg_(cfg), rt_(rt), dp_(dp), model_(model), opt_(opt), groups_(std::move(groups)) {
  std::string error;
  if (rt.mesh().world_rank() == 0) {
    std::error_code ec;
    fs::create_directories(cfg.checkpoint.dir, ec);
    if (ec || access(cfg.checkpoint.dir.c_str(), W_OK) != 0)
      error = "[checkpoint] dir '" + cfg.checkpoint.dir + "': cannot create or write it" +
              (ec ? " (" + ec.message() + ")" : "");
  }
  raise_if_any(rt_.world(), error);
  tuning_.hints = parse_key_values(cfg.checkpoint.mpiio_hints);  // (checked with the configuration)
  const Alignment& a = cfg.checkpoint.alignment;
  std::uint64_t alignment = a.kind == Alignment::Kind::auto_ ? preferred_alignment(cfg.checkpoint.dir) : a.bytes;
  rt_.world().broadcast(&alignment, 1, DType::i64, 0);  // HDF5 needs the same file layout on every rank
  tuning_.alignment = alignment;
  if (cfg.checkpoint.async) async_comm_ = rt.make_world_communicator(MemorySpace::host, "/checkpoint-writer");
}

Checkpointer::~Checkpointer() {
  if (writer_.joinable()) writer_.join();  // (an exception is leaving the run: no collective here)
}

std::string resume_selection(const Config& cfg) {
  const ResumeFrom& r = cfg.checkpoint.resume;
  switch (r.kind) {
    case ResumeFrom::Kind::none: return "";
    case ResumeFrom::Kind::auto_: {
      std::string warning;
      const std::string target = find_latest_checkpoint(cfg.checkpoint.dir, &warning);
      if (!warning.empty()) warn("[checkpoint] resume = auto: " + warning);
      return target;
    }
    case ResumeFrom::Kind::file: break;
  }
  if (!fs::exists(r.file)) throw bad_input("[checkpoint] resume = " + r.file + ": no such file");
  return r.file;
}

std::string Checkpointer::resume_target() const {
  return compute_on_root(rt_.world(), [&] { return std::vector<std::string>{resume_selection(cfg_)}; }).at(0);
}

std::string vocabulary_rows_hint(const std::string& name, const Shape& ours, const Shape& theirs) {
  if (ours.size() != 2 || theirs.size() != 2 || ours[1] != theirs[1] || theirs[0] <= ours[0]) return "";
  for (const std::int64_t m : {8, 16, 32, 64, 128, 256, 512, 1024})
    if ((ours[0] + m - 1) / m * m == theirs[0])
      return " (a vocabulary padded to " + std::to_string(theirs[0]) +
             " rows: set [model] vocab_multiple = " + std::to_string(m) + ")";
  if (name == "tok_emb.weight" || name == "lm_head.weight")
    return " (rows no token of this vocabulary uses, as Qwen2's checkpoints have: set [model] vocab_size = " +
           std::to_string(theirs[0]) + ")";
  return "";
}

std::vector<std::string> checkpoint_mismatches(const CheckpointFile& file, const Model& model) {
  std::vector<std::string> out;
  // Compare what is under model/ first (tensors; a format-1 file's layer groups): it explains
  // most mismatches in one line.
  const bool v1 = file.version() < 2;
  const auto whole = model_tensors(model, true);
  std::set<std::string> ours;
  for (const ModelTensor& t : whole) ours.insert(v1 ? t.legacy.substr(0, t.legacy.find('/')) : t.name);
  const auto stored = file.children("model");
  const std::string what = v1 ? "layer " : "tensor ";
  for (const std::string& s : stored)
    if (!ours.count(s)) out.push_back(what + s + " is in the checkpoint but not in this model");
  for (const std::string& o : ours)
    if (std::find(stored.begin(), stored.end(), o) == stored.end())
      out.push_back(what + o + " of this model is not in the checkpoint");
  if (!out.empty()) return out;
  for (const ModelTensor& t : model_tensors(model, false)) {
    const std::string path = "model/" + stored_name(file, t.name, t.legacy);
    if (!file.has(path)) {
      out.push_back(t.name + " is missing from the checkpoint" + (v1 ? " (as " + t.legacy + ")" : ""));
      continue;
    }
    const Shape s = file.shape(path);
    if (s != t.shape)
      out.push_back(t.name + " is " + shape_string(t.shape) + " in this model but " + shape_string(s) +
                    " in the checkpoint" + vocabulary_rows_hint(t.name, t.shape, s));
  }
  return out;
}

namespace {
// A key whose value here differs from the checkpoint's configuration.
struct KeyDifference {
  std::string key, here, there;  // there: "" when the checkpoint's configuration lacks the key
  ResumeRole role;
  std::string text() const {
    return there.empty() ? key + " = " + here + " (not in the checkpoint's configuration)"
                         : key + " = " + here + " here, " + there + " in the checkpoint";
  }
};

// Every key that differs, except those that name where this run resumes from, those of
// sections the checkpoint's configuration has none of (an imported checkpoint, trainer
// --import-hf, records only its [model]), and keys it lacks that keep their default here (a key
// newer than the checkpoint).
std::vector<KeyDifference> config_differences(const Config& cfg, const std::string& stored_ini,
                                              const std::string& path) {
  std::map<std::string, std::string> stored;  // under today's names (a checkpoint may use old ones)
  std::set<std::string> sections;
  for (const auto& [name, value] : ini_values(stored_ini, "checkpoint '" + path + "'")) {
    stored[current_key_name(name)] = value;
    sections.insert(current_key_name(name).substr(0, current_key_name(name).find('.')));
  }
  std::map<std::string, std::string> defaults;
  for (const KeySpec& s : config_schema()) defaults[s.name()] = s.default_value;
  std::vector<KeyDifference> out;
  for (const ResolvedKey& k : cfg.resolved) {
    if (k.name.rfind("checkpoint.resume", 0) == 0 || !sections.count(k.name.substr(0, k.name.find('.')))) continue;
    const auto it = stored.find(k.name);
    if (it == stored.end() ? k.value != defaults[k.name] : it->second != k.value)
      out.push_back({k.name, k.value, it == stored.end() ? "" : it->second, resume_role(k.name)});
  }
  return out;
}

// What a run refused on the run folder's checkpoint can do instead.
std::string start_over(const Config& cfg) {
  return "; to start over in " + cfg.run.out_dir + ": --set checkpoint.resume=none, or use another [run] out_dir";
}

// [checkpoint] resume = auto in a training run: the run folder's checkpoint must be of this
// experiment (and, without resume_changed, of this schedule); else one line with the ways on.
void check_same_experiment(const Config& cfg, const std::vector<KeyDifference>& diffs, const std::string& path) {
  std::vector<const KeyDifference*> blocking, schedule;
  for (const KeyDifference& d : diffs) {
    if (d.role == ResumeRole::experiment && !d.there.empty()) blocking.push_back(&d);
    if (d.role == ResumeRole::schedule && !d.there.empty() && !cfg.checkpoint.resume_changed) schedule.push_back(&d);
  }
  auto first = [](const std::vector<const KeyDifference*>& v) {
    return v.front()->text() + (v.size() > 1 ? " (and " + std::to_string(v.size() - 1) + " more)" : "");
  };
  if (!blocking.empty())
    throw bad_input(cfg.run.out_dir + " holds a checkpoint of another experiment (" + path + "): " + first(blocking) +
                    start_over(cfg));
  if (!schedule.empty())
    throw bad_input(cfg.run.out_dir + " holds this run's checkpoint (" + path + ") with another schedule: " +
                    first(schedule) + "; to go on with the new one add --resume-changed" + start_over(cfg));
}

// The elements [b, e) of a stage's flat layout (the parameters', or one optimizer state block's)
// from the datasets `prefix` + parameter name, each by the hyperslab of rows that holds them;
// elements of no parameter in `params` are left alone.
void read_flat(const CheckpointFile& file, const std::string& prefix, const std::vector<ParamInfo>& params,
               std::int64_t b, std::int64_t e, float* out) {
  for (const ParamInfo& pi : params) {
    const std::int64_t lo = std::max(b, pi.offset), hi = std::min(e, pi.offset + numel(pi.shape));
    if (lo >= hi) continue;
    const std::string ds = prefix + stored_name(file, pi.name, pi.legacy);
    float* at = out + (lo - b);  // (a tensor-parallel block: its pieces of the whole tensor, in order)
    for (const Range& g : global_elements(pi, {{lo - pi.offset, hi - pi.offset}})) {
      file.read_elements(ds, g.begin, g.size(), at);
      at += g.size();
    }
  }
}
}  // namespace

void Checkpointer::check_fits(const CheckpointFile& file) const {
  const auto problems = checkpoint_mismatches(file, model_);
  if (problems.empty()) return;
  std::string all = problems.front();
  if (problems.size() > 1) all += " (and " + std::to_string(problems.size() - 1) + " more)";
  throw bad_input("checkpoint '" + file.path() + "' does not fit [model] layers: " + all +
                  (cfg_.checkpoint.resume.kind == ResumeFrom::Kind::auto_ ? start_over(cfg_) : ""));
}

void Checkpointer::read_state(const CheckpointFile& file) {
  const auto names = opt_.state_names();
  const std::int64_t s = opt_.state_elems();
  std::vector<float> compact(static_cast<std::size_t>(opt_.state().numel()), 0.f);
  for (std::size_t k = 0; k < names.size(); ++k)
    for (const DecayRun& r : opt_.runs())  // the elements this rank updates: its shard when sharded
      read_flat(file, "optimizer/" + names[k] + "/", model_.param_info(), r.begin, r.end,
                compact.data() + static_cast<std::int64_t>(k) * s + r.state_at());
  upload(compact.data(), compact.size() * sizeof(float), opt_.state());
}

void Checkpointer::read_parameters(const CheckpointFile& file, const std::vector<ParamInfo>& params, float* out) const {
  if (!model_.store().packed_parameters())
    return read_flat(file, "model/", params, 0, model_.parameters().numel(), out);
  // [parallel] shard = full: the elements it owns, packed in the order of its ranges (as the
  // optimizer's runs lay out its state); the frozen layers whole, into their own buffer (those
  // `params` leaves out keep their values).
  const auto read_packed = [&](const Ranges& ranges, float* into) {
    for (const Range& r : ranges) {
      read_flat(file, "model/", params, r.begin, r.end, into);
      into += r.size();
    }
  };
  read_packed(model_.store().owned(), out);
  Tensor& frozen = model_.store().frozen_parameters();
  if (!frozen.defined()) return;
  std::vector<float> host(static_cast<std::size_t>(frozen.numel()));
  download(frozen, host.data(), host.size() * sizeof(float));
  read_packed(model_.store().frozen_ranges(), host.data());
  upload(host.data(), host.size() * sizeof(float), frozen);
}

void Checkpointer::read_model(const CheckpointFile& file) {
  std::vector<float> p(static_cast<std::size_t>(model_.parameters().numel()), 0.f);
  read_parameters(file, model_.param_info(), p.data());
  upload(p.data(), p.size() * sizeof(float), model_.parameters());
  std::map<std::string, std::string> legacy;
  for (const auto& b : model_.all_buffers()) legacy[b.name] = b.legacy;
  for (auto& [name, buf] : model_.buffers()) {
    const std::string ds = "model/" + stored_name(file, name, legacy[name]);
    if (!file.has(ds) || file.shape(ds) != Shape{static_cast<std::int64_t>(buf->size())})
      throw bad_input("checkpoint '" + file.path() + "' has no " + ds + " of " + std::to_string(buf->size()) +
                      " values");
    file.read(ds, buf->data());
  }
  model_.sync_buffers(false);  // device copies of the buffers follow the loaded values
}

CheckpointInfo Checkpointer::load(const std::string& path, IntervalSums& interval_sums, LoadFor purpose) {
  const Mesh& g = rt_.mesh();
  // Every rank opens the file and reads what it holds, each by its own hyperslabs: its stage's
  // parameters and buffers, the optimizer state of the elements it updates (its shard with
  // [parallel] shard_optimizer). Nothing passes between ranks but the verdict: an error on any
  // rank stops every rank alike.
  CheckpointInfo info;
  std::vector<double> sums;
  std::string error, warnings;
  try {
    const CheckpointFile file(path);
    const bool training = purpose == LoadFor::training;
    const auto diffs = config_differences(cfg_, file.info().run.ini, path);
    if (training && cfg_.checkpoint.resume.kind == ResumeFrom::Kind::auto_) check_same_experiment(cfg_, diffs, path);
    check_fits(file);
    info = file.info();
    if (training) hf_files_ = info.run.hf_files;
    read_model(file);
    // (evaluation and generation read the weights alone: their trainer holds no optimizer state, Purpose)
    if (training && info.run.optimizer == opt_.name()) {
      read_state(file);
    } else if (training) {  // (the state stays zero)
      warnings += "[optim] name = " + std::string(opt_.name()) + " but the checkpoint's optimizer is " +
                  info.run.optimizer + ": its state starts from zero\n";
      info.state.optimizer_steps = 0;
    }
    sums = file.read_f64("state/interval_sums");
    // What a training run takes on purpose from the checkpoint (layout and free keys go unsaid;
    // evaluation and generation use its weights alone).
    for (const KeyDifference& d : diffs)
      if (training && g.world_rank() == 0 && (d.role == ResumeRole::experiment || d.role == ResumeRole::schedule))
        warnings += d.text() + " (using " + d.here + ")\n";
  } catch (const Error& e) {
    if (e.code() != ExitCode::bad_input) throw;
    error = e.what();
  }
  raise_if_any(rt_.world(), error);
  // The partial sums of the log interval the checkpoint cut: each rank its own on the same mesh
  // (same dp and pp sizes); otherwise one rank of the last stage carries them all (only the last
  // stage's sums count: Trainer::sum_over_replicas), the first replica's.
  const int rows = static_cast<int>(sums.size() / 3);
  const int me = g.world_rank();
  interval_sums = IntervalSums{};
  const bool same_mesh =
      rows == g.shape().world() && info.run.dp == g.size(MeshDim::dp) && info.run.pp == g.size(MeshDim::pp);
  MeshCoords carrier;  // the last stage of the first replica
  carrier[MeshDim::pp] = g.size(MeshDim::pp) - 1;
  auto add_row = [&](int r) {
    const auto at = static_cast<std::size_t>(r) * 3;
    interval_sums.loss += sums[at];
    interval_sums.correct += sums[at + 1];
    interval_sums.samples += sums[at + 2];
  };
  if (same_mesh)
    add_row(me);
  else if (me == mesh_world_rank(carrier, g.shape()))
    for (int r = 0; r < rows; ++r) add_row(r);
  if (g.world_rank() == 0) {
    std::istringstream w(warnings);
    for (std::string line; std::getline(w, line);)
      std::fprintf(stderr, "warning: resuming from %s: %s\n", path.c_str(), line.c_str());
  }
  return info;
}

namespace {
// --dry-run: what [checkpoint] init_from will load into the whole model, and what starts fresh.
std::string describe_initialization(const Config& cfg, const Model* model) {
  const CheckpointFile file(cfg.checkpoint.init_from);  // bad_input when missing or unreadable
  std::string out = "Initialize: from " + file.path() + " (step " + std::to_string(file.info().state.step) + ")";
  if (!model) return out + "\n";
  return out + ": loads " +
         plan_initialization(file, model->all_layer_names(), model_tensors(*model, true), cfg.checkpoint.init_layers)
             .describe() +
         "\n";
}
}  // namespace

std::string describe_checkpointing(const Config& cfg, const Model* model) {
  const auto& c = cfg.checkpoint;
  std::ostringstream os;
  std::error_code ec;
  const bool exists = fs::is_directory(c.dir, ec);
  fs::path probe = fs::absolute(c.dir, ec);
  while (!probe.empty() && !fs::exists(probe, ec) && probe != probe.parent_path()) probe = probe.parent_path();
  const bool writable = access(probe.c_str(), W_OK) == 0;
  os << "Checkpoints: " << c.dir << " ("
     << (exists ? (writable ? "exists, writable" : "exists, NOT WRITABLE")
                : (writable ? "will be created" : "cannot be created: " + probe.string() + " is not writable"))
     << "); every";
  std::string when;
  if (c.every_steps > 0) when += " " + std::to_string(c.every_steps) + " steps,";
  if (c.every_epochs > 0) when += " " + std::to_string(c.every_epochs) + " epoch(s),";
  if (c.every_minutes > 0) when += " " + cfg.resolved_value("checkpoint.every_minutes") + " minutes,";
  os << (when.empty() ? " (no interval)," : when) << " at the end, and on SIGTERM/SIGUSR1/SIGINT; keep " << c.keep
     << "\n";
  std::string pointer_warning;
  using R = ResumeFrom::Kind;
  const std::string target = c.resume.kind == R::none    ? ""
                             : c.resume.kind == R::auto_ ? find_latest_checkpoint(c.dir, &pointer_warning)
                                                         : c.resume.file;
  if (!pointer_warning.empty()) os << "  warning: " << pointer_warning << "\n";
  if (target.empty()) {
    os << (c.resume.kind == R::none ? "Resume: none (starts fresh)\n"
                                    : "Resume: auto, no complete checkpoint in " + c.dir + " (starts fresh)\n");
    if (!c.init_from.empty()) os << describe_initialization(cfg, model);
    return os.str();
  }
  if (!c.init_from.empty())
    os << "Initialize: [checkpoint] init_from = " << c.init_from << " is not used: the run resumes (resume wins)\n";
  const CheckpointFile file(target);  // bad_input when missing or unreadable
  const auto& i = file.info();
  os << "Resume: " << target << " (step " << i.state.step << ", next batch: epoch " << i.state.epoch + 1 << " batch "
     << i.state.epoch_step << ", written " << i.run.written_at << " on " << i.run.world << " rank(s) by "
     << i.run.software << ")";
  if (model) {
    const auto problems = checkpoint_mismatches(file, *model);
    if (!problems.empty()) throw bad_input("checkpoint '" + target + "' does not fit [model] layers: " + problems[0]);
    os << "; fits the model";
  }
  os << "\n";
  for (const KeyDifference& d : config_differences(cfg, i.run.ini, target))
    if (d.role != ResumeRole::free) os << "  differs: " << d.text() << "\n";
  return os.str();
}

}  // namespace hpctrain
