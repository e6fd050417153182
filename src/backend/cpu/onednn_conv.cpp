// oneDNN convolution (backend/cpu/onednn_conv.hpp). Each batch size gets its
// primitives and its blocked buffers once; every call reorders our NCHW data
// in and out around them (a "port" is one such boundary).
#include "hpctrain/backend/cpu/onednn_conv.hpp"

#include "hpctrain/backend/cpu/onednn_matmul.hpp"  // bf16_math_enabled
#include "hpctrain/core/error.hpp"

#if HPCTRAIN_HAVE_ONEDNN
#include <omp.h>

#include <dnnl.hpp>
#include <map>
#include <optional>
#include <vector>

namespace hpctrain::cpu {

bool onednn_compiled() { return true; }
void set_onednn_threads(int threads) { omp_set_num_threads(threads); }

namespace {
using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// Our plain buffer on one side, the layout a primitive wants on the other.
struct Port {
  memory user, inner;
  std::optional<dnnl::reorder> move;
  void init(const memory::desc& user_md, const memory::desc& want, const dnnl::engine& e, bool input) {
    user = memory(user_md, e, DNNL_MEMORY_NONE);
    if (want == user_md) {
      inner = user;
      return;
    }
    inner = memory(want, e);
    move = input ? dnnl::reorder(user, inner) : dnnl::reorder(inner, user);
  }
  memory& in(dnnl::stream& s, const float* p) {  // our data -> the primitive's layout
    user.set_data_handle(const_cast<float*>(p));
    if (move) move->execute(s, user, inner);
    return inner;
  }
  memory& out(float* p) {  // where the primitive writes; finish() moves it to p
    user.set_data_handle(p);
    return inner;
  }
  void finish(dnnl::stream& s) {
    if (move) move->execute(s, inner, user);
  }
};

// A convolution's oneDNN dimensions for batch n: 2-D (nchw) or 3-D (ncdhw), padding before and after.
struct Dims {
  memory::dims src, wei, bia, dst, strides, pad_l, pad_r;
  tag act, weights;
  Dims(const ConvGeometry& g, std::int64_t n) : bia{g.out} {
    const std::int64_t k = g.kernel, s = g.stride, p = g.pad, q = g.pad_end();
    if (g.volume()) {
      src = {n, g.channels, g.depth, g.height, g.width};
      wei = {g.out, g.channels, k, k, k};
      dst = {n, g.out, g.out_depth, g.out_height, g.out_width};
      strides = {s, s, s};
      pad_l = {p, p, p};
      pad_r = {q, q, q};
      act = tag::ncdhw;
      weights = tag::oidhw;
    } else {
      src = {n, g.channels, g.height, g.width};
      wei = {g.out, g.channels, k, k};
      dst = {n, g.out, g.out_height, g.out_width};
      strides = {s, s};
      pad_l = {p, p};
      pad_r = {q, q};
      act = tag::nchw;
      weights = tag::oihw;
    }
  }
};

struct PerBatch {
  dnnl::convolution_forward fwd, fwd_relu;  // fwd_relu: with a ReLU post-op (made on first use)
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_weights;
  Port src, wei, dst, bias;         // forward
  Port src_r, wei_r, dst_r;         // forward with ReLU
  Port ddst, wei_d, dsrc;           // backward data
  Port src_w, ddst_w, dwei, dbias;  // backward weights
};
}  // namespace

struct OnednnConv::Impl {
  ConvGeometry g;
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{eng};
  std::map<std::pair<std::int64_t, bool>, PerBatch> batches;  // per batch size and bf16 math
  std::vector<float> dw_tmp, db_tmp;

  // With bf16 math the primitives take bf16 sources, weights and output gradients (our float32
  // data are converted by the ports' reorders) and write float32 outputs and gradients.
  PerBatch& at(std::int64_t n) {
    const bool bf16 = bf16_math_enabled();
    auto it = batches.find({n, bf16});
    if (it != batches.end()) return it->second;
    const dt in_type = bf16 ? dt::bf16 : dt::f32;
    const Dims d(g, n);
    const memory::dims &strides = d.strides, &pad = d.pad_l, &pad_r = d.pad_r;
    const memory::desc src_any(d.src, in_type, tag::any), dst_any(d.dst, dt::f32, tag::any),
        wei_any(d.wei, in_type, tag::any), bia_md(d.bia, dt::f32, tag::x), ddst_any(d.dst, in_type, tag::any),
        dsrc_any(d.src, dt::f32, tag::any), dwei_any(d.wei, dt::f32, tag::any);
    const memory::desc src_user(d.src, dt::f32, d.act), dst_user(d.dst, dt::f32, d.act),
        wei_user(d.wei, dt::f32, d.weights);
    PerBatch p;
    try {
      const dnnl::convolution_forward::primitive_desc fpd(
          {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, src_any, wei_any, bia_md, dst_any,
           strides, pad, pad_r},
          eng);
      const dnnl::convolution_backward_data::primitive_desc bdpd(
          {dnnl::algorithm::convolution_direct, dsrc_any, wei_any, ddst_any, strides, pad, pad_r}, eng, fpd);
      const dnnl::convolution_backward_weights::primitive_desc bwpd(
          {dnnl::algorithm::convolution_direct, src_any, dwei_any, bia_md, ddst_any, strides, pad, pad_r}, eng, fpd);
      p.fwd = dnnl::convolution_forward(fpd);
      p.bwd_data = dnnl::convolution_backward_data(bdpd);
      p.bwd_weights = dnnl::convolution_backward_weights(bwpd);
      p.src.init(src_user, fpd.src_desc(), eng, true);
      p.wei.init(wei_user, fpd.weights_desc(), eng, true);
      p.dst.init(dst_user, fpd.dst_desc(), eng, false);
      p.bias.init(bia_md, bia_md, eng, true);
      p.ddst.init(dst_user, bdpd.diff_dst_desc(), eng, true);
      p.wei_d.init(wei_user, bdpd.weights_desc(), eng, true);
      p.dsrc.init(src_user, bdpd.diff_src_desc(), eng, false);
      p.src_w.init(src_user, bwpd.src_desc(), eng, true);
      p.ddst_w.init(dst_user, bwpd.diff_dst_desc(), eng, true);
      p.dwei.init(wei_user, bwpd.diff_weights_desc(), eng, false);
      p.dbias.init(bia_md, bia_md, eng, false);
    } catch (const dnnl::error& e) {
      throw Error(ExitCode::internal, Scope::this_rank,
                  std::string("oneDNN cannot make a convolution for batch ") + std::to_string(n) + ": " + e.what());
    }
    return batches.emplace(std::make_pair(n, bf16), std::move(p)).first->second;
  }

  // The forward primitive with a ReLU post-op, for batch n (made once, beside at(n)'s).
  PerBatch& with_relu(std::int64_t n) {
    PerBatch& p = at(n);
    if (p.fwd_relu) return p;
    const bool bf16 = bf16_math_enabled();
    const dt in_type = bf16 ? dt::bf16 : dt::f32;
    const Dims d(g, n);
    const memory::dims &src = d.src, &wei = d.wei, &bia = d.bia, &dst = d.dst, &strides = d.strides, &pad = d.pad_l,
                       &pad_r = d.pad_r;
    dnnl::post_ops ops;
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);  // (oneDNN 2.x: scale first)
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    try {
      const dnnl::convolution_forward::primitive_desc fpd(
          {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, memory::desc(src, in_type, tag::any),
           memory::desc(wei, in_type, tag::any), memory::desc(bia, dt::f32, tag::x),
           memory::desc(dst, dt::f32, tag::any), strides, pad, pad_r},
          attr, eng);
      p.fwd_relu = dnnl::convolution_forward(fpd);
      p.src_r.init(memory::desc(src, dt::f32, d.act), fpd.src_desc(), eng, true);
      p.wei_r.init(memory::desc(wei, dt::f32, d.weights), fpd.weights_desc(), eng, true);
      p.dst_r.init(memory::desc(dst, dt::f32, d.act), fpd.dst_desc(), eng, false);
    } catch (const dnnl::error& e) {
      throw Error(
          ExitCode::internal, Scope::this_rank,
          std::string("oneDNN cannot make a convolution + ReLU for batch ") + std::to_string(n) + ": " + e.what());
    }
    return p;
  }
};

OnednnConv::OnednnConv(const ConvGeometry& g) : impl_(std::make_unique<Impl>()) { impl_->g = g; }
OnednnConv::~OnednnConv() = default;

void OnednnConv::forward(const float* x, const float* w, const float* b, float* y, std::int64_t n, bool relu) {
  PerBatch& p = relu ? impl_->with_relu(n) : impl_->at(n);
  dnnl::stream& s = impl_->stream;
  Port &src = relu ? p.src_r : p.src, &wei = relu ? p.wei_r : p.wei, &dst = relu ? p.dst_r : p.dst;
  (relu ? p.fwd_relu : p.fwd)
      .execute(s, {{DNNL_ARG_SRC, src.in(s, x)},
                   {DNNL_ARG_WEIGHTS, wei.in(s, w)},
                   {DNNL_ARG_BIAS, p.bias.in(s, b)},
                   {DNNL_ARG_DST, dst.out(y)}});
  dst.finish(s);
  s.wait();
}

void OnednnConv::backward(const float* x, const float* dy, const float* w, float* dw, float* db, float* dx,
                          std::int64_t n, bool accumulate) {
  PerBatch& p = impl_->at(n);
  dnnl::stream& s = impl_->stream;
  const auto& g = impl_->g;
  const std::size_t nw = static_cast<std::size_t>(g.weight_elements());
  const std::size_t nb = static_cast<std::size_t>(g.out);
  impl_->dw_tmp.resize(nw);
  impl_->db_tmp.resize(nb);
  float* wdst = accumulate ? impl_->dw_tmp.data() : dw;
  float* bdst = accumulate ? impl_->db_tmp.data() : db;
  p.bwd_weights.execute(s, {{DNNL_ARG_SRC, p.src_w.in(s, x)},
                            {DNNL_ARG_DIFF_DST, p.ddst_w.in(s, dy)},
                            {DNNL_ARG_DIFF_WEIGHTS, p.dwei.out(wdst)},
                            {DNNL_ARG_DIFF_BIAS, p.dbias.out(bdst)}});
  p.dwei.finish(s);
  p.dbias.finish(s);
  if (dx) {
    p.bwd_data.execute(s, {{DNNL_ARG_DIFF_DST, p.ddst.in(s, dy)},
                           {DNNL_ARG_WEIGHTS, p.wei_d.in(s, w)},
                           {DNNL_ARG_DIFF_SRC, p.dsrc.out(dx)}});
    p.dsrc.finish(s);
  }
  s.wait();
  if (accumulate) {
    for (std::size_t i = 0; i < nw; ++i) dw[i] += wdst[i];
    for (std::size_t i = 0; i < nb; ++i) db[i] += bdst[i];
  }
}

}  // namespace hpctrain::cpu

#else  // built without oneDNN

namespace hpctrain::cpu {

bool onednn_compiled() { return false; }
void set_onednn_threads(int) {}

struct OnednnConv::Impl {};

OnednnConv::OnednnConv(const ConvGeometry&) {
  throw bad_input("[kernels] conv = onednn: this build has no oneDNN (install libdnnl-dev and rebuild)");
}
OnednnConv::~OnednnConv() = default;
void OnednnConv::forward(const float*, const float*, const float*, float*, std::int64_t, bool) {}
void OnednnConv::backward(const float*, const float*, const float*, float*, float*, float*, std::int64_t, bool) {}

}  // namespace hpctrain::cpu

#endif
