// The one error type of hpctrain, its exit codes, and the CHECK family that
// turns a failed library call (MPI, HDF5; CUDA ones live in cuda_check.hpp)
// into an Error naming the rank, host, file:line, the call and the library's
// own message. main() turns an Error into a message and an exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace hpctrain {

// Process exit codes (docs/running.md "Errors, exit codes"; also printed by --help).
enum class ExitCode : int {
  ok = 0,
  internal = 1,            // a bug or a failed library call
  bad_input = 2,           // config, data, checkpoint or grid the user must fix
  collective_timeout = 3,  // the watchdog saw a collective that never completed
  checkpoint_failed = 4,   // a checkpoint could not be written (disk full, write error); the previous one stands
  replicas_diverged = 5,   // the data-parallel replicas' parameters differ ([run] check_replicas_every)
  preempted = 10,          // stopped by a signal after writing a checkpoint
};
// What each exit code means, one line each, for --help and docs/running.md.
struct ExitCodeMeaning {
  ExitCode code;
  const char* meaning;
};
inline constexpr ExitCodeMeaning exit_code_meanings[] = {
    {ExitCode::ok, "success"},
    {ExitCode::internal, "internal error (a bug, or a failed library call)"},
    {ExitCode::bad_input, "bad input: configuration, data, checkpoint or process mesh"},
    {ExitCode::collective_timeout,
     "collective timeout: the watchdog ([parallel] watchdog_s) aborted a hung collective"},
    {ExitCode::checkpoint_failed,
     "a checkpoint could not be written (disk full, write error); the previous one stands, the run stopped"},
    {ExitCode::replicas_diverged,
     "data-parallel replicas diverged ([run] check_replicas_every): their parameters differ; not requeued"},
    {ExitCode::preempted, "stopped by a signal (Ctrl-C, SIGTERM, SIGUSR1) after writing a checkpoint"},
};

// Who detected the error. `every_rank` errors (config, data headers, grid) are
// found identically by all ranks: rank 0 prints one line, all ranks finalize
// MPI and exit. `this_rank` errors are printed with the rank and end the job
// with MPI_Abort so no other rank is left waiting.
enum class Scope { every_rank, this_rank };

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, Scope scope, const std::string& message)
      : std::runtime_error(message), code_(code), scope_(scope) {}
  ExitCode code() const { return code_; }
  Scope scope() const { return scope_; }

 private:
  ExitCode code_;
  Scope scope_;
};

// Bad user input found alike on every rank: one line, exit code 2.
Error bad_input(const std::string& message);

// "rank 3 on node17" (or "rank ?" before MPI_Init / after MPI_Finalize).
std::string rank_and_host();
std::string host_name();  // gethostname, "?" when it fails

// The message every CHECK failure carries:
//   "[rank R on HOST] FILE:LINE: CALL failed: LIBRARY DETAIL"
std::string format_call_error(const char* file, int line, const std::string& call, const std::string& library,
                              const std::string& detail);

namespace detail {
[[noreturn]] void raise_check(const char* file, int line, const char* condition, const std::string& message);
[[noreturn]] void raise_mpi(int code, const char* call, const char* file, int line);
[[noreturn]] void raise_h5(const char* call, const char* file, int line);
// For the CUDA family: `library` ("CUDA", "cuBLAS", ...), `detail` its own
// error name and string.
[[noreturn]] void raise_library(const char* library, const std::string& detail, const char* call, const char* file,
                                int line);
}  // namespace detail

// "error 2: MPI_ERR_COUNT: invalid count argument" for an MPI return code.
std::string mpi_error_text(int code);

// Text of the innermost (most specific) entry of HDF5's error stack, or "" if empty.
std::string hdf5_error_text();

}  // namespace hpctrain

// Internal invariant: throws an internal Error (exit 1) with the location.
#define HPCT_CHECK(cond, msg)                                                       \
  do {                                                                              \
    if (!(cond)) ::hpctrain::detail::raise_check(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)

// MPI calls return codes because every communicator uses MPI_ERRORS_RETURN.
#define CHECK_MPI(call)                                                                                      \
  do {                                                                                                       \
    const int hpct_rc_ = (call);                                                                             \
    if (hpct_rc_ != 0 /* MPI_SUCCESS */) ::hpctrain::detail::raise_mpi(hpct_rc_, #call, __FILE__, __LINE__); \
  } while (0)

// HDF5 calls signal failure with a negative herr_t / hid_t.
#define CHECK_H5(call)                                                        \
  [&]() {                                                                     \
    const auto hpct_r_ = (call);                                              \
    if (hpct_r_ < 0) ::hpctrain::detail::raise_h5(#call, __FILE__, __LINE__); \
    return hpct_r_;                                                           \
  }()
