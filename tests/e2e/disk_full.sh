#!/usr/bin/env bash
# disk_full.sh MPIRUN TRAINER SOURCE_DIR: checkpoints of the MNIST MLP example (about 14 MiB
# each) on a 30 MiB file system: a tmpfs mounted by the test where mounting is allowed (root, as
# on these machines), otherwise the documented fault injection (HPCTRAIN_TEST_FREE_BYTES,
# HPCTRAIN_TEST_FAIL_WRITE); the test says which, and never skips.
# - before training: keep = 3 needs room for 4 checkpoints: refused at once, exit 2, one line
#   naming the directory and the shortfall, nothing written;
# - space_check = warn, keep = 2: the step-30 checkpoint does not fit: exit 4, one line in words
#   ("no space left on device ... needs ..., ... free"; the newest complete checkpoint, step 20),
#   no HDF5 error stack, no partial file left, `latest` and the step-20 checkpoint intact;
# - after space is freed, the run resumes from step 20 and completes.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_start "$@"  # $mpirun $trainer $src, the working directory $src, $tmp (removed at exit)
small=$tmp/small
mkdir -p "$small"
if mount -t tmpfs -o size=30m hpctrain-test "$small" 2>/dev/null; then
  mode=tmpfs
  trap 'umount "$small"; rm -rf "$tmp"' EXIT
  echo "mode: a 30 MiB tmpfs at $small"
else
  mode=injection
  echo "mode: fault injection (mounting a tmpfs is not allowed here): HPCTRAIN_TEST_FREE_BYTES, HPCTRAIN_TEST_FAIL_WRITE"
fi
run() {  # extra-args...
  "$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" inputs/mnist_mlp.ini --set "run.out_dir=$tmp/out" \
    --set "checkpoint.dir=$small/ck" --set train.steps=40 --set log.log_every=10 --set checkpoint.every_steps=10 \
    --set checkpoint.every_epochs=0 "$@" 2>&1
}
mib=$((1 << 20))

# ---- Refused before training ----
if [ $mode = tmpfs ]; then out=$(run --set checkpoint.keep=3); rc=$?
else out=$(HPCTRAIN_TEST_FREE_BYTES=$((30 * mib)) run --set checkpoint.keep=3); rc=$?; fi
echo "$out" | grep -i error
check "keep = 3 on 30 MiB: refused before training, exit 2 ($rc)" test $rc -eq 2
check "... one line naming the directory, the room and the way out" grep -qE \
  "^hpctrain: error: \[checkpoint\] dir '$small/ck' has room for [0-9]+ of the keep \+ 1 = 4 checkpoints of [0-9]+ MiB this run needs \([0-9]+ MiB free \+ 0 MiB of older checkpoints\); free space, lower \[checkpoint\] keep, use another \[checkpoint\] dir, or set \[checkpoint\] space_check = warn$" <<<"$out"
check "... no training, no checkpoint written" test -z "$(ls "$small/ck" 2>/dev/null | grep ckpt)" -a -z "$(grep '^step' <<<"$out")"

# ---- Full during a write ----
if [ $mode = tmpfs ]; then out=$(run --set checkpoint.keep=2 --set checkpoint.space_check=warn); rc=$?
else
  HPCTRAIN_TEST_FREE_BYTES=$((30 * mib)) run --set checkpoint.keep=2 --set checkpoint.space_check=warn \
    --set train.steps=20 >/dev/null
  out=$(HPCTRAIN_TEST_FREE_BYTES=$((2 * mib)) HPCTRAIN_TEST_FAIL_WRITE=30 run --set checkpoint.keep=2 \
    --set checkpoint.space_check=warn)
  rc=$?
fi
echo "$out" | grep -iE "error|warning"
check "space_check = warn: a warning before training" grep -q "^warning.*: \[checkpoint\] dir '$small/ck' has room for" <<<"$out"
check "the step-30 checkpoint does not fit: exit 4 ($rc)" test $rc -eq 4
check "... one line in words: no space left, needs, free, the newest complete checkpoint" grep -qE \
  "^hpctrain: error: checkpoint step 30 not written: no space left on device in $small/ck \(needs [0-9]+ MiB, [0-9]+ MiB free\); the newest complete checkpoint is ckpt-00000020.h5 \(the run stops" <<<"$out"
check "... and nothing else: no HDF5 error stack, one error line" \
  test "$(grep -ciE 'H5D|H5F|error' <<<"$out")" -eq 1
check "... no partial file left" test -z "$(ls -A "$small/ck" | grep partial)"
check "... latest still names step 20" test "$(cat "$small/ck/latest")" = ckpt-00000020.h5
check "... and the step-20 checkpoint reads back (h5ls)" h5ls -r "$small/ck/ckpt-00000020.h5" >/dev/null

# ---- space_check = off: the disk fills inside the collective write (ENOSPC from MPI-IO) ----
if [ $mode = tmpfs ]; then
  rm -rf "$small/ck"
  out=$(run --set checkpoint.keep=2 --set checkpoint.space_check=off)
  rc=$?
  echo "$out" | grep -iE "error" | grep -v mca_fbtl
  check "space_check = off, full inside the write: exit 4 ($rc), no crash at exit" test $rc -eq 4
  check "... the same line in words" grep -qE \
    "^hpctrain: error: checkpoint step 30 not written: no space left on device in $small/ck \(needs" <<<"$out"
  check "... no HDF5 error stack (Open MPI's own write errors aside)" test -z "$(grep -E 'H5[A-Z]|HDF5-DIAG' <<<"$out")"
  check "... no partial file left, latest at step 20" \
    test -z "$(ls -A "$small/ck" | grep partial)" -a "$(cat "$small/ck/latest")" = ckpt-00000020.h5
else
  out=$(HPCTRAIN_TEST_FREE_BYTES=$((2 * mib)) HPCTRAIN_TEST_FAIL_WRITE=30 run --set checkpoint.keep=2 \
    --set checkpoint.space_check=off)
  rc=$?
  check "space_check = off, a write failing inside (injected): exit 4 ($rc)" test $rc -eq 4
  check "... the same line in words" grep -qE \
    "^hpctrain: error: checkpoint step 30 not written: no space left on device in $small/ck \(needs" <<<"$out"
  check "... no partial file left, latest at step 20" \
    test -z "$(ls -A "$small/ck" | grep partial)" -a "$(cat "$small/ck/latest")" = ckpt-00000020.h5
fi

# ---- Space freed: resumes and completes ----
rm -f "$small/ck/ckpt-00000010.h5"
out=$(run --set checkpoint.keep=1)
rc=$?
check "after freeing space (keep = 1): exit 0 ($rc)" test $rc -eq 0
check "... resumed from step 20" grep -q "resumed from .*ckpt-00000020.h5: step 20" <<<"$out"
check "... and wrote the last checkpoint" test "$(cat "$small/ck/latest")" = ckpt-00000040.h5
finish
