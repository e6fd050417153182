// The Jinja subset of chat templates (data/jinja.hpp) on cases whose Jinja output is written out
// by hand: whitespace control with trim_blocks and lstrip_blocks, loops and their variables,
// scopes and namespace(), slices, filters, tests, methods, macros; one-line errors naming the
// template and line; apply_chat_template's choice of template and special tokens
// (data/chat_template.hpp). tests/e2e/chat_template.sh compares real chat templates with
// Hugging Face's JavaScript renderer.
#include <regex>

#include <gtest/gtest.h>

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/chat_template.hpp"
#include "hpctrain/data/jinja.hpp"

using namespace hpctrain;

namespace {
std::string render(const std::string& text, const nlohmann::ordered_json& context = nlohmann::ordered_json::object()) {
  return jinja::Template(text, "t").render(context);
}
std::string error_of(const std::string& text,
                     const nlohmann::ordered_json& context = nlohmann::ordered_json::object()) {
  try {
    render(text, context);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(Jinja, WhiteSpaceControlAsHuggingFaceRendersIt) {
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: its line's indentation too.
  EXPECT_EQ(render("a\n  {% if true %}\n  b\n  {% endif %}\nc"), "a\n  b\nc");
  EXPECT_EQ(render("a  {{- ' b ' -}}  c"), "a b c");
  EXPECT_EQ(render("{{ 'x' }}\ny"), "x\ny");  // (not after an expression)
  EXPECT_EQ(render("a {%- if true -%} \n b {%- endif %}"), "ab");
  EXPECT_EQ(render("a\n  {%+ if true %}b{% endif %}"), "a\n  b");
  EXPECT_EQ(render("{# a comment #}\nx"), "x");
  EXPECT_EQ(render("{% if true +%}\nx{% endif %}"), "\nx");
}

TEST(Jinja, LoopsScopesAndNamespaces) {
  const nlohmann::ordered_json c = {{"xs", {"a", "b", "c"}}};
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ x }}{% if not loop.last %},{% endif %}{% endfor %}", c),
            "1a,2b,3c");
  EXPECT_EQ(render("{% for x in xs if x != 'b' %}{{ loop.index0 }}/{{ loop.length }}{{ x }} {% endfor %}", c),
            "0/2a 1/2c ");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  // A set inside a loop stays inside; a namespace's attribute carries out.
  EXPECT_EQ(render("{% set n = 0 %}{% set ns = namespace(n=0) %}{% for x in xs %}{% set n = n + 1 %}"
                   "{% set ns.n = ns.n + 1 %}{% endfor %}{{ n }} {{ ns.n }}",
                   c),
            "0 3");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"), "a=1;b=2;");
  EXPECT_EQ(render("{% for x in xs %}{% if x == 'b' %}{% break %}{% endif %}{{ x }}{% endfor %}", c), "a");
  EXPECT_EQ(render("{% for x in xs %}{% if x == 'b' %}{% continue %}{% endif %}{{ x }}{% endfor %}", c), "ac");
}

TEST(Jinja, ExpressionsFiltersTestsAndMethods) {
  const nlohmann::ordered_json c = {{"xs", {1, 2, 3, 4}}, {"m", {{"role", "user"}, {"content", " hi "}}}};
  EXPECT_EQ(render("{{ xs[::-1] }} {{ xs[1:3] }} {{ xs[-1] }} {{ (xs | length) - 1 }}", c), "[4, 3, 2, 1] [2, 3] 4 3");
  EXPECT_EQ(render("{{ m.content | trim }}|{{ m['role'] | upper }}|{{ m.missing is defined }}", c), "hi|USER|False");
  EXPECT_EQ(render("{{ 'a<think>b</think> c'.split('</think>')[-1].lstrip() }}"), "c");
  EXPECT_EQ(render("{{ 'x' ~ 1 ~ none }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ 1 / 2 }} {{ 2 * 1.5 }}"),
            "x1None 3 -4 1 0.5 3.0");
  EXPECT_EQ(render("{{ 'yes' if 'ell' in 'hello' else 'no' }} {{ 3 not in xs }} {{ xs is iterable }}", c),
            "yes False True");
  EXPECT_EQ(render("{{ m | tojson }} {{ [1, 'a', true, none] | tojson }}", c),
            "{\"role\": \"user\", \"content\": \" hi \"} [1, \"a\", true, null]");
  EXPECT_EQ(render("{{ xs | select('even') | list }} {{ [m] | map(attribute='role') | join(',') }}", c), "[2, 4] user");
  EXPECT_EQ(render("{{ undefined_name }}|{{ undefined_name | default('d') }}|{{ none or 'x' }}"), "|d|x");
  EXPECT_EQ(render("{{ 'a' 'b' }} {{ 'it''s' }} {{ \"q\\\"\\n\" | length }}"), "ab its 3");
  EXPECT_EQ(render("{% macro tag(x, y='!') %}<{{ x }}{{ y }}>{% endmacro %}{{ tag('a') }}{{ tag('b', y='?') }}"),
            "<a!><b?>");
  EXPECT_EQ(render("{% set s %}in {{ 1 + 1 }}{% endset %}[{{ s }}]"), "[in 2]");
  EXPECT_EQ(render("{% generation %}kept{% endgeneration %}"), "kept");
  // As Python prints and counts: repr() in lists, True, characters (not bytes), strip(chars).
  EXPECT_EQ(
      render("{{ ['a', 1, true, none] }} {{ 1 == 1 }} {{ 'ça va' | length }} {{ 'ça va'[1:4] }} {{ 'ça' | reverse }}"),
      "['a', 1, True, None] True 5 a v aç");
  EXPECT_EQ(render("{{ 'xxabcxx'.strip('x') }} {{ 2 ** 10 }} {{ -2 ** 2 }}"), "abc 1024 4");
}

TEST(Jinja, ErrorsNameTheTemplateAndLine) {
  EXPECT_EQ(error_of("a\n{% if true %}x"), "t: line 2: missing {% endif %}");
  EXPECT_EQ(error_of("\n\n{% include 'x' %}"),
            "t: line 3: the statement 'include' is not supported (hpctrain's chat templates: data/jinja.hpp)");
  EXPECT_EQ(error_of("{{ raise_exception('roles must alternate') }}"),
            "t: line 1: the template raised: roles must alternate");
  EXPECT_EQ(error_of("{{ 'a' | wordwrap }}"),
            "t: line 1: the filter 'wordwrap' is not supported (hpctrain's chat templates: data/jinja.hpp)");
  EXPECT_EQ(error_of("{{ 'a' + 1 }}"), "t: line 1: '+' of a string and an integer (use ~ to join text)");
  EXPECT_EQ(error_of("{{ x"), "t: line 1: unclosed tag");
  EXPECT_EQ(error_of("{% endfor %}"), "t: line 1: 'endfor' without its opening statement");
  EXPECT_EQ(error_of("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"),
            "t: line 1: f() calls itself 200 deep: stopped");
}

// data/jinja.hpp's limits: each just inside (rendered as Python's Jinja does) and just past (one
// line). tests/fuzz/fuzz_chat.cpp looks for what they miss.
TEST(Jinja, DownloadedTemplatesCannotHangCrashOrFillMemory) {
  const auto refused = [](const std::string& text, const std::string& why) {
    const std::string e = error_of(text);
    EXPECT_NE(e.find(why), std::string::npos) << text.substr(0, 80) << ": " << e;
    EXPECT_EQ(e.rfind("t: line ", 0), 0u) << e;  // (the template and line first)
  };
  // Integers within 64 bits, as Python's there (floor division and modulo included).
  EXPECT_EQ(render("{{ 9223372036854775807 }} {{ 2 ** 62 }} {{ (-1) ** 9999999999 }} {{ 0 ** 0 }} {{ 7 // -2 }} {{ "
                   "7 % -2 }} {{ -9223372036854775807 - 1 }} {{ 1" +
                   std::string(400, '0') + ".5 }}"),
            "9223372036854775807 4611686018427387904 -1 1 -4 -1 -9223372036854775808 inf");
  refused("{{ 9223372036854775808 }}", "the integer 9223372036854775808 is outside 64 bits");
  refused("{{ 9223372036854775807 + 1 }}", "outside 64 bits");
  refused("{{ 2 ** 63 }}", "outside 64 bits");
  refused("{{ 3037000500 * 3037000500 }}", "outside 64 bits");
  refused("{{ (-9223372036854775807 - 1) // -1 }}", "outside 64 bits");
  refused("{{ -(-9223372036854775807 - 1) }}", "outside 64 bits");
  refused("{{ (-9223372036854775807 - 1) | abs }}", "outside 64 bits");
  refused("{{ 1" + std::string(300, '0') + ".0 | int }}", "outside 64 bits");
  // (a loop without end before: Python raises ValueError)
  refused("{{ 'a,b'.split('') }}", "split() of an empty separator");
  refused("{{ 'a,b'.split(1) }}", "split() of an integer");
  refused("{{ range + 1 }}", "'+' of a function and an integer");  // (read past a table before)
  refused("{{ messages[] }}", "expected a value in [ ]");          // (a null operand, rendered: a crash)
  EXPECT_EQ(render("{{ 'abc'[:] }}{{ 'abc'[::2] }}{{ 'abc'[1:] }}"), "abcacbc");
  // range(): Jinja's sandbox's 100,000 items.
  EXPECT_EQ(render("{{ range(100000) | length }} {{ range(-5, 99995) | length }} {{ range(3, 0, -1) | list }}"),
            "100000 100000 [3, 2, 1]");
  refused("{{ range(100001) }}", "range() of more than 100000 items");
  refused("{{ range(-9223372036854775807, 9223372036854775807) }}", "range() of more than 100000 items");
  // Texts up to 16 MiB; replace() linear in its text.
  EXPECT_EQ(render("{{ ('ab' * 8388608) | length }} {{ 'abab' | replace('a', 'xyz') }} {{ 'abab' | replace('a', "
                   "'x', 1) }}"),
            "16777216 xyzbxyzb xbab");
  refused("{{ 'ab' * 8388609 }}", "a text over 16 MiB");
  refused("{{ 'ab' * 9223372036854775807 }}", "a text over 16 MiB");
  refused("{{ ('x' * 1024) | replace('x', 'x' * 16385) }}", "replace() makes a text over 16 MiB");
  EXPECT_EQ(render("{% for i in range(4) %}{{ 'x' * 4194304 }}{% endfor %}").size(), 16777216u);
  refused("{% for i in range(5) %}{{ 'x' * 4194304 }}{% endfor %}", "a text over 16 MiB");
  EXPECT_EQ(render("{{ 'abc' * 3 }}|{{ 'abc' * 0 }}|{{ 'abc' * -2 }}|{{ '' * 5 }}"), "abcabcabc|||");
  // A text's characters: counted and indexed in place; one by one (about 100 bytes each) up to 1 MiB.
  EXPECT_EQ(
      render("{{ 'h\u00e9llo'[1] }}{{ 'h\u00e9llo'[-4] }}{{ 'h\u00e9llo'[-1] }}{{ 'h\u00e9llo'[5] }} {{ "
             "'h\u00e9llo' | length }} {{ ('\u00e9' * 1048576) | length }} {{ ('x' * 1048576) | list | length }}"),
      "\u00e9\u00e9o 5 1048576 1048576");
  refused("{% for c in 'x' * 1048577 %}{% endfor %}", "the characters of a text over 1 MiB, one by one");
  refused("{{ ('x' * 1048577) | unique }}", "the characters of a text over 1 MiB, one by one");
  // Brackets and blocks 100 deep; expressions 500 operations deep (a chain of 300,000 ending in a
  // syntax error is refused without a crash: Expr's destructor does not recurse).
  const auto repeat = [](const std::string& x, int n) {
    std::string out;
    for (int k = 0; k < n; ++k) out += x;
    return out;
  };
  EXPECT_EQ(render("{{ " + repeat("(", 99) + "1" + repeat(")", 99) + " }}"), "1");
  refused("{{ " + repeat("(", 100) + "1" + repeat(")", 100) + " }}", "nested more than 100 deep");
  refused("{{ " + repeat("not ", 100) + "1 }}", "nested more than 100 deep");
  EXPECT_EQ(render(repeat("{% if true %}", 100) + "x" + repeat("{% endif %}", 100)), "x");
  refused(repeat("{% if true %}", 101) + "x" + repeat("{% endif %}", 101), "blocks nested more than 100 deep");
  EXPECT_EQ(render("{{ 1" + repeat(" + 1", 499) + " }}"), "500");
  refused("{{ 1" + repeat(" + 1", 500) + " }}", "an expression more than 500 operations deep");
  refused("{{ 1" + repeat(" ~ 1", 600) + " }}", "an expression more than 500 operations deep");
  refused("{{ 1" + repeat(" ~ 1", 300000) + " ~ }}", "expected a value");  // (unwound: a crash before)
  // Calls: a macro calling itself stops at 200, however deep each call's expression.
  const std::string countdown = "{% macro f(n) %}{{ f(n - 1) if n > 0 else 'end' }}{% endmacro %}";
  EXPECT_EQ(render(countdown + "{{ f(150) }}"), "end");
  refused(countdown + "{{ f(1000000) }}", "calls itself 200 deep");
  // Values 100 lists deep (the variables too); attributes set on namespaces alone, never put inside
  // a value (a namespace holding itself would print without end).
  const std::string wrap = "{% set ns = namespace(x=1) %}{% for i in range(N) %}{% set ns.x = [ns.x] %}{% endfor %}ok";
  EXPECT_EQ(render(std::regex_replace(wrap, std::regex("N"), "100")), "ok");
  refused(std::regex_replace(wrap, std::regex("N"), "101"), "a value nested more than 100 deep");
  nlohmann::ordered_json deep = 1;
  for (int k = 0; k < 101; ++k) deep = nlohmann::ordered_json::array({deep});
  EXPECT_EQ(render("x", {{"v", deep[0]}}), "x");
  EXPECT_NE(error_of("x", {{"v", deep}}).find("t: the variables: a value nested more than 100 deep"),
            std::string::npos);
  refused("{% set d = dict(a=1) %}{% set d.a = 2 %}", "set d.a: not a namespace()");
  refused("{% set ns = namespace(a=1) %}{% set ns.me = ns %}{{ ns }}", "a namespace() inside");
  refused("{% set ns = namespace(a=1) %}{{ [ns] }}", "a namespace() inside");
  refused("{% set ns = namespace(a=1) %}{{ namespace(b=ns) }}", "a namespace() inside");
  // Looking up a list shares its items: not charged per item (Qwen3's template looks up `messages`
  // in its loop over them, which made 20,001 messages 200 million steps).
  nlohmann::ordered_json many = nlohmann::ordered_json::array();
  for (int k = 0; k < 5000; ++k) many.push_back({{"role", "user"}});
  EXPECT_EQ(jinja::Template("{% for m in messages %}{{ messages[loop.index0].role[0] }}{% endfor %}", "t")
                .render({{"messages", many}}, 100000)
                .size(),
            5000u);
  // The work a render may do (10 million steps by default; here 100,000 against two loops' 100 x 100
  // and 1,000 x 1,000).
  const std::string loops = "{% for i in range(N) %}{% for j in range(N) %}{% endfor %}{% endfor %}ok";
  EXPECT_EQ(jinja::Template(std::regex_replace(loops, std::regex("N"), "100"), "t").render({}, 100000), "ok");
  try {
    jinja::Template(std::regex_replace(loops, std::regex("N"), "1000"), "t").render({}, 100000);
    ADD_FAILURE() << "a million loop steps ran within 100,000";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t: line 1: the template ran more than 100000 steps"), std::string::npos)
        << e.what();
  }
}

TEST(ChatTemplate, TakesTheTemplateFileOrTheConfigsDefaultWithItsSpecialTokens) {
  Conversation messages;
  messages.messages = {{{"role", "user"}, {"content", "Hi"}}};
  const std::string config =
      R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>", "add_bos_token": true,
          "chat_template": [{"name": "tool_use", "template": "tools"},
                            {"name": "default", "template": "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}[assistant] {% endif %}"}]})";
  EXPECT_EQ(apply_chat_template({{"tokenizer_config.json", config}}, "ckpt", messages, true),
            "<s>[user] Hi</s>[assistant] ");
  EXPECT_EQ(apply_chat_template({{"tokenizer_config.json", config}}, "ckpt", messages, false), "<s>[user] Hi</s>");
  // chat_template.jinja (transformers' newer folders) wins over the config's
  EXPECT_EQ(apply_chat_template({{"tokenizer_config.json", config}, {"chat_template.jinja", "{{ bos_token }}!"}},
                                "ckpt", messages, true),
            "<s>!");
  try {
    apply_chat_template({{"tokenizer_config.json", R"({"bos_token": "<s>"})"}}, "ckpt", messages, true);
    FAIL() << "no template accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).substr(0, 29), "ckpt holds no chat template (");
  }
  EXPECT_THROW(require_chat_template({{"tokenizer_config.json", R"({"bos_token": "<s>"})"}}, "ckpt"), Error);
  EXPECT_NO_THROW(require_chat_template({{"chat_template.jinja", "x"}}, "ckpt"));
}

// --chat-file: the messages' list, or an object with them and the template's other variables,
// which win over the special tokens (as apply_chat_template's keyword arguments do).
TEST(ChatTemplate, ConversationFilesGiveMessagesAndVariables) {
  const std::string config = R"({"bos_token": "<s>", "chat_template": "{{ bos_token }}{% if enable_thinking is )"
                             R"(false %}[no think]{% endif %}{% for m in messages %}[{{ m.role }}] {{ m.content }} )"
                             R"({% endfor %}{{ tools | length if tools is defined else '-' }}"})";
  const Conversation list =
      parse_conversation(R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])", "c");
  EXPECT_EQ(apply_chat_template({{"tokenizer_config.json", config}}, "ckpt", list, true),
            "<s>[system] Be brief. [user] Hi -");
  const Conversation object = parse_conversation(
      R"({"messages": [{"role": "user", "content": "Hi"}], "enable_thinking": false, "tools": [{"name": "f"}],
          "bos_token": "<B>"})",
      "c");
  EXPECT_EQ(object.variables.size(), 3u);
  EXPECT_EQ(apply_chat_template({{"tokenizer_config.json", config}}, "ckpt", object, true), "<B>[no think][user] Hi 1");
  const auto error_of = [](const std::string& text) {
    try {
      parse_conversation(text, "conv.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(error_of("[{\"role\": \"user\"}").substr(0, 21), "conv.json: not JSON (");
  EXPECT_EQ(error_of("{\"conversation\": []}").substr(0, 69),
            "conv.json: neither a list of messages nor an object with \"messages\" (");
  EXPECT_EQ(error_of("[]"), "conv.json: \"messages\" is not a list of one message or more");
  EXPECT_EQ(error_of("{\"messages\": \"Hi\"}"), "conv.json: \"messages\" is not a list of one message or more");
  EXPECT_EQ(error_of(R"([{"role": "user", "content": "a"}, {"content": "b"}])"),
            "conv.json: message 1 is not an object with a string \"role\" ({\"content\":\"b\"})");
  // (a long message: its first 60 bytes, in ASCII with \u escapes, so no character is cut)
  EXPECT_EQ(error_of("[{\"content\": \"" + std::string(20, 'a') + "\u00e9\u00e9\u00e9\u00e9\u00e9\"}]"),
            "conv.json: message 0 is not an object with a string \"role\" ({\"content\":\"" + std::string(20, 'a') +
                "\\u00e9\\u00e9\\u00e9\\u00e9\\u00...)");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user"}], "add_generation_prompt": false})").substr(0, 58),
            "conv.json: add_generation_prompt is not a variable to give");
  EXPECT_EQ(error_of(R"([{"role": "user", "content": "a"}])"), "accepted");
  // JSON 100 deep, not deeper (a message nested 100,000 deep would end the stack in the message
  // that quotes it, and in the template's values).
  const auto nested = [](int n) {
    return R"([{"role": "user", "content": )" + std::string(static_cast<std::size_t>(n), '[') + "1" +
           std::string(static_cast<std::size_t>(n), ']') + "}]";
  };
  EXPECT_EQ(error_of(nested(98)), "accepted");  // (the list, the message and 98: 100)
  EXPECT_EQ(error_of(nested(99)), "conv.json: JSON nested more than 100 deep");
  EXPECT_EQ(error_of("[" + nested(100000) + "]"), "conv.json: JSON nested more than 100 deep");
}
