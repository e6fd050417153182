// The trainer's side of checkpoints (train/checkpointing.hpp).
#include "hpctrain/train/checkpointing.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
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

namespace {
std::string group_of(const std::string& name) { return name.substr(0, name.rfind('/')); }
std::string type_of(const std::string& group) {  // "05_res/01_dense" -> "dense"
  const std::string last = group.substr(group.rfind('/') + 1);
  return last.substr(last.find('_') + 1);
}
std::string mib(double bytes) { return std::to_string(static_cast<long long>(bytes / (1 << 20) + 0.5)) + " MiB"; }
}  // namespace

Checkpointer::Checkpointer(const Config& cfg, const Runtime& rt, Communicator& dp, Model& model, Optimizer& opt,
                           std::vector<LayerGroup> groups)
    : cfg_(cfg), rt_(rt), dp_(dp), model_(model), opt_(opt), groups_(std::move(groups)) {
  std::string error;
  if (rt.grid().world_rank() == 0) {
    std::error_code ec;
    fs::create_directories(cfg.checkpoint.dir, ec);
    if (ec || access(cfg.checkpoint.dir.c_str(), W_OK) != 0)
      error = "[checkpoint] dir '" + cfg.checkpoint.dir + "': cannot create or write it" +
              (ec ? " (" + ec.message() + ")" : "");
  }
  raise_if_any(rt_.world(), error);
  tuning_.hints = parse_key_values(cfg.checkpoint.mpiio_hints);  // (checked with the configuration)
  const std::string& a = cfg.checkpoint.alignment;
  std::uint64_t alignment = a == "none"   ? 0
                            : a == "auto" ? preferred_alignment(cfg.checkpoint.dir)
                                          : parse_byte_size(a);
  rt_.world().broadcast(&alignment, 1, DType::i64, 0);  // HDF5 needs the same file layout on every rank
  tuning_.alignment = alignment;
}

std::vector<CheckpointTensor> Checkpointer::tensors(const float* params, const float* state) const {
  // Every rank lists every tensor of the whole model (dataset creation is collective), with the
  // stage that holds it; the data only where this rank holds it.
  const auto& names = model_.all_layer_names();
  auto stage_of = [&](const std::string& tensor) {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (tensor.rfind(names[i] + "/", 0) == 0) return groups_.empty() ? 0 : stage_of_layer(groups_, i);
    HPCT_CHECK(false, "checkpoint tensor " + tensor + " belongs to no layer");
    return 0;
  };
  std::map<std::string, std::int64_t> own;  // parameter name -> offset in this rank's buffers
  for (const ParamInfo& p : model_.param_info()) own[p.name] = p.offset;
  std::map<std::string, float*> own_buffers;
  for (auto& [name, buf] : model_.buffers()) own_buffers[name] = buf->data();
  std::vector<CheckpointTensor> out;
  for (const ParamInfo& p : model_.all_param_info()) {
    const auto it = own.find(p.name);
    out.push_back({"model/" + p.name, p.shape, it == own.end() ? nullptr : params + it->second, stage_of(p.name)});
  }
  for (const auto& [name, size] : model_.all_buffers()) {
    const auto it = own_buffers.find(name);
    out.push_back({"model/" + name, {size}, it == own_buffers.end() ? nullptr : it->second, stage_of(name)});
  }
  const auto states = opt_.state_names();
  const std::int64_t n = model_.parameters().numel();
  for (std::size_t k = 0; k < states.size(); ++k)
    for (const ParamInfo& p : model_.all_param_info()) {
      const auto it = own.find(p.name);
      out.push_back({"optimizer/" + states[k] + "/" + p.name, p.shape,
                     it == own.end() ? nullptr : state + static_cast<std::int64_t>(k) * n + it->second,
                     stage_of(p.name)});
    }
  return out;
}

std::vector<float> Checkpointer::full_state() const {
  const std::int64_t n = model_.parameters().numel();
  std::vector<float> copy, full(static_cast<std::size_t>(n) * opt_.state_names().size(), 0.f);
  expand_state(opt_, host_data(opt_.state(), copy), full.data(), n);
  // Sharded ([parallel] shard_optimizer): each rank holds its own runs; the sum over the group is the whole.
  if (cfg_.parallel.shard_optimizer && dp_.size() > 1)
    dp_.allreduce(full.data(), full.data(), full.size(), DType::f32, ReduceOp::sum);
  return full;
}

std::string Checkpointer::save(const TrainState& progress, const double interval_sums[3]) {
  const auto& g = rt_.grid();
  CheckpointInfo info;
  info.state = progress;
  RunRecord& r = info.run;
  r.global_batch = cfg_.train.global_batch;
  r.seed = cfg_.run.seed;
  r.world = g.shape().world;
  r.dp = g.shape().dp_size;
  r.mp = g.shape().mp_size;
  r.optimizer = opt_.name();
  r.ini = effective_ini(cfg_);
  r.ini_file = cfg_.ini_text;
  r.model_summary = model_.summary();
  r.tokenizer = tokenizer_;
  r.vocabulary = vocabulary_;
  // Every layer group that holds something, with its type; sorted, so parents come before
  // the groups nested in them (residual blocks).
  std::set<std::string> group_names;
  for (const ParamInfo& p : model_.all_param_info())
    for (std::string at = group_of(p.name);; at = group_of(at)) {
      group_names.insert(at);
      if (at.find('/') == std::string::npos) break;
    }
  std::vector<std::pair<std::string, std::string>> groups;
  for (const std::string& gname : group_names) groups.emplace_back("model/" + gname, type_of(gname));
  const std::string name = checkpoint_file_name(progress.step);
  const fs::path dir(cfg_.checkpoint.dir);
  const std::string partial = (dir / ("." + name + ".partial")).string(), final_path = (dir / name).string();
  WriterPlace place{g.coords().dp, g.shape().dp_size, g.coords().mp, g.shape().mp_size};
  // The parameters, optimizer state and buffers on the host (copies only on a GPU run).
  std::vector<float> params_copy, state_copy;
  const float* params = host_data(model_.parameters(), params_copy);
  const std::vector<float> state = full_state();
  model_.sync_buffers(true);
  const auto list = tensors(params, state.data());
  if (cfg_.checkpoint.space_check != "off") {  // a checkpoint that cannot fit is not started
    int short_of_space = g.world_rank() == 0 && free_bytes(cfg_.checkpoint.dir) < estimated_bytes() ? 1 : 0;
    rt_.world().broadcast(&short_of_space, 1, DType::i32, 0);
    if (short_of_space) fail(progress.step, partial, "");
  }
  double s = 0;
  std::string local_error;  // a failed write (disk full, I/O error) on this rank
  try {
    // Test hook: HPCTRAIN_TEST_FAIL_WRITE=STEP fails this checkpoint's write on every rank as a
    // full disk would, after the partial file exists (docs/testing.md).
    if (const char* f = std::getenv("HPCTRAIN_TEST_FAIL_WRITE"); f && std::atoll(f) == progress.step) {
      std::ofstream(partial) << "partial";
      throw std::runtime_error("injected write failure (HPCTRAIN_TEST_FAIL_WRITE)");
    }
    s = write_checkpoint(rt_.world(), partial, info, list, groups, place, interval_sums, tuning_);
  } catch (const std::exception& e) {
    local_error = e.what();
  }
  int failed = local_error.empty() ? 0 : 1;  // (a rank left inside a collective write: the watchdog ends the job)
  rt_.world().allreduce(&failed, &failed, 1, DType::i32, ReduceOp::max);
  if (failed) fail(progress.step, partial, local_error);
  rt_.world().barrier();  // every rank has closed the file (watched: a rank stuck in the write ends the job)
  // Test hook: HPCTRAIN_TEST_FAIL_CHECKPOINT=STEP fails this checkpoint after writing, before
  // the rename, as a crash there would: the previous checkpoint must stay the newest.
  if (const char* f = std::getenv("HPCTRAIN_TEST_FAIL_CHECKPOINT"); f && std::atoll(f) == progress.step)
    throw Error(ExitCode::internal, Scope::this_rank, "injected failure before completing " + name);
  std::string error;
  if (g.world_rank() == 0) {
    try {
      fs::rename(partial, final_path);
      publish_checkpoint(cfg_.checkpoint.dir, name, cfg_.checkpoint.keep);
    } catch (const std::exception& e) {
      error = "[checkpoint] dir '" + cfg_.checkpoint.dir + "': cannot complete " + name + ": " + e.what();
    }
  }
  raise_if_any(rt_.world(), error);
  double bytes = 0;
  for (const auto& t : list) bytes += static_cast<double>(numel(t.shape)) * sizeof(float);
  seconds_ += s;
  ++saved_;
  char line[256];
  std::snprintf(line, sizeof(line), "checkpoint %s written: step %lld, %s in %.2f s (%.0f MiB/s)", final_path.c_str(),
                static_cast<long long>(progress.step), mib(bytes).c_str(), s, bytes / (1 << 20) / std::max(s, 1e-9));
  log0(line);
  return final_path;
}

std::uint64_t Checkpointer::estimated_bytes() const {
  std::uint64_t floats = 0, datasets = 0;
  for (const ParamInfo& p : model_.all_param_info()) {
    floats += static_cast<std::uint64_t>(numel(p.shape)) * (1 + opt_.state_names().size());
    datasets += 1 + opt_.state_names().size();
  }
  for (const auto& [name, size] : model_.all_buffers()) {
    floats += static_cast<std::uint64_t>(size);
    ++datasets;
  }
  // HDF5's object headers, chunk indexes and checksums, and the root attributes (the INI text).
  return floats * sizeof(float) + datasets * 4096 + cfg_.ini_text.size() * 2 + (256u << 10);
}

void Checkpointer::check_space() const {
  if (cfg_.checkpoint.space_check == "off") return;
  compute_on_root(rt_.world(), [&] {
    const std::uint64_t one = estimated_bytes(), need = one * static_cast<std::uint64_t>(cfg_.checkpoint.keep + 1);
    std::uint64_t older = 0;
    for (const std::string& c : list_checkpoints(cfg_.checkpoint.dir)) {
      std::error_code ec;
      const auto n = fs::file_size(fs::path(cfg_.checkpoint.dir) / c, ec);
      if (!ec) older += n;
    }
    const std::uint64_t free = free_bytes(cfg_.checkpoint.dir);
    if (free + older >= need) return std::vector<std::string>{};
    const std::string line = "[checkpoint] dir '" + cfg_.checkpoint.dir + "' has room for " +
                             std::to_string((free + older) / std::max<std::uint64_t>(one, 1)) +
                             " of the keep + 1 = " + std::to_string(cfg_.checkpoint.keep + 1) + " checkpoints of " +
                             mib(static_cast<double>(one)) + " this run needs (" + mib(static_cast<double>(free)) +
                             " free + " + mib(static_cast<double>(older)) +
                             " of older checkpoints); free space, lower [checkpoint] keep, use another "
                             "[checkpoint] dir, or set [checkpoint] space_check = warn";
    if (cfg_.checkpoint.space_check == "error") throw bad_input(line);
    warn(line);
    return std::vector<std::string>{};
  });
}

void Checkpointer::fail(std::int64_t step, const std::string& partial, const std::string& local) const {
  // The first failing rank's error, for the case where the disk is not full.
  int me = local.empty() ? rt_.world().size() : rt_.world().rank(), first = me;
  rt_.world().allreduce(&me, &first, 1, DType::i32, ReduceOp::min);
  std::string detail = local;
  if (first < rt_.world().size()) broadcast_text(rt_.world(), detail, first);  // (none: not started, no room)
  compute_on_root(rt_.world(), [&]() -> std::vector<std::string> {
    std::error_code ec;
    fs::remove(partial, ec);
    const std::string dir = cfg_.checkpoint.dir;
    const std::uint64_t free = free_bytes(dir), need = estimated_bytes();
    std::string newest = find_latest_checkpoint(dir);
    newest = newest.empty() ? "there is no complete checkpoint"
                            : "the newest complete checkpoint is " + fs::path(newest).filename().string();
    std::string why = free < need ? "no space left on device in " + dir + " (needs " + mib(static_cast<double>(need)) +
                                        ", " + mib(static_cast<double>(free)) + " free)"
                                  : "write failed in " + dir + ": " + detail.substr(0, detail.find('\n'));
    throw Error(ExitCode::checkpoint_failed, Scope::every_rank,
                "checkpoint step " + std::to_string(step) + " not written: " + why + "; " + newest +
                    " (the run stops: free space or fix the directory, then resubmit; it resumes from there)");
  });
  throw Error(ExitCode::internal, Scope::every_rank, "unreachable: checkpoint failure not raised");
}

std::string resume_selection(const Config& cfg) {
  const std::string& r = cfg.checkpoint.resume;
  if (r == "none") return "";
  if (r == "auto") {
    std::string warning;
    const std::string target = find_latest_checkpoint(cfg.checkpoint.dir, &warning);
    if (!warning.empty()) warn("[checkpoint] resume = auto: " + warning);
    return target;
  }
  if (!fs::exists(r)) throw bad_input("[checkpoint] resume = " + r + ": no such file");
  return r;
}

std::string Checkpointer::resume_target() const {
  return compute_on_root(rt_.world(), [&] { return std::vector<std::string>{resume_selection(cfg_)}; }).at(0);
}

std::vector<std::string> checkpoint_mismatches(const CheckpointFile& file, const Model& model) {
  std::vector<std::string> out;
  const auto stored = file.children("model");
  const auto& ours = model.all_layer_names();
  // Compare layer lists first: they explain most mismatches in one line.
  std::vector<std::string> with_state;  // our layers that have parameters or buffers
  for (const ParamInfo& p : model.param_info()) {
    const std::string top = p.name.substr(0, p.name.find('/'));
    if (std::find(with_state.begin(), with_state.end(), top) == with_state.end()) with_state.push_back(top);
  }
  for (const std::string& s : stored)
    if (std::find(ours.begin(), ours.end(), s) == ours.end())
      out.push_back("layer " + s + " is in the checkpoint but not in this model");
  for (const std::string& l : with_state)
    if (std::find(stored.begin(), stored.end(), l) == stored.end())
      out.push_back("layer " + l + " of this model is not in the checkpoint");
  if (!out.empty()) return out;
  for (const ParamInfo& p : model.param_info()) {
    const std::string path = "model/" + p.name;
    if (!file.has(path)) {
      out.push_back("layer " + group_of(p.name) + ": " + p.name.substr(p.name.rfind('/') + 1) +
                    " is missing from the checkpoint");
      continue;
    }
    const Shape s = file.shape(path);
    if (s != p.shape)
      out.push_back("layer " + group_of(p.name) + ": " + p.name.substr(p.name.rfind('/') + 1) + " is " +
                    shape_string(p.shape) + " in this model but " + shape_string(s) + " in the checkpoint");
  }
  return out;
}

namespace {
// "key: here X, checkpoint Y" for every key that differs, except those that name
// where this run resumes from.
std::vector<std::string> config_differences(const Config& cfg, const std::string& stored_ini, const std::string& path) {
  const auto stored = ini_values(stored_ini, "checkpoint '" + path + "'");
  std::vector<std::string> out;
  for (const ResolvedKey& k : cfg.resolved) {
    if (k.name == "checkpoint.resume") continue;
    const auto it = stored.find(k.name);
    if (it == stored.end())
      out.push_back(k.name + " = " + k.value + " (not in the checkpoint's configuration)");
    else if (it->second != k.value)
      out.push_back(k.name + " = " + k.value + " here, " + it->second + " in the checkpoint (using " + k.value + ")");
  }
  return out;
}

std::string bytes_of(const void* p, std::size_t n) { return std::string(static_cast<const char*>(p), n); }

// What rank 0 of a stage's data-parallel group reads from a checkpoint, in the order of the
// strings compute_on_root carries to the group.
enum Part : std::size_t { info_part, params_part, state_part, buffers_part, sums_part, warnings_part, part_count };
}  // namespace

std::vector<std::string> Checkpointer::read_parts(const std::string& path) const {
  const CheckpointFile file(path);
  const auto problems = checkpoint_mismatches(file, model_);
  if (!problems.empty()) {
    std::string all = problems.front();
    if (problems.size() > 1) all += " (and " + std::to_string(problems.size() - 1) + " more)";
    throw bad_input("checkpoint '" + path + "' does not fit [model] layers: " + all);
  }
  std::vector<std::string> parts(part_count);
  const std::int64_t n = model_.parameters().numel();
  std::vector<float> p(static_cast<std::size_t>(n)), st;
  for (const ParamInfo& pi : model_.param_info()) file.read("model/" + pi.name, p.data() + pi.offset);
  CheckpointInfo info = file.info();
  if (info.run.optimizer == opt_.name()) {
    const auto names = opt_.state_names();
    st.resize(static_cast<std::size_t>(n) * names.size());
    for (std::size_t k = 0; k < names.size(); ++k)
      for (const ParamInfo& pi : model_.param_info())
        file.read("optimizer/" + names[k] + "/" + pi.name, st.data() + static_cast<std::int64_t>(k) * n + pi.offset);
  } else {
    parts[warnings_part] += "[optim] name = " + std::string(opt_.name()) + " but the checkpoint's optimizer is " +
                            info.run.optimizer + ": its state starts from zero\n";
    info.state.optimizer_steps = 0;
  }
  std::vector<float> b;
  for (auto& [name, buf] : model_.buffers()) {
    const std::string ds = "model/" + name;
    if (!file.has(ds) || file.shape(ds) != Shape{static_cast<std::int64_t>(buf->size())})
      throw bad_input("checkpoint '" + path + "' has no " + ds + " of " + std::to_string(buf->size()) + " values");
    const std::size_t at = b.size();
    b.resize(at + buf->size());
    file.read(ds, b.data() + at);
  }
  for (const std::string& d : config_differences(cfg_, info.run.ini, path)) parts[warnings_part] += d + "\n";
  const auto sums = file.read_f64("state/interval_sums");
  parts[info_part] = encode_info(info);
  parts[params_part] = bytes_of(p.data(), p.size() * sizeof(float));
  parts[state_part] = bytes_of(st.data(), st.size() * sizeof(float));
  parts[buffers_part] = bytes_of(b.data(), b.size() * sizeof(float));
  parts[sums_part] = bytes_of(sums.data(), sums.size() * sizeof(double));
  return parts;
}

void Checkpointer::set_buffers(const std::string& bytes) {
  std::size_t at = 0;
  for (auto& [name, buf] : model_.buffers()) {
    std::memcpy(buf->data(), bytes.data() + at, buf->size() * sizeof(float));
    at += buf->size() * sizeof(float);
  }
  model_.sync_buffers(false);  // device copies of the buffers follow the loaded values
}

CheckpointInfo Checkpointer::load(const std::string& path, double interval_sums[3]) {
  const auto& g = rt_.grid();
  // Rank 0 of each stage's data-parallel group reads that stage's layers and checks them; the
  // bits reach the group; an error on any stage stops every rank alike.
  std::vector<std::string> parts;
  std::string error;
  try {
    parts = compute_on_root(dp_, [&] { return read_parts(path); });
  } catch (const Error& e) {
    if (e.code() != ExitCode::bad_input) throw;
    error = e.what();
  }
  raise_if_any(rt_.world(), error);
  const CheckpointInfo info = decode_info(parts[info_part]);
  upload(parts[params_part].data(), parts[params_part].size(), model_.parameters());
  if (!parts[state_part].empty()) {  // the whole stage's state, laid out like the parameters: this rank's runs
    std::vector<float> compact(static_cast<std::size_t>(opt_.state().numel()), 0.f);
    compact_state(opt_, reinterpret_cast<const float*>(parts[state_part].data()), model_.parameters().numel(),
                  compact.data());
    upload(compact.data(), compact.size() * sizeof(float), opt_.state());
  }
  set_buffers(parts[buffers_part]);
  // The partial sums of the log interval the checkpoint cut: each rank its own
  // on the same world size; otherwise rank 0 carries them all.
  const auto* sums = reinterpret_cast<const double*>(parts[sums_part].data());
  const int rows = static_cast<int>(parts[sums_part].size() / (3 * sizeof(double)));
  const int me = g.world_rank();
  for (int j = 0; j < 3; ++j) interval_sums[j] = 0;
  if (rows == g.shape().world)
    for (int j = 0; j < 3; ++j) interval_sums[j] = sums[me * 3 + j];
  else if (me == 0)
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < 3; ++j) interval_sums[j] += sums[r * 3 + j];
  if (g.world_rank() == 0) {
    std::istringstream w(parts[warnings_part]);
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
  std::vector<std::pair<std::string, Shape>> tensors;
  for (const ParamInfo& p : model->all_param_info()) tensors.emplace_back(p.name, p.shape);
  for (const auto& [name, size] : model->all_buffers()) tensors.emplace_back(name, Shape{size});
  return out + ": loads " +
         plan_initialization(file, model->all_layer_names(), tensors, cfg.checkpoint.init_layers).describe() + "\n";
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
  os << (when.empty() ? " (no interval)," : when) << " at the end, and on SIGTERM/SIGUSR1; keep " << c.keep << "\n";
  std::string pointer_warning;
  const std::string target = c.resume == "none"   ? ""
                             : c.resume == "auto" ? find_latest_checkpoint(c.dir, &pointer_warning)
                                                  : c.resume;
  if (!pointer_warning.empty()) os << "  warning: " << pointer_warning << "\n";
  if (target.empty()) {
    os << (c.resume == "none" ? "Resume: none (starts fresh)\n"
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
  for (const std::string& d : config_differences(cfg, i.run.ini, target)) os << "  differs: " << d << "\n";
  return os.str();
}

}  // namespace hpctrain
