// Which keys may change when a run resumes, and what changing them means (config/schema.hpp
// ResumeRole): the checkpointing code warns or refuses by these.
#include <map>
#include <string>

#include "hpctrain/config/schema.hpp"

namespace hpctrain {

ResumeRole resume_role(const std::string& key) {
  using R = ResumeRole;
  static const std::map<std::string, ResumeRole> keys = {{"model.groups", R::layout},
                                                         {"train.steps", R::schedule},
                                                         {"train.epochs", R::schedule},
                                                         {"train.global_batch", R::experiment},
                                                         {"train.freeze", R::experiment},
                                                         {"train.sync_batchnorm", R::experiment},
                                                         {"train.loss", R::experiment},
                                                         {"train.huber_delta", R::experiment},
                                                         {"train.micro_batches", R::layout},
                                                         {"train.micro_batch", R::layout},
                                                         {"train.recompute", R::layout},
                                                         {"train.loss_chunk", R::layout},
                                                         {"run.seed", R::experiment},
                                                         {"run.device", R::layout},
                                                         {"run.share_gpus", R::layout},
                                                         {"data.path", R::experiment},
                                                         {"data.format", R::experiment},
                                                         {"data.train_glob", R::experiment},
                                                         {"data.val_glob", R::experiment},
                                                         {"data.shuffle", R::experiment},
                                                         {"data.windows", R::experiment},
                                                         {"data.last_batch", R::experiment},
                                                         {"data.random_crop_pad", R::experiment},
                                                         {"data.random_flip", R::experiment}};
  static const std::map<std::string, ResumeRole> sections = {{"model", R::experiment},
                                                             {"optim", R::experiment},
                                                             {"precision", R::experiment},
                                                             {"parallel", R::layout},
                                                             {"kernels", R::layout}};
  if (const auto it = keys.find(key); it != keys.end()) return it->second;
  const auto it = sections.find(key.substr(0, key.find('.')));
  return it == sections.end() ? R::free : it->second;
}

}  // namespace hpctrain
