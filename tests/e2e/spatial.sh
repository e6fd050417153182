#!/usr/bin/env bash
# spatial.sh MPIRUN TRAINER SOURCE_DIR DATA_TOOL: [parallel] spatial_parallel (docs/volumes.md),
# each volume's depth split over S ranks, against one process on the synthetic cosmology set.
# - Three small 3-D networks trained 6 steps (evaluated and checkpointed): every parameter within
#   1e-5 (relative to max(1, |value|)) of one rank's, and the test MAE within 1e-5, at
#     A: conv3d k=2 'same' (a halo after), k=3 pad=1 (one on each side), max pools tiling the
#        slabs, flatten gathering: S = 2 (node cache), S = 4 (1-plane slabs at the last conv3d),
#        2 dp x 2 sp with shard = optimizer and the slabs read as HDF5 hyperslabs (a cache too small);
#     B: average pool, a conv3d of stride 2, gap3d summing its slabs' means: S = 2;
#     C: a conv3d whose windows no longer tile 1-plane slabs (it gathers the volume first and runs
#        whole): S = 4. (A pool that gathers first: tests/mpi/test_spatial.cpp, at 1-4 ranks.)
# - A checkpoint of an S = 2 run resumed on one rank ends where one rank's uninterrupted run ends.
# - Peak tensor memory per rank falls with S (the activations are split).
# - Refusals, one line each: S not dividing the depth, a layer that cannot take a slab (dropout
#   before flatten), pipeline_parallel > 1.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_start "$@"  # $mpirun $trainer $src, the working directory $src, $tmp (removed at exit)
data_tool=$4
py=/usr/bin/python3

"$data_tool" generate --kind cosmo --size 16 --train 64 --val 16 --test 16 --out "$tmp/cosmo" >/dev/null
A="conv3d(4,2,pad=same) leaky_relu(0.3) maxpool3d(2) conv3d(6,3,pad=1) leaky_relu(0.3) maxpool3d(2) conv3d(8,2,pad=same) leaky_relu(0.3) flatten dense(16) leaky_relu(0.3) dense(4) tanh scale(1.2)"
B="conv3d(4,3,pad=1) leaky_relu(0.1) avgpool3d(2) conv3d(6,2,stride=2) tanh gap3d dense(4)"
C="conv3d(4,2,pad=same) maxpool3d(2) conv3d(4,3,pad=1) maxpool3d(2) conv3d(4,4,pad=same) relu maxpool3d(2) flatten dense(4)"
run() {  # NP OUT LAYERS args...
  local np=$1 out=$2 layers=$3
  shift 3
  "$mpirun" -q -np "$np" --oversubscribe --bind-to none "$trainer" inputs/cosmoflow_32.ini \
    --set data.path="$tmp/cosmo" --set run.out_dir="$tmp/$out" --set model.layers="$layers" --set train.steps=6 \
    --set train.global_batch=8 --set optim.warmup_steps=0 --set train.eval_every=3 --set checkpoint.every_epochs=0 \
    --set checkpoint.every_steps=3 --set parallel.spatial_parallel="${S:-1}" "$@" >"$tmp/$out.log" 2>&1
}
same() {  # REFERENCE RUN: the last checkpoints' model tensors and the test MAE within 1e-5
  $py - "$tmp/$1" "$tmp/$2" <<'PY'
import glob, json, sys
import h5py, numpy as np
def load(d):
    f = h5py.File(sorted(glob.glob(d + "/checkpoints/ckpt-*.h5"))[-1], "r")
    out = {}
    f["model"].visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
    return out, json.load(open(d + "/summary.json"))["final_eval_mae"]
(a, ma), (b, mb) = load(sys.argv[1]), load(sys.argv[2])
assert a.keys() == b.keys() and len(a) > 0
worst = max(float(np.max(np.abs(a[k] - b[k]) / np.maximum(1.0, np.abs(a[k])))) for k in a)
print(f"     {sys.argv[2].split('/')[-1]}: {len(a)} tensors, largest difference {worst:.2e}, test MAE {mb} vs {ma}")
sys.exit(0 if worst <= 1e-5 and abs(ma - mb) <= 1e-5 else 1)
PY
}
peak() { grep -o '"peak_bytes_per_rank": [0-9.e+]*' "$tmp/$1/summary.json" | awk '{print $2}'; }

run 1 a1 "$A"
S=2 run 2 a2 "$A"
check "A at S = 2 as one rank (halo exchanges, flatten's gather)" same a1 a2
check "... its ranks read their slabs from the node cache" grep -q "train data: node cache" "$tmp/a2.log"
S=4 run 4 a4 "$A"
check "A at S = 4 as one rank (1-plane slabs)" same a1 a4
S=2 run 4 a22 "$A" --set parallel.shard=optimizer --set data.cache_bytes=4096
check "A at 2 dp x 2 sp, shard = optimizer, slabs read as hyperslabs, as one rank" same a1 a22
check "... hyperslab reads" grep -q "train data: HDF5 hyperslabs" "$tmp/a22.log"
p1=$(peak a1) p2=$(peak a2) p4=$(peak a4)
echo "     peak tensor bytes per rank: S=1 $p1, S=2 $p2, S=4 $p4"
check "peak memory per rank falls with S: S=2 < 0.75 x S=1, S=4 < S=2" \
  awk -v a="$p1" -v b="$p2" -v c="$p4" 'BEGIN { exit !(b < 0.75 * a && c < b) }'

run 1 b1 "$B"
S=2 run 2 b2 "$B"
check "B at S = 2 as one rank (avgpool3d, conv3d stride 2, gap3d over the slabs)" same b1 b2
run 1 c1 "$C"
S=4 run 4 c4 "$C"
check "C at S = 4 as one rank (a conv3d that gathers the volume first)" same c1 c4

mkdir -p "$tmp/resumed/checkpoints"
cp "$tmp/a2/checkpoints/ckpt-00000003.h5" "$tmp/resumed/checkpoints/"
run 1 resumed "$A"
check "an S = 2 checkpoint resumed on one rank ends as one rank's run" same a1 resumed
check "... it resumed at step 3" grep -q "resum.*step 3" "$tmp/resumed.log"

refused() {  # DESCRIPTION PATTERN NP LAYERS args...
  local what=$1 pattern=$2 np=$3 layers=$4
  shift 4
  run "$np" refused "$layers" "$@"
  local rc=$?
  check "$what: exit 2, one line" test $rc -eq 2 -a "$(grep -c "hpctrain: error" "$tmp/refused.log")" -eq 1
  check "... naming it" grep -q "$pattern" "$tmp/refused.log"
}
S=3 refused "S = 3 on 16 planes" "spatial_parallel = 3 does not divide the depth 16" 3 "$A"
S=2 refused "dropout before flatten" "dropout(50): this layer does not work on a depth slab" 2 \
  "conv3d(4,2,pad=same) dropout(50) flatten dense(4)"
S=2 refused "pipeline stages" "does not work with pipeline_parallel > 1" 4 "$A" --set parallel.pipeline_parallel=2
finish
