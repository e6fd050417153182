#!/usr/bin/env bash
# volumes.sh MPIRUN TRAINER SOURCE_DIR DATA_TOOL VOLUME_DUMP: 3-D networks and regression
# (docs/volumes.md).
# - Against PyTorch (float64, tests/reference/volume_vs_torch.py): a small 3-D network's outputs,
#   loss and every gradient, with mse, mae and huber, 'same' padding with an even kernel included.
# - The synthetic cosmology set against an independent numpy implementation of its generator
#   (tests/reference/cosmo_check.py).
# - inputs/cosmoflow_32.ini trained 96 steps on 512 synthetic volumes: its test MAE under half the
#   untrained network's and below 0.4 (a constant prediction of 0 scores 0.5 on targets uniform
#   in [-1, 1]).
# - Refusals: a regression loss on classes, target_names that do not name the targets.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_start "$@"  # $mpirun $trainer $src, the working directory $src, $tmp (removed at exit)
data_tool=$4 dump=$5
py=/usr/bin/python3
export HPCTRAIN_TRAINER=$trainer

net="conv3d(4,2,pad=same) leaky_relu(0.3) maxpool3d(2) conv3d(6,3,pad=1) leaky_relu(0.3) avgpool3d(2) conv3d(5,2,stride=2) gap3d dense(8) tanh dense(3) tanh scale(1.2)"
flat="conv3d(3,3,pad=1) leaky_relu(0.1) maxpool3d(2) flatten dense(6) leaky_relu(0.2) dense(4)"
for loss in mse mae huber; do
  layers=$net dims="2 8 8 8 3"
  [ $loss = huber ] && layers=$flat dims="1 6 4 8 4"
  "$dump" "$tmp/$loss.h5" "$layers" $dims 5 $loss 7 >/dev/null
  check "a 3-D network with $loss: outputs, loss and gradients as PyTorch's" \
    $py tests/reference/volume_vs_torch.py "$tmp/$loss.h5" "$layers" ${dims% *} $loss
done

"$data_tool" generate --kind cosmo --size 16 --channels 2 --train 3 --seed 5 --out "$tmp/check" >/dev/null
check "the cosmology generator matches an independent numpy implementation" \
  $py tests/reference/cosmo_check.py "$tmp/check" 5

"$data_tool" generate --kind cosmo --size 32 --train 512 --val 64 --test 64 --out "$tmp/cosmo" >/dev/null
run() {  # out_dir args...
  local out=$1
  shift
  "$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" inputs/cosmoflow_32.ini --set data.path="$tmp/cosmo" \
    --set run.out_dir="$tmp/$out" --set train.eval_every=0 --set checkpoint.every_epochs=0 "$@" >"$tmp/$out.log" 2>&1
}
mae() { grep -o '"final_eval_mae": [0-9.e-]*' "$tmp/$1/summary.json" | awk '{print $2}'; }
run untrained --set train.steps=1 --set optim.lr=1e-12
run trained --set train.steps=96 --set optim.warmup_steps=16
before=$(mae untrained) after=$(mae trained)
echo "     test MAE: untrained $before, after 96 steps $after"
check "CosmoFlow at 32^3 learns: MAE $after < half the untrained $before and < 0.4" \
  awk -v a="$after" -v b="$before" 'BEGIN { exit !(a > 0 && a < b / 2 && a < 0.4) }'
check "... the log names each target's error" grep -q "mae [0-9.]* (amplitude [0-9.]*, slope" "$tmp/trained.log"

msg=$("$mpirun" -q -np 1 "$trainer" inputs/mnist_mlp.ini --set train.loss=mae --set train.steps=1 \
  --set run.out_dir="$tmp/refused" 2>&1)
check "a regression loss on classes: exit 2, one line" \
  test $? -eq 2 -a -n "$(grep 'loss = mae is for regression targets' <<<"$msg")"
cp -r "$tmp/check" "$tmp/badnames"
$py -c "import h5py,sys; f=h5py.File(sys.argv[1],'r+'); f.attrs['target_names']='a, b'" "$tmp/badnames/train/part-00000.h5"
msg=$("$mpirun" -q -np 1 "$trainer" inputs/cosmoflow_32.ini --set data.path="$tmp/badnames" --set train.steps=1 \
  --set "model.layers=flatten dense(4)" --set run.out_dir="$tmp/refused2" 2>&1)
check "target_names that do not name the targets: exit 2, naming the file" \
  test $? -eq 2 -a -n "$(grep "part-00000.h5.*target_names.*does not name the 4 targets" <<<"$msg")"
finish
