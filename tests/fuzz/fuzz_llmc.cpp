// llm.c token shards (data/llmc_shards.hpp): the bytes written as a dataset's one train shard,
// scanned (header: magic, version, token count against the size) and its tokens read: any bytes
// are a dataset or one hpctrain::Error naming the file.
#include <fstream>

#include "fuzz_target.hpp"
#include "hpctrain/data/llmc_shards.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hpctrain;
  fuzz::as_file("llmc", "fuzz_train_000000.bin", data, size);
  const std::string& dir = fuzz::scratch_dir("llmc");
  DataConfig cfg;
  cfg.path = dir;
  fuzz::expect_refusal_only("llmc", [&] {
    const DatasetIndex index = scan_llmc_dataset(cfg);
    for (const Shard& s : index.train.shards) (void)read_llmc_tokens(s, index.train.token_bits);
  });
  return 0;
}
