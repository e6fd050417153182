// Aligned text tables with a title and units in the headers, the way
// nccl-tests prints results: numbers right-aligned, text left-aligned.
#pragma once

#include <string>
#include <vector>

namespace hpctrain {

class Table {
 public:
  explicit Table(std::vector<std::string> headers);
  void add_row(std::vector<std::string> cells);  // must have one cell per header
  std::string render() const;                    // ends with a newline
  std::size_t rows() const { return rows_.size(); }

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// A byte count as people read it: "812 B", "48.2 KiB", "48.2 MiB", "3.10 GiB".
std::string bytes_text(double bytes);
// A number rounded to `decimals` places, every digit before the point kept (what log lines print:
// a perplexity of 10,800,000 is not "108000", as std::to_string cut to a width made it).
std::string fixed_text(double v, int decimals);

}  // namespace hpctrain
