// Memory shared by the ranks of one node (an MPI-3 shared-memory window): local rank 0
// allocates it, every rank of the node maps the same bytes. The data reader keeps one copy of a
// dataset split per node in one (data/store.hpp NodeCache); gradient averaging through shared
// memory can use it too.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "hpctrain/comm/communicator.hpp"

namespace hpctrain {

class SharedWindow {
 public:
  // Collective over `node`, a host communicator whose ranks share memory (Runtime::node()):
  // `bytes` allocated on its rank 0 and mapped by all.
  SharedWindow(Communicator& node, std::uint64_t bytes);
  ~SharedWindow();
  SharedWindow(const SharedWindow&) = delete;
  SharedWindow& operator=(const SharedWindow&) = delete;

  char* data() const { return base_; }
  // Collective: every rank's stores before it are visible to every rank after it.
  void fence();

 private:
  MPI_Win win_ = MPI_WIN_NULL;
  char* base_ = nullptr;
};

}  // namespace hpctrain
