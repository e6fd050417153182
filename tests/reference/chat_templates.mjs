// node tests/reference/chat_templates.mjs SRC NPM OUT: the chat-template cases of
// tests/e2e/chat_template.sh and their renderings by Hugging Face's Jinja in JavaScript
// (@huggingface/jinja, transformers.js's renderer), as OUT/cases.json and OUT/expected.json.
// Templates: the tokenizer_config.json files of the npm tokenizers tools/setup.sh installs
// (Llama 3, Qwen2.5, Gemma 3: as published) and tests/data/chat/*.jinja (the constructs of Llama
// 3.2's, Qwen3's, Mistral's, Phi-3's, SmolLM2's and Gemma 2's templates, and one of the rest).
// Each is rendered for five conversations, with and without the generation prompt, and for one
// conversation with the variables beside the messages the template reads (tools, enable_thinking). The
// variables are chat_template.hpp's: messages, add_generation_prompt, the config's *_token entries
// as text, a case's variables.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [src, npm, out] = process.argv.slice(2);
const { Template } = await import(pathToFileURL(path.join(npm, "@huggingface/jinja/dist/index.js")).href);

const configs = {};
for (const name of ["llama3", "qwen2_5", "gemma3"])
  configs[name] = fs.readFileSync(path.join(npm, `@lenml/tokenizer-${name}/models/tokenizer_config.json`), "utf8");
const tokens = {
  llama3_2: { bos_token: "<|begin_of_text|>", eos_token: "<|eot_id|>" },
  gemma2: { bos_token: "<bos>", eos_token: "<eos>" },
};
for (const file of fs.readdirSync(path.join(src, "tests/data/chat")).sort()) {
  if (!file.endsWith(".jinja")) continue;
  const name = file.slice(0, -6);
  const config = { ...(tokens[name] || { bos_token: { content: "<s>", lstrip: false }, eos_token: "</s>" }) };
  config.chat_template = fs.readFileSync(path.join(src, "tests/data/chat", file), "utf8");
  configs[name] = JSON.stringify(config, null, 2);
}

const conversations = {
  one: [{ role: "user", content: "Hello!" }],
  system: [
    { role: "system", content: "You are terse." },
    { role: "user", content: "  What is 2+2?\n" },
  ],
  turns: [
    { role: "user", content: "Hi" },
    { role: "assistant", content: "Hello! How can I help?" },
    { role: "user", content: "Tell me a joke.\nKeep it short." },
  ],
  thinking: [
    { role: "user", content: "Solve x+1=2" },
    { role: "assistant", content: "<think>\nx = 2 - 1\n</think>\n\nx = 1" },
    { role: "user", content: "And x+2=2? Say «ça va» too." },
  ],
  unordered: [{ role: "assistant", content: "I speak first." }],
};

function render(configText, messages, add_generation_prompt, variables = {}) {
  const config = JSON.parse(configText);
  const context = {};
  for (const [key, value] of Object.entries(config)) {
    if (!key.endsWith("_token")) continue;
    if (typeof value === "string") context[key] = value;
    else if (value && typeof value.content === "string") context[key] = value.content;
  }
  Object.assign(context, variables, { messages, add_generation_prompt });
  let text = config.chat_template;
  if (Array.isArray(text)) text = text.find((t) => t.name === "default").template;
  return new Template(text).render(context);
}

const cases = [], expected = {};
for (const [name, config] of Object.entries(configs))
  for (const [conversation, messages] of Object.entries(conversations))
    for (const add_generation_prompt of [true, false]) {
      const id = `${name}/${conversation}/${add_generation_prompt ? "prompt" : "no-prompt"}`;
      cases.push({ name: id, files: { "tokenizer_config.json": config }, messages, add_generation_prompt });
      try {
        expected[id] = { text: render(config, messages, add_generation_prompt) };
      } catch (e) {
        expected[id] = { error: String(e.message || e) };
      }
    }
// Variables beside the messages (apply_chat_template's keyword arguments, --chat-file's object):
// Qwen3's enable_thinking, Llama 3.2's tools (in the user message, and in the system message) and
// date_string; rendered with the templates that read them.
const tool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather «now» in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};
const variables = {
  thinking_off: { enable_thinking: false },
  tools_user: { tools: [tool], date_string: "07 Dec 2026" },
  tools_system: { tools: [tool], tools_in_user_message: false },
};
for (const [name, config] of Object.entries(configs))
  for (const [variant, vars] of Object.entries(variables)) {
    if (!config.includes(Object.keys(vars)[0])) continue;  // (only the templates that read it)
    const id = `${name}/${variant}/prompt`, messages = conversations.turns;
    cases.push({ name: id, files: { "tokenizer_config.json": config }, messages, variables: vars, add_generation_prompt: true });
    try {
      expected[id] = { text: render(config, messages, true, vars) };
    } catch (e) {
      expected[id] = { error: String(e.message || e) };
    }
  }
fs.writeFileSync(path.join(out, "cases.json"), JSON.stringify(cases, null, 1));
fs.writeFileSync(path.join(out, "expected.json"), JSON.stringify(expected, null, 1));
console.log(`${cases.length} cases from ${Object.keys(configs).length} templates`);
