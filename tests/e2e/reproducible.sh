#!/usr/bin/env bash
# reproducible.sh MPIRUN TRAINER SOURCE_DIR DATA_TOOL: [run] reproducible = layout gives the same bits
# whatever the layout. After 20 steps the checkpoint's parameters, buffers and optimizer state are
# byte-for-byte those of one rank, and the logged losses (TensorBoard's float32 values) equal: an
# MLP with dropout (SGD with momentum) on 2, 3 and 4 ranks and 2 stages x 2 (shard = none,
# optimizer, gradients, full), a CNN with batch norm on 3 ranks and 2 stages x 2, a GPT with
# dropout, AdamW and active clipping on 2, 3 and 4 ranks and 4 stages x 2, in bf16 on 2, and an
# elastic resume 2 (full) -> 3 (optimizer) -> 1. Controls: the default mode at 3 ranks ends
# elsewhere (the comparison can fail), a diverging run stops, and the refusals are one line each.
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

# An MLP with dropout (inputs/mnist_mlp.ini's shape, narrower), SGD with momentum, chunks of 2 samples.
mlp=(inputs/mnist_mlp.ini --set "model.layers=flatten dense(64) relu dropout(20) dense(10)" --set train.global_batch=24
  --set train.micro_batch=2 --set optim.name=sgd --set run.reproducible=layout)
run 1 mlp1 "${mlp[@]}"
run 2 mlp2 "${mlp[@]}"
run 3 mlp3 "${mlp[@]}" --set parallel.shard=optimizer
run 4 mlp4 "${mlp[@]}" --set parallel.shard=gradients
run 4 mlpp "${mlp[@]}" --set parallel.shard=full --set parallel.pipeline_parallel=2
check "MLP with dropout, SGD with momentum: 2, 3 (shard = optimizer), 4 (gradients) and 2 stages x 2 (full) end with one rank's bits" \
  $py "$tmp/same.py" 20 "$tmp/mlp1" "$tmp/mlp2" "$tmp/mlp3" "$tmp/mlp4" "$tmp/mlpp"
run 3 mlpoff "${mlp[@]}" --set run.reproducible=off
check "... the default mode at 3 ranks does not (the comparison can fail)" differs 20 "$tmp/mlp1" "$tmp/mlpoff"

# A small CNN (oneDNN convolutions) with batch norm (each chunk's statistics; the running ones
# from every chunk's, exactly), chunks of 4 samples.
cnn=(inputs/mnist_cnn.ini --set "model.layers=conv(8,3,pad=1) batchnorm relu maxpool(2) flatten dense(10)"
  --set train.global_batch=24 --set train.micro_batch=4 --set run.reproducible=layout --set train.sync_batchnorm=false)
run 1 cnn1 "${cnn[@]}"
run 3 cnn3 "${cnn[@]}"
run 4 cnnp "${cnn[@]}" --set parallel.pipeline_parallel=2
check "CNN with batch norm: 3 ranks and 2 stages x 2 end with one rank's bits (running statistics too)" \
  $py "$tmp/same.py" 20 "$tmp/cnn1" "$tmp/cnn3" "$tmp/cnnp"

# A character GPT with dropout, AdamW and clipping, chunks of one window (untied: weights tied
# across stages are refused).
"$data_tool" import-text --input tests/data/text/shakespeare-220k.txt --out "$tmp/text" >/dev/null
gpt=(inputs/shakespeare_gpt.ini --set data.path="$tmp/text" --set model.layers= --set model.arch=gpt --set model.n_layer=2
  --set model.n_head=4 --set model.n_embd=32 --set model.block_size=16 --set model.dropout=0.1
  --set model.tie_embeddings=false --set train.global_batch=12 --set train.micro_batch=1 --set optim.clip_norm=0.5
  --set optim.schedule=constant --set run.reproducible=layout)
run 1 gpt1 "${gpt[@]}"
run 2 gpt2 "${gpt[@]}"
run 3 gpt3 "${gpt[@]}" --set parallel.shard=optimizer
run 4 gpt4 "${gpt[@]}" --set parallel.shard=full
run 8 gptp "${gpt[@]}" --set parallel.pipeline_parallel=4 --set parallel.pipeline_schedule=gpipe
check "GPT with dropout, AdamW and clipping: 2, 3 (optimizer), 4 (full) and 4 stages x 2 end with one rank's bits" \
  $py "$tmp/same.py" 20 "$tmp/gpt1" "$tmp/gpt2" "$tmp/gpt3" "$tmp/gpt4" "$tmp/gptp"
run 1 gptbf1 "${gpt[@]}" --set precision.dtype=bf16 --set model.tie_embeddings=true
run 2 gptbf2 "${gpt[@]}" --set precision.dtype=bf16 --set model.tie_embeddings=true
check "... in bf16 with tied embeddings too (2 ranks against one)" $py "$tmp/same.py" 20 "$tmp/gptbf1" "$tmp/gptbf2"
# Elastic: 10 steps on 2 ranks (shard = full), 5 more on 3 (optimizer), the last 5 on one (a
# constant rate: the shorter schedules are the same; --resume-changed takes the longer one).
run 2 gpte "${gpt[@]}" --set train.steps=10 --set parallel.shard=full
mv "$tmp/gpte.log" "$tmp/gpte-2.log"
run 3 gpte "${gpt[@]}" --set checkpoint.resume=auto --set train.steps=15 --set parallel.shard=optimizer --resume-changed
mv "$tmp/gpte.log" "$tmp/gpte-3.log"
"$mpirun" -q -np 1 --oversubscribe --bind-to none "$trainer" "${gpt[@]}" --set "run.out_dir=$tmp/gpte" \
  --set train.steps=20 --set train.eval_every=0 --set log.log_every=5 --set checkpoint.every_steps=5 \
  --set checkpoint.keep=5 --set log.tensorboard=true --set checkpoint.resume=auto --resume-changed \
  >"$tmp/gpte-1.log" 2>&1
check "an elastic resume 2 (full) -> 3 (optimizer) -> 1 ranks continues bit for bit (parameters, state, losses)" \
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
expect_refusal "... with synchronized batch norm" "sync_batchnorm" 1 inputs/mnist_resnet.ini --set run.reproducible=layout \
  --set train.micro_batch=8 --set train.sync_batchnorm=true
expect_refusal "... with weights tied across pipeline stages" "tied across pipeline stages" 2 "${gpt[@]}" \
  --set model.tie_embeddings=true --set parallel.pipeline_parallel=2
expect_refusal "... with a chunk that does not divide a rank's batch" "micro_batch = 5 does not divide" 2 "${mlp[@]}" \
  --set train.micro_batch=5
finish
