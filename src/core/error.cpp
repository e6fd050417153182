// Implementation of the error reporting helpers declared in core/error.hpp.
#include "hpctrain/core/error.hpp"

#include <hdf5.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace hpctrain {

Error bad_input(const std::string& message) { return Error(ExitCode::bad_input, Scope::every_rank, message); }

std::string host_name() {
  char host[256] = "?";
  if (gethostname(host, sizeof(host) - 1) != 0) return "?";
  host[sizeof(host) - 1] = '\0';
  return host;
}

std::string rank_and_host() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  std::string rank = "?";
  if (initialized && !finalized) {
    int r = -1;
    if (MPI_Comm_rank(MPI_COMM_WORLD, &r) == MPI_SUCCESS) rank = std::to_string(r);
  }
  return "rank " + rank + " on " + host_name();
}

std::string format_call_error(const char* file, int line, const std::string& call, const std::string& library,
                              const std::string& detail) {
  return "[" + rank_and_host() + "] " + file + ":" + std::to_string(line) + ": " + call + " failed: " + library +
         (detail.empty() ? "" : " " + detail);
}

namespace detail {

void raise_check(const char* file, int line, const char* condition, const std::string& message) {
  throw Error(ExitCode::internal, Scope::this_rank,
              "[" + rank_and_host() + "] " + file + ":" + std::to_string(line) + ": internal error: " + message +
                  " (check '" + condition + "' failed)");
}

void raise_mpi(int code, const char* call, const char* file, int line) {
  throw Error(ExitCode::internal, Scope::this_rank, format_call_error(file, line, call, "MPI", mpi_error_text(code)));
}

void raise_h5(const char* call, const char* file, int line) {
  const std::string text = hdf5_error_text();
  throw Error(ExitCode::internal, Scope::this_rank,
              format_call_error(file, line, call, "HDF5", text.empty() ? "(empty error stack)" : text));
}

void raise_library(const char* library, const std::string& detail, const char* call, const char* file, int line) {
  throw Error(ExitCode::internal, Scope::this_rank, format_call_error(file, line, call, library, detail));
}

}  // namespace detail

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  std::string detail = "error " + std::to_string(code);
  if (MPI_Error_string(code, text, &len) == MPI_SUCCESS && len > 0)
    detail += ": " + std::string(text, static_cast<std::size_t>(len));
  return detail;
}

namespace {
// Walks upward: entry 0 is the innermost function, where the error was detected;
// the last entry is the API call the program made.
herr_t collect_entry(unsigned /*n*/, const H5E_error2_t* err, void* out) {
  auto* entries = static_cast<std::vector<std::string>*>(out);
  if (err != nullptr)
    entries->push_back(std::string(err->func_name ? err->func_name : "?") + "(): " + (err->desc ? err->desc : ""));
  return 0;
}
}  // namespace

std::string hdf5_error_text() {
  std::vector<std::string> entries;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_entry, &entries);
  H5Eclear2(H5E_DEFAULT);
  if (entries.empty()) return "";
  if (entries.size() == 1) return entries.front();
  return entries.back() + " <- " + entries.front();
}

}  // namespace hpctrain
