// Node-local staging ([data] stage_dir; docs/datasets.md): before training, every node gets a
// copy of the dataset on its own storage, and the run reads that copy. Each file is read from
// the shared file system once, by one node's first rank (the files dealt out over the nodes in
// turn), and passed to the other nodes' first ranks by MPI broadcast, in 64 MiB pieces; each
// writes it under a temporary name and renames it when complete. Rank 0 prints a progress line
// every 2 s. Before copying, each node checks the free space at its stage_dir against the
// dataset's size. A node that already holds a complete copy (its manifest lists the same files
// and sizes: a requeued job on the same nodes) copies nothing. The copy is removed when the run
// ends (also on an error or a stop signal; not after SIGKILL).
#pragma once

#include <cstdint>
#include <string>

#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/config/config.hpp"

namespace hpctrain {

class StagedDataset {
 public:
  // Collective over `world`. `leaders`: the nodes' first ranks, on those (they copy and remove),
  // null on the others; `host`: this rank's host. `%h` in stage_dir stands for the host's name
  // (node-local paths on a mount several hosts share). Without [data] stage_dir: nothing
  // (path() = data.path). The communicators should be unwatched: a copy may take longer than
  // [parallel] watchdog_s.
  StagedDataset(const DataConfig& data, Communicator& world, Communicator* leaders, const std::string& host);
  ~StagedDataset();
  StagedDataset(const StagedDataset&) = delete;
  StagedDataset& operator=(const StagedDataset&) = delete;

  const std::string& path() const { return path_; }  // where the run reads the dataset
  bool staged() const { return staged_; }
  double seconds() const { return seconds_; }      // the staging's wall time (0 without)
  std::int64_t bytes() const { return bytes_; }    // the dataset's size
  std::int64_t copied() const { return copied_; }  // bytes this node wrote (0: it held a copy)

 private:
  std::string path_;
  bool staged_ = false, remove_ = false;
  double seconds_ = 0;
  std::int64_t bytes_ = 0, copied_ = 0;
};

}  // namespace hpctrain
