#!/usr/bin/env bash
# data_tools.sh MPIRUN TRAINER HPCTRAIN_DATA: the dataset tools and the
# trainer's data checks as users meet them: generate -> inspect -> dry run;
# a damaged shard -> one line naming the file, exit code 2, from the
# inspector and from the trainer at several ranks; a folder or a file in the wrong place -> one line.
set -u
mpirun=$1
trainer=$2
tool=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

out=$("$tool" generate --out "$tmp/syn" --shape 3x8x8 --classes 5 --train 400 --val 50 --test 60 --shards 3 \
      --dtype float16 --chunk-rows 32 2>&1)
check "generate exits 0" test $? -eq 0
echo "$out"
out=$("$tool" inspect "$tmp/syn" 2>&1)
check "inspect exits 0" test $? -eq 0
echo "$out" | head -20
check "inspect lists the train split" grep -qE "^train +3 +400 +\[3x8x8\] +float16 +class +5" <<<"$out"
check "inspect lists shards with chunking and compression" grep -qE "part-00002.h5 +132 +268 +32 +shuffle\+gzip\(4\)" <<<"$out"
check "inspect prints a class histogram" grep -q "^class histogram" <<<"$out"
check "inspect checked the values" grep -q "values checked" <<<"$out"

# Users read shards with h5py too (Debian's python3-h5py, installed by tools/setup.sh).
out=$(/usr/bin/python3 - "$tmp/syn/train/part-00000.h5" <<'PY' 2>&1
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
fmt = f.attrs["format"]
fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
assert fmt == "hpctrain-dataset", fmt
assert f["samples"].dtype == np.float16 and f["samples"].shape == (134, 3, 8, 8), (f["samples"].dtype, f["samples"].shape)
assert f["labels"].shape == (134,) and int(f["labels"][:].max()) < int(f.attrs["num_classes"])
assert np.isfinite(f["samples"][:]).all()
print("h5py ok", f["samples"].shape, f["samples"].dtype)
PY
)
rc=$?
echo "     $out"
check "h5py reads a shard (float16 samples, attributes)" test $rc -eq 0

cat >"$tmp/syn.ini" <<INI
[data]
path = $tmp/syn
[train]
global_batch = 48
INI
out=$("$mpirun" -q -np 3 --oversubscribe --bind-to none "$trainer" "$tmp/syn.ini" --dry-run 2>&1)
check "dry run with the generated set exits 0" test $? -eq 0
check "dry run reports steps per epoch" grep -qF "train: 8 steps per epoch of 48 samples (16 per rank)" <<<"$out"

# Damage one shard: truncate it.
shard=$tmp/syn/train/part-00001.h5
truncate -s 3000 "$shard"
err=$("$tool" inspect "$tmp/syn" 2>&1 >/dev/null)
rc=$?
echo "     $err"
check "inspect of a truncated shard exits 2" test $rc -eq 2
check "inspect names the shard" grep -qF "part-00001.h5" <<<"$err"
err=$("$mpirun" -q -np 3 --oversubscribe --bind-to none "$trainer" "$tmp/syn.ini" --dry-run 2>&1 >/dev/null)
rc=$?
err=$(without_runtime_noise <<<"$err")
echo "     $err"
check "trainer with a truncated shard exits 2" test $rc -eq 2
check "trainer prints one line" test "$(grep -c . <<<"$err")" -eq 1
check "trainer names the shard" grep -qF "part-00001.h5" <<<"$err"

# A bad tool invocation.
err=$("$tool" generate --out "$tmp/x" --shape 3xq 2>&1)
rc=$?
check "generate with a bad shape exits 2" test $rc -eq 2
check "generate names the option" grep -qF -- "--shape '3xq'" <<<"$err"
# A folder where a file belongs, a file where the output folder belongs: one line, exit 2 (each was
# an internal error, exit 1, with the C++ library's words).
one_line() {  # pattern tool-arguments...
  local pattern=$1 err rc
  shift
  err=$("$tool" "$@" 2>&1)
  rc=$?
  [ $rc = 2 ] && [ "$(grep -c . <<<"$err")" = 1 ] && grep -qF -- "$pattern" <<<"$err" && echo "     $err"
}
mkdir "$tmp/folder" && printf 'a,b,y\n1,2,0\n3,4,1\n' >"$tmp/file.csv"
check "import-text of a folder: one line" one_line "folder: a folder, not a text file" \
  import-text --input "$tmp/folder" --out "$tmp/t1"
check "import-cifar of a folder: one line" one_line "folder: cannot open a file of CIFAR records" \
  import-cifar --input "$tmp/folder" --out "$tmp/t2"
check "--out a file: one line" one_line "--out: cannot make the folder $tmp/file.csv/train (Not a directory)" \
  import-csv --input "$tmp/file.csv" --out "$tmp/file.csv"

finish
