// Agreements over a host communicator, so that every rank ends alike instead of some waiting
// forever: an error on any rank becomes the same error on all; a result computed on rank 0
// (reading a file, scanning a dataset) reaches every rank. They go through the Communicator, so
// the watchdog sees them (a rank that never arrives ends the job with exit 3).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain {

// Collective: if any rank of `comm` has a non-empty `local_error`, every rank throws an Error of
// `code` (every rank's: one line) with the lowest such rank's message.
void raise_if_any(Communicator& comm, const std::string& local_error, ExitCode code = ExitCode::bad_input);

// Collective: rank 0 of `comm` runs `work`; the strings it returns reach every rank. If it
// throws an Error, every rank throws the same message with the same exit code instead.
std::vector<std::string> compute_on_root(Communicator& comm, const std::function<std::vector<std::string>()>& work);

// Collective: `text` of rank `root` on every rank.
void broadcast_text(Communicator& comm, std::string& text, int root);

// Collective: broadcast_text for a wait without bound (rank 0 reading what a person types): the
// other ranks test the broadcast every poll_s seconds instead of spinning in it. `comm` must be one
// the watchdog does not watch (host_communicator), or it would end the job while the person thinks.
void broadcast_text_polled(Communicator& comm, std::string& text, int root, double poll_s = 0.02);

}  // namespace hpctrain
