#!/usr/bin/env bash
# tabular.sh MPIRUN TRAINER SOURCE_DIR: hpctrain-data import-csv and import-npy on data made here
# (numpy): 8 features on scales from 1e-3 to 1e4, 3 classes named by strings.
# - import-csv: class names sorted into classes.txt; float32 [N, 8] samples; the shards' `mean`
#   and `std` are the train rows' own (numpy, 1e-6), one per feature;
# - per-feature standardization is applied by the reader: training on the CSV import equals
#   training on features numpy standardized, imported with --no-standardize (losses within
#   1e-4; the rows in file order both times); a model on the raw features learns less;
# - a test split, accuracy over chance; import-npy of float targets trains a regression;
# - bad input: a cell that is not a number (file:line, column), a label column that is not
#   there, arrays of different lengths, a .npy whose shape needs more bytes than the file holds:
#   one line each, exit 2.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_start "$@"  # $mpirun $trainer $src, the working directory $src, $tmp (removed at exit)
py=/usr/bin/python3
data_tool=$(dirname "$trainer")/hpctrain-data
cd "$tmp" || exit 1
$py - <<'PY'
import numpy as np
rng = np.random.default_rng(5)
n = 900
z = rng.standard_normal((n, 8))
scale = np.array([1e-3, 1e-2, 1, 10, 100, 1e3, 1e4, 0.5])
x = z * scale + np.arange(8) * scale * 3
w = rng.standard_normal((8, 3))
names = np.array(["iris-setosa", "iris-versicolor", "iris-virginica"])
y = (z @ w).argmax(1)
with open("flowers.csv", "w") as f:
    f.write("f0,f1,f2,f3,f4,f5,f6,f7,species\n")
    for row, label in zip(x, y):
        f.write(",".join("%.9g" % v for v in row) + ",%s\n" % names[label])
# The same rows, standardized here with the train rows' statistics (the first 720: 0.1 val, 0.1 test).
x32 = np.array([[float("%.9g" % v) for v in row] for row in x], dtype=np.float32).astype(np.float64)
mean, std = x32[:720].mean(0), x32[:720].std(0)
np.save("standardized.npy", ((x32 - mean) / std).astype(np.float32))
np.save("raw.npy", x32.astype(np.float32))
np.save("classes.npy", y.astype(np.int64))
np.save("targets.npy", (z[:, :4] @ np.array([1.0, -2.0, 0.5, 3.0])).astype(np.float64))
np.save("features4.npy", x[:, :4])
np.save("short.npy", y[:10].astype(np.int64))
PY
split=(--val-fraction 0.1 --test-fraction 0.1 --shuffle-seed 0)
out=$("$data_tool" import-csv --input flowers.csv --label species --out csv "${split[@]}")
check "import-csv: $out" test $? -eq 0 -a -f csv/train/part-00000.h5 -a -f csv/test/part-00000.h5
check "... the class names, sorted, in classes.txt" \
  test "$(tr '\n' ' ' <csv/classes.txt)" = "iris-setosa iris-versicolor iris-virginica "
check "... float32 [720, 8] samples; mean and std per feature, the train rows' own" $py -c "
import h5py, numpy as np
f = h5py.File('csv/train/part-00000.h5')
x = f['samples'][...].astype(np.float64)
assert f['samples'].dtype == np.float32 and x.shape == (720, 8), (f['samples'].dtype, x.shape)
assert np.allclose(f.attrs['mean'], x.mean(0), rtol=1e-6) and np.allclose(f.attrs['std'], x.std(0), rtol=1e-6)
assert len(f.attrs['mean']) == 8 and f.attrs['num_classes'] == 3"
"$data_tool" import-npy --features standardized.npy --labels classes.npy --out pre --no-standardize "${split[@]}" >/dev/null
"$data_tool" import-npy --features raw.npy --labels classes.npy --out raw --no-standardize "${split[@]}" >/dev/null
check "import-npy: the same rows, standardized by numpy and raw" test -f pre/train/part-00000.h5 -a -f raw/test/part-00000.h5
printf '%s\n' "[run]" "out_dir = run" "[model]" "layers = dense(32) relu dense(3)" "[train]" "global_batch = 36" \
  "epochs = 3" "[log]" "log_every = 10" "tensorboard = false" "[optim]" "name = sgd" "lr = 0.1" "momentum = 0.9" \
  "[checkpoint]" "every_epochs = 0" >tab.ini
train() {  # data out_dir
  "$mpirun" -q -np 1 --bind-to none "$trainer" tab.ini --set data.path="$1" --set run.out_dir="$2" 2>&1
}
a=$(train csv a)
check "trains on the CSV import: exit 0" test $? -eq 0
train pre b >/dev/null
loss() { awk -F, 'NR > 1 {printf "%s ", $4}' "$1/metrics.csv"; }
check "... with the losses of numpy's standardization, the reader applying mean and std per feature ($(loss a))" \
  $py -c "
a, b = [float(v) for v in '$(loss a)'.split()], [float(v) for v in '$(loss b)'.split()]
assert len(a) == len(b) > 3 and all(abs(x - y) <= 1e-4 * max(1, abs(y)) for x, y in zip(a, b)), (a, b)"
acc=$(sed -n 's/.* test accuracy \([0-9.]*\)%.*/\1/p' <<<"$a")
raw=$(sed -n 's/.* test accuracy \([0-9.]*\)%.*/\1/p' <<<"$(train raw c)")
check "... test accuracy ${acc:-?}% >= 80% (chance 33%), raw features ${raw:-?}% (less: the control)" \
  awk -v a="${acc:-0}" -v r="${raw:-100}" 'BEGIN { exit !(a >= 80 && r < a) }'

out=$("$data_tool" import-npy --features features4.npy --labels targets.npy --out reg 2>&1)
check "import-npy of float targets: $out" grep -q "1 regression target" <<<"$out"
printf '%s\n' "[run]" "out_dir = reg-run" "[model]" "layers = dense(16) tanh dense(1)" "[train]" "global_batch = 30" \
  "steps = 40" "[log]" "log_every = 10" "tensorboard = false" "[optim]" "name = adam" "lr = 0.01" >reg.ini
"$mpirun" -q -np 1 --bind-to none "$trainer" reg.ini --set data.path=reg >/dev/null 2>&1
first=$(awk -F, 'NR == 2 {print $4}' reg-run/metrics.csv)
last=$(awk -F, 'END {print $4}' reg-run/metrics.csv)
check "... trains a regression (mean squared error ${first:-?} at step 10, ${last:-?} at 40: under half)" \
  awk -v a="${first:-0}" -v b="${last:-1}" 'BEGIN { exit !(a > 0 && b < a / 2) }' 

expect_error() { # description pattern command...
  local what=$1 pattern=$2 msg rc
  shift 2
  msg=$("$@" 2>&1)
  rc=$?
  msg=$(without_runtime_noise <<<"$msg")
  check "$what: exit 2, one line ($rc)" test $rc -eq 2 -a "$(wc -l <<<"$msg")" -eq 1
  check "... says: $pattern" grep -qF "$pattern" <<<"$msg"
}
sed '5s/^[^,]*,[^,]*,[^,]*,[^,]*/1,2,3,abc/' flowers.csv >bad.csv
expect_error "a cell that is not a number" "bad.csv:5: column 'f3' holds 'abc', not a finite number" \
  "$data_tool" import-csv --input bad.csv --label species --out bad1
expect_error "a label column that is not there" "no column 'kind' in the header" \
  "$data_tool" import-csv --input flowers.csv --label kind --out bad2
expect_error "arrays of different lengths" "raw.npy has 900 rows but short.npy has 10" \
  "$data_tool" import-npy --features raw.npy --labels short.npy --out bad3
# (a header's shape is checked against the file's bytes before anything is allocated: this one
# claimed 16 GB and std::bad_alloc escaped)
expect_error "a .npy shape past the file's bytes" \
  "regress_shape_past_the_file.npy: the header's shape (4000000000, 1000) needs more than the 16 data bytes" \
  "$data_tool" import-npy --features "$src/tests/fuzz/corpus/npy/regress_shape_past_the_file.npy" --labels short.npy --out bad4
finish
