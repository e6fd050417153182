// [run] check_replicas_every (train/trainer.hpp): the data-parallel replicas' parameters compared
// by hash, every N steps and before every checkpoint write. Silent data corruption (a flipped bit
// in one rank's memory or device) makes one replica drift from the others without any error; the
// hashes name the ranks and the tensors, and the run stops with exit code 5 before a checkpoint
// could take the drifted values.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/comm/agreement.hpp"
#include "hpctrain/core/hash.hpp"
#include "hpctrain/train/trainer.hpp"

namespace hpctrain {

namespace {
// splitmix64 chains over the tensor's 64-bit words (every bit counts: -0 and 0 differ too), four
// independent lanes (word k to lane k % 4, so the CPU runs them side by side), then combined.
std::int64_t hash_floats(const float* data, std::int64_t n) {
  std::uint64_t lane[4] = {1, 2, 3, 4};
  const std::int64_t words = n / 2;
  for (std::int64_t w = 0; w < words; ++w) {
    std::uint64_t word = 0;
    std::memcpy(&word, data + 2 * w, sizeof word);
    lane[w % 4] = splitmix64(lane[w % 4] ^ word);
  }
  std::uint64_t h = static_cast<std::uint64_t>(n);
  if (n % 2) {
    std::uint32_t last = 0;
    std::memcpy(&last, data + n - 1, sizeof last);
    h = splitmix64(h ^ last);
  }
  for (std::uint64_t v : lane) h = splitmix64(h ^ v);
  return static_cast<std::int64_t>(h);
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}
}  // namespace

std::string replica_report(const std::vector<std::int64_t>& hashes, std::size_t tensors, int ranks,
                           const std::vector<std::string>& names, const std::vector<int>& world_ranks) {
  // The replicas grouped by their hashes; the largest group (the first rank's on a tie) is the
  // reference, the ranks of every other group disagree with it.
  std::map<std::vector<std::int64_t>, std::vector<int>> groups;
  for (int r = 0; r < ranks; ++r)
    groups[{hashes.begin() + r * tensors, hashes.begin() + (r + 1) * tensors}].push_back(r);
  if (groups.size() <= 1) return "";
  auto reference = groups.begin();
  for (auto g = groups.begin(); g != groups.end(); ++g)
    if (g->second.size() > reference->second.size() ||
        (g->second.size() == reference->second.size() && g->second.front() < reference->second.front()))
      reference = g;
  std::vector<int> odd, ref_world;
  for (const auto& [h, members] : groups)
    for (int r : members) (h == reference->first ? ref_world : odd).push_back(world_ranks[static_cast<std::size_t>(r)]);
  std::sort(odd.begin(), odd.end());
  std::size_t count = 0;  // tensors that differ on some rank; the first four named
  std::string text;
  for (std::size_t t = 0; t < tensors; ++t) {
    bool differs = false;
    for (const auto& [h, members] : groups) differs = differs || h[t] != reference->first[t];
    if (differs && count++ < 4) text += (text.empty() ? "" : ", ") + names[t];
  }
  if (count > 4) text += ", ...";
  const bool tie = odd.size() == ref_world.size();  // (two replicas: either may be the faulty one)
  return "world rank(s) " + rank_list(odd) + " disagree with rank(s) " + rank_list(ref_world) +
         (tie ? " (as many: either side may be the faulty one)" : "") + " on " + std::to_string(count) + " of " +
         std::to_string(tensors) + " tensors (" + text + ")";
}

void Trainer::check_replicas(std::int64_t step, const char* when) {
  const auto t0 = std::chrono::steady_clock::now();
  settle_parameters();  // (a sharded update's all-gather finished: every rank holds them whole)
  const auto& info = model_->param_info();
  const Tensor& params = model_->parameters();
  const float* host = params.data();
  if (params.device() == Device::cuda) {  // (a host copy, kept: no allocation per check)
    replica_host_.resize(static_cast<std::size_t>(params.numel()));
    download(params, replica_host_.data(), replica_host_.size() * sizeof(float));
    host = replica_host_.data();
  }
  std::vector<std::int64_t> mine;
  std::vector<std::string> names;
  for (const ParamInfo& p : info) {
    mine.push_back(hash_floats(host + p.offset, numel(p.shape)));
    names.push_back(p.name);
  }
  Communicator& dp = host_dp();
  std::vector<std::int64_t> all(mine.size() * static_cast<std::size_t>(dp.size()));
  if (!mine.empty()) dp.allgather(mine.data(), all.data(), mine.size(), DType::i64);
  const std::vector<int> world = mesh_group_members(rt_.mesh().world_rank(), rt_.mesh().shape(), MeshDim::dp);
  std::string why = replica_report(all, mine.size(), dp.size(), names, world);
  if (!why.empty())
    why = "data-parallel replicas diverged (found " + std::string(when) + " step " + std::to_string(step) +
          "): " + why +
          "; a rank's memory or device may be faulty: the newest checkpoint predates the divergence (checked before "
          "it was written); resume from it without that node ([run] check_replicas_every, exit code 5)";
  raise_if_any(rt_.world(), why, ExitCode::replicas_diverged);  // (every stage's verdict: one line)
  ++replica_checks_;
  replica_check_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Trainer::flip_parameter_bit() {
  Tensor& params = model_->parameters();
  float value = 0;
  download(params.view(0, {1}), &value, sizeof value);
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  bits ^= 1u;  // the lowest bit of the mantissa: a change no loss curve shows
  std::memcpy(&value, &bits, sizeof bits);
  Tensor first = params.view(0, {1});
  upload(&value, sizeof value, first);
}

}  // namespace hpctrain
