// The tokenizer files (data/bpe_tokenizer.hpp): the first byte picks Hugging Face's tokenizer.json
// (even) or GPT-2's encoder.json and vocab.bpe (odd; the two split at the first NUL byte). A
// vocabulary that loads then encodes and decodes a short text with letters, numbers, white space
// and bytes that are not UTF-8, and decode(encode(x)) must be x (" " + x for a SentencePiece-style
// one). Then NFC (data/nfc.hpp, the NFC normalizer's) on the input's bytes as they are: it must be
// idempotent, and leave a text it says cannot change as it is.
#include "fuzz_target.hpp"
#include "hpctrain/data/bpe_tokenizer.hpp"
#include "hpctrain/data/nfc.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hpctrain;
  if (size == 0) return 0;
  const std::string rest = fuzz::text(data + 1, size - 1);
  fuzz::expect_refusal_only("tokenizer", [&] {
    BpeTokenizer t = [&] {
      if (data[0] % 2 == 0) return BpeTokenizer::from_hf_json(rest, "fuzz/tokenizer.json");
      const std::size_t nul = rest.find('\0');
      return BpeTokenizer::from_gpt2_text(rest.substr(0, nul), nul == std::string::npos ? "" : rest.substr(nul + 1),
                                          "fuzz/");
    }();
    const std::string sample = "Hello world, it's 2026! \xff\xfe  caf\xc3\xa9\n\tx";
    const std::vector<std::int32_t> ids = t.encode(sample);
    if (t.decode(ids) != (t.space_first() ? " " : "") + sample) {  // (SentencePiece-style: a space first)
      std::fprintf(stderr, "fuzz tokenizer: decode(encode(x)) != x for a vocabulary that loaded\n");
      std::abort();
    }
  });
  const std::string once = nfc(rest);
  if (nfc(once) != once || (!nfc_may_change(rest) && once != rest)) {
    std::fprintf(stderr, "fuzz tokenizer: nfc is not idempotent, or changed a text nfc_may_change passed\n");
    std::abort();
  }
  return 0;
}
