// RAII owners for MPI objects: the MPI session itself (init/finalize) and
// communicators created by dup or split.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace hpctrain {

// Initializes MPI with MPI_THREAD_MULTIPLE (the progress, watchdog and
// prefetch threads call MPI while the main thread does) and finalizes it on
// destruction. Sets MPI_ERRORS_RETURN on MPI_COMM_WORLD so CHECK_MPI sees codes.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int thread_level() const { return provided_; }

 private:
  int provided_ = 0;
};

// Owns an MPI communicator (freed on destruction unless it is a predefined one).
class MpiComm {
 public:
  MpiComm() = default;
  explicit MpiComm(MPI_Comm c) : comm_(c) {}
  ~MpiComm() { reset(); }
  MpiComm(MpiComm&& o) noexcept : comm_(o.comm_) { o.comm_ = MPI_COMM_NULL; }
  MpiComm& operator=(MpiComm&& o) noexcept {
    if (this != &o) {
      reset();
      comm_ = o.comm_;
      o.comm_ = MPI_COMM_NULL;
    }
    return *this;
  }
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  MPI_Comm get() const { return comm_; }
  int rank() const;
  int size() const;
  void reset();
  // Forgets the communicator without freeing it (for one that may still have messages coming:
  // a freed communicator's context can be reused by a later one, which would receive them).
  MPI_Comm release() {
    const MPI_Comm c = comm_;
    comm_ = MPI_COMM_NULL;
    return c;
  }

  static MpiComm dup(MPI_Comm c);
  static MpiComm split(MPI_Comm c, int color, int key);

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// Name of MPI's thread level constant, for messages.
const char* thread_level_name(int level);

// Collective over `comm`: `text` on `root` is copied to every rank.
void broadcast_string(MPI_Comm comm, std::string& text, int root);
// MPI_COMM_WORLD ranks of `comm`'s members, in `comm` rank order.
std::vector<int> world_ranks_of(MPI_Comm comm);
}  // namespace hpctrain
