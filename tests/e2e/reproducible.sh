#!/usr/bin/env bash
# reproducible.sh MPIRUN TRAINER SOURCE_DIR DATA_TOOL: [run] reproducible = layout gives the same bits
# whatever the layout. After 20 steps the checkpoint's parameters and optimizer state are
# byte-for-byte those of one rank, for an MLP with dropout (SGD with momentum) on 1, 2, 3 and 4
# ranks (shard = none and optimizer), a small CNN on 1 and 3, and a GPT with dropout and AdamW
# (clipping active) on 1, 2, 3 and 4 ranks and in bf16 on 1 and 2; the logged losses (TensorBoard's float32 values) are equal
# too. An elastic resume 2 -> 3 -> 1 ranks continues bit for bit. Controls: the default mode at 3
# ranks ends elsewhere (the comparison can fail), and the refusals are one line each.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_start "$@"  # $mpirun $trainer $src, the working directory $src, $tmp (removed at exit)
data_tool=$4
py=/usr/bin/python3
run() {  # np out_dir deck args...
  local np=$1 out=$2
  shift 2
  "$mpirun" -q -np "$np" --oversubscribe --bind-to none "$trainer" "$1" --set "run.out_dir=$tmp/$out" \
    --set train.steps=20 --set train.eval_every=0 --set log.log_every=5 --set checkpoint.every_steps=5 \
    --set checkpoint.keep=5 --set log.tensorboard=true "${@:2}" >"$tmp/$out.log" 2>&1
}
# The checkpoint's model and optimizer datasets, byte for byte, and the logged losses as floats.
cat >"$tmp/same.py" <<'PY'
import pathlib, subprocess, sys
import h5py
step = int(sys.argv[1])
runs = [pathlib.Path(p) for p in sys.argv[2:]]
def tensors(run):
    f = h5py.File(run / "checkpoints" / ("ckpt-%08d.h5" % step), "r")
    out = {}
    for group in ("model", "optimizer"):
        if group in f:
            f[group].visit(lambda n: out.__setitem__(group + "/" + n, f[group][n][()].tobytes())
                           if isinstance(f[group][n], h5py.Dataset) else None)
    return out
def losses(run):
    text = subprocess.run(["/usr/bin/python3", "tools/tensorboard/read_events.py", "--purge", str(run / "tensorboard")],
                          check=True, capture_output=True, text=True).stdout
    return [l for l in text.splitlines() if l.startswith("train/loss ")]
first, first_losses = tensors(runs[0]), losses(runs[0])
assert len(first) > 3 and len(first_losses) == 4, (list(first), first_losses)
for r in runs[1:]:
    mine = tensors(r)
    assert mine.keys() == first.keys(), (r, sorted(mine), sorted(first))
    differ = [n for n in first if mine[n] != first[n]]
    assert not differ, "%s: %d of %d tensors differ from %s, first %s" % (r, len(differ), len(first), runs[0], differ[0])
    assert losses(r) == first_losses, (r, losses(r), first_losses)
PY
differs() { ! $py "$tmp/same.py" "$@" >/dev/null 2>&1; }
four_layouts() {  # what name deck args...: 1, 2, 3 (shard = optimizer) and 4 ranks, the same bits
  local what=$1 name=$2
  shift 2
  run 1 "${name}1" "$@"
  run 2 "${name}2" "$@"
  run 3 "${name}3" "$@" --set parallel.shard=optimizer
  run 4 "${name}4" "$@"
  check "$what: 2, 3 (shard = optimizer) and 4 ranks end with one rank's bits (parameters, optimizer state, losses)" \
    $py "$tmp/same.py" 20 "$tmp/${name}1" "$tmp/${name}2" "$tmp/${name}3" "$tmp/${name}4"
}

# An MLP with dropout (inputs/mnist_mlp.ini's shape, narrower), SGD with momentum, chunks of 2 samples.
mlp=(inputs/mnist_mlp.ini --set "model.layers=flatten dense(64) relu dropout(20) dense(10)" --set train.global_batch=24
  --set train.micro_batch=2 --set optim.name=sgd --set run.reproducible=layout)
four_layouts "MLP with dropout, SGD with momentum" mlp "${mlp[@]}"
run 3 mlpoff "${mlp[@]}" --set run.reproducible=off
check "... the default mode at 3 ranks does not (the comparison can fail)" differs 20 "$tmp/mlp1" "$tmp/mlpoff"

# A small CNN (oneDNN convolutions), chunks of 4 samples.
cnn=(inputs/mnist_cnn.ini --set "model.layers=conv(8,3,pad=1) relu maxpool(2) flatten dense(10)"
  --set train.global_batch=24 --set train.micro_batch=4 --set run.reproducible=layout)
run 1 cnn1 "${cnn[@]}"
run 3 cnn3 "${cnn[@]}"
check "CNN: 3 ranks end with one rank's bits" $py "$tmp/same.py" 20 "$tmp/cnn1" "$tmp/cnn3"

# A character GPT with dropout, AdamW and clipping, chunks of one window.
"$data_tool" import-text --input tests/data/text/shakespeare-220k.txt --out "$tmp/text" >/dev/null
gpt=(inputs/shakespeare_gpt.ini --set data.path="$tmp/text" --set model.layers= --set model.arch=gpt --set model.n_layer=2
  --set model.n_head=4 --set model.n_embd=32 --set model.block_size=16 --set model.dropout=0.1
  --set train.global_batch=12 --set train.micro_batch=1 --set optim.clip_norm=0.5 --set optim.schedule=constant
  --set run.reproducible=layout)
four_layouts "GPT with dropout, AdamW and clipping" gpt "${gpt[@]}"
run 1 gptbf1 "${gpt[@]}" --set precision.dtype=bf16
run 2 gptbf2 "${gpt[@]}" --set precision.dtype=bf16
check "... in bf16 too (2 ranks against one)" $py "$tmp/same.py" 20 "$tmp/gptbf1" "$tmp/gptbf2"
# Elastic: 10 steps on 2 ranks, 5 more on 3, the last 5 on one (a constant rate: the shorter
# schedules are the same; --resume-changed takes the longer one).
run 2 gpte "${gpt[@]}" --set train.steps=10
mv "$tmp/gpte.log" "$tmp/gpte-2.log"
run 3 gpte "${gpt[@]}" --set checkpoint.resume=auto --set train.steps=15 --resume-changed
mv "$tmp/gpte.log" "$tmp/gpte-3.log"
"$mpirun" -q -np 1 --oversubscribe --bind-to none "$trainer" "${gpt[@]}" --set "run.out_dir=$tmp/gpte" \
  --set train.steps=20 --set train.eval_every=0 --set log.log_every=5 --set checkpoint.every_steps=5 \
  --set checkpoint.keep=5 --set log.tensorboard=true --set checkpoint.resume=auto --resume-changed \
  >"$tmp/gpte-1.log" 2>&1
check "an elastic resume 2 -> 3 -> 1 ranks continues bit for bit (parameters, state, the logged losses)" \
  $py "$tmp/same.py" 20 "$tmp/gpt1" "$tmp/gpte"

msg=$("$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" "${mlp[@]}" --set optim.lr=1e30 --set train.steps=10 \
  --set log.log_every=5 --set run.out_dir="$tmp/diverged" 2>&1)
check "a diverging run stops on its non-finite loss (the exact sums do not drop it)" \
  grep -q "the training loss is not finite (nan) at step 5" <<<"$msg"

refused=0
expect_refusal() {  # what pattern np extra-args...
  local what=$1 pattern=$2 np=$3 msg rc
  shift 3
  refused=$((refused + 1))
  msg=$("$mpirun" -q -np "$np" --oversubscribe --bind-to none "$trainer" "$@" --set train.steps=1 \
    --set run.out_dir="$tmp/refused$refused" 2>&1)
  rc=$?
  check "$what: exit 2, one line ($rc)" test $rc -eq 2 -a -n "$(grep -- "$pattern" <<<"$msg")"
}
expect_refusal "reproducible without a chunk" "set \[train\] micro_batch" 1 "${mlp[@]}" --set train.micro_batch=auto
expect_refusal "... with tensor parallelism" "tensor_parallel > 1" 2 "${gpt[@]}" --set parallel.tensor_parallel=2 \
  --set model.vocab_multiple=2
expect_refusal "... with batch norm" "batchnorm" 1 inputs/mnist_resnet.ini --set run.reproducible=layout \
  --set train.micro_batch=8
expect_refusal "... with a chunk that does not divide a rank's batch" "micro_batch = 5 does not divide" 2 "${mlp[@]}" \
  --set train.micro_batch=5
finish
