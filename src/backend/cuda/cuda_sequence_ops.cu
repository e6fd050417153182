// The CUDA backend's operations for sequence models (backend/cuda/cuda_ops.hpp): token embedding,
// layer norm and RMS norm over the last dimension and causal multi-head attention. Attention's four GEMMs per
// head go through cuBLAS strided-batched GEMMs (one call per head, batched over the sequences:
// the fused query/key/value rows make the heads' columns strided); the masked softmax and its
// backward are one block per row. Layer norm's per-row sums and its weight gradients are
// deterministic block and column reductions. The embedding's gradient sorts the positions by token
// id (CUB's stable radix sort) and adds each id's rows in position order, as the CPU does: the same
// bits as the CPU and from run to run (atomics, used until 2026-12-04, made a GPT's steps differ in
// the last bits between two runs on the H200). Token ids were checked against the vocabulary when
// the data were loaded (data/dataset.hpp); an id outside the table reads and writes nothing here.
#include <cub/device/device_radix_sort.cuh>

#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/cuda/context.hpp"
#include "hpctrain/backend/cuda/cuda_ops.hpp"
#include "hpctrain/backend/cuda/kernels.cuh"

namespace hpctrain::cuda {

using detail::add_column_chunks;
using detail::column_sum_plan;
using detail::launch;
using detail::launch_check;
using i64 = std::int64_t;

namespace {

__global__ void embedding_kernel(const std::int32_t* ids, const float* table, i64 offset, i64 vocab, i64 width,
                                 float* y, i64 total) {
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 id = ids[idx / width] - offset;  // (a row this table does not hold: zeros)
    y[idx] = id >= 0 && id < vocab ? table[id * width + idx % width] : 0.f;
  }
}

// The sort's input: each position's id (an id outside the table: `vocab`, a key nothing reads) and
// the position itself.
__global__ void embedding_sort_keys_kernel(const std::int32_t* ids, i64 offset, std::int32_t vocab, std::int32_t* keys,
                                           std::int32_t* positions, i64 total) {
  for (i64 i = detail::global_index(); i < total; i += detail::grid_stride()) {
    const i64 id = ids[i] - offset;
    keys[i] = id >= 0 && id < vocab ? static_cast<std::int32_t>(id) : vocab;
    positions[i] = static_cast<std::int32_t>(i);
  }
}

// One thread per (sorted position, column); the first of each id's run adds that id's rows in
// position order (the stable sort kept it) into the table's row: the CPU's order of additions.
__global__ void embedding_grad_kernel(const std::int32_t* keys, const std::int32_t* positions, const float* dy,
                                      i64 vocab, i64 width, float* dtable, i64 total) {
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 i = idx / width, c = idx % width, n = total / width;
    const std::int32_t id = keys[i];
    if (id >= vocab || (i > 0 && keys[i - 1] == id)) continue;
    float s = dtable[id * width + c];
    for (i64 j = i; j < n && keys[j] == id; ++j) s += dy[static_cast<i64>(positions[j]) * width + c];
    dtable[id * width + c] = s;
  }
}

// One block (256 threads) per row.
__global__ void layernorm_kernel(const float* x, const float* w, const float* b, i64 width, float eps, float* mean,
                                 float* rstd, float* y) {
  const float* in = x + blockIdx.x * width;
  float s = 0.f;
  for (i64 j = threadIdx.x; j < width; j += blockDim.x) s += in[j];
  const float m = detail::block_sum(s) / static_cast<float>(width);
  float ss = 0.f;
  for (i64 j = threadIdx.x; j < width; j += blockDim.x) ss += (in[j] - m) * (in[j] - m);
  const float r = rsqrtf(detail::block_sum(ss) / static_cast<float>(width) + eps);
  float* out = y + blockIdx.x * width;
  for (i64 j = threadIdx.x; j < width; j += blockDim.x) out[j] = (in[j] - m) * r * w[j] + (b ? b[j] : 0.f);
  if (threadIdx.x == 0) {
    mean[blockIdx.x] = m;
    rstd[blockIdx.x] = r;
  }
}

// RMS norm: one block (256 threads) per row.
__global__ void rmsnorm_kernel(const float* x, const float* w, i64 width, float eps, float* rstd, float* y) {
  const float* in = x + blockIdx.x * width;
  float ss = 0.f;
  for (i64 j = threadIdx.x; j < width; j += blockDim.x) ss += in[j] * in[j];
  const float r = rsqrtf(detail::block_sum(ss) / static_cast<float>(width) + eps);
  float* out = y + blockIdx.x * width;
  for (i64 j = threadIdx.x; j < width; j += blockDim.x) out[j] = in[j] * r * w[j];
  if (threadIdx.x == 0) rstd[blockIdx.x] = r;
}

__global__ void rmsnorm_dx_kernel(const float* x, const float* w, const float* rstd, const float* dy, i64 width,
                                  float* dx) {
  const i64 row = blockIdx.x;
  const float* in = x + row * width;
  const float* g = dy + row * width;
  const float r = rstd[row];
  float sgx = 0.f;
  for (i64 j = threadIdx.x; j < width; j += blockDim.x) sgx += g[j] * w[j] * in[j] * r;
  const float mgx = detail::block_sum(sgx) / static_cast<float>(width);
  for (i64 j = threadIdx.x; j < width; j += blockDim.x) dx[row * width + j] = r * (g[j] * w[j] - in[j] * r * mgx);
}

// SwiGLU over `total` outputs of rows of f: element idx of row i reads a = x[i, j], b = x[i, f + j].
__global__ void swiglu_kernel(const float* x, i64 f, float* y, i64 total) {
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 i = idx / f, j = idx % f;
    const float a = x[i * 2 * f + j], b = x[i * 2 * f + f + j];
    y[idx] = a / (1.f + expf(-a)) * b;
  }
}

__global__ void swiglu_grad_kernel(const float* x, const float* dy, i64 f, float* dx, i64 total) {
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 i = idx / f, j = idx % f;
    const float a = x[i * 2 * f + j], b = x[i * 2 * f + f + j], g = dy[idx];
    const float s = 1.f / (1.f + expf(-a));
    dx[i * 2 * f + j] = g * b * s * (1.f + a * (1.f - s));
    dx[i * 2 * f + f + j] = g * a * s;
  }
}

// GeGLU: as SwiGLU with GELU's tanh approximation (cuda_ops.cu's activation) for silu.
__device__ inline float gelu_tanh_of(float a) {
  return 0.5f * a * (1.f + tanhf(0.79788456080286536f * (a + 0.044715f * a * a * a)));
}
__device__ inline float gelu_tanh_slope(float a) {
  const float t = tanhf(0.79788456080286536f * (a + 0.044715f * a * a * a));
  return 0.5f * (1.f + t) + 0.5f * a * (1.f - t * t) * 0.79788456080286536f * (1.f + 3.f * 0.044715f * a * a);
}

__global__ void geglu_kernel(const float* x, i64 f, float* y, i64 total) {
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 i = idx / f, j = idx % f;
    y[idx] = gelu_tanh_of(x[i * 2 * f + j]) * x[i * 2 * f + f + j];
  }
}

__global__ void geglu_grad_kernel(const float* x, const float* dy, i64 f, float* dx, i64 total) {
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 i = idx / f, j = idx % f;
    const float a = x[i * 2 * f + j], b = x[i * 2 * f + f + j], g = dy[idx];
    dx[i * 2 * f + j] = g * b * gelu_tanh_slope(a);
    dx[i * 2 * f + f + j] = g * gelu_tanh_of(a);
  }
}

__global__ void softcap_kernel(float* x, float cap, i64 total) {
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride())
    if (!isinf(x[idx])) x[idx] = cap * tanhf(x[idx] / cap);
}

__global__ void softcap_grad_kernel(const float* y, float cap, float* dy, i64 total) {
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const float t = y[idx] / cap;
    dy[idx] = isinf(y[idx]) ? 0.f : dy[idx] * (1.f - t * t);
  }
}

__global__ void layernorm_dx_kernel(const float* x, const float* w, const float* mean, const float* rstd,
                                    const float* dy, i64 width, float* dx) {
  const i64 row = blockIdx.x;
  const float* in = x + row * width;
  const float* g = dy + row * width;
  const float m = mean[row], r = rstd[row];
  float sg = 0.f, sgx = 0.f;
  for (i64 j = threadIdx.x; j < width; j += blockDim.x) {
    const float gw = g[j] * w[j];
    sg += gw;
    sgx += gw * (in[j] - m) * r;
  }
  const float mg = detail::block_sum(sg) / static_cast<float>(width);
  const float mgx = detail::block_sum(sgx) / static_cast<float>(width);
  for (i64 j = threadIdx.x; j < width; j += blockDim.x)
    dx[row * width + j] = r * (g[j] * w[j] - mg - (in[j] - m) * r * mgx);
}

// dw[j] += sum_i dy[i,j] * xhat[i,j], db[j] += sum_i dy[i,j] over one row chunk (blockIdx.y;
// backend/column_sums.hpp): 32 columns per block, 8 row lanes. One chunk: added straight into dw, db;
// else the chunk's sums into pw[chunk][j], pb[chunk][j] for add_column_chunks.
__global__ void layernorm_dw_kernel(const float* x, const float* mean, const float* rstd, const float* dy, i64 rows,
                                    i64 width, i64 rows_per_chunk, float* dw, float* db, bool direct) {
  __shared__ float pw[8][33], pb[8][33];
  const i64 j = blockIdx.x * 32 + threadIdx.x;
  const i64 r0 = blockIdx.y * rows_per_chunk, r1 = r0 + rows_per_chunk < rows ? r0 + rows_per_chunk : rows;
  float sw = 0.f, sb = 0.f;
  if (j < width)
    for (i64 i = r0 + threadIdx.y; i < r1; i += 8) {
      const float g = dy[i * width + j];
      sw += g * (x[i * width + j] - (mean ? mean[i] : 0.f)) * rstd[i];  // (mean null: RMS norm)
      sb += g;
    }
  pw[threadIdx.y][threadIdx.x] = sw;
  pb[threadIdx.y][threadIdx.x] = sb;
  __syncthreads();
  if (threadIdx.y == 0 && j < width) {
    float tw = 0.f, tb = 0.f;
    for (int l = 0; l < 8; ++l) tw += pw[l][threadIdx.x], tb += pb[l][threadIdx.x];
    if (direct) {
      dw[j] += tw;
      if (db) db[j] += tb;
    } else {
      dw[blockIdx.y * width + j] = tw;
      if (db) db[blockIdx.y * width + j] = tb;
    }
  }
}

// One block per row i of one (sequence, head): softmax over j <= i of the scaled scores, 0 after.
__global__ void causal_softmax_kernel(float* att, i64 t) {
  const i64 i = blockIdx.x % t;
  float* row = att + blockIdx.x * t;
  float mx = -INFINITY;
  for (i64 j = threadIdx.x; j <= i; j += blockDim.x) mx = fmaxf(mx, row[j]);
  __shared__ float part[256];
  part[threadIdx.x] = mx;
  __syncthreads();
  for (unsigned k = blockDim.x / 2; k > 0; k /= 2) {
    if (threadIdx.x < k) part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + k]);
    __syncthreads();
  }
  mx = part[0];
  __syncthreads();
  float s = 0.f;
  for (i64 j = threadIdx.x; j <= i; j += blockDim.x) s += expf(row[j] - mx);
  const float inv = 1.f / detail::block_sum(s);
  for (i64 j = threadIdx.x; j < t; j += blockDim.x) row[j] = j <= i ? expf(row[j] - mx) * inv : 0.f;
}

__global__ void causal_softmax_backward_kernel(const float* att, float* datt, i64 t, float scale) {
  const i64 i = blockIdx.x % t;
  const float* p = att + blockIdx.x * t;
  float* d = datt + blockIdx.x * t;
  float dot = 0.f;
  for (i64 j = threadIdx.x; j <= i; j += blockDim.x) dot += p[j] * d[j];
  dot = detail::block_sum(dot);
  for (i64 j = threadIdx.x; j < t; j += blockDim.x) d[j] = j <= i ? p[j] * (d[j] - dot) * scale : 0.f;
}

struct Dims {
  i64 n, t, c, heads, d;
  float scale;
};
Dims dims(const Tensor& qkv, i64 heads, const Tensor& att, const char* op) {
  const Shape& s = qkv.shape();
  HPCT_CHECK(s.size() == 3 && s[2] % 3 == 0 && heads > 0 && (s[2] / 3) % heads == 0,
             std::string(op) + ": qkv " + shape_string(s) + " for " + std::to_string(heads) + " heads");
  Dims a{s[0], s[1], s[2] / 3, heads, s[2] / 3 / heads, 0.f};
  a.scale = 1.f / sqrtf(static_cast<float>(a.d));
  HPCT_CHECK(att.numel() == a.n * heads * a.t * a.t, std::string(op) + ": att " + shape_string(att.shape()));
  return a;
}

// Row-major C_b = alpha op(A_b) op(B_b) + beta C_b for b < batch, each operand `stride` elements
// after the last (column-major cuBLAS computes C^T = op(B)^T op(A)^T).
void batched_gemm(bool ta, bool tb, i64 m, i64 n, i64 k, float alpha, const float* a, i64 lda, i64 sa, const float* b,
                  i64 ldb, i64 sb, float beta, float* c, i64 ldc, i64 sc, i64 batch) {
  const BatchedGemmDims d = batched_gemm_dims(m, n, k, lda, ldb, ldc, batch);
  CHECK_CUBLAS(cublas().gemm_strided_batched_ex(context().blas(), tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                ta ? CUBLAS_OP_T : CUBLAS_OP_N, d.n, d.m, d.k, &alpha, b, CUDA_R_32F,
                                                d.ldb, sb, a, CUDA_R_32F, d.lda, sa, &beta, c, CUDA_R_32F, d.ldc, sc,
                                                d.batch, context().gemm_compute(), CUBLAS_GEMM_DEFAULT));
}

}  // namespace

void embedding_forward(const Tensor& ids, const Tensor& table, i64 row_offset, i64 /*vocabulary*/, Tensor& y) {
  const i64 vocab = table.shape()[0], width = table.numel() / vocab;
  backend::check_ids(ids, "embedding_forward");
  HPCT_CHECK(y.numel() == ids.numel() * width, "embedding_forward: y " + shape_string(y.shape()));
  launch(embedding_kernel, y.numel(), ids.data_as<std::int32_t>(), table.data(), row_offset, vocab, width, y.data(),
         y.numel());
}

void embedding_backward(const Tensor& ids, const Tensor& dy, i64 row_offset, i64 /*vocabulary*/, Tensor& dtable) {
  const i64 vocab = dtable.shape()[0], width = dtable.numel() / vocab;
  backend::check_ids(ids, "embedding_backward");
  HPCT_CHECK(dy.numel() == ids.numel() * width, "embedding_backward: dy " + shape_string(dy.shape()));
  const i64 n = ids.numel();
  if (n == 0) return;
  HPCT_CHECK(n < (i64{1} << 31) && vocab < (i64{1} << 31) - 1, "embedding_backward: " + std::to_string(n) +
                                                                   " positions or a table of " + std::to_string(vocab) +
                                                                   " rows past the 32-bit sort keys");
  // Scratch: keys and positions in and out (4 x n int32), then CUB's temporary storage.
  int end_bit = 1;
  while ((i64{1} << end_bit) <= vocab) ++end_bit;  // keys 0..vocab
  std::size_t temp_bytes = 0;
  CHECK_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, static_cast<const std::int32_t*>(nullptr),
                                             static_cast<std::int32_t*>(nullptr),
                                             static_cast<const std::int32_t*>(nullptr),
                                             static_cast<std::int32_t*>(nullptr), n, 0, end_bit, context().stream()));
  const std::size_t index_bytes = (static_cast<std::size_t>(n) * sizeof(std::int32_t) + 255) / 256 * 256;
  auto* base = static_cast<char*>(context().scratch(4 * index_bytes + temp_bytes));
  auto* keys_in = reinterpret_cast<std::int32_t*>(base);
  auto* pos_in = reinterpret_cast<std::int32_t*>(base + index_bytes);
  auto* keys = reinterpret_cast<std::int32_t*>(base + 2 * index_bytes);
  auto* pos = reinterpret_cast<std::int32_t*>(base + 3 * index_bytes);
  launch(embedding_sort_keys_kernel, n, ids.data_as<std::int32_t>(), row_offset, static_cast<std::int32_t>(vocab),
         keys_in, pos_in, n);
  CHECK_CUDA(cub::DeviceRadixSort::SortPairs(base + 4 * index_bytes, temp_bytes, keys_in, keys, pos_in, pos, n, 0,
                                             end_bit, context().stream()));
  launch(embedding_grad_kernel, dy.numel(), keys, pos, dy.data(), vocab, width, dtable.data(), dy.numel());
}

void layernorm_forward(const Tensor& x, const Tensor& w, const Tensor& b, i64 width, float eps, Tensor& mean,
                       Tensor& rstd, Tensor& y) {
  const i64 rows = x.numel() / width;
  HPCT_CHECK(w.numel() == width && y.numel() == x.numel() && mean.numel() >= rows && rstd.numel() >= rows,
             "layernorm_forward: x " + shape_string(x.shape()) + " width " + std::to_string(width));
  if (rows == 0) return;
  layernorm_kernel<<<static_cast<unsigned>(rows), 256, 0, context().stream()>>>(
      x.data(), w.data(), b.defined() ? b.data() : nullptr, width, eps, mean.data(), rstd.data(), y.data());
  launch_check();
}

namespace {
// dw += sum over rows of dy * xhat (and db += sum of dy when db is defined), xhat = (x - mean) *
// rstd, mean null for RMS norm: deterministic column sums (backend/column_sums.hpp).
void norm_weight_grads(const Tensor& x, const float* mean, const Tensor& rstd, const Tensor& dy, i64 rows, i64 width,
                       Tensor& dw, Tensor& db) {
  // Many row chunks on tall inputs (column_sums.hpp): their sums in the scratch, then added in order.
  const ColumnSumPlan plan = column_sum_plan(rows, width);
  float* pw = dw.data();
  float* pb = db.defined() ? db.data() : nullptr;
  if (plan.chunks > 1) {
    pw = static_cast<float*>(context().scratch(2 * static_cast<std::size_t>(plan.chunks * width) * sizeof(float)));
    pb = db.defined() ? pw + plan.chunks * width : nullptr;
  }
  layernorm_dw_kernel<<<dim3(static_cast<unsigned>(plan.column_blocks), static_cast<unsigned>(plan.chunks)),
                        dim3(32, 8), 0, context().stream()>>>(x.data(), mean, rstd.data(), dy.data(), rows, width,
                                                              plan.rows_per_chunk, pw, pb, plan.chunks == 1);
  launch_check();
  add_column_chunks(pw, plan, dw.data());
  if (db.defined()) add_column_chunks(pb, plan, db.data());
}
}  // namespace

void layernorm_backward(const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd, const Tensor& dy,
                        i64 width, Tensor& dx, Tensor& dw, Tensor& db) {
  const i64 rows = x.numel() / width;
  HPCT_CHECK(dy.numel() == x.numel() && dw.numel() == width, "layernorm_backward: " + shape_string(x.shape()));
  if (rows == 0) return;
  if (dx.defined()) {
    layernorm_dx_kernel<<<static_cast<unsigned>(rows), 256, 0, context().stream()>>>(
        x.data(), w.data(), mean.data(), rstd.data(), dy.data(), width, dx.data());
    launch_check();
  }
  norm_weight_grads(x, mean.data(), rstd, dy, rows, width, dw, db);
}

void rmsnorm_forward(const Tensor& x, const Tensor& w, i64 width, float eps, Tensor& rstd, Tensor& y) {
  const i64 rows = x.numel() / width;
  HPCT_CHECK(w.numel() == width && y.numel() == x.numel() && rstd.numel() >= rows,
             "rmsnorm_forward: x " + shape_string(x.shape()) + " width " + std::to_string(width));
  if (rows == 0) return;
  rmsnorm_kernel<<<static_cast<unsigned>(rows), 256, 0, context().stream()>>>(x.data(), w.data(), width, eps,
                                                                              rstd.data(), y.data());
  launch_check();
}

void rmsnorm_backward(const Tensor& x, const Tensor& w, const Tensor& rstd, const Tensor& dy, i64 width, Tensor& dx,
                      Tensor& dw) {
  const i64 rows = x.numel() / width;
  HPCT_CHECK(dy.numel() == x.numel() && dw.numel() == width, "rmsnorm_backward: " + shape_string(x.shape()));
  if (rows == 0) return;
  if (dx.defined()) {
    rmsnorm_dx_kernel<<<static_cast<unsigned>(rows), 256, 0, context().stream()>>>(x.data(), w.data(), rstd.data(),
                                                                                   dy.data(), width, dx.data());
    launch_check();
  }
  Tensor none;
  norm_weight_grads(x, nullptr, rstd, dy, rows, width, dw, none);
}

void swiglu_forward(const Tensor& x, Tensor& y) {
  const i64 f = y.shape().back();
  HPCT_CHECK(x.numel() == 2 * y.numel() && x.shape().back() == 2 * f,
             "swiglu_forward: x " + shape_string(x.shape()) + ", y " + shape_string(y.shape()));
  launch(swiglu_kernel, y.numel(), x.data(), f, y.data(), y.numel());
}

void swiglu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  const i64 f = dy.shape().back();
  HPCT_CHECK(x.numel() == 2 * dy.numel() && dx.numel() == x.numel(), "swiglu_backward: x " + shape_string(x.shape()));
  launch(swiglu_grad_kernel, dy.numel(), x.data(), dy.data(), f, dx.data(), dy.numel());
}

void geglu_forward(const Tensor& x, Tensor& y) {
  const i64 f = y.shape().back();
  HPCT_CHECK(x.numel() == 2 * y.numel() && x.shape().back() == 2 * f,
             "geglu_forward: x " + shape_string(x.shape()) + ", y " + shape_string(y.shape()));
  launch(geglu_kernel, y.numel(), x.data(), f, y.data(), y.numel());
}

void geglu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  const i64 f = dy.shape().back();
  HPCT_CHECK(x.numel() == 2 * dy.numel() && dx.numel() == x.numel(), "geglu_backward: x " + shape_string(x.shape()));
  launch(geglu_grad_kernel, dy.numel(), x.data(), dy.data(), f, dx.data(), dy.numel());
}

void softcap_forward(Tensor& x, float cap) {
  HPCT_CHECK(cap > 0.f, "softcap_forward: a cap of " + std::to_string(cap));
  launch(softcap_kernel, x.numel(), x.data(), cap, x.numel());
}

void softcap_backward(const Tensor& y, float cap, Tensor& dy) {
  detail::same_size(y, dy, "softcap_backward");
  HPCT_CHECK(cap > 0.f, "softcap_backward: a cap of " + std::to_string(cap));
  launch(softcap_grad_kernel, y.numel(), y.data(), cap, dy.data(), y.numel());
}

void attention_probs(const Tensor& qkv, i64 heads, Tensor& att) {
  const Dims a = dims(qkv, heads, att, "attention_probs");
  const i64 ld = 3 * a.c, tt = a.t * a.t;
  for (i64 h = 0; h < heads; ++h)  // S = scale q k^T, batched over the sequences
    batched_gemm(false, true, a.t, a.t, a.d, a.scale, qkv.data() + h * a.d, ld, a.t * ld, qkv.data() + a.c + h * a.d,
                 ld, a.t * ld, 0.f, att.data() + h * tt, a.t, heads * tt, a.n);
  if (a.n * heads * a.t == 0) return;
  causal_softmax_kernel<<<static_cast<unsigned>(a.n * heads * a.t), 256, 0, context().stream()>>>(att.data(), a.t);
  launch_check();
}

void attention_values(const Tensor& att, const Tensor& qkv, i64 heads, Tensor& y) {
  const Dims a = dims(qkv, heads, att, "attention_values");
  HPCT_CHECK(y.numel() == a.n * a.t * a.c, "attention_values: y " + shape_string(y.shape()));
  const i64 ld = 3 * a.c, tt = a.t * a.t;
  for (i64 h = 0; h < heads; ++h)
    batched_gemm(false, false, a.t, a.d, a.t, 1.f, att.data() + h * tt, a.t, heads * tt, qkv.data() + 2 * a.c + h * a.d,
                 ld, a.t * ld, 0.f, y.data() + h * a.d, a.c, a.t * a.c, a.n);
}

void attention_values_backward(const Tensor& att, const Tensor& qkv, const Tensor& dy, i64 heads, Tensor& datt,
                               Tensor& dqkv) {
  const Dims a = dims(qkv, heads, att, "attention_values_backward");
  detail::same_size(att, datt, "attention_values_backward");
  detail::same_size(qkv, dqkv, "attention_values_backward");
  const i64 ld = 3 * a.c, tt = a.t * a.t;
  for (i64 h = 0; h < heads; ++h) {
    batched_gemm(false, true, a.t, a.t, a.d, 1.f, dy.data() + h * a.d, a.c, a.t * a.c, qkv.data() + 2 * a.c + h * a.d,
                 ld, a.t * ld, 0.f, datt.data() + h * tt, a.t, heads * tt, a.n);
    batched_gemm(true, false, a.t, a.d, a.t, 1.f, att.data() + h * tt, a.t, heads * tt, dy.data() + h * a.d, a.c,
                 a.t * a.c, 0.f, dqkv.data() + 2 * a.c + h * a.d, ld, a.t * ld, a.n);
  }
}

void attention_probs_backward(const Tensor& att, Tensor& datt, const Tensor& qkv, i64 heads, Precision rounding,
                              Tensor& dqkv) {
  const Dims a = dims(qkv, heads, att, "attention_probs_backward");
  detail::same_size(att, datt, "attention_probs_backward");
  detail::same_size(qkv, dqkv, "attention_probs_backward");
  if (a.n * heads * a.t == 0) return;
  causal_softmax_backward_kernel<<<static_cast<unsigned>(a.n * heads * a.t), 256, 0, context().stream()>>>(
      att.data(), datt.data(), a.t, a.scale);
  launch_check();
  if (rounding != Precision::fp32) cuda::round_to_precision(datt, rounding);  // exact in cuBLAS's conversion then
  const i64 ld = 3 * a.c, tt = a.t * a.t;
  for (i64 h = 0; h < heads; ++h) {
    const float* q = qkv.data() + h * a.d;
    float* dq = dqkv.data() + h * a.d;
    batched_gemm(false, false, a.t, a.d, a.t, 1.f, datt.data() + h * tt, a.t, heads * tt, q + a.c, ld, a.t * ld, 0.f,
                 dq, ld, a.t * ld, a.n);  // dq = dS k
    batched_gemm(true, false, a.t, a.d, a.t, 1.f, datt.data() + h * tt, a.t, heads * tt, q, ld, a.t * ld, 0.f, dq + a.c,
                 ld, a.t * ld, a.n);  // dk = dS^T q
  }
}

}  // namespace hpctrain::cuda
