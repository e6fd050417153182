#!/usr/bin/env bash
# tests/e2e/chat_template.sh SRC CHAT_RENDER: hpctrain's chat templates (data/jinja.hpp,
# data/chat_template.hpp) against Hugging Face's Jinja in JavaScript (npm @huggingface/jinja@0.5.13,
# transformers.js's renderer, installed by tools/setup.sh): tests/reference/chat_templates.mjs's
# 107 cases (the published Llama 3, Qwen2.5 and Gemma 3 templates and tests/data/chat/*.jinja,
# five conversations each, with and without the generation prompt, and one with the variables
# beside the messages that the template reads: tools, enable_thinking) render to the same text,
# or both raise. Without the package or node: FAIL in CI, else skip.
set -u
src=$(cd "$1" && pwd)
render=$2
source "$src/tests/e2e/lib.sh"
npm=$src/.cache/npm/node_modules
if [ ! -f "$npm/@huggingface/jinja/package.json" ] || ! command -v node >/dev/null; then
  if [ -n "${CI:-}" ]; then echo "FAIL Hugging Face's Jinja (npm @huggingface/jinja, tools/setup.sh) or node is missing"; exit 1; fi
  echo "SKIP: no $npm/@huggingface/jinja (tools/setup.sh installs it) or no node"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
made=$(node "$src/tests/reference/chat_templates.mjs" "$src" "$npm" "$tmp" 2>&1)
check "the reference renders the cases ($made)" test -s "$tmp/expected.json"
"$render" "$tmp/cases.json" >"$tmp/ours.json" 2>"$tmp/ours.err"
check "hpctrain renders them ($(wc -c <"$tmp/ours.json") bytes)" test -s "$tmp/ours.json"
report=$(/usr/bin/python3 - "$tmp/expected.json" "$tmp/ours.json" <<'PYTHON'
import json, sys
want, got = (json.load(open(f)) for f in sys.argv[1:3])
same = raised = 0
for name, w in want.items():
    g = got.get(name, {})
    if "error" in w and "error" in g:
        raised += 1
    elif w == g:
        same += 1
    else:
        print(f"DIFF {name}:\n  theirs {json.dumps(w)[:400]}\n  ours   {json.dumps(g)[:400]}")
print(f"{same} equal, {raised} raised by both, of {len(want)}")
PYTHON
)
summary=${report##*$'\n'}
[ "$summary" = "$report" ] || echo "$report" | head -40
check "the same text in every case, or an error in both ($summary)" test "$summary" = "${summary%% of *} of $(/usr/bin/python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))))' "$tmp/cases.json")" -a "${report#DIFF}" = "$report"
# Negative control: a case whose conversation differs must differ (the comparison can fail).
check "... and the comparison sees a changed conversation" /usr/bin/python3 -c "
import json; w = json.load(open('$tmp/expected.json')); assert w['llama3/one/prompt'] != w['llama3/turns/prompt']"
check "... and a variable beside the messages (enable_thinking = false) changes Qwen3's text" /usr/bin/python3 -c "
import json; w = json.load(open('$tmp/expected.json')); assert w['qwen3/thinking_off/prompt'] != w['qwen3/turns/prompt']"
finish
