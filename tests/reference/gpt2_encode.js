// node gpt2_encode.js PACKAGE_DIR [--lines] FILE...: GPT-2's ids from the JavaScript reference
// (npm gpt-3-encoder@1.1.4), one line per document (a whole file, or each line of it): what
// `hpctrain-data tokenize` prints, for tests/e2e/tokenizer.sh to compare.
const fs = require('fs');
const { encode } = require(process.argv[2]);
let lines = false;
for (const arg of process.argv.slice(3)) {
  if (arg === '--lines') { lines = true; continue; }
  const text = fs.readFileSync(arg, 'utf-8');
  const docs = lines ? text.split('\n') : [text];
  if (lines && text.endsWith('\n')) docs.pop();  // (no document after the last newline)
  for (const doc of docs) process.stdout.write(encode(doc).join(' ') + '\n');
}
