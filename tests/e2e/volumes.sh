#!/usr/bin/env bash
# volumes.sh MPIRUN TRAINER SOURCE_DIR DATA_TOOL VOLUME_DUMP: 3-D networks and regression
# (docs/volumes.md).
# - Against PyTorch (float64, tests/reference/volume_vs_torch.py): a small 3-D network's outputs,
#   loss and every gradient, with mse, mae and huber, 'same' padding with an even kernel included.
# - The synthetic cosmology set against an independent numpy implementation of its generator
#   (tests/reference/cosmo_check.py).
# - inputs/cosmoflow_32.ini trained 96 steps on 256 synthetic volumes: its test MAE under half the
#   untrained network's and below 0.4 (a constant prediction of 0 scores 0.5 on targets uniform
#   in [-1, 1]).
# - hpctrain-data import-h5: per-sample HDF5 files as CosmoFlow stores them (h5py writes them:
#   "full" [D, H, W, C] int16 counts, "unitPar" [4]) into shards, on 1 and 2 ranks (the same
#   bytes), each sample log1p(transposed) within float16's rounding (numpy); a file of another
#   shape, a missing dataset, a count that log1p cannot take and a dataset declaring 3e15 values in
#   a few kB are refused with one line naming the file, and leave no shards. --dtype uint16 keeps the counts and marks the shards for log1p
#   when read: training on them gives the bits of float32 shards transformed when imported.
# - Refusals: a regression loss on classes, target_names that do not name the targets.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_start "$@"  # $mpirun $trainer $src, the working directory $src, $tmp (removed at exit)
data_tool=$4 dump=$5
py=/usr/bin/python3
export HPCTRAIN_TRAINER=$trainer

net="conv3d(4,2,pad=same) leaky_relu(0.3) maxpool3d(2) conv3d(6,3,pad=1) leaky_relu(0.3) avgpool3d(2) conv3d(5,2,stride=2) gap3d dense(8) tanh dense(3) tanh scale(1.2)"
flat="conv3d(3,3,pad=1) leaky_relu(0.1) maxpool3d(2) flatten dense(6) leaky_relu(0.2) dense(4)"
cases=()
for loss in mse mae huber; do
  layers=$net dims="2 8 8 8 3"
  [ $loss = huber ] && layers=$flat dims="1 6 4 8 4"
  "$dump" "$tmp/$loss.h5" "$layers" $dims 5 $loss 7 >/dev/null
  cases+=("$tmp/$loss.h5" "$layers" ${dims% *} $loss)
done
check "3-D networks with mse, mae and huber: outputs, loss and gradients as PyTorch's" \
  $py tests/reference/volume_vs_torch.py "${cases[@]}"

"$data_tool" generate --kind cosmo --size 16 --channels 2 --train 3 --seed 5 --out "$tmp/check" >/dev/null
check "the cosmology generator matches an independent numpy implementation" \
  $py tests/reference/cosmo_check.py "$tmp/check" 5

"$data_tool" generate --kind cosmo --size 32 --train 256 --val 16 --test 64 --out "$tmp/cosmo" >/dev/null
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

# One file per sample, as CosmoFlow's: h5py writes them.
$py - "$tmp/univ" <<'PY'
import h5py, numpy as np, os, sys
out = sys.argv[1]
os.makedirs(out)
rng = np.random.default_rng(3)
for i in range(12):
    with h5py.File("%s/univ_%04d.h5" % (out, i), "w") as f:
        f["full"] = rng.integers(0, 60, size=(6, 5, 4, 3)).astype(np.int16)  # [D, H, W, C] counts
        f["unitPar"] = rng.uniform(-1, 1, size=4).astype(np.float32)
PY
import() {  # np out extra-args...
  local np=$1 out=$2
  shift 2
  "$mpirun" -q -np "$np" --oversubscribe "$data_tool" import-h5 --input "$tmp/univ/*.h5" --out "$tmp/$out" \
    --transform log1p --val-fraction 0.25 --shards 2 --target-names "Omega_m, sigma_8, N_s, H_0" "$@"
}
import 1 imp1 >"$tmp/imp1.log" 2>&1
import 2 imp2 >"$tmp/imp2.log" 2>&1
check "import-h5 on 1 and 2 ranks: the same shards" \
  $py -c "
import h5py, sys
for part in ('train/part-00000.h5', 'train/part-00001.h5', 'val/part-00000.h5'):
    a, b = h5py.File(sys.argv[1] + '/' + part), h5py.File(sys.argv[2] + '/' + part)
    assert a['samples'][()].tobytes() == b['samples'][()].tobytes() and a['labels'][()].tobytes() == b['labels'][()].tobytes(), part
" "$tmp/imp1" "$tmp/imp2"
check "... every sample is log1p of its file's volume, channels first (numpy), named targets" \
  $py -c "
import glob, h5py, numpy as np, sys
files = {tuple(h5py.File(p)['unitPar'][()]): np.log1p(h5py.File(p)['full'][()].astype(np.float64)).transpose(3, 0, 1, 2)
         for p in glob.glob(sys.argv[2] + '/*.h5')}
seen = 0
for p in glob.glob(sys.argv[1] + '/*/*.h5'):
    f = h5py.File(p)
    assert f.attrs['target_names'] in ('Omega_m, sigma_8, N_s, H_0', b'Omega_m, sigma_8, N_s, H_0')
    for x, y in zip(f['samples'][()], f['labels'][()]):
        want = files[tuple(y)]
        assert x.shape == want.shape and np.abs(x.astype(np.float64) - want).max() <= 2e-3 * max(1, np.abs(want).max())
        seen += 1
assert seen == len(files) == 12, seen
" "$tmp/imp1" "$tmp/univ"
# uint16 counts with the transform applied when reading: training on them gives the bits of training
# on float32 shards transformed when imported.
import 1 imp_u16 --dtype uint16 >/dev/null 2>&1
import 1 imp_f32 --dtype float32 >/dev/null 2>&1
check "--dtype uint16: the counts stored as they are, and the shards' transform = log1p" \
  $py -c "
import h5py, sys
f = h5py.File(sys.argv[1] + '/train/part-00000.h5')
assert f['samples'].dtype == 'uint16' and f.attrs['transform'] in ('log1p', b'log1p'), (f['samples'].dtype, dict(f.attrs))
assert f['samples'][()].max() > 1 and (f['samples'][()] % 1 == 0).all()
" "$tmp/imp_u16"
tiny=(--set "model.layers=flatten dense(4)" --set train.steps=3 --set train.global_batch=3 --set train.micro_batch=auto
  --set optim.warmup_steps=0 --set log.log_every=1)
for d in u16 f32; do
  "$mpirun" -q -np 1 "$trainer" inputs/cosmoflow_32.ini --set data.path="$tmp/imp_$d" --set run.out_dir="$tmp/run_$d" \
    "${tiny[@]}" >"$tmp/run_$d.log" 2>&1
done
check "... and training on them gives the float32 shards' bits" \
  $py -c "
import glob, h5py, sys
a, b = (h5py.File(sorted(glob.glob(r + '/checkpoints/ckpt-*.h5'))[-1], 'r') for r in sys.argv[1:])
names = list(a['model'])
assert names and all(a['model'][n][()].tobytes() == b['model'][n][()].tobytes() for n in names)
" "$tmp/run_u16" "$tmp/run_f32"
mkdir "$tmp/bad"
cp "$tmp"/univ/univ_000[0-4].h5 "$tmp/bad/"
$py -c "import h5py, numpy as np, sys; f = h5py.File(sys.argv[1], 'r+'); del f['full']; f['full'] = np.zeros((6, 5, 5, 3), np.int16)" \
  "$tmp/bad/univ_0003.h5"
msg=$("$mpirun" -q -np 2 --oversubscribe "$data_tool" import-h5 --input "$tmp/bad/*.h5" --out "$tmp/badout" 2>&1)
check "a file of another shape: exit 2, one line naming it, no shards" \
  test $? -eq 2 -a -n "$(grep 'univ_0003.h5: a sample of \[3, 6, 5, 5\] with 4 targets, but the first file.s is \[3, 6, 5, 4\] with 4' <<<"$msg")" -a ! -e "$tmp/badout/train/part-00000.h5"
$py -c "import h5py, numpy as np, sys; f = h5py.File(sys.argv[1], 'w'); f.create_dataset('full', (100000, 100000, 100000, 3), np.int16, chunks=(1, 1, 64, 3)); f['unitPar'] = np.zeros(4, np.float32)" \
  "$tmp/claims.h5"  # (declared, never written: a file of a few kB)
msg=$("$mpirun" -q -np 1 "$data_tool" import-h5 --input "$tmp/claims.h5" --out "$tmp/badout" 2>&1)
rc=$? bytes=$(stat -c %s "$tmp/claims.h5")
check "a sample declaring 3e15 values in $bytes bytes: exit 2, naming the file, before reading" \
  test $rc -eq 2 -a -n "$(grep 'claims.h5: /full holds 100000 x 100000 x 100000 x 3 values; a sample has 1 to 2^31 - 1' <<<"$msg")"
msg=$("$mpirun" -q -np 1 "$data_tool" import-h5 --input "$tmp/bad/univ_0000.h5" --out "$tmp/badout" --x density 2>&1)
check "a missing dataset: exit 2, naming the file and the dataset" \
  test $? -eq 2 -a -n "$(grep "univ_0000.h5: no dataset 'density'" <<<"$msg")"
$py -c "import h5py, numpy as np, sys; f = h5py.File(sys.argv[1], 'r+'); del f['full']; f['full'] = np.full((6, 5, 4, 3), -5, np.int16)" \
  "$tmp/bad/univ_0003.h5"
msg=$("$mpirun" -q -np 2 --oversubscribe "$data_tool" import-h5 --input "$tmp/bad/*.h5" --out "$tmp/badout" --transform log1p \
  --val-fraction 0 2>&1)
check "a count log1p cannot take: exit 2, naming the file, the shards written removed" \
  test $? -eq 2 -a -n "$(grep 'univ_0003.h5: /full holds a value that is not finite after --transform log1p' <<<"$msg")" \
  -a -z "$(ls "$tmp/badout/train" 2>/dev/null)"
msg=$("$mpirun" -q -np 1 "$data_tool" import-h5 --input "$tmp/bad/*.h5" --out "$tmp/badout" --dtype uint16 --val-fraction 0 2>&1)
check "--dtype uint16 with a value that is not a count: exit 2, naming the file" \
  test $? -eq 2 -a -n "$(grep 'univ_0003.h5: /full holds -5.000000, not a count 0..65535' <<<"$msg")"
finish
