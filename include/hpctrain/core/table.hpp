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

}  // namespace hpctrain
