// Logging: rank 0 informs, any rank warns or errs with its rank in the line,
// and per-rank facts are gathered and printed by rank 0 in rank order.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace hpctrain {

// Rank 0 of MPI_COMM_WORLD prints `line` to stdout (others print nothing).
void log0(const std::string& line);
// Any rank: "warning [rank R on HOST]: line" to stderr.
void warn(const std::string& line);
// Any rank: "error [rank R on HOST]: line" to stderr.
void log_error(const std::string& line);

// Collective over `comm`: every rank contributes one string; rank 0 of `comm`
// receives them in rank order (others get an empty vector).
std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine);

}  // namespace hpctrain
