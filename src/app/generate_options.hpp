// --generate's options (train/token_draw.hpp's SamplingOptions): their descriptions, which the
// trainer's command line (app.cpp) adds to its own, and their reading.
#pragma once

#include <boost/program_options.hpp>

#include "hpctrain/train/token_draw.hpp"

namespace hpctrain {

boost::program_options::options_description generate_options();

// The options as given; bad_input for a combination that cannot be (--prompt with --chat, ...).
SamplingOptions read_generate_options(const boost::program_options::variables_map& vm);

}  // namespace hpctrain
