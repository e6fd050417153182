// GPT-2's byte-level BPE (data/bpe_tokenizer.hpp) on a small vocabulary written here: the merge
// rule (lowest rank first, every occurrence, left to right), the pre-tokenization pieces, any
// bytes round-tripping, and one line naming the file for each kind of bad vocabulary file. The
// comparison with GPT-2's own files and the JavaScript reference: tests/e2e/tokenizer.sh.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/bpe_tokenizer.hpp"
#include "unit_test_util.hpp"

using namespace hpctrain;

namespace {

// GPT-2's byte character for byte b (bytes_to_unicode), as UTF-8.
std::string byte_char(int b) {
  int n = 0, cp = b;
  const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  if (!printable) {
    for (int x = 0; x < b; ++x)
      if (!((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF))) ++n;
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) return std::string(1, static_cast<char>(cp));
  s += static_cast<char>(0xC0 | (cp >> 6));
  s += static_cast<char>(0x80 | (cp & 0x3F));
  return s;
}

struct Files {
  std::string encoder, merges;
};

// 256 byte tokens (ids 0-255 in byte order), then `extra` tokens, then <|endoftext|>; merges in
// rank order.
Files vocabulary(const std::vector<std::string>& extra, const std::vector<std::string>& merges) {
  nlohmann::ordered_json j;
  int id = 0;
  for (int b = 0; b < 256; ++b) j[byte_char(b)] = id++;
  for (const auto& t : extra) j[t] = id++;
  j["<|endoftext|>"] = id++;
  std::string m = "#version: 0.2\n";
  for (const auto& line : merges) m += line + "\n";
  return {j.dump(), m};
}

BpeTokenizer small() {
  // "Ġ" is the space's byte character. ids: a 97, b 98, Ġ (space) 32; extra from 256.
  const auto f = vocabulary({"aa", "ab", "aab", "Ġa", "Ġaa"}, {"a a", "a b", "aa b", "Ġ a", "Ġa a"});
  return BpeTokenizer::from_gpt2_text(f.encoder, f.merges, "small/");
}

std::string error_of(const Files& f) {
  return unittest::one_line_refusal([&] { BpeTokenizer::from_gpt2_text(f.encoder, f.merges, "v/"); });
}

}  // namespace

TEST(BpeTokenizer, MergesTheLowestRankEverywhereLeftToRight) {
  BpeTokenizer t = small();
  EXPECT_EQ(t.vocab_size(), 256 + 5 + 1);
  EXPECT_EQ(t.eot(), 261);
  // "aaa": rank 0 (a a) merges the first two only (no overlap), leaving a.
  EXPECT_EQ(t.encode("aaa"), (std::vector<std::int32_t>{256, 97}));
  // "aab": a a (rank 0) first, then aa b (rank 2) -> aab; "ab" alone takes a b (rank 1).
  EXPECT_EQ(t.encode("aab"), (std::vector<std::int32_t>{258}));
  EXPECT_EQ(t.encode("ab"), (std::vector<std::int32_t>{257}));
  // " aa": the piece is " aa" (a letter run with its space): Ġ a (rank 3) waits for a a (rank 0),
  // which leaves Ġ + aa, and Ġa a never applies.
  EXPECT_EQ(t.encode(" aa"), (std::vector<std::int32_t>{32, 256}));
  EXPECT_EQ(t.encode(" a"), (std::vector<std::int32_t>{259}));
  EXPECT_EQ(t.decode({259, 258, 97}), " aaaba");
}

TEST(BpeTokenizer, PiecesFollowGpt2sPatternAndKeepInvalidBytesApart) {
  const BpeTokenizer t = small();
  using V = std::vector<std::string_view>;
  EXPECT_EQ(t.pieces("Hello world, it's 42!"), (V{"Hello", " world", ",", " it", "'s", " 42", "!"}));
  EXPECT_EQ(t.pieces("a  b\n\n c"), (V{"a", " ", " b", "\n\n", " c"}));
  EXPECT_EQ(t.pieces("ab\xff\xfe"
                     "cd\xc3"),
            (V{"ab", "\xff\xfe", "cd", "\xc3"}));
  // Unicode classes: letters with marks, digits of other scripts; U+0085 is white space
  // (tiktoken's \s, Unicode's White_Space), U+FEFF is not.
  EXPECT_EQ(t.pieces("caf\u00e9 \u0663\u0664 x\u0085y"), (V{"caf\u00e9", " \u0663\u0664", " x", "\u0085", "y"}));
  EXPECT_EQ(t.pieces("a\ufeffb"), (V{"a", "\ufeff", "b"}));
}

TEST(BpeTokenizer, CutsOnlyWhereThePiecesStayTheSame) {
  const BpeTokenizer t = small();
  // Lines of words, spaces, blank lines, symbols and non-ASCII: the parts' pieces, one after
  // another, are the whole text's.
  std::mt19937 rng(3);
  const char* words[] = {"a", "ab", " b", "\n", "\n\n", "  ", ".", "'s", "\u00e9t\u00e9", "\n ", "x\n", "7"};
  std::string text;
  for (int i = 0; i < 4000; ++i) text += words[rng() % std::size(words)];
  const auto parts = BpeTokenizer::cut(text, 64);
  ASSERT_GT(parts.size(), 20u);
  std::vector<std::string_view> joined;
  std::size_t bytes = 0;
  for (auto p : parts) {
    EXPECT_GE(p.size(), p.data() == parts.back().data() ? 0u : 64u);
    bytes += p.size();
    for (auto piece : t.pieces(p)) joined.push_back(piece);
  }
  EXPECT_EQ(bytes, text.size());
  EXPECT_EQ(joined, t.pieces(text));
  // Negative control: cutting after a blank line (or anywhere) would change the pieces.
  const std::string blank = "ab\n\nab";
  std::vector<std::string_view> wrong = t.pieces(std::string_view(blank).substr(0, 4));
  for (auto piece : t.pieces(std::string_view(blank).substr(4))) wrong.push_back(piece);
  EXPECT_NE(wrong, t.pieces(blank));
  EXPECT_EQ(BpeTokenizer::cut(blank, 1).size(), 1u);
}

TEST(BpeTokenizer, AnyBytesRoundTrip) {
  BpeTokenizer t = small();
  std::mt19937 rng(7);
  for (int n = 0; n < 200; ++n) {
    std::string s(static_cast<std::size_t>(rng() % 64), '\0');
    for (char& c : s) c = static_cast<char>(rng() % 4 == 0 ? 'a' : rng() % 256);
    EXPECT_EQ(t.decode(t.encode(s)), s) << n;
  }
  EXPECT_THROW(t.decode({262}), Error);
}

// A Hugging Face tokenizer.json of the small vocabulary: merges as "a b" strings or pairs, a
// ByteLevel pre-tokenizer or a Sequence of a Split (GPT-2's pattern) and ByteLevel.
std::string hf_json(bool pairs, bool sequence) {
  const Files f = vocabulary({"aa", "ab", "aab", "\u0120a", "\u0120aa"}, {});
  nlohmann::json merges = nlohmann::json::array();
  for (const char* m : {"a a", "a b", "aa b", "\u0120 a", "\u0120a a"}) {
    const std::string t = m;
    const auto sp = t.find(' ');
    merges.push_back(pairs ? nlohmann::json::array({t.substr(0, sp), t.substr(sp + 1)}) : nlohmann::json(t));
  }
  nlohmann::json j;
  j["normalizer"] = nullptr;
  j["model"] = {{"type", "BPE"}, {"vocab", nlohmann::json::parse(f.encoder)}, {"merges", merges}};
  if (sequence)
    j["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"Regex", R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"}, {"use_regex", false}}}}};
  else
    j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}};
  return j.dump();
}

TEST(BpeTokenizer, HuggingFaceTokenizerJsonGivesTheSameIds) {
  BpeTokenizer ref = small();
  std::mt19937 rng(11);
  for (bool pairs : {false, true})
    for (bool sequence : {false, true}) {
      BpeTokenizer t = BpeTokenizer::from_hf_json(hf_json(pairs, sequence), "t.json");
      EXPECT_EQ(t.vocab_size(), ref.vocab_size());
      EXPECT_EQ(t.eot(), ref.eot());
      for (int n = 0; n < 50; ++n) {
        std::string s(static_cast<std::size_t>(rng() % 40), 'a');
        for (char& c : s) c = "ab \n\x85.x"[rng() % 7];
        EXPECT_EQ(t.encode(s), ref.encode(s)) << pairs << sequence << n;
      }
    }
}

// A Split pattern that can match nothing (`a*` matches "" before "x"): the text between its matches
// is kept as pieces of its own, as Hugging Face's Isolated Split keeps it (it was dropped: the fuzz
// harness's find, decode(encode(x)) != x).
TEST(BpeTokenizer, SplitPatternMatchingNothingLosesNoText) {
  nlohmann::json j = nlohmann::json::parse(hf_json(false, true));
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "a*";
  BpeTokenizer t = BpeTokenizer::from_hf_json(j.dump(), "t.json");
  using V = std::vector<std::string_view>;
  EXPECT_EQ(t.pieces("xaay bz"), (V{"x", "aa", "y bz"}));
  EXPECT_EQ(t.pieces("xyz"), (V{"xyz"}));
  EXPECT_EQ(t.pieces("aab\xff"
                     "a"),
            (V{"aa", "b\xff", "a"}));
  for (const std::string s : {"xaay bz", "", "b", "aaa", "\xff\xfe a"}) EXPECT_EQ(t.decode(t.encode(s)), s) << s;
}

// An NFC normalizer (Qwen2's): the text between special tokens is put in Unicode's NFC first, so
// "a" + combining acute is encoded as the composed "á"; without the normalizer it stays two.
TEST(BpeTokenizer, NfcNormalizerComposesFirst) {
  nlohmann::json j = nlohmann::json::parse(hf_json(false, true));
  j["normalizer"] = {{"type", "NFC"}};
  BpeTokenizer nfc = BpeTokenizer::from_hf_json(j.dump(), "t.json"), plain = small();
  EXPECT_EQ(nfc.encode("ba\u0301 ab"), plain.encode("b\u00e1 ab"));
  EXPECT_NE(plain.encode("ba\u0301 ab"), plain.encode("b\u00e1 ab"));
  EXPECT_EQ(nfc.encode("aab ab\n"), plain.encode("aab ab\n"));
}

TEST(BpeTokenizer, UnsupportedTokenizerJsonIsOneLine) {
  const auto error = [](const std::string& text) {
    return unittest::one_line_refusal([&] { BpeTokenizer::from_hf_json(text, "t.json"); });
  };
  nlohmann::json j = nlohmann::json::parse(hf_json(false, false));
  j["model"]["type"] = "Unigram";
  EXPECT_NE(error(j.dump()).find("t.json: model type Unigram is not a BPE (SentencePiece's Unigram"),
            std::string::npos);
  j = nlohmann::json::parse(hf_json(false, false));
  j["model"]["byte_fallback"] = true;  // (SentencePiece-style: test_bpe_metaspace.cpp)
  EXPECT_NE(error(j.dump()).find("t.json: a byte_fallback BPE with normalizer null and pre_tokenizer ByteLevel is not"),
            std::string::npos);
  j = nlohmann::json::parse(hf_json(false, false));
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  EXPECT_NE(error(j.dump()).find("t.json: pre_tokenizer Metaspace is not supported"), std::string::npos);
  j = nlohmann::json::parse(hf_json(false, false));
  j["normalizer"] = {{"type", "NFKC"}};
  EXPECT_NE(error(j.dump()).find("t.json: normalizer NFKC is not supported"), std::string::npos);
  j = nlohmann::json::parse(hf_json(false, false));
  j["model"]["merges"] = {"a  a"};
  EXPECT_NE(error(j.dump()).find("t.json: model.merges[0]: expected"), std::string::npos);
  EXPECT_NE(error("{}").find("t.json: no model object"), std::string::npos);
  EXPECT_EQ(error(hf_json(true, true)), "");
  // A post-processor template naming a special token its special_tokens lacks, or an id outside
  // the vocabulary.
  j = nlohmann::json::parse(hf_json(false, false));
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", {{{"SpecialToken", {{"id", "<s>"}}}}, {{"Sequence", {{"id", "A"}}}}}},
                         {"special_tokens", nlohmann::json::object()}};
  EXPECT_NE(error(j.dump()).find("t.json: post_processor (TemplateProcessing): single item"), std::string::npos);
  j["post_processor"]["special_tokens"] = {{"<s>", {{"id", "<s>"}, {"ids", {999}}}}};
  EXPECT_NE(error(j.dump()).find("special token id 999 is outside the vocabulary"), std::string::npos);
}

// The post-processor's leading special tokens (BpeTokenizer::prefix; Hugging Face's
// tokenizer(text) adds them): a template's, inside a Sequence or alone; none without one, and
// none after the sequence (a template's trailing tokens are not a prompt's).
TEST(BpeTokenizer, PostProcessorTemplateGivesThePrefix) {
  nlohmann::json j = nlohmann::json::parse(hf_json(false, false));
  EXPECT_TRUE(BpeTokenizer::from_hf_json(j.dump(), "t.json").prefix().empty());
  const nlohmann::json tmpl = {
      {"type", "TemplateProcessing"},
      {"single",
       {{{"SpecialToken", {{"id", "<s>"}}}}, {{"Sequence", {{"id", "A"}}}}, {{"SpecialToken", {{"id", "</s>"}}}}}},
      {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {2, 1}}}}, {"</s>", {{"id", "</s>"}, {"ids", {0}}}}}}};
  j["post_processor"] = tmpl;
  EXPECT_EQ(BpeTokenizer::from_hf_json(j.dump(), "t.json").prefix(), (std::vector<std::int32_t>{2, 1}));
  j["post_processor"] = {{"type", "Sequence"}, {"processors", {{{"type", "ByteLevel"}}, tmpl}}};
  EXPECT_EQ(BpeTokenizer::from_hf_json(j.dump(), "t.json").prefix(), (std::vector<std::int32_t>{2, 1}));
}

TEST(BpeTokenizer, BadVocabularyFilesAreOneLineNamingTheFile) {
  Files f = vocabulary({"aa"}, {"a a"});
  EXPECT_NE(error_of({"{not json", f.merges}).find("v/encoder.json: not JSON"), std::string::npos);
  EXPECT_NE(error_of({"[1, 2]", f.merges}).find("v/encoder.json: expected an object"), std::string::npos);
  EXPECT_NE(error_of({R"({"a": 0, "b": 5})", f.merges}).find("token 'b' has id 5; expected 0 to 1"), std::string::npos);
  EXPECT_NE(error_of({R"({"a": 0, "b": 0})", f.merges}).find("id 0 is given to two tokens"), std::string::npos);
  EXPECT_NE(error_of({R"({"a": 0})", f.merges}).find("no token for the single byte 0"), std::string::npos);
  nlohmann::json bad = nlohmann::json::parse(f.encoder);
  bad["\u4e2d"] = bad.size();  // not a byte character
  EXPECT_NE(error_of({bad.dump(), f.merges}).find("is not made of GPT-2's byte characters"), std::string::npos);
  EXPECT_NE(error_of({f.encoder, "#version: 0.2\na  a\n"}).find("v/vocab.bpe:2: expected two tokens"),
            std::string::npos);
  EXPECT_NE(
      error_of({f.encoder, "#version: 0.2\na b\n"}).find("v/vocab.bpe:2: merge 'a b': ab is not in the vocabulary"),
      std::string::npos);
  EXPECT_NE(error_of({f.encoder, "#version: 0.2\n"}).find("v/vocab.bpe: no merges"), std::string::npos);
  EXPECT_EQ(error_of(f), "");
}
