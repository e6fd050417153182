// The launch geometry of the CUDA backend's column sums over tall inputs (bias gradients, layer
// norm's weight and bias gradients: rows = batch x tokens, often 8 k-64 k, columns = width). One
// block per 32 columns alone runs width / 32 blocks (12 for width 384: 12 of 132 SMs); so the rows
// are cut into chunks too, each (column block, chunk) a block whose sums go to a scratch, and a
// second pass adds a column's chunks in chunk order: deterministic, the same bits on every run.
// Host code only (tested on the CPU: tests/unit/test_backend.cpp).
#pragma once

#include <algorithm>
#include <cstdint>

namespace hpctrain {

struct ColumnSumPlan {
  std::int64_t rows = 0, cols = 0;
  std::int64_t column_blocks = 0;   // ceil(cols / 32)
  std::int64_t chunks = 1;          // row chunks (1: the sums go straight into the output)
  std::int64_t rows_per_chunk = 0;  // the last chunk may hold fewer, none holds none
  std::int64_t chunk_begin(std::int64_t c) const { return std::min(rows, c * rows_per_chunk); }
  std::int64_t chunk_end(std::int64_t c) const { return std::min(rows, (c + 1) * rows_per_chunk); }
};

// About 4 blocks per SM, chunks of at least 64 rows, at most 1024 chunks (the scratch holds
// chunks x cols floats).
inline ColumnSumPlan plan_column_sums(std::int64_t rows, std::int64_t cols, int sms) {
  ColumnSumPlan p;
  p.rows = rows;
  p.cols = cols;
  p.column_blocks = (cols + 31) / 32;
  if (rows <= 0 || cols <= 0) return p;
  const std::int64_t target = 4 * static_cast<std::int64_t>(std::max(1, sms));
  std::int64_t chunks = (target + p.column_blocks - 1) / p.column_blocks;
  chunks = std::max<std::int64_t>(1, std::min({chunks, rows / 64, std::int64_t{1024}}));
  // Rows per chunk rounded down (so at least `chunks` chunks), unless that makes more than 1024.
  p.rows_per_chunk = rows / chunks;
  if ((rows + p.rows_per_chunk - 1) / p.rows_per_chunk > 1024) p.rows_per_chunk = (rows + chunks - 1) / chunks;
  p.chunks = (rows + p.rows_per_chunk - 1) / p.rows_per_chunk;  // no empty chunk
  return p;
}

}  // namespace hpctrain
