#!/usr/bin/env bash
# recipe.sh SOURCE_DIR BUILD_DIR: docs/contributing.md's add-a-layer recipe, followed.
# Its worked example (the gain(p) layer) is applied block by block, as the doc's
# `<!-- recipe: FILE new | after "LINE" | before "LINE" | replace "TEXT" -->` comments place them,
# to a scratch copy of the tree: overlays over the source and build folders in a private mount
# namespace, so the real tree and build never change (checked after). There, `unit_tests` and
# `trainer` are built, the gradient check and the registry's unknown-type message pass, a
# --dry-run lists the new layer, and the PyTorch twin scales by p / 100.
# Needs root (mount namespaces); CI runs as root. Mutation check (2026-12-02): the doc without
# step 2's call fails here ("unknown layer type 'gain'").
set -u
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
py=/usr/bin/python3

if [ "${3:-}" = inside ]; then  # in the namespace: $4 is the scratch folder
  tmp=$4
  mkdir -p "$tmp"/{src-up,src-work,build-up,build-work}
  mount -t overlay overlay -o "lowerdir=$src,upperdir=$tmp/src-up,workdir=$tmp/src-work" "$src" || exit 1
  case "$build/" in
    "$src"/*) ;;  # inside the source tree: its overlay covers it
    *) mount -t overlay overlay -o "lowerdir=$build,upperdir=$tmp/build-up,workdir=$tmp/build-work" "$build" ||
      exit 1 ;;
  esac
  out=$($py "$here/recipe_apply.py" "$src/docs/contributing.md" "$src" 2>&1)
  check "the worked example's blocks apply to the tree ($(wc -l <<<"$out") edits)" test $? -eq 0
  echo "$out"
  t0=$(date +%s)
  cmake --build "$build" --target unit_tests trainer >"$tmp/build.log" 2>&1
  rc=$?
  check "unit_tests and trainer build with the new layer ($(($(date +%s) - t0)) s)" test $rc -eq 0
  [ $rc -eq 0 ] || tail -30 "$tmp/build.log"
  out=$("$build/tests/unit_tests" --gtest_filter='GradientCheck.EveryLayer:Model.NamesShapesAndErrors' 2>&1)
  rc=$?
  check "the gradient check (with gain(50)) and the registry's message pass" test $rc -eq 0
  [ $rc -eq 0 ] || grep -B2 -A6 "Failure\|unknown" <<<"$out" | head -30
  out=$(cd "$src" && "$build/trainer" inputs/mnist_mlp.ini --set "model.layers=flatten gain(50) dense(10)" \
    --set run.out_dir="$tmp/run" --dry-run 2>&1)
  check "trainer --dry-run lists the layer" grep -qE '^gain\.0 +\[784\] ' <<<"$out"
  [ -n "$(grep -E '^gain\.0 +\[784\] ' <<<"$out")" ] || tail -5 <<<"$out"
  check "the PyTorch twin scales by p / 100" env HPCTRAIN_TRAINER="$build/trainer" $py - "$src/tools" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import torch, hpctrain_torch
x = torch.randn(2, 4)
assert hpctrain_torch.build("flatten gain(50) dense(3)", (4,))(x).shape == (2, 3)
s = hpctrain_torch.build("gain(50)", (4,))
assert torch.equal(s(x), x * 0.5), (s(x), x)
EOF
  finish
fi

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for a mount namespace (CI runs as root)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fingerprint() {  # what the scratch copy must leave alone
  (cd "$src" && md5sum src/layers/registry.cpp src/CMakeLists.txt tests/unit/test_layers.cpp tools/hpctrain_torch.py
   ls src/layers; md5sum "$build/build.ninja" "$build/trainer" "$build/tests/unit_tests") 2>&1
}
before=$(fingerprint)
unshare -m --propagation private bash "$here/recipe.sh" "$src" "$build" inside "$tmp/scratch"
rc=$?
check "the recipe, followed in a scratch copy" test $rc -eq 0
check "... left the real tree and build as they were" test "$before" = "$(fingerprint)"
finish
