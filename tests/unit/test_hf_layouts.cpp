// Hugging Face layouts (checkpoint/hf_layouts.hpp) without files: the export's tensor order, and
// the transposed view of GPT-2's Conv1D weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "hpctrain/checkpoint/hf_layouts.hpp"
#include "hpctrain/config/config.hpp"

using namespace hpctrain;

namespace {
LazyTensor named(const std::string& name, Shape shape) {
  LazyTensor t{name, std::move(shape), {}};
  t.rows = [](std::int64_t, std::int64_t, float*) {};
  return t;
}
}  // namespace

// LlamaForCausalLM's export lists its tensors as save_pretrained does (the modules' order): the
// embedding, layers 0..11 by number, each q, k, v, o, gate, up, down, then its two norms, the final
// norm and the head; the checkpoint's own order (h.0, h.1, h.10, h.11, h.2, ...) fails it, and so
// shards split at layer boundaries in order.
TEST(HfLayouts, LlamaExportInSavePretrainedOrder) {
  ModelConfig m;
  m.n_layer = 12, m.n_head = 2, m.n_kv_heads = 1, m.n_embd = 4, m.ffn_dim = 6, m.tie_embeddings = false;
  std::vector<std::string> ours{"lm_head.weight", "norm.weight", "tok_emb.weight"};
  for (int i = 0; i < 12; ++i)
    for (const char* t : {"input_layernorm.weight", "mlp.down.weight", "mlp.gate_up.weight",
                          "post_attention_layernorm.weight", "self_attn.proj.weight", "self_attn.qkv.weight"})
      ours.push_back("h." + std::to_string(i) + "." + t);
  std::sort(ours.begin(), ours.end());  // (as the checkpoint lists them)
  std::vector<LazyTensor> tensors;
  for (const std::string& n : ours) {
    Shape shape{4};
    if (n.find("qkv") != std::string::npos) shape = {8, 4};
    if (n.find("gate_up") != std::string::npos) shape = {12, 4};
    if (n.find("proj.weight") != std::string::npos || n.find("down") != std::string::npos) shape = {4, 4};
    if (n == "tok_emb.weight" || n == "lm_head.weight") shape = {10, 4};
    tensors.push_back(named(n, shape));
  }
  const hf::Exported out = hf::llama_export(tensors, m, 10);
  std::vector<std::string> want{"model.embed_tokens.weight"};
  for (int i = 0; i < 12; ++i)
    for (const char* t :
         {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
          "mlp.up_proj", "mlp.down_proj", "input_layernorm", "post_attention_layernorm"})
      want.push_back("model.layers." + std::to_string(i) + "." + t + ".weight");
  want.push_back("model.norm.weight");
  want.push_back("lm_head.weight");
  std::vector<std::string> got;
  for (const LazyTensor& t : out.tensors) got.push_back(t.name);
  EXPECT_EQ(got, want);
}

// hf::transposed (GPT-2's Conv1D weights): rows j of the [b, a] view are the source's columns j,
// read from the source in blocks of rows (a piece's memory, not the source's).
TEST(HfLayouts, TransposedViewReadsTheSourceInBlocks) {
  const std::int64_t a = 2500, b = 600;
  std::int64_t most = 0;
  LazyTensor src{"c_attn.weight", {a, b}, {}};
  src.rows = [&](std::int64_t first, std::int64_t count, float* out) {
    most = std::max(most, count);
    for (std::int64_t i = 0; i < count * b; ++i) out[i] = static_cast<float>(first * b + i);
  };
  const LazyTensor t = hf::transposed(src, "qkv");
  EXPECT_EQ(t.shape, (Shape{b, a}));
  std::vector<float> got(static_cast<std::size_t>(7 * a));
  t.rows(100, 7, got.data());
  bool same = true;
  for (std::int64_t j = 0; j < 7; ++j)
    for (std::int64_t i = 0; i < a; ++i)
      same = same && got[static_cast<std::size_t>(j * a + i)] == static_cast<float>(i * b + 100 + j);
  EXPECT_TRUE(same) << "row j of the view is not column j of the source";
  EXPECT_LT(most, a) << "the whole source was read at once";
}

// hf::rows_ordered with GLM's order (glm_rows: each head's rotated pairs (2i, 2i + 1) as (i, i +
// R/2), the rest in place): the rows come from the source rows the order names, read as one span
// when the order stays within the rows asked (one read), else row by row; the way back restores
// the source.
TEST(HfLayouts, RowsOrderedGathersTheNamedRows) {
  const std::int64_t heads = 3, width = 8, rotated = 4, w = 2, rows = heads * width;
  std::vector<std::pair<std::int64_t, std::int64_t>> reads;
  LazyTensor src{"q_proj.weight", {rows, w}, {}};
  src.rows = [&](std::int64_t first, std::int64_t count, float* out) {
    reads.emplace_back(first, count);
    for (std::int64_t i = 0; i < count * w; ++i) out[i] = static_cast<float>(first * w + i);
  };
  const std::vector<std::int64_t> to_ours = hf::glm_rows(heads, width, rotated, false);
  EXPECT_EQ(std::vector<std::int64_t>(to_ours.begin(), to_ours.begin() + width),
            (std::vector<std::int64_t>{0, 2, 1, 3, 4, 5, 6, 7}));
  const LazyTensor t = hf::rows_ordered(src, "q", to_ours);
  std::vector<float> got(static_cast<std::size_t>(rows * w));
  t.rows(0, rows, got.data());
  EXPECT_EQ(reads.size(), 1u);  // (one span)
  for (std::int64_t r = 0; r < rows; ++r)
    EXPECT_EQ(got[static_cast<std::size_t>(r * w + 1)],
              static_cast<float>(to_ours[static_cast<std::size_t>(r)] * w + 1));
  // The way back: GLM's order of hpctrain's rows gives the source.
  LazyTensor ours{"q", {rows, w}, [&](std::int64_t first, std::int64_t count, float* out) {
                    std::copy_n(got.begin() + first * w, count * w, out);
                  }};
  std::vector<float> back(static_cast<std::size_t>(rows * w));
  hf::rows_ordered(ours, "q_proj", hf::glm_rows(heads, width, rotated, true)).rows(0, rows, back.data());
  for (std::int64_t i = 0; i < rows * w; ++i) EXPECT_EQ(back[static_cast<std::size_t>(i)], static_cast<float>(i));
  // An order reaching far from the rows asked: row by row.
  reads.clear();
  std::vector<std::int64_t> far(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) far[static_cast<std::size_t>(r)] = r;
  std::swap(far[1], far[static_cast<std::size_t>(rows - 1)]);  // (rows 0 and 1 from rows 0 and 23: a span of 24)
  float two[2 * 2];
  hf::rows_ordered(src, "far", far).rows(0, 2, two);
  EXPECT_EQ(reads.size(), 2u);
  EXPECT_EQ(two[0], 0.f);
  EXPECT_EQ(two[2], static_cast<float>((rows - 1) * w));
}
