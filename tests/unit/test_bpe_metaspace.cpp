// SentencePiece-style BPE from a tokenizer.json (data/bpe_metaspace.cpp: Llama 2's layout, and a
// Metaspace pre-tokenizer) on a small vocabulary written here: spaces as "▁" and one first, byte
// fallback, words that give the ids of merging the whole text, special tokens per segment, and one
// line for each kind of file it cannot read. The comparison with a real file (Mistral 7B's, in
// Llama 2's layout) and Hugging Face's tokenizers in JavaScript: tests/e2e/tokenizer.sh.
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/bpe_tokenizer.hpp"
#include "unit_test_util.hpp"

using namespace hpctrain;

namespace {

const std::string kMark = "\u2581";

// ids: <unk> 0, <s> 1, </s> 2, <0x00>..<0xFF> 3..258, then ▁ a b ▁a ab ▁ab ▁▁ c (259..266).
const std::vector<std::string> kTokens = {kMark, "a", "b", kMark + "a", "ab", kMark + "ab", kMark + kMark, "c"};
const std::vector<std::pair<std::string, std::string>> kMerges = {
    {kMark, "a"}, {"a", "b"}, {kMark + "a", "b"}, {kMark, kMark}};
constexpr std::int32_t kA = 260, kB = 261, kMarkA = 262, kMarkAb = 264, kMarks = 265, kC = 266;

// Llama 2's layout (normalizer Prepend + Replace), or Metaspace with `scheme` and `split`.
nlohmann::json sp_json(const std::string& scheme = "", bool split = false) {
  nlohmann::json vocab = nlohmann::json::object(), added = nlohmann::json::array();
  int id = 0;
  for (const char* s : {"<unk>", "<s>", "</s>"}) {
    added.push_back({{"id", id}, {"content", s}, {"special", true}});
    vocab[s] = id++;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = id++;
  }
  for (const auto& t : kTokens) vocab[t] = id++;
  nlohmann::json merges = nlohmann::json::array();
  for (const auto& [l, r] : kMerges) merges.push_back(l + " " + r);
  nlohmann::json j = {
      {"added_tokens", added},
      {"model",
       {{"type", "BPE"}, {"byte_fallback", true}, {"unk_token", "<unk>"}, {"vocab", vocab}, {"merges", merges}}}};
  if (scheme.empty()) {
    j["normalizer"] = {{"type", "Sequence"},
                       {"normalizers",
                        {{{"type", "Prepend"}, {"prepend", kMark}},
                         {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kMark}}}}};
    j["pre_tokenizer"] = nullptr;
  } else {
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", kMark}, {"prepend_scheme", scheme}, {"split", split}};
  }
  return j;
}

BpeTokenizer sp(const std::string& scheme = "", bool split = false) {
  return BpeTokenizer::from_hf_json(sp_json(scheme, split).dump(), "sp.json");
}

using Ids = std::vector<std::int32_t>;

// The ids of merging the whole normalized text as one word (the lowest rank first, every
// occurrence, left to right), with the merges and characters above: what the word cut must match.
Ids whole_text(const std::string& text, const BpeTokenizer& t) {
  if (text.empty()) return {};
  std::string normal = kMark;
  for (char c : text) normal += c == ' ' ? kMark : std::string(1, c);
  Ids word;
  for (std::size_t at = 0; at < normal.size();) {
    const bool mark = normal.compare(at, kMark.size(), kMark) == 0;
    const std::string one = mark ? kMark : normal.substr(at, 1);
    const auto hit = std::find(kTokens.begin(), kTokens.end(), one);
    if (hit != kTokens.end())
      word.push_back(259 + static_cast<std::int32_t>(hit - kTokens.begin()));
    else
      word.push_back(3 + static_cast<unsigned char>(one[0]));
    at += one.size();
  }
  for (;;) {
    std::size_t best = kMerges.size();
    for (std::size_t i = 0; i + 1 < word.size(); ++i)
      for (std::size_t r = 0; r < best; ++r)
        if (t.token_bytes(word[i]) + t.token_bytes(word[i + 1]) ==
                [&] {
                  std::string s = kMerges[r].first + kMerges[r].second;
                  for (std::size_t p; (p = s.find(kMark)) != std::string::npos;) s.replace(p, kMark.size(), " ");
                  return s;
                }() &&
            word[i] >= 259 && word[i + 1] >= 259)
          best = r;
    if (best == kMerges.size()) return word;
    const std::string joined = kMerges[best].first + kMerges[best].second;
    const auto merged =
        259 + static_cast<std::int32_t>(std::find(kTokens.begin(), kTokens.end(), joined) - kTokens.begin());
    const auto id_of = [&](const std::string& s) {
      return 259 + static_cast<std::int32_t>(std::find(kTokens.begin(), kTokens.end(), s) - kTokens.begin());
    };
    Ids next;
    for (std::size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i] == id_of(kMerges[best].first) && word[i + 1] == id_of(kMerges[best].second)) {
        next.push_back(merged);
        i += 2;
      } else {
        next.push_back(word[i++]);
      }
    }
    word = next;
  }
}

std::string error_of(const nlohmann::json& j) {
  return unittest::one_line_refusal([&] { BpeTokenizer::from_hf_json(j.dump(), "sp.json"); });
}

}  // namespace

TEST(BpeMetaspace, SpacesAreMarksAndOneGoesFirst) {
  BpeTokenizer t = sp();
  EXPECT_EQ(t.vocab_size(), 3 + 256 + 8);
  EXPECT_EQ(t.eot(), 1);  // <s>
  EXPECT_TRUE(t.space_first());
  EXPECT_EQ(t.encode("ab ab"), (Ids{kMarkAb, kMarkAb}));
  // "▁a▁▁b": the words "▁a" and "▁▁b"; in the second ▁ ▁ (rank 3) is the only merge.
  EXPECT_EQ(t.encode("a  b"), (Ids{kMarkA, kMarks, kB}));
  // " a": Llama 2's Prepend puts a second ▁ first: ▁ a (rank 0) before ▁ ▁ (rank 3).
  EXPECT_EQ(t.encode(" a"), (Ids{259, kMarkA}));
  EXPECT_EQ(t.encode("c"), (Ids{259, kC}));
  EXPECT_EQ(t.encode(""), Ids{});
  // Characters outside the vocabulary: their UTF-8 bytes' <0xXX> tokens; tabs and newlines too
  // (only " " becomes ▁).
  EXPECT_EQ(t.encode("\xc3\xa9\n"), (Ids{259, 3 + 0xc3, 3 + 0xa9, 3 + '\n'}));
  EXPECT_EQ(t.decode(t.encode("ab \xc3\xa9\tc  a")), " ab \xc3\xa9\tc  a");
  EXPECT_EQ(t.token_bytes(kMarkAb), " ab");
  EXPECT_EQ(t.token_bytes(3 + 0x41), "A");
}

TEST(BpeMetaspace, WordsGiveTheIdsOfMergingTheWholeText) {
  BpeTokenizer t = sp();
  std::mt19937 rng(5);
  for (int n = 0; n < 300; ++n) {
    std::string s(static_cast<std::size_t>(rng() % 24), ' ');
    for (char& c : s) c = "ab  c\nx"[rng() % 7];
    EXPECT_EQ(t.encode(s), whole_text(s, t)) << "'" << s << "'";
  }
  // Negative control: words cut at every ▁ (Metaspace's split) miss the ▁ ▁ merge the reference
  // makes.
  EXPECT_NE(sp("always", true).encode("a  b"), whole_text("a  b", t));
}

// parts() cuts a long text for the importer's threads before a space after a visible ASCII
// character; encode_part of each (the "▁" first in the first alone) gives encode(text).
TEST(BpeMetaspace, PartsEncodeToTheWholeTextsIds) {
  for (const std::string scheme : {"", "first", "always"}) {
    BpeTokenizer t = sp(scheme);
    std::mt19937 rng(9);
    std::string text;
    const char* words[] = {"a", "ab", " b", "  ", "\n", "c ", "\u00e9", "\u2581", " "};
    for (int i = 0; i < 3000; ++i) text += words[rng() % std::size(words)];
    const auto parts = t.parts(text, 50);
    ASSERT_GT(parts.size(), 20u) << scheme;
    Ids joined, wrong;
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      bytes += parts[i].size();
      const Ids ids = t.encode_part(parts[i], i == 0), as_text = t.encode(parts[i]);
      joined.insert(joined.end(), ids.begin(), ids.end());
      wrong.insert(wrong.end(), as_text.begin(), as_text.end());
    }
    EXPECT_EQ(bytes, text.size());
    EXPECT_EQ(joined, t.encode(text)) << scheme;
    // Negative control: each part a text of its own gets a second "▁" after each cut with Llama 2's
    // normalizer (Metaspace puts none before a text that starts with a space: the same ids there).
    if (scheme.empty()) {
      EXPECT_NE(wrong, t.encode(text));
    }
  }
}

TEST(BpeMetaspace, SpecialTokensSplitTheTextIntoSegments) {
  // Llama 2's normalizer runs on each text between special tokens: each starts with ▁.
  BpeTokenizer t = sp();
  EXPECT_EQ(t.encode_with_specials("a<s>b</s>"), (Ids{kMarkA, 1, 259, kB, 2}));
  EXPECT_EQ(t.encode("a<s>"), (Ids{kMarkA, 3 + '<', 3 + 's', 3 + '>'}));  // text without specials
  // Metaspace's prepend_scheme first: the text's start only; always: each segment, but not before
  // a space; never: none.
  EXPECT_EQ(sp("first").encode_with_specials("a<s>b"), (Ids{kMarkA, 1, kB}));
  EXPECT_EQ(sp("first").encode_with_specials("<s>b"), (Ids{1, kB}));
  EXPECT_EQ(sp("always").encode_with_specials("a<s> a"), (Ids{kMarkA, 1, kMarkA}));
  EXPECT_EQ(sp("always").encode(" a"), (Ids{kMarkA}));
  EXPECT_EQ(sp("never").encode("a b"), (Ids{kA, 259, kB}));
  EXPECT_FALSE(sp("never").space_first());
  // split: a word starts at every ▁, so ▁ ▁ never merges.
  EXPECT_EQ(sp("first", true).encode("a  b"), (Ids{kMarkA, 259, 259, kB}));
  EXPECT_EQ(sp("first", false).encode("a  b"), (Ids{kMarkA, kMarks, kB}));
}

// A token that joins words ("b▁", Gemma's ">▁</"): no word or part is cut after a "b", so its merge
// (ranked first here) crosses the space as merging the whole text does; without the token, the
// words are cut there (the negative control).
TEST(BpeMetaspace, ATokenThatJoinsWordsIsMergedAcrossTheSpace) {
  nlohmann::json j = sp_json();
  j["model"]["vocab"]["b" + kMark] = 267;
  j["model"]["merges"].insert(j["model"]["merges"].begin(), "b " + kMark);
  BpeTokenizer joined = BpeTokenizer::from_hf_json(j.dump(), "sp.json");
  EXPECT_EQ(joined.encode("ab ab"), (Ids{kMarkA, 267, 263}));  // ▁a b▁ ab
  EXPECT_EQ(sp().encode("ab ab"), (Ids{kMarkAb, kMarkAb}));
  const std::string text = "ab ab ab ab ab ab ab ab c c c c";
  const auto parts = joined.parts(text, 2);
  for (std::size_t k = 1; k < parts.size(); ++k) EXPECT_NE(parts[k - 1].back(), 'b') << "a part cut after a 'b'";
  EXPECT_EQ(parts.size(), 4u);                 // (after each "c" but the last)
  EXPECT_EQ(sp().parts(text, 2).size(), 12u);  // (after each word)
}

// Added tokens not marked special (Gemma's runs of newlines, Qwen2.5's <tool_call>) are split out of
// every text, as Hugging Face does: the leftmost, at one place the longest; the text between them
// starts a segment (Llama 2's layout: its own "▁").
TEST(BpeMetaspace, OrdinaryAddedTokensAreAlwaysTheirToken) {
  nlohmann::json j = sp_json();
  j["model"]["vocab"]["<x"] = 267, j["model"]["vocab"]["<x>"] = 268;
  j["added_tokens"].push_back({{"id", 267}, {"content", "<x"}, {"special", false}});
  j["added_tokens"].push_back({{"id", 268}, {"content", "<x>"}, {"special", false}});
  BpeTokenizer t = BpeTokenizer::from_hf_json(j.dump(), "sp.json");
  EXPECT_EQ(t.encode("a<x>b<xc"), (Ids{kMarkA, 268, 259, kB, 267, 259, kC}));
  EXPECT_EQ(t.encode_with_specials("a<x><s>"), (Ids{kMarkA, 268, 1}));
  j["added_tokens"].erase(j["added_tokens"].size() - 1);  // (<x> then only a token of the vocabulary: "<x", ">")
  EXPECT_EQ(BpeTokenizer::from_hf_json(j.dump(), "sp.json").encode("a<x>b"), (Ids{kMarkA, 267, 259, 3 + '>', kB}));
}

TEST(BpeMetaspace, FilesItCannotReadAreOneLine) {
  nlohmann::json j = sp_json();
  j["model"]["vocab"].erase("<0x7F>");
  j["model"]["vocab"]["x"] = 130;  // (the ids stay dense)
  EXPECT_NE(error_of(j).find("sp.json: model.byte_fallback needs the 256 tokens <0x00> to <0xFF>; <0x7F> is not in"),
            std::string::npos);
  j = sp_json();
  j["normalizer"] = {{"type", "NFKC"}};
  EXPECT_NE(
      error_of(j).find("sp.json: a byte_fallback BPE with normalizer NFKC and pre_tokenizer null is not supported"),
      std::string::npos);
  j = sp_json("first");
  j["pre_tokenizer"]["prepend_scheme"] = "sometimes";
  EXPECT_NE(error_of(j).find("prepend_scheme 'sometimes' is not always, first or never"), std::string::npos);
  j = sp_json();
  j["model"]["type"] = "Unigram";
  EXPECT_NE(error_of(j).find("sp.json: model type Unigram is not a BPE"), std::string::npos);
  j = sp_json();
  j["model"]["byte_fallback"] = 1;  // (a field of another type: nlohmann's error, as one line)
  EXPECT_NE(error_of(j).find("sp.json: unexpected JSON: "), std::string::npos);
  EXPECT_EQ(error_of(sp_json("first", true)), "");
}
