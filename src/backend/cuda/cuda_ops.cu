// The CUDA backend (backend/cuda/cuda_ops.hpp), first half: GEMM through
// cuBLAS, element-wise work, losses, the optimizer updates (one kernel over
// the flat buffer each), reductions and precision rounding. Every launch goes
// on the context's compute stream (backend/cuda/context.hpp); nothing here
// waits for the device except the operations that return a value to the host
// (count_correct, sum_of_squares). Reductions are two-pass and deterministic:
// the same inputs give the same bits on every run. Convolution helpers,
// pooling and batch norm are in cuda_layer_ops.cu.
#include <cuda_fp16.h>

#include <cmath>

#include "hpctrain/backend/cuda/context.hpp"
#include "hpctrain/backend/cuda/cuda_ops.hpp"
#include "hpctrain/backend/cuda/kernels.cuh"
#include "hpctrain/tensor/step_scalars.hpp"

namespace hpctrain::cuda {

using detail::launch;
using detail::launch_check;
using detail::same_size;
using i64 = std::int64_t;

void gemm(bool ta, bool tb, float alpha, const Tensor& a, const Tensor& b, float beta, Tensor& c) {
  const auto [m, n, k] = gemm_dims(ta, tb, a, b, c);
  if (m == 0 || n == 0) return;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  CHECK_CUBLAS(cublas().gemm_ex(context().blas(), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m,
                                k, &alpha, b.data(), CUDA_R_32F, static_cast<int>(b.cols()), a.data(), CUDA_R_32F,
                                static_cast<int>(a.cols()), &beta, c.data(), CUDA_R_32F, n, context().gemm_compute(),
                                CUBLAS_GEMM_DEFAULT));
}

namespace {

__global__ void add_bias_kernel(float* y, const float* b, i64 total, i64 n) {
  for (i64 i = detail::global_index(); i < total; i += detail::grid_stride()) y[i] += b[i % n];
}

// Column sums of dy over one row chunk (backend/column_sums.hpp): 32 columns per block, 8 row lanes
// summed in shared memory; blockIdx.y is the chunk. One chunk: db[j] += the sum; else the chunk's
// sums into out[chunk][j] for add_column_chunks.
__global__ void bias_grad_kernel(const float* dy, float* out, i64 rows, i64 n, i64 rows_per_chunk, bool direct) {
  __shared__ float part[8][33];
  const i64 j = blockIdx.x * 32 + threadIdx.x;
  const i64 r0 = blockIdx.y * rows_per_chunk, r1 = r0 + rows_per_chunk < rows ? r0 + rows_per_chunk : rows;
  float s = 0.f;
  if (j < n)
    for (i64 i = r0 + threadIdx.y; i < r1; i += 8) s += dy[i * n + j];
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < n) {
    float t = 0.f;
    for (int l = 0; l < 8; ++l) t += part[l][threadIdx.x];
    if (direct)
      out[j] += t;
    else
      out[blockIdx.y * n + j] = t;
  }
}

// out[j] += the chunks' sums of column j, added in chunk order.
__global__ void add_chunks_kernel(const float* partial, i64 chunks, i64 n, float* out) {
  for (i64 j = detail::global_index(); j < n; j += detail::grid_stride()) {
    float t = 0.f;
    for (i64 c = 0; c < chunks; ++c) t += partial[c * n + j];
    out[j] += t;
  }
}

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

constexpr float kSqrt2OverPi = 0.79788456080286536f, kGeluCubic = 0.044715f;

__device__ inline float activate(int f, float v) {  // Activation: relu, tanh, gelu (exact), relu2, gelu_tanh
  return f == 0   ? (v > 0 ? v : 0.f)
         : f == 1 ? tanhf(v)
         : f == 2 ? 0.5f * v * (1.f + erff(v * kInvSqrt2))
         : f == 3 ? (v > 0 ? v * v : 0.f)
                  : 0.5f * v * (1.f + tanhf(kSqrt2OverPi * (v + kGeluCubic * v * v * v)));
}

__global__ void activation_kernel(int f, const float* x, float* y, i64 n) {
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride()) y[i] = activate(f, x[i]);
}

__global__ void add_bias_activation_kernel(float* y, const float* b, int f, float* z, i64 total, i64 n) {
  for (i64 i = detail::global_index(); i < total; i += detail::grid_stride()) {
    const float v = y[i] + b[i % n];
    y[i] = v;
    z[i] = activate(f, v);
  }
}

__global__ void activation_backward_kernel(int f, const float* x, const float* dy, float* dx, i64 n) {
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride()) {
    const float v = x[i], g = dy[i];
    if (f == 0) {
      dx[i] = v > 0 ? g : 0.f;
    } else if (f == 1) {
      const float t = tanhf(v);
      dx[i] = g * (1.f - t * t);
    } else if (f == 3) {
      dx[i] = v > 0 ? 2.f * v * g : 0.f;
    } else if (f == 4) {
      const float t = tanhf(kSqrt2OverPi * (v + kGeluCubic * v * v * v));
      const float du = kSqrt2OverPi * (1.f + 3.f * kGeluCubic * v * v);
      dx[i] = g * (0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * du);
    } else {
      const float cdf = 0.5f * (1.f + erff(v * kInvSqrt2));
      dx[i] = g * (cdf + v * kInvSqrt2Pi * expf(-0.5f * v * v));
    }
  }
}

__global__ void fill_kernel(float* p, float v, i64 n) {
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride()) p[i] = v;
}
// Row r's columns first..first+width-1 of a [rows, n] tensor, element i of the rows x width block.
__global__ void fill_columns_kernel(float* y, i64 first, i64 width, i64 n, float v, i64 total) {
  for (i64 i = detail::global_index(); i < total; i += detail::grid_stride()) y[i / width * n + first + i % width] = v;
}
__global__ void scale_kernel(float* p, float f, i64 n) {
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride()) p[i] *= f;
}
__global__ void multiply_kernel(const float* a, const float* b, float* o, i64 n) {
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride()) o[i] = a[i] * b[i];
}
__global__ void add_kernel(const float* a, const float* b, float* o, i64 n) {
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride()) o[i] = a[i] + b[i];
}

// One warp per row: the row's first largest logit (as std::max_element), each exp once in float,
// the row sum and the loss in double, the row's loss and whether it is correct into per-row slots;
// with d (training), d = k (e / sum - onehot(label)) from the exponentials kept in d, the
// probability rounded to float first (as the CPU). (The CPU computes its sum in another order:
// the probabilities agree within float rounding, about 2e-7 relative.) -inf logits (lm_head's
// padding) give 0.
__global__ void softmax_rows_kernel(const float* z, const std::int32_t* labels, float* d, float k, double* row_loss,
                                    int* row_correct, i64 rows, i64 n) {
  const i64 row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* zr = z + row * n;
  float best = -INFINITY;
  i64 at = n;
  for (i64 j = lane; j < n; j += 32)
    if (zr[j] > best || (zr[j] == best && j < at)) best = zr[j], at = j;
  for (int o = 16; o > 0; o /= 2) {
    const float ob = __shfl_down_sync(0xffffffffu, best, o);
    const i64 oa = __shfl_down_sync(0xffffffffu, at, o);
    if (ob > best || (ob == best && oa < at)) best = ob, at = oa;
  }
  best = __shfl_sync(0xffffffffu, best, 0);
  at = __shfl_sync(0xffffffffu, at, 0);
  double sum = 0;
  float* dr = d ? d + row * n : nullptr;
  for (i64 j = lane; j < n; j += 32) {
    const float e = expf(zr[j] - best);
    if (dr) dr[j] = e;
    sum += e;
  }
  for (int o = 16; o > 0; o /= 2) sum += __shfl_down_sync(0xffffffffu, sum, o);
  sum = __shfl_sync(0xffffffffu, sum, 0);
  const std::int32_t y = labels[row];
  if (dr) {
    const float inv = static_cast<float>(1.0 / sum);
    for (i64 j = lane; j < n; j += 32) dr[j] = __fmul_rn(k, __fsub_rn(__fmul_rn(dr[j], inv), j == y ? 1.f : 0.f));
  }
  if (lane == 0) {
    const bool ok = y >= 0 && y < n;  // a label outside the logits gives a NaN loss (the CPU throws)
    row_loss[row] = ok ? log(sum) - static_cast<double>(zr[y] - best) : NAN;
    row_correct[row] = ok && at == y;
  }
}

// One block: the rows' losses and correct counts added into the step scalars.
__global__ void add_row_sums_kernel(const double* row_loss, const int* row_correct, i64 rows, float* scalars,
                                    bool count_correct) {
  double l = 0;
  long long c = 0;
  for (i64 i = threadIdx.x; i < rows; i += blockDim.x) {
    l += row_loss[i];
    if (count_correct) c += row_correct[i];
  }
  const double loss = detail::block_sum(l);
  const long long ok = detail::block_sum(c);
  if (threadIdx.x == 0) {
    scalars[step_scalars::loss_sum] += static_cast<float>(loss);
    if (count_correct) scalars[step_scalars::correct] += static_cast<float>(ok);
    scalars[step_scalars::samples] += static_cast<float>(rows);
  }
}

__global__ void softmax_backward_kernel(const float* p, const std::int32_t* labels, i64 offset, float k, float* d,
                                        i64 total, i64 n) {
  for (i64 i = detail::global_index(); i < total; i += detail::grid_stride())
    d[i] = k * (p[i] - ((i % n) == labels[i / n] - offset ? 1.f : 0.f));
}

// Vocabulary-parallel softmax (backend/op_list.inc row_max, softmax_partial, softmax_finish): one
// warp per row, as softmax_rows_kernel.
__global__ void row_max_kernel(const float* z, float* out, i64 rows, i64 n) {
  const i64 row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float best = -INFINITY;
  for (i64 j = lane; j < n; j += 32) best = fmaxf(best, z[row * n + j]);
  for (int o = 16; o > 0; o /= 2) best = fmaxf(best, __shfl_down_sync(0xffffffffu, best, o));
  if (lane == 0) out[row] = best;
}

__global__ void softmax_partial_kernel(const float* z, const float* mx, const std::int32_t* labels, i64 offset,
                                       float* probs, float* sums, i64 rows, i64 n) {
  const i64 row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  double sum = 0;
  for (i64 j = lane; j < n; j += 32) {
    const float e = expf(z[row * n + j] - mx[row]);
    probs[row * n + j] = e;
    sum += e;
  }
  for (int o = 16; o > 0; o /= 2) sum += __shfl_down_sync(0xffffffffu, sum, o);
  if (lane != 0) return;
  const i64 label = labels[row] - offset;
  sums[2 * row] = static_cast<float>(sum);
  sums[2 * row + 1] = label >= 0 && label < n ? z[row * n + label] : 0.f;
}

__global__ void softmax_finish_kernel(float* probs, const float* mx, const float* sums, double* row_loss,
                                      int* row_correct, i64 rows, i64 n) {
  const i64 row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const double sum = sums[2 * row], label_logit = sums[2 * row + 1];
  const auto inv = static_cast<float>(1.0 / sum);
  for (i64 j = lane; j < n; j += 32) probs[row * n + j] *= inv;
  if (lane != 0) return;
  row_loss[row] = log(sum) + static_cast<double>(mx[row]) - label_logit;
  row_correct[row] = label_logit >= static_cast<double>(mx[row]);
}

// Per-row squared error divided by the width, one warp per row, into row_loss.
__global__ void sgd_kernel(float* w, const float* g, float* m, const float* scalars, float mu, float wd, bool nesterov,
                           i64 n) {
  const float lr = scalars[step_scalars::learning_rate];
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride()) {
    const float grad = g[i] + wd * w[i];
    const float mi = mu * m[i] + grad;
    m[i] = mi;
    w[i] -= lr * (nesterov ? grad + mu * mi : mi);
  }
}

__global__ void adam_kernel(float* w, const float* g, float* m, float* v, const float* scalars, float b1, float b2,
                            float eps, float wd, bool decoupled, i64 n) {
  const float lr = scalars[step_scalars::learning_rate];
  const double step = static_cast<double>(static_cast<i64>(scalars[step_scalars::adam_step]));
  const float step_size = static_cast<float>(lr / (1 - pow(static_cast<double>(b1), step)));
  const float root_c2 = static_cast<float>(sqrt(1 - pow(static_cast<double>(b2), step)));
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride()) {
    float grad = g[i], wi = w[i];
    if (decoupled)
      wi -= lr * wd * wi;
    else
      grad += wd * wi;
    const float mi = b1 * m[i] + (1 - b1) * grad, vi = b2 * v[i] + (1 - b2) * grad * grad;
    m[i] = mi;
    v[i] = vi;
    w[i] = wi - step_size * mi / (sqrtf(vi) / root_c2 + eps);
  }
}

__global__ void round_bf16_kernel(float* p, i64 n) {
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride()) {
    unsigned u = __float_as_uint(p[i]);
    if ((u & 0x7f800000u) == 0x7f800000u) continue;  // inf, nan
    u += 0x7fffu + ((u >> 16) & 1u);
    p[i] = __uint_as_float(u & 0xffff0000u);
  }
}
__global__ void round_fp16_kernel(float* p, i64 n) {
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride()) p[i] = __half2float(__float2half_rn(p[i]));
}

// Deterministic sum of squares: fixed per-block partials in double, then one block adds them.
constexpr unsigned kPartials = 512;
__global__ void squares_partial_kernel(const float* p, i64 n, double* partial) {
  double acc = 0;
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride()) acc += static_cast<double>(p[i]) * p[i];
  const double s = detail::block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}
__global__ void sum_partials_kernel(double* partial, unsigned count) {
  double acc = 0;
  for (unsigned i = threadIdx.x; i < count; i += blockDim.x) acc += partial[i];
  const double s = detail::block_sum(acc);
  if (threadIdx.x == 0) partial[0] = s;
}

}  // namespace

void add_bias(Tensor& y, const Tensor& bias) {
  HPCT_CHECK(y.cols() == bias.numel(), "add_bias: " + shape_string(y.shape()) + " + " + shape_string(bias.shape()));
  launch(add_bias_kernel, y.numel(), y.data(), bias.data(), y.numel(), y.cols());
}

void add_bias_activation(Tensor& y, const Tensor& bias, Activation f, Tensor& z) {
  HPCT_CHECK(y.cols() == bias.numel(),
             "add_bias_activation: " + shape_string(y.shape()) + " + " + shape_string(bias.shape()));
  same_size(y, z, "add_bias_activation");
  launch(add_bias_activation_kernel, y.numel(), y.data(), bias.data(), static_cast<int>(f), z.data(), y.numel(),
         y.cols());
}

namespace detail {
ColumnSumPlan column_sum_plan(i64 rows, i64 cols) { return plan_column_sums(rows, cols, context().sm_count()); }

void add_column_chunks(const float* partial, const ColumnSumPlan& plan, float* out) {
  if (plan.chunks > 1) launch(add_chunks_kernel, plan.cols, partial, plan.chunks, plan.cols, out);
}
}  // namespace detail
using detail::add_column_chunks;
using detail::column_sum_plan;

void accumulate_bias_grad(const Tensor& dy, Tensor& db) {
  HPCT_CHECK(dy.cols() == db.numel(), "bias grad: " + shape_string(dy.shape()) + " -> " + shape_string(db.shape()));
  if (dy.cols() == 0 || dy.rows() == 0) return;
  const ColumnSumPlan plan = column_sum_plan(dy.rows(), dy.cols());
  float* partial =
      plan.chunks > 1
          ? static_cast<float*>(context().scratch(static_cast<std::size_t>(plan.chunks * plan.cols) * sizeof(float)))
          : db.data();
  bias_grad_kernel<<<dim3(static_cast<unsigned>(plan.column_blocks), static_cast<unsigned>(plan.chunks)), dim3(32, 8),
                     0, context().stream()>>>(dy.data(), partial, dy.rows(), dy.cols(), plan.rows_per_chunk,
                                              plan.chunks == 1);
  launch_check();
  add_column_chunks(partial, plan, db.data());
}

void activation_forward(Activation f, const Tensor& x, Tensor& y) {
  same_size(x, y, "activation");
  launch(activation_kernel, x.numel(), static_cast<int>(f), x.data(), y.data(), x.numel());
}

void activation_backward(Activation f, const Tensor& x, const Tensor& dy, Tensor& dx) {
  same_size(x, dy, "activation backward");
  same_size(x, dx, "activation backward");
  launch(activation_backward_kernel, x.numel(), static_cast<int>(f), x.data(), dy.data(), dx.data(), x.numel());
}

void copy(const Tensor& src, Tensor& dst) {
  same_size(src, dst, "copy");
  memcpy_on_device(dst.data(), src.data(), static_cast<std::size_t>(src.numel()) * sizeof(float));
}

void fill(Tensor& t, float value) { launch(fill_kernel, t.numel(), t.data(), value, t.numel()); }

void fill_columns(Tensor& y, std::int64_t first, float value) {
  const i64 n = y.cols(), width = n - first;
  HPCT_CHECK(first >= 0 && first <= n, "fill_columns: column " + std::to_string(first) + " of " + std::to_string(n));
  launch(fill_columns_kernel, y.rows() * width, y.data(), first, width, n, value, y.rows() * width);
}
void scale(Tensor& t, float factor) { launch(scale_kernel, t.numel(), t.data(), factor, t.numel()); }

void multiply(const Tensor& a, const Tensor& b, Tensor& out) {
  same_size(a, b, "multiply");
  same_size(a, out, "multiply");
  launch(multiply_kernel, a.numel(), a.data(), b.data(), out.data(), a.numel());
}

void add(const Tensor& a, const Tensor& b, Tensor& out) {
  same_size(a, b, "add");
  same_size(a, out, "add");
  launch(add_kernel, a.numel(), a.data(), b.data(), out.data(), a.numel());
}

void softmax_cross_entropy(const Tensor& logits, const std::int32_t* labels, Tensor& scalars, float grad_scale,
                           Tensor* dlogits) {
  if (dlogits) same_size(logits, *dlogits, "softmax cross-entropy's gradient");
  HPCT_CHECK(scalars.numel() >= step_scalars::count, "softmax: step scalars too small");
  const i64 rows = logits.rows(), n = logits.cols();
  if (rows == 0) return;
  auto* row_loss = static_cast<double*>(context().scratch(static_cast<std::size_t>(rows) * (sizeof(double) + 4)));
  auto* row_correct = reinterpret_cast<int*>(row_loss + rows);
  softmax_rows_kernel<<<static_cast<unsigned>((rows + 7) / 8), 256, 0, context().stream()>>>(
      logits.data(), labels, dlogits ? dlogits->data() : nullptr, grad_scale, row_loss, row_correct, rows, n);
  launch_check();
  add_row_sums_kernel<<<1, 256, 0, context().stream()>>>(row_loss, row_correct, rows, scalars.data(), true);
  launch_check();
}

void softmax_cross_entropy_backward(const Tensor& probs, const std::int32_t* labels, i64 label_offset, float grad_scale,
                                    Tensor& dlogits) {
  same_size(probs, dlogits, "softmax backward");
  launch(softmax_backward_kernel, probs.numel(), probs.data(), labels, label_offset, grad_scale, dlogits.data(),
         probs.numel(), probs.cols());
}

void row_max(const Tensor& logits, Tensor& out) {
  const i64 rows = logits.rows(), n = logits.cols();
  HPCT_CHECK(out.numel() == rows && n > 0, "row_max: out " + shape_string(out.shape()));
  if (rows == 0) return;
  row_max_kernel<<<static_cast<unsigned>((rows + 7) / 8), 256, 0, context().stream()>>>(logits.data(), out.data(), rows,
                                                                                        n);
  launch_check();
}

void softmax_partial(const Tensor& logits, const Tensor& row_max, const std::int32_t* labels, i64 label_offset,
                     Tensor& probs, Tensor& sums) {
  same_size(logits, probs, "softmax_partial");
  const i64 rows = logits.rows(), n = logits.cols();
  HPCT_CHECK(row_max.numel() == rows && sums.numel() == 2 * rows, "softmax_partial: row_max or sums");
  if (rows == 0) return;
  softmax_partial_kernel<<<static_cast<unsigned>((rows + 7) / 8), 256, 0, context().stream()>>>(
      logits.data(), row_max.data(), labels, label_offset, probs.data(), sums.data(), rows, n);
  launch_check();
}

void softmax_finish(Tensor& probs, const Tensor& row_max, const Tensor& sums, Tensor& scalars) {
  HPCT_CHECK(scalars.numel() >= step_scalars::count, "softmax_finish: step scalars too small");
  const i64 rows = probs.rows(), n = probs.cols();
  HPCT_CHECK(row_max.numel() == rows && sums.numel() == 2 * rows, "softmax_finish: row_max or sums");
  if (rows == 0) return;
  auto* row_loss = static_cast<double*>(context().scratch(static_cast<std::size_t>(rows) * (sizeof(double) + 4)));
  auto* row_correct = reinterpret_cast<int*>(row_loss + rows);
  softmax_finish_kernel<<<static_cast<unsigned>((rows + 7) / 8), 256, 0, context().stream()>>>(
      probs.data(), row_max.data(), sums.data(), row_loss, row_correct, rows, n);
  launch_check();
  add_row_sums_kernel<<<1, 256, 0, context().stream()>>>(row_loss, row_correct, rows, scalars.data(), true);
  launch_check();
}

std::int64_t count_correct(const Tensor& logits, const std::int32_t* labels) {
  const i64 rows = logits.rows(), n = logits.cols();
  if (rows == 0) return 0;
  // The softmax kernel's row pass, writing nothing but the rows' slots; only the correct flags are read.
  auto* row_loss = static_cast<double*>(context().scratch(static_cast<std::size_t>(rows) * (sizeof(double) + 4)));
  auto* row_correct = reinterpret_cast<int*>(row_loss + rows);
  softmax_rows_kernel<<<static_cast<unsigned>((rows + 7) / 8), 256, 0, context().stream()>>>(
      logits.data(), labels, nullptr, 0.f, row_loss, row_correct, rows, n);
  launch_check();
  std::vector<int> flags(static_cast<std::size_t>(rows));
  memcpy_to_host(flags.data(), row_correct, flags.size() * sizeof(int));
  std::int64_t correct = 0;
  for (int f : flags) correct += f;
  return correct;
}

void sgd_update(Tensor& w, const Tensor& g, Tensor& m, const Tensor& scalars, float momentum, float weight_decay,
                bool nesterov) {
  same_size(w, g, "sgd");
  same_size(w, m, "sgd");
  launch(sgd_kernel, w.numel(), w.data(), g.data(), m.data(), scalars.data(), momentum, weight_decay, nesterov,
         w.numel());
}

void adam_update(Tensor& w, const Tensor& g, Tensor& m, Tensor& v, const Tensor& scalars, float beta1, float beta2,
                 float eps, float weight_decay, bool decoupled) {
  same_size(w, g, "adam");
  same_size(w, m, "adam");
  same_size(w, v, "adam");
  launch(adam_kernel, w.numel(), w.data(), g.data(), m.data(), v.data(), scalars.data(), beta1, beta2, eps,
         weight_decay, decoupled, w.numel());
}

void round_to_precision(Tensor& t, Precision p) {
  if (p == Precision::bf16) launch(round_bf16_kernel, t.numel(), t.data(), t.numel());
  if (p == Precision::fp16) launch(round_fp16_kernel, t.numel(), t.data(), t.numel());
}

double sum_of_squares(const Tensor& t) {
  if (t.numel() == 0) return 0;
  auto* partial = static_cast<double*>(context().scratch(kPartials * sizeof(double)));
  squares_partial_kernel<<<kPartials, 256, 0, context().stream()>>>(t.data(), t.numel(), partial);
  launch_check();
  sum_partials_kernel<<<1, 256, 0, context().stream()>>>(partial, kPartials);
  launch_check();
  double s = 0;
  memcpy_to_host(&s, partial, sizeof(double));
  return s;
}

}  // namespace hpctrain::cuda
