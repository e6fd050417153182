#!/usr/bin/env bash
# layering.sh SOURCE_DIR: tools/check_layering.py passes on the tree (no MPI calls or grid handles in train, model,
# layers, optim, data, tensor, backend or config; MPI-IO only in io; core only asks for the
# rank and gathers log lines; includes follow src/CMakeLists.txt's area dependencies) and
# fails, naming the file, on a copy with a direct MPI call added to the training loop, an
# MPI-IO call added to the data reader and a layer that includes the trainer.
set -u
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
py=/usr/bin/python3
out=$($py "$src/tools/check_layering.py" "$src")
rc=$?
echo "$out" | tail -n 5
check "the tree follows the layering rules" test $rc -eq 0
cp -r "$src/src" "$src/include" "$tmp/"  # (src/CMakeLists.txt comes along: the areas' table)
printf '\nvoid stray() { MPI_Barrier(MPI_COMM_WORLD); }  // MPI_Comm in a comment is fine\n' >>"$tmp/src/train/run.cpp"
printf '\nvoid stray_io(hid_t p) { H5Pset_fapl_mpio(p, 0, 0); }\n' >>"$tmp/src/data/reader.cpp"
sed -i '1i #include "hpctrain/train/trainer.hpp"' "$tmp/src/layers/dense.cpp"
out=$($py "$src/tools/check_layering.py" "$tmp")
rc=$?
check "a direct MPI call in src/train fails the check" test $rc -eq 1
check "... naming the file, line and call" grep -qE '^src/train/run.cpp:[0-9]+: MPI_Barrier: no MPI in train/' <<<"$out"
check "an MPI-IO call outside io fails it" grep -qE '^src/data/reader.cpp:[0-9]+: H5Pset_fapl_mpio: MPI-IO belongs in io/' <<<"$out"
check "a layer including the trainer fails it" grep -qE '^src/layers/dense.cpp:1: includes hpctrain/train/trainer.hpp \(train\), but layers may use only' <<<"$out"
check "one line per offending line, comments not counted" test "$(grep -c "run.cpp" <<<"$out")" -eq 1
finish
