// [model] attention_mask = document (train/trainer.hpp): the document numbers of a batch's
// windows, from the dataset tokenizer's separator, for the attention layers (StepContext::doc_ids).
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/data/text_import.hpp"
#include "hpctrain/train/trainer.hpp"

namespace hpctrain {

std::int32_t Trainer::document_separator() const {
  if (cfg_.model.attention_mask != AttentionMask::document) return -1;
  const SplitIndex& s = index_.train;
  if (!s.tokens)
    throw bad_input("[model] attention_mask = document needs a token dataset; " + cfg_.data.path + " is not one");
  const std::int32_t sep = Vocabulary::stored(s.tokenizer, s.vocabulary, s.tokenizer_files).end_of_text();
  if (sep < 0)
    throw bad_input("[model] attention_mask = document: the tokenizer of " + cfg_.data.path + " (" + s.tokenizer +
                    ") has no document separator (<|endoftext|>, Llama 3's <|begin_of_text|>)");
  return sep;
}

void Trainer::mark_documents(const Tensor& input) {
  StepContext& ctx = model_->context();
  if (doc_separator_ < 0) {
    ctx.doc_ids = Tensor();
    return;
  }
  if (!doc_ids_.defined() || doc_ids_.numel() < input.numel())
    doc_ids_ = Tensor::zeros({input.numel()}, alloc_, DType::i32);
  Tensor docs = doc_ids_.view(0, input.shape());
  document_numbers(input, doc_separator_, docs);
  ctx.doc_ids = docs;
}

}  // namespace hpctrain
