// Implementation of aligned text tables (core/table.hpp).
#include "hpctrain/core/table.hpp"

#include <algorithm>
#include <cctype>

#include "hpctrain/core/error.hpp"

namespace hpctrain {

namespace {
bool looks_numeric(const std::string& s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) {
                       return std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+' ||
                              c == 'e' || c == ',' || c == '%';
                     }) &&
         std::any_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}
}  // namespace

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void Table::add_row(std::vector<std::string> cells) {
  HPCT_CHECK(cells.size() == headers_.size(), "table row has " + std::to_string(cells.size()) + " cells for " +
                                                  std::to_string(headers_.size()) + " columns");
  rows_.push_back(std::move(cells));
}

std::string Table::render() const {
  std::vector<std::size_t> width(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) {
    width[c] = headers_[c].size();
    for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
  }
  // A column is right-aligned when every cell in it is a number.
  std::vector<bool> numeric(headers_.size(), !rows_.empty());
  for (const auto& row : rows_)
    for (std::size_t c = 0; c < row.size(); ++c) numeric[c] = numeric[c] && looks_numeric(row[c]);
  auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      const bool right = !header && numeric[c];
      out += (c ? "  " : "") + (right ? pad + cells[c] : cells[c] + (c + 1 < cells.size() ? pad : ""));
    }
    return out + "\n";
  };
  std::string out = line(headers_, true);
  std::size_t total = 0;
  for (auto w : width) total += w;
  out += std::string(total + 2 * (width.empty() ? 0 : width.size() - 1), '-') + "\n";
  for (const auto& row : rows_) out += line(row, false);
  return out;
}

std::string fixed_text(double v, int decimals) {
  char out[64];
  std::snprintf(out, sizeof out, "%.*f", decimals, v);
  return out;
}

std::string bytes_text(double bytes) {
  char out[32];
  if (bytes < 1024)
    std::snprintf(out, sizeof out, "%.0f B", bytes);
  else if (bytes < 1024.0 * 1024)
    std::snprintf(out, sizeof out, "%.1f KiB", bytes / 1024);
  else if (bytes < 1024.0 * 1024 * 1024)
    std::snprintf(out, sizeof out, "%.1f MiB", bytes / (1024.0 * 1024));
  else
    std::snprintf(out, sizeof out, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  return out;
}

}  // namespace hpctrain
