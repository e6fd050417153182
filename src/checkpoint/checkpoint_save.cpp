// Writing checkpoints (checkpoint/checkpointing.hpp): what a checkpoint holds, the write itself
// (collective, through a temporary name, then `latest` and rotation), in the background with
// [checkpoint] async, the space checks, and the one-line report of a failed write.
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "hpctrain/checkpoint/checkpointing.hpp"
#include "hpctrain/comm/agreement.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/log.hpp"
#include "hpctrain/core/table.hpp"
#include "hpctrain/model/partition.hpp"

namespace fs = std::filesystem;

namespace hpctrain {

namespace {
std::string mib(double bytes) { return std::to_string(static_cast<long long>(bytes / (1 << 20) + 0.5)) + " MiB"; }
}  // namespace

std::vector<CheckpointTensor> Checkpointer::tensors(const float* params, const float* state, const float* frozen,
                                                    const std::map<std::string, const float*>* buffers) const {
  // Every rank lists every tensor of the whole model (dataset creation is collective), with the
  // stage that holds it; the data only where this rank holds it.
  const auto& types = model_.all_layer_types();
  auto stage_of = [&](std::size_t layer) { return groups_.empty() ? 0 : stage_of_layer(groups_, layer); };
  std::map<std::string, std::size_t> mine;  // parameter name -> index in param_info()
  for (std::size_t i = 0; i < model_.param_info().size(); ++i) mine[model_.param_info()[i].name] = i;
  // Of a parameter held here, the elements this rank writes (state_writes_) and where its compact
  // state holds the first of them (contiguous: the state is packed in buffer order). Packed
  // parameters ([parallel] shard = full) are laid out as the state and written the same way.
  auto written = [&](const ParamInfo& local, Ranges& elements) {
    for (const Range& r : intersect(state_writes_, {{local.offset, local.offset + numel(local.shape)}}))
      elements.push_back({r.begin - local.offset, r.end - local.offset});
    for (std::size_t j = 1; j < elements.size(); ++j)
      HPCT_CHECK(state_position(opt_.runs(), local.offset + elements[j].begin) ==
                     state_position(opt_.runs(), local.offset + elements[j - 1].end - 1) + 1,
                 "optimizer state of " + local.name + ": the elements this rank writes are not packed in order");
    return elements.empty() ? 0 : state_position(opt_.runs(), local.offset + elements.front().begin);
  };
  const bool packed = model_.store().packed_parameters();
  // Tensor parallelism: a split tensor's block is this rank's to write, as elements of the whole
  // tensor (global_elements); a replicated one the first tensor-parallel rank's alone.
  // Spatial parallelism: every rank of the sp group holds the same tensors; the first writes them.
  const Mesh& mesh = rt_.mesh();
  const int tp_rank = model_.tensor_parallel().rank, sp_rank = mesh.coord(MeshDim::sp);
  auto place_tp = [&](const ParamInfo& local, CheckpointTensor& t) {
    if (tp_sharded(local))
      t.elements = global_elements(local, t.elements);
    else if (tp_rank > 0)
      t.elements.clear();
    if (sp_rank > 0) t.elements.clear();
  };
  std::map<std::string, const float*> own_buffers;  // the model's, or copies for a write in the background
  if (buffers)
    own_buffers = *buffers;
  else
    for (auto& [name, buf] : model_.buffers()) own_buffers[name] = buf->data();
  std::vector<CheckpointTensor> out;
  for (const ParamInfo& p : model_.all_param_info()) {
    const auto it = mine.find(p.name);
    CheckpointTensor t{"model/" + p.name, p.global_shape, nullptr, stage_of(p.layer)};
    t.layer_type = types[p.layer];
    t.by_elements = packed || mesh.size(MeshDim::tp) > 1 || mesh.size(MeshDim::sp) > 1;
    if (it != mine.end()) {
      const ParamInfo& local = model_.param_info()[it->second];
      const std::int64_t frozen_at = packed ? model_.store().frozen_position(local.offset) : -1;
      if (packed && frozen_at < 0) {
        t.data = params + written(local, t.elements);
      } else if (t.by_elements) {  // (held whole here: a tensor-parallel block, or shard = full's frozen
                                   // layer: this writer's rows of it, as elements)
        const Range w = writer_elements(local.shape, mesh.coord(MeshDim::dp), mesh.size(MeshDim::dp));
        if (!w.empty()) t.elements = {w};
        t.data = (frozen_at >= 0 ? frozen + frozen_at : params + local.offset) + w.begin;
      } else {
        t.data = params + local.offset;
      }
      if (t.by_elements) place_tp(local, t);
    }
    out.push_back(std::move(t));
  }
  for (const auto& b : model_.all_buffers()) {
    const auto it = own_buffers.find(b.name);
    out.push_back({"model/" + b.name, {b.size}, it == own_buffers.end() ? nullptr : it->second, stage_of(b.layer)});
    out.back().layer_type = types[b.layer];
  }
  const auto states = opt_.state_names();
  const std::int64_t s = opt_.state_elems();
  for (const ParamInfo& p : model_.all_param_info()) {
    const auto it = mine.find(p.name);
    Ranges elements;
    const std::int64_t at = it == mine.end() ? 0 : written(model_.param_info()[it->second], elements);
    for (std::size_t k = 0; k < states.size(); ++k) {
      CheckpointTensor t{"optimizer/" + states[k] + "/" + p.name, p.global_shape, nullptr, stage_of(p.layer)};
      t.layer_type = types[p.layer];
      t.by_elements = true;
      if (it != mine.end()) {
        t.data = state + static_cast<std::int64_t>(k) * s + at;
        t.elements = elements;
        place_tp(model_.param_info()[it->second], t);
      }
      out.push_back(std::move(t));
    }
  }
  return out;
}

void Checkpointer::plan_state_writes_once() {
  if (planned_) return;  // (the runs never change: planned once, at the first checkpoint)
  std::vector<std::pair<std::int64_t, Shape>> params;
  for (const ParamInfo& p : model_.param_info()) params.emplace_back(p.offset, p.shape);
  HPCT_CHECK(dp_.rank() == rt_.mesh().coord(MeshDim::dp), "checkpoint writers: the group's ranks out of order");
  state_writes_ = plan_state_writes(params, gather_owned(dp_, opt_), dp_.rank());
  planned_ = true;
}

std::unique_ptr<Checkpointer::Job> Checkpointer::prepare(const TrainState& progress, const IntervalSums& interval_sums,
                                                         bool copy) {
  const Mesh& g = rt_.mesh();
  // The previous checkpoint's host buffers are reused (no allocation, no page faults per checkpoint).
  std::unique_ptr<Job> job = spare_ ? std::move(spare_) : std::make_unique<Job>();
  job->bytes = 0;
  job->step = progress.step;
  CheckpointInfo& info = job->info;
  info.state = progress;
  RunRecord& r = info.run;
  r.global_batch = cfg_.train.global_batch;
  r.seed = cfg_.run.seed;
  r.world = g.shape().world();
  r.dp = g.size(MeshDim::dp);
  r.tp = g.size(MeshDim::tp);
  r.pp = g.size(MeshDim::pp);
  r.optimizer = opt_.name();
  r.ini = effective_ini(cfg_);
  r.ini_file = cfg_.ini_text;
  r.model_summary = model_.summary();
  r.tokenizer = tokenizer_;
  r.vocabulary = vocabulary_;
  r.tokenizer_files = tokenizer_files_;
  r.hf_files = hf_files_;
  job->name = checkpoint_file_name(progress.step);
  const fs::path dir(cfg_.checkpoint.dir);
  job->partial = (dir / ("." + job->name + ".partial")).string();
  job->final_path = (dir / job->name).string();
  job->place = WriterPlace{g.coord(MeshDim::dp), g.size(MeshDim::dp), g.coord(MeshDim::pp), g.size(MeshDim::pp)};
  // The parameters, optimizer state and buffers on the host (copies on a GPU run, or to write
  // them in the background).
  // (Downloaded from a GPU into the job's own pinned buffer, which nothing changes until the job is done.)
  plan_state_writes_once();  // (collective over the group, the first time; packed parameters are written as planned)
  const float* params = job->params_download.read(model_.parameters());
  if (copy && model_.parameters().device() == Device::cpu) {
    job->params.assign(params, params + model_.parameters().numel());
    params = job->params.data();
  }
  const float* state = job->state_download.read(opt_.state());
  if (copy && opt_.state().device() == Device::cpu) {
    job->state.assign(state, state + opt_.state().numel());
    state = job->state.data();
  }
  model_.sync_buffers(true);
  std::map<std::string, const float*> buffers;
  if (copy) {
    const auto model_buffers = model_.buffers();
    job->buffer_copies.resize(model_buffers.size());
    for (std::size_t i = 0; i < model_buffers.size(); ++i) {
      job->buffer_copies[i].assign(model_buffers[i].second->begin(), model_buffers[i].second->end());
      buffers[model_buffers[i].first] = job->buffer_copies[i].data();
    }
  }
  const Tensor& frozen = model_.store().frozen_parameters();  // (shard = full: never changes; small or none)
  job->frozen.assign(static_cast<std::size_t>(frozen.defined() ? frozen.numel() : 0), 0.f);
  if (frozen.defined()) download(frozen, job->frozen.data(), job->frozen.size() * sizeof(float));
  job->list = tensors(params, state, job->frozen.data(), copy ? &buffers : nullptr);
  job->sums = interval_sums;
  for (const auto& t : job->list) job->bytes += static_cast<double>(numel(t.shape)) * sizeof(float);
  return job;
}

double Checkpointer::write(const Job& job, Communicator& comm) {
  double s = 0;
  std::string local_error;  // a failed write (disk full, I/O error) on this rank
  try {
    // Injected fault (Config::faults): this checkpoint's write fails on every rank as a full disk
    // would, after the partial file exists (docs/testing.md).
    if (cfg_.faults.fail_write == job.step) {
      std::ofstream(job.partial) << "partial";
      throw std::runtime_error("injected write failure (HPCTRAIN_TEST_FAIL_WRITE)");
    }
    s = write_checkpoint(comm, job.partial, job.info, job.list, {}, job.place, job.sums, tuning_);
    // Injected fault: this rank dies here, as a node does: the others wait in the allreduce below.
    const Faults::At& kill = cfg_.faults.kill_in_write;
    if (kill.step == job.step && kill.rank == rt_.mesh().world_rank()) std::raise(SIGKILL);
  } catch (const std::exception& e) {
    local_error = e.what();
  }
  int failed = local_error.empty() ? 0 : 1;  // (a rank left inside a collective write: the watchdog ends the job)
  comm.allreduce(&failed, &failed, 1, DType::i32, ReduceOp::max);
  if (failed) throw Error(ExitCode::checkpoint_failed, Scope::this_rank, local_error);
  comm.barrier();  // every rank has closed the file (watched: a rank stuck in the write ends the job)
  // Injected fault: this checkpoint fails after writing, before the rename, as a crash there
  // would: the previous checkpoint must stay the newest.
  if (cfg_.faults.fail_checkpoint == job.step)
    throw Error(ExitCode::internal, Scope::this_rank, "injected failure before completing " + job.name);
  std::string error;
  if (comm.rank() == 0) {
    try {
      fs::rename(job.partial, job.final_path);
      publish_checkpoint(cfg_.checkpoint.dir, job.name, cfg_.checkpoint.keep);
    } catch (const std::exception& e) {
      error = "[checkpoint] dir '" + cfg_.checkpoint.dir + "': cannot complete " + job.name + ": " + e.what();
    }
  }
  raise_if_any(comm, error);
  return s;
}

void Checkpointer::report(const Job& job, double s, double stall) {
  seconds_ += s;
  ++saved_;
  char line[320];
  std::snprintf(line, sizeof(line), "checkpoint %s written: step %lld, %s in %.2f s (%.0f MiB/s)%s",
                job.final_path.c_str(), static_cast<long long>(job.step), mib(job.bytes).c_str(), s,
                job.bytes / (1 << 20) / std::max(s, 1e-9),
                async_comm_ ? (", in the background; training stalled " + fixed_text(stall, 2) + " s").c_str() : "");
  log0(line);
}

std::string Checkpointer::save(const TrainState& progress, const IntervalSums& interval_sums) {
  const auto t0 = std::chrono::steady_clock::now();
  finish_async();  // at most one write in flight: the previous one completes (or fails) first
  std::unique_ptr<Job> job = prepare(progress, interval_sums, async_comm_ != nullptr);
  if (cfg_.checkpoint.space_check != SpaceCheck::off) {  // a checkpoint that cannot fit is not started
    int short_of_space = rt_.mesh().world_rank() == 0 && free_space(cfg_.checkpoint.dir) < estimated_bytes() ? 1 : 0;
    rt_.world().broadcast(&short_of_space, 1, DType::i32, 0);
    if (short_of_space) fail(progress.step, job->partial, "");
  }
  const std::string path = job->final_path;
  if (async_comm_) {  // the write goes on in the background on its own communicator
    in_flight_ = std::move(job);
    writer_failed_ = 0;
    const double stall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stall_s_ += stall;
    writer_ = std::thread([this, stall] {
      try {
        in_flight_seconds_ = write(*in_flight_, *async_comm_);
        in_flight_stall_ = stall;
      } catch (const std::exception& e) {
        writer_error_ = e.what();
        writer_failed_ = 1;
      }
    });
    return path;
  }
  double s = 0;
  try {
    s = write(*job, rt_.world());
  } catch (const Error& e) {
    if (e.code() != ExitCode::checkpoint_failed) throw;
    fail(progress.step, job->partial, e.what());
  }
  const double stall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stall_s_ += stall;
  report(*job, s, stall);
  spare_ = std::move(job);
  return path;
}

void Checkpointer::finish_async() {
  if (!writer_.joinable()) return;
  writer_.join();
  int failed = writer_failed_;  // (the writers agreed on it; the same on every rank)
  rt_.world().allreduce(&failed, &failed, 1, DType::i32, ReduceOp::max);
  std::unique_ptr<Job> job = std::move(in_flight_);
  if (failed) fail(job->step, job->partial, writer_error_);
  report(*job, in_flight_seconds_, in_flight_stall_);
  spare_ = std::move(job);  // its buffers serve the next checkpoint
}

std::uint64_t Checkpointer::free_space(const std::string& dir) const {
  return cfg_.faults.free_bytes ? *cfg_.faults.free_bytes : free_bytes(dir);
}

std::uint64_t Checkpointer::estimated_bytes() const {
  std::uint64_t floats = 0, datasets = 0;
  for (const ParamInfo& p : model_.all_param_info()) {
    floats += static_cast<std::uint64_t>(numel(p.global_shape)) * (1 + opt_.state_names().size());
    datasets += 1 + opt_.state_names().size();
  }
  for (const auto& b : model_.all_buffers()) {
    floats += static_cast<std::uint64_t>(b.size);
    ++datasets;
  }
  // HDF5's object headers, chunk indexes and checksums, and the root attributes (the INI text).
  return floats * sizeof(float) + datasets * 4096 + cfg_.ini_text.size() * 2 + (256u << 10);
}

void Checkpointer::check_space() const {
  if (cfg_.checkpoint.space_check == SpaceCheck::off) return;
  compute_on_root(rt_.world(), [&] {
    const std::uint64_t one = estimated_bytes(), need = one * static_cast<std::uint64_t>(cfg_.checkpoint.keep + 1);
    std::uint64_t older = 0;
    for (const std::string& c : list_checkpoints(cfg_.checkpoint.dir)) {
      std::error_code ec;
      const auto n = fs::file_size(fs::path(cfg_.checkpoint.dir) / c, ec);
      if (!ec) older += n;
    }
    const std::uint64_t free = free_space(cfg_.checkpoint.dir);
    if (free + older >= need) return std::vector<std::string>{};
    const std::string line = "[checkpoint] dir '" + cfg_.checkpoint.dir + "' has room for " +
                             std::to_string((free + older) / std::max<std::uint64_t>(one, 1)) +
                             " of the keep + 1 = " + std::to_string(cfg_.checkpoint.keep + 1) + " checkpoints of " +
                             mib(static_cast<double>(one)) + " this run needs (" + mib(static_cast<double>(free)) +
                             " free + " + mib(static_cast<double>(older)) +
                             " of older checkpoints); free space, lower [checkpoint] keep, use another "
                             "[checkpoint] dir, or set [checkpoint] space_check = warn";
    if (cfg_.checkpoint.space_check == SpaceCheck::error) throw bad_input(line);
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
    const std::uint64_t free = free_space(dir), need = estimated_bytes();
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

}  // namespace hpctrain
