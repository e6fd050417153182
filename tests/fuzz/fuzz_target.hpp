// What every harness under tests/fuzz/ shares (docs/testing.md, "Fuzzing"): the libFuzzer entry
// point it defines, and the rule it checks. A parser given any bytes either returns or throws
// hpctrain::Error (the one-line refusal the trainer prints with exit code 2); anything else (another
// exception escaping, a crash, a sanitizer report, a hang) is a finding. Built two ways: with
// clang and -fsanitize=fuzzer (cmake -DHPCTRAIN_FUZZ=ON, libFuzzer's own main), and in every
// build with fuzz_main.cpp, which replays a corpus and mutates it for a few seconds (CI).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "hpctrain/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace hpctrain::fuzz {

// How many runs reached their parser's end: accepted, or refused where `deep` says the end is (the
// replay driver checks that every seed does: a seed refused by an early check explores nothing).
inline long& runs_that_reached_the_end() {
  static long n = 0;
  return n;
}

// Runs `parse`; an hpctrain::Error is the expected refusal, any other exception aborts (a finding
// libFuzzer saves, and the replay driver reports with the input's name). `deep(message)`: whether
// a refusal still reached the end (hf_config's first missing tensor).
// HPCTRAIN_FUZZ_VERBOSE=1 prints each input's outcome (to see how deep the seeds reach).
template <typename F>
void expect_refusal_only(const char* what, F&& parse, bool (*deep)(const char*) = nullptr) {
  static const bool verbose = std::getenv("HPCTRAIN_FUZZ_VERBOSE") != nullptr;
  try {
    parse();
    ++runs_that_reached_the_end();
    if (verbose) std::fprintf(stderr, "fuzz %s: accepted\n", what);
  } catch (const Error& e) {
    if (deep && deep(e.what())) ++runs_that_reached_the_end();
    if (verbose) std::fprintf(stderr, "fuzz %s: refused: %s\n", what, e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz %s: an exception other than hpctrain::Error escaped: %s\n", what, e.what());
    std::abort();
  }
}

// A scratch folder for the harnesses that go through files: made on first use, removed when the
// process exits; one per harness and process ("<tmp>/hpctrain-fuzz-NAME-<pid>").
inline const std::string& scratch_dir(const char* name) {
  static const struct Dir {
    explicit Dir(const char* n)
        : path((std::filesystem::temp_directory_path() /
                ("hpctrain-fuzz-" + std::string(n) + "-" + std::to_string(getpid())))
                   .string()) {
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
    std::string path;
  } dir(name);
  return dir.path;
}

// The input written as `file` in the harness's scratch folder (the parsers that read files); its path.
inline std::string as_file(const char* harness, const std::string& file, const std::uint8_t* data, std::size_t size) {
  const std::string path = scratch_dir(harness) + "/" + file;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

inline std::string text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace hpctrain::fuzz
