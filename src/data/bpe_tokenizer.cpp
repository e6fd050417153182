// GPT-2's byte-level BPE (data/bpe_tokenizer.hpp). The pre-tokenization pattern runs on PCRE2:
// the field's standard regular-expression library with Unicode properties (\p{L}, \p{N}) and
// matching over invalid UTF-8 (PCRE2_MATCH_INVALID_UTF); std::regex has neither.
#include "hpctrain/data/bpe_tokenizer.hpp"

#include <pcre2.h>

#include <algorithm>
#include <array>
#include <limits>
#include <nlohmann/json.hpp>
#include <queue>

#include "bpe_vocabulary.hpp"
#include "hpctrain/config/config.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/json_depth.hpp"
#include "hpctrain/data/nfc.hpp"

namespace hpctrain {

namespace {

// tiktoken's \s: the characters of Unicode's White_Space property (Python's `regex` \s and
// JavaScript's \s differ from it; docs/language-models.md lists where).
constexpr const char* kSpace =
    R"(\t-\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

// GPT-2's pattern as its encoder.py and Hugging Face's ByteLevel pre-tokenizer write it.
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// `pattern` with \s and \S as tiktoken's and Rust regex's (Unicode White_Space) instead of
// PCRE2's: [kSpace] and [^kSpace] outside a class, kSpace inside one (a \S inside a class is
// refused).
std::string with_white_space(const std::string& pattern, const std::string& origin) {
  std::string out;
  bool in_class = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char n = pattern[++i];
      if (n == 's')
        out += in_class ? std::string(kSpace) : "[" + std::string(kSpace) + "]";
      else if (n == 'S' && !in_class)
        out += "[^" + std::string(kSpace) + "]";
      else if (n == 'S')
        throw bad_input(origin + ": the pre-tokenizer pattern has \\S inside a character class (not supported)");
      else
        out += {c, n};
      continue;
    }
    if (c == '[' && !in_class)
      in_class = true;
    else if (c == ']' && in_class && out.back() != '[' && out.back() != '^')
      in_class = false;
    out += c;
  }
  return out;
}

// GPT-2's bytes_to_unicode(): the printable bytes stand for themselves, the others for code points
// 256 and up, in byte order.
std::array<char32_t, 256> byte_chars() {
  std::array<char32_t, 256> out{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    out[static_cast<std::size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
  }
  return out;
}

// A token string of encoder.json or vocab.bpe (UTF-8 of byte characters) as the bytes it stands
// for; false when it holds a character that stands for no byte.
bool token_to_bytes(const std::string& token, std::string& out) {
  static const auto byte_of = [] {
    std::array<int, 324> t{};
    t.fill(-1);
    const auto chars = byte_chars();
    for (int b = 0; b < 256; ++b) t[chars[static_cast<std::size_t>(b)]] = b;
    return t;
  }();
  out.clear();
  for (std::size_t i = 0; i < token.size();) {
    const auto c = static_cast<unsigned char>(token[i]);
    char32_t cp = 0;
    std::size_t n = 0;
    if (c < 0x80)
      cp = c, n = 1;
    else if ((c & 0xE0) == 0xC0 && i + 1 < token.size())
      cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(token[i + 1]) & 0x3Fu), n = 2;
    else
      return false;  // byte characters are below U+0800
    if (cp >= byte_of.size() || byte_of[cp] < 0) return false;
    out += static_cast<char>(byte_of[cp]);
    i += n;
  }
  return !out.empty();
}

}  // namespace

namespace {
nlohmann::json parse_json(const std::string& text, const std::string& origin) {
  check_json_depth(text, origin);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw bad_input(origin + ": not JSON: " + e.what());
  }
}
}  // namespace

std::unordered_map<std::string, std::int32_t> BpeTokenizer::Vocabulary::read_tokens(const nlohmann::json& vocab,
                                                                                    const nlohmann::json* added,
                                                                                    const std::string& origin) {
  if (!vocab.is_object() || vocab.empty()) throw bad_input(origin + ": expected an object of token -> id");
  std::vector<std::pair<std::string, nlohmann::json>> all;
  for (const auto& [token, id] : vocab.items()) all.emplace_back(token, id);
  for (const auto& a : added ? *added : nlohmann::json::array()) {
    if (!a.is_object() || !a.contains("content") || !a.contains("id") || !a["content"].is_string())
      throw bad_input(origin + ": added_tokens: expected objects with content and id");
    const std::string content = a["content"].get<std::string>();
    if (!vocab.contains(content)) all.emplace_back(content, a["id"]);
    if (!a["id"].is_number_integer()) continue;  // (refused below)
    const auto id = a["id"].get<std::int32_t>();
    with_specials.add(content, id);
    if (a.value("special", false))
      specials.emplace_back(content, id);
    else
      ordinary.add(content, id);
  }
  const auto n = static_cast<std::int64_t>(all.size());
  bytes_of.assign(all.size(), std::string());
  std::vector<bool> seen(all.size(), false);
  std::unordered_map<std::string, std::int32_t> id_of;
  for (const auto& [token, id] : all) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() >= n)
      throw bad_input(origin + ": token '" + token + "' has id " + id.dump() + "; expected 0 to " +
                      std::to_string(n - 1) + " (one id per token)");
    const auto k = id.get<std::size_t>();
    if (seen[k]) throw bad_input(origin + ": id " + std::to_string(k) + " is given to two tokens");
    seen[k] = true;
    if (metaspace.on)
      bytes_of[k] = metaspace_bytes(token);
    else if (!token_to_bytes(token, bytes_of[k]))
      throw bad_input(origin + ": token '" + token + "' (id " + std::to_string(k) +
                      ") is not made of GPT-2's byte characters");
    // The document separator: GPT-2's end of text, or Llama 3's begin of text.
    if (token == "<|endoftext|>" || (token == "<|begin_of_text|>" && eot < 0)) eot = static_cast<std::int32_t>(k);
    id_of.emplace(token, static_cast<std::int32_t>(k));
  }
  // GPT-2's own files list no added tokens: its end of text is its special token (as Hugging
  // Face's GPT2Tokenizer and tiktoken's allowed_special take it).
  if (!added && eot >= 0) with_specials.add(bytes_of[static_cast<std::size_t>(eot)], eot);
  if (metaspace.on) return id_of;  // (its byte tokens: index_metaspace)
  byte_id.fill(-1);
  for (std::size_t k = 0; k < bytes_of.size(); ++k)
    if (bytes_of[k].size() == 1) byte_id[static_cast<unsigned char>(bytes_of[k][0])] = static_cast<std::int32_t>(k);
  for (int b = 0; b < 256; ++b)
    if (byte_id[static_cast<std::size_t>(b)] < 0)
      throw bad_input(origin + ": no token for the single byte " + std::to_string(b) +
                      " (a byte-level vocabulary has all 256)");
  return id_of;
}

void BpeTokenizer::Vocabulary::read_merges(const std::string& bpe_text, const std::string& origin,
                                           const std::unordered_map<std::string, std::int32_t>& id_of) {
  std::size_t at = 0;
  int line_no = 0;
  std::int32_t rank = 0;
  while (at < bpe_text.size()) {
    const auto end = std::min(bpe_text.find('\n', at), bpe_text.size());
    std::string line = bpe_text.substr(at, end - at);
    at = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    const auto space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos)
      throw bad_input(origin + ":" + std::to_string(line_no) + ": expected two tokens separated by one space, got '" +
                      line + "'");
    add_merge(line.substr(0, space), line.substr(space + 1), rank++, origin + ":" + std::to_string(line_no), id_of);
  }
  if (merges.empty()) throw bad_input(origin + ": no merges");
}

void BpeTokenizer::Vocabulary::add_merge(const std::string& left, const std::string& right, std::int32_t rank,
                                         const std::string& where,
                                         const std::unordered_map<std::string, std::int32_t>& id_of) {
  const auto a = id_of.find(left), b = id_of.find(right), ab = id_of.find(left + right);
  if (a == id_of.end() || b == id_of.end() || ab == id_of.end())
    throw bad_input(where + ": merge '" + left + " " + right + "': " +
                    (a == id_of.end()   ? left
                     : b == id_of.end() ? right
                                        : left + right) +
                    " is not in the vocabulary");
  // (a pair listed twice takes its later rank, as GPT-2's dict(zip(merges, ranks)) does)
  merges.insert_or_assign(bpe_pair_key(a->second, b->second), BpeMerge{rank, ab->second});
}

void BpeTokenizer::Vocabulary::compile_pattern(const std::string& canonical, const std::string& origin) {
  const std::string p = with_white_space(canonical, origin);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.c_str()), p.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(error, msg, sizeof(msg));
    throw bad_input(origin + ": the pre-tokenizer pattern does not compile in PCRE2 at " + std::to_string(offset) +
                    ": " + reinterpret_cast<const char*>(msg));
  }
  pattern.reset(code, pcre2_code_free);
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // (where PCRE2 has no JIT, matching is interpreted)
}

BpeTokenizer::BpeTokenizer(std::shared_ptr<const Vocabulary> v) : vocab_(std::move(v)) {}

BpeTokenizer BpeTokenizer::from_gpt2_text(const std::string& encoder_json, const std::string& vocab_bpe,
                                          const std::string& origin, const FileNames& names) {
  auto v = std::make_shared<Vocabulary>();
  const std::string encoder = origin + names.first, merges = origin + names.second;
  const auto id_of = v->read_tokens(parse_json(encoder_json, encoder), nullptr, encoder);
  v->read_merges(vocab_bpe, merges, id_of);
  v->compile_pattern(kGpt2Pattern, origin);
  return BpeTokenizer(std::move(v));
}

namespace {
// The pre-tokenization pattern of a Hugging Face tokenizer.json: GPT-2's for a ByteLevel
// pre-tokenizer that splits by its own regex, or the Split pattern of a Sequence of Split and a
// ByteLevel that does not (Llama 3); bad_input naming the type for anything else.
std::string hf_pattern(const nlohmann::json& pre, const std::string& origin) {
  const auto type = [](const nlohmann::json& j) { return j.is_object() ? j.value("type", "") : std::string(); };
  if (type(pre) == "ByteLevel" && pre.value("use_regex", true)) return kGpt2Pattern;
  if (type(pre) == "Sequence" && pre.contains("pretokenizers") && pre["pretokenizers"].size() == 2) {
    const auto& split = pre["pretokenizers"][0];
    const auto& bytes = pre["pretokenizers"][1];
    if (type(split) == "Split" && split.contains("pattern") && split["pattern"].contains("Regex") &&
        split.value("behavior", "") == "Isolated" && !split.value("invert", false) && type(bytes) == "ByteLevel" &&
        !bytes.value("use_regex", true))
      return split["pattern"]["Regex"].get<std::string>();
  }
  throw bad_input(origin + ": pre_tokenizer " + (pre.is_null() ? std::string("null") : type(pre)) +
                  " is not supported (ByteLevel, or a Sequence of a Split regex and ByteLevel, as GPT-2's and "
                  "Llama 3's files have)");
}

// The special tokens a tokenizer.json's post_processor puts before a single sequence: the
// TemplateProcessing's (alone or in a Sequence) "single" items before its Sequence item, each
// the ids its special_tokens entry lists (Llama 3.1's <|begin_of_text|>); none without a template.
std::vector<std::int32_t> template_prefix(const nlohmann::json& post, const std::string& origin) {
  if (!post.is_object()) return {};
  if (post.value("type", "") == "Sequence") {
    std::vector<std::int32_t> out;
    for (const auto& p : post.value("processors", nlohmann::json::array())) {
      const auto more = template_prefix(p, origin);
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }
  if (post.value("type", "") != "TemplateProcessing") return {};
  std::vector<std::int32_t> out;
  const std::string where = origin + ": post_processor (TemplateProcessing)";
  const nlohmann::json special = post.value("special_tokens", nlohmann::json::object());
  for (const auto& item : post.value("single", nlohmann::json::array())) {
    if (!item.is_object() || item.contains("Sequence")) break;
    const std::string name = item.contains("SpecialToken") ? item["SpecialToken"].value("id", "") : "";
    if (name.empty() || !special.contains(name) || !special[name].contains("ids") || !special[name]["ids"].is_array())
      throw bad_input(where + ": single item " + item.dump() + " is not a special token with ids in special_tokens");
    for (const auto& id : special[name]["ids"]) {
      if (!id.is_number_integer()) throw bad_input(where + ": special token " + name + " has id " + id.dump());
      out.push_back(id.get<std::int32_t>());
    }
  }
  return out;
}
}  // namespace

namespace {
std::shared_ptr<BpeTokenizer::Vocabulary> hf_vocabulary(const nlohmann::json& j, const std::string& origin) {
  using Vocabulary = BpeTokenizer::Vocabulary;
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
    throw bad_input(origin + ": no model object (not a Hugging Face tokenizer.json)");
  const auto& m = j["model"];
  if (m.value("type", "") != "BPE")
    throw bad_input(origin + ": model type " + m.value("type", "?") +
                    " is not a BPE (SentencePiece's Unigram models are not supported)");
  auto v = std::make_shared<Vocabulary>();
  if (m.value("byte_fallback", false)) {
    v->read_metaspace(j, origin);  // Llama 2's layout
  } else if (j.contains("normalizer") && !j["normalizer"].is_null()) {
    v->nfc = j["normalizer"].value("type", "") == "NFC";  // (Qwen2's, Qwen3's)
    if (!v->nfc)
      throw bad_input(origin + ": normalizer " + j["normalizer"].value("type", "?") +
                      " is not supported (a byte-level BPE has none, or NFC)");
  }
  const nlohmann::json* added = j.contains("added_tokens") ? &j["added_tokens"] : nullptr;
  const auto id_of = v->read_tokens(m.value("vocab", nlohmann::json()), added, origin + ": model.vocab");
  std::int32_t rank = 0;
  for (const auto& merge : m.value("merges", nlohmann::json::array())) {  // "a b" or ["a", "b"]
    const std::string where = origin + ": model.merges[" + std::to_string(rank) + "]";
    if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      v->add_merge(merge[0], merge[1], rank++, where, id_of);
      continue;
    }
    const std::string text = merge.is_string() ? merge.get<std::string>() : "";
    const auto space = text.find(' ');
    if (space == std::string::npos || space == 0 || text.find(' ', space + 1) != std::string::npos)
      throw bad_input(where + ": expected \"a b\" or [\"a\", \"b\"], got " + merge.dump());
    v->add_merge(text.substr(0, space), text.substr(space + 1), rank++, where, id_of);
  }
  if (v->merges.empty()) throw bad_input(origin + ": model.merges is empty");
  if (v->metaspace.on)
    v->index_metaspace(id_of, origin);
  else
    v->compile_pattern(hf_pattern(j.value("pre_tokenizer", nlohmann::json()), origin), origin);
  v->prefix = template_prefix(j.value("post_processor", nlohmann::json()), origin);
  for (const std::int32_t id : v->prefix)
    if (id < 0 || static_cast<std::size_t>(id) >= v->bytes_of.size())
      throw bad_input(origin + ": post_processor: special token id " + std::to_string(id) +
                      " is outside the vocabulary");
  return v;
}
}  // namespace

BpeTokenizer BpeTokenizer::from_hf_json(const std::string& tokenizer_json, const std::string& origin) {
  const nlohmann::json j = parse_json(tokenizer_json, origin);
  try {
    return BpeTokenizer(hf_vocabulary(j, origin));
  } catch (const nlohmann::json::exception& e) {  // a field of another type than the layout's
    throw bad_input(origin + ": unexpected JSON: " + e.what());
  }
}

BpeTokenizer BpeTokenizer::from_gpt2_dir(const std::string& dir) {
  const std::string d = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  return from_gpt2_text(read_text_file(d + "encoder.json", "GPT-2 vocabulary file"),
                        read_text_file(d + "vocab.bpe", "GPT-2 merges file"), d);
}

std::vector<std::string_view> BpeTokenizer::pieces(std::string_view text) const {
  if (!vocab_->pattern) return {text};  // (metaspace: no pattern)
  std::vector<std::string_view> out;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create_from_pattern(vocab_->pattern.get(), nullptr), pcre2_match_data_free);
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t at = 0, gap = 0;  // (gap: the first byte in no piece yet)
  while (at < text.size()) {
    const int rc = pcre2_match(vocab_->pattern.get(), subject, text.size(), at, 0, md.get(), nullptr);
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    const std::size_t begin = rc >= 0 ? ov[0] : text.size(), end = rc >= 0 ? ov[1] : text.size();
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH)
      throw Error(ExitCode::internal, Scope::this_rank, "PCRE2 match failed: code " + std::to_string(rc));
    if (end == begin) {  // (none, or an empty match: a Split pattern's `x*` from a file; looked for one byte on)
      at = begin + 1;
      continue;
    }
    if (begin > gap) out.push_back(text.substr(gap, begin - gap));  // (bytes that are not UTF-8, or no match's)
    out.push_back(text.substr(begin, end - begin));
    at = gap = end;
  }
  if (gap < text.size()) out.push_back(text.substr(gap));
  return out;
}

namespace {
bool visible_ascii(char c) { return c > ' ' && c < 0x7f; }

// `text` in parts of at least `target` bytes (the last: the rest), each cut at the first place
// `at` (>= 2) past that where cuts_before(text, at) holds.
template <class Where>
std::vector<std::string_view> cut_where(std::string_view text, std::size_t target, Where cuts_before) {
  const std::size_t least = std::max<std::size_t>(target, 2);
  std::vector<std::string_view> out;
  std::size_t begin = 0;
  for (std::size_t at = least; at < text.size(); ++at) {
    if (!cuts_before(text, at)) continue;
    out.push_back(text.substr(begin, at - begin));
    begin = at;
    at = begin + least - 1;
  }
  out.push_back(text.substr(begin));
  return out;
}
}  // namespace

std::vector<std::string_view> BpeTokenizer::cut(std::string_view text, std::size_t target) {
  // Before such a place the '\n' is a piece of its own (\s+ either way: (?!\S) fails before the
  // letter, holds at the end of a part), no piece crosses it, and the letter run starts at the
  // letter (its optional leading character is a space, not '\n').
  const auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  return cut_where(text, target, [&](std::string_view s, std::size_t at) {
    return s[at - 1] == '\n' && visible_ascii(s[at - 2]) && letter(s[at]);
  });
}

namespace {
// One pair of neighbours the merges may join: its rank, where its left symbol is, what it makes.
struct Candidate {
  std::int32_t rank, pos, id;
  bool operator<(const Candidate& o) const {  // (the priority queue's top: the lowest rank, then the leftmost)
    return rank != o.rank ? rank > o.rank : pos > o.pos;
  }
};
}  // namespace

// Hugging Face's Word::merge_all (tokenizers' bpe/word.rs): the lowest-ranked pair of neighbours,
// the leftmost of equal ones, is merged, and the pairs it makes with its neighbours become
// candidates, until no pair has a merge. (GPT-2's bpe() merges every occurrence of the best pair at
// once: the same for merges learned in order, as GPT-2's and Llama 3's; not for a SentencePiece
// vocabulary's, whose merges can make a run of spaces before the pieces it is made of: Gemma's.)
std::vector<std::int32_t> BpeTokenizer::merged(std::vector<std::int32_t> word) const {
  const auto n = static_cast<std::int32_t>(word.size());
  if (n < 2) return word;
  std::vector<std::int32_t> prev(word.size()), next(word.size());
  std::priority_queue<Candidate> queue;
  const auto consider = [&](std::int32_t left, std::int32_t right) {
    const auto m =
        vocab_->merges.find(bpe_pair_key(word[static_cast<std::size_t>(left)], word[static_cast<std::size_t>(right)]));
    if (m != vocab_->merges.end()) queue.push({m->second.rank, left, m->second.id});
  };
  for (std::int32_t i = 0; i < n; ++i) {
    prev[static_cast<std::size_t>(i)] = i - 1, next[static_cast<std::size_t>(i)] = i + 1 < n ? i + 1 : -1;
    if (i + 1 < n) consider(i, i + 1);
  }
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    const auto at = static_cast<std::size_t>(c.pos);
    if (word[at] < 0 || next[at] < 0) continue;  // (merged into its left neighbour, or the last)
    const auto right = static_cast<std::size_t>(next[at]);
    const auto m = vocab_->merges.find(bpe_pair_key(word[at], word[right]));
    if (m == vocab_->merges.end() || m->second.id != c.id) continue;  // (a stale candidate)
    word[at] = c.id, word[right] = -1;
    next[at] = next[right];
    if (next[at] >= 0) prev[static_cast<std::size_t>(next[at])] = c.pos;
    if (prev[at] >= 0) consider(prev[at], c.pos);
    if (next[at] >= 0) consider(c.pos, next[at]);
  }
  word.erase(std::remove(word.begin(), word.end(), -1), word.end());
  return word;
}

void BpeTokenizer::merge_piece(std::string_view piece, std::vector<std::int32_t>& out) {
  const auto hit = cache_.find(std::string(piece));
  if (hit != cache_.end()) {
    out.insert(out.end(), hit->second.begin(), hit->second.end());
    return;
  }
  std::vector<std::int32_t> word = merged(vocab_->symbols(piece));
  if (cache_.size() > (1u << 20)) cache_.clear();  // bounded: a long import meets many rare pieces
  out.insert(out.end(), word.begin(), word.end());
  cache_.emplace(std::string(piece), std::move(word));
}

std::vector<std::int32_t> BpeTokenizer::encode_with_specials(std::string_view text) {
  std::vector<std::int32_t> out;
  encode_split(text, vocab_->with_specials, Start::text, out);
  return out;
}

std::vector<std::int32_t> BpeTokenizer::encode(std::string_view text) {
  std::vector<std::int32_t> out;
  out.reserve(text.size() / 3);
  encode_split(text, vocab_->ordinary, Start::text, out);
  return out;
}

void BpeTokenizer::encode_split(std::string_view text, const AddedTokens& added, Start start,
                                std::vector<std::int32_t>& out) {
  for (std::size_t at = 0;;) {
    const AddedTokens::Match m = added.find(text, at);
    encode_segment(text.substr(at, std::min(m.at, text.size()) - at), start, out);
    if (m.id < 0) return;
    out.push_back(m.id);
    at = m.at + m.size;
    start = Start::after_special;
  }
}

std::vector<std::string_view> BpeTokenizer::parts(std::string_view text, std::size_t target) const {
  if (!vocab_->metaspace.on) return cut(text, target);
  return cut_where(text, target, [&](std::string_view s, std::size_t at) {
    return s[at] == ' ' && visible_ascii(s[at - 1]) && !vocab_->joined_before(s, at);
  });
}

std::vector<std::int32_t> BpeTokenizer::encode_part(std::string_view part, bool first) {
  std::vector<std::int32_t> out;
  out.reserve(part.size() / 3);
  encode_split(part, vocab_->ordinary, first ? Start::text : Start::inside, out);
  return out;
}

void BpeTokenizer::encode_segment(std::string_view text, Start start, std::vector<std::int32_t>& out) {
  if (!vocab_->metaspace.on) {
    // (NFC: each text between special tokens, as Hugging Face's normalizer; a part of a long
    // document too, whose cuts are before ASCII letters: nothing composes across them)
    const std::string normal = vocab_->nfc && nfc_may_change(text) ? nfc(text) : std::string();
    for (std::string_view p : pieces(normal.empty() ? text : normal)) merge_piece(p, out);
    return;
  }
  std::string normal;
  for (std::string_view w : vocab_->words(text, start, normal)) merge_piece(w, out);
}

const std::string& BpeTokenizer::token_bytes(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= vocab_->bytes_of.size())
    throw bad_input("token id " + std::to_string(id) + " is outside the vocabulary of " +
                    std::to_string(vocab_->bytes_of.size()) + " tokens");
  return vocab_->bytes_of[static_cast<std::size_t>(id)];
}

std::string BpeTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  std::string out;
  for (std::int32_t id : ids) out += token_bytes(id);
  return out;
}

std::int64_t BpeTokenizer::vocab_size() const { return static_cast<std::int64_t>(vocab_->bytes_of.size()); }
std::int32_t BpeTokenizer::eot() const { return vocab_->eot; }
const std::vector<std::int32_t>& BpeTokenizer::prefix() const { return vocab_->prefix; }
bool BpeTokenizer::space_first() const {
  return vocab_->metaspace.on && vocab_->metaspace.prepend != Metaspace::Prepend::never;
}

}  // namespace hpctrain
