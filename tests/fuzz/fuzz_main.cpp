// The replay driver of the fuzz harnesses in builds without libFuzzer (tests/fuzz/fuzz_target.hpp):
//   fuzz_NAME [-seconds=S] [-seed=N] CORPUS...   (directories or files)
// runs every corpus file through LLVMFuzzerTestOneInput, then for S seconds (default 0) inputs made
// from them by libFuzzer-like mutations (bit flips, byte changes, insertions, deletions, copied
// runs, splices of two inputs), seeded by N: the same inputs on every machine. A finding aborts
// the process (the harness prints what it was; the input is written to ./fuzz-finding-NAME first).
// Prints one line: inputs replayed, mutated runs, seconds. Exit 1 (before mutating) when a corpus
// file not named regress_* or shallow_* takes no run to its parser's end (fuzz_target.hpp): such
// seeds went shallow once, unnoticed (the tokenizer's and hf_config's, until 2026-12-07).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "fuzz_target.hpp"

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string mutate(std::string s, const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  auto pick = [&rng](std::size_t n) { return n ? static_cast<std::size_t>(rng() % n) : 0; };
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const std::size_t at = pick(s.size() + 1);
    switch (rng() % 7) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1 << (rng() % 8));
        break;
      case 1:  // an interesting byte
        if (!s.empty()) {
          const char bytes[] = {0, 1, '\x7f', '\x80', '\xff', '"', '\\', '[', ']', '{', '}', ',', ':', '=', '\n', '-'};
          s[pick(s.size())] = bytes[pick(sizeof bytes)];
        }
        break;
      case 2:  // insert a byte
        s.insert(at, 1, static_cast<char>(rng() % 256));
        break;
      case 3:  // delete a run
        if (at < s.size()) s.erase(at, 1 + pick(std::min<std::size_t>(16, s.size() - at)));
        break;
      case 4:  // copy a run of the input elsewhere
        if (!s.empty()) {
          const std::size_t from = pick(s.size()), n = 1 + pick(std::min<std::size_t>(32, s.size() - from));
          s.insert(at, s.substr(from, n));
        }
        break;
      case 5:  // a number: large, negative or zero
        s.insert(at,
                 std::vector<std::string>{"0", "-1", "4294967296", "9223372036854775807", "1e308", "65536"}[pick(6)]);
        break;
      default:  // splice with another corpus input
        if (!corpus.empty()) {
          const std::string& o = corpus[pick(corpus.size())];
          s = s.substr(0, at) + o.substr(std::min(o.size(), at));
        }
    }
  }
  return s;
}

void run_one(const std::string& input, const char* name) {
  std::ofstream(std::string("fuzz-finding-") + name, std::ios::binary) << input;  // kept if the run aborts
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 0;
  std::uint64_t seed = 1;
  std::vector<std::string> corpus, names;
  const std::string name = std::filesystem::path(argv[0]).filename().string();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("-seconds=", 0) == 0) {
      seconds = std::stod(a.substr(9));
    } else if (a.rfind("-seed=", 0) == 0) {
      seed = std::stoull(a.substr(6));
    } else if (std::filesystem::is_directory(a)) {
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::directory_iterator(a))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) corpus.push_back(read_file(f)), names.push_back(f.string());
    } else {
      corpus.push_back(read_file(a)), names.push_back(a);
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::string shallow;  // (seeds that stop before the parser's end: regress_* and shallow_* may)
  for (std::size_t k = 0; k < corpus.size(); ++k) {
    const long before = hpctrain::fuzz::runs_that_reached_the_end();
    run_one(corpus[k], name.c_str());
    const std::string file = std::filesystem::path(names[k]).filename().string();
    if (hpctrain::fuzz::runs_that_reached_the_end() == before && file.rfind("regress_", 0) != 0 &&
        file.rfind("shallow_", 0) != 0)
      shallow += " " + names[k];
  }
  if (!shallow.empty()) {
    std::filesystem::remove(std::string("fuzz-finding-") + name);
    std::printf(
        "%s: seeds that no run takes to the parser's end (an early check refuses them; name one shallow_* if "
        "meant):%s\n",
        name.c_str(), shallow.c_str());
    return 1;
  }
  std::mt19937_64 rng(seed);
  long runs = 0;
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  while (seconds > 0 && elapsed() < seconds) {
    const std::string base = corpus.empty() ? std::string() : corpus[static_cast<std::size_t>(rng() % corpus.size())];
    run_one(mutate(base, corpus, rng), name.c_str());
    ++runs;
  }
  std::filesystem::remove(std::string("fuzz-finding-") + name);
  std::printf("%s: %zu corpus inputs replayed, %ld mutated runs in %.1f s, seed %llu: no finding\n", name.c_str(),
              corpus.size(), runs, elapsed(), static_cast<unsigned long long>(seed));
  return 0;
}
