// A file a command writes through "<file>.partial" (--export FILE, --import-hf --out FILE), checked
// before anything is written, so that a bad name leaves nothing on disk.
#pragma once

#include <string>

namespace hpctrain {

// bad_input starting with `what` ("--import-hf hf --out /tmp") when `path` is empty, an existing
// folder, in a folder that does not exist, or in one this process may not write in.
void check_output_file(const std::string& path, const std::string& what);

}  // namespace hpctrain
