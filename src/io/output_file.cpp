// A file a command writes, checked before it is written (io/output_file.hpp).
#include "hpctrain/io/output_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "hpctrain/core/error.hpp"

namespace fs = std::filesystem;

namespace hpctrain {

void check_output_file(const std::string& path, const std::string& what) {
  if (path.empty()) throw bad_input(what + ": no file named");
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw bad_input(what + ": " + path + " is a folder; name the file to write");
  const fs::path folder = fs::absolute(path, ec).parent_path();
  if (!fs::is_directory(folder, ec)) throw bad_input(what + ": the folder " + folder.string() + " does not exist");
  if (::access(folder.c_str(), W_OK) != 0)
    throw bad_input(what + ": cannot write in " + folder.string() + " (" + std::strerror(errno) + ")");
}

}  // namespace hpctrain
