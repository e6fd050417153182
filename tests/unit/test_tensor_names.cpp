// Stable tensor names (layers/registry.hpp layer_names): a GPT's tensors are named as GPT-2's,
// layers may be named in the grammar ("attn:attention(4)", {} for repeat()'s index), unnamed
// ones by type and count, so inserting a layer without tensors renames nothing; every name is
// unique; each tensor keeps the positional name format-1 checkpoints hold (ParamInfo::legacy).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/model/arch.hpp"
#include "hpctrain/model/model.hpp"

using namespace hpctrain;

namespace {
struct Built {
  LayerRegistry registry;
  Allocator alloc;
  std::unique_ptr<Model> model;
  Built(const std::string& layers, const Shape& sample) {
    register_builtin_layers(registry);
    model = std::make_unique<Model>(layers, sample, registry, alloc);
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const ParamInfo& p : model->all_param_info()) out.push_back(p.name);
    return out;
  }
  std::vector<std::string> legacy() const {
    std::vector<std::string> out;
    for (const ParamInfo& p : model->all_param_info()) out.push_back(p.legacy);
    return out;
  }
};

std::string bad_input_message(const std::string& layers, const Shape& sample = {4}) {
  try {
    Built b(layers, sample);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input) << e.what();
    return e.what();
  }
  ADD_FAILURE() << layers << " was accepted";
  return "";
}
}  // namespace

TEST(TensorNames, GptTensorsAreNamedAsGpt2s) {
  ModelConfig d;
  d.n_layer = 2;
  d.n_head = 2;
  d.n_embd = 8;
  d.vocab_size = 11;
  d.bias = true;
  d.tie_embeddings = false;
  const Built b(gpt_layers(d), {6});
  std::vector<std::string> want{"tok_emb.weight", "pos_emb.weight"};
  for (const char* i : {"0", "1"})
    for (const char* t :
         {"ln_1.weight", "ln_1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight", "attn.proj.bias",
          "ln_2.weight", "ln_2.bias", "mlp.fc.weight", "mlp.fc.bias", "mlp.proj.weight", "mlp.proj.bias"})
      want.push_back(std::string("h.") + i + "." + t);
  for (const char* t : {"ln_f.weight", "ln_f.bias", "lm_head.weight"}) want.push_back(t);
  EXPECT_EQ(b.names(), want);
  // The same tensors in format 1, by position (what old checkpoints hold).
  const auto old = b.legacy();
  ASSERT_EQ(old.size(), want.size());
  EXPECT_EQ(old[0], "00_embedding/weight");
  EXPECT_EQ(old[1], "01_position_embedding/weight");
  EXPECT_EQ(old[4], "02_res/01_attention/qkv_weight");
  EXPECT_EQ(old[7], "02_res/01_attention/proj_bias");
  EXPECT_EQ(old[12], "03_res/03_linear/weight");
  EXPECT_EQ(old.back(), "07_lm_head/weight");
  // Two blocks share the scope h.i: one layer name, tensors apart.
  EXPECT_EQ(b.model->all_layer_names()[2], "h.0");
  EXPECT_EQ(b.model->all_layer_names()[3], "h.0");
}

TEST(TensorNames, TiedHeadHasNoTensorOfItsOwn) {
  const Built b("tok_emb:embedding(11, 8) ln_f:layernorm lm_head:lm_head(11)", {6});
  EXPECT_EQ(b.names(), (std::vector<std::string>{"tok_emb.weight", "ln_f.weight", "ln_f.bias"}));
  ASSERT_EQ(b.model->ties().size(), 1u);
  EXPECT_EQ(b.model->ties()[0], (std::pair<std::size_t, std::size_t>{2, 0}));
}

TEST(TensorNames, UnnamedLayersCountByTypeSoLayersWithoutTensorsRenameNothing) {
  const Built plain("dense(8) dense(6) dense(2)", {4}), more("dense(8) relu dense(6) tanh dense(2)", {4});
  EXPECT_EQ(plain.names(), more.names());
  EXPECT_EQ(plain.names(), (std::vector<std::string>{"dense.0.weight", "dense.0.bias", "dense.1.weight", "dense.1.bias",
                                                     "dense.2.weight", "dense.2.bias"}));
  EXPECT_EQ(more.model->all_layer_names(),
            (std::vector<std::string>{"dense.0", "relu.0", "dense.1", "tanh.0", "dense.2"}));
  // (Format 1 named them by position: the inserted relu renamed every later tensor.)
  EXPECT_EQ(plain.legacy()[2], "01_dense/weight");
  EXPECT_EQ(more.legacy()[2], "02_dense/weight");
}

TEST(TensorNames, NamedLayersRepeatIndicesAndNesting) {
  const Built b("inp:dense(8) repeat(2, blk.{}:res(fc:dense(8) relu res(out.{}:dense(8)))) head:dense(2)", {8});
  EXPECT_EQ(b.names(), (std::vector<std::string>{"inp.weight", "inp.bias", "blk.0.fc.weight", "blk.0.fc.bias",
                                                 "blk.0.res.0.out.0.weight", "blk.0.res.0.out.0.bias",
                                                 "blk.1.fc.weight", "blk.1.fc.bias", "blk.1.res.0.out.1.weight",
                                                 "blk.1.res.0.out.1.bias", "head.weight", "head.bias"}));
  EXPECT_EQ(b.legacy()[4], "01_res/02_res/00_dense/weight");
  EXPECT_EQ(b.model->all_layer_names(), (std::vector<std::string>{"inp", "blk.0", "blk.1", "head"}));
}

TEST(TensorNames, BatchNormBuffersAreNamedLikeParameters) {
  const Built b("flatten bn:batchnorm dense(2)", {2, 3});
  ASSERT_EQ(b.model->all_buffers().size(), 2u);
  EXPECT_EQ(b.model->all_buffers()[0].name, "bn.running_mean");
  EXPECT_EQ(b.model->all_buffers()[0].legacy, "01_batchnorm/running_mean");
  EXPECT_EQ(b.model->all_buffers()[1].layer, 1u);
}

TEST(TensorNames, BadNamesAreOneLineErrors) {
  EXPECT_NE(bad_input_message("x:dense(4) x:dense(4)").find("two tensors are named x.weight"), std::string::npos);
  EXPECT_NE(bad_input_message("a..b:dense(4)").find("layer name 'a..b'"), std::string::npos);
  EXPECT_NE(bad_input_message(".a:dense(4)").find("layer name '.a'"), std::string::npos);
  EXPECT_NE(bad_input_message("l.{}:dense(4)").find("{} in a name stands for repeat()'s index"), std::string::npos);
  EXPECT_NE(bad_input_message("l.{x}:dense(4)").find("layer name 'l.{x}'"), std::string::npos);
  EXPECT_NE(bad_input_message("r:repeat(2, dense(4))").find("repeat takes no name"), std::string::npos);
  EXPECT_NE(bad_input_message("dense.0(4)").find("unknown layer type 'dense.0'"), std::string::npos);
  // A name that a default name takes too.
  EXPECT_NE(bad_input_message("dense(4) dense.0:dense(4)").find("two tensors are named dense.0.weight"),
            std::string::npos);
}
