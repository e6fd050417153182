#!/usr/bin/env bash
# docs.sh MPIRUN TRAINER SOURCE_DIR: the manual stays true to the code. docs/configuration.md is
# exactly `trainer --config-reference` (tools/make_docs.sh regenerates it); README.md stays a
# front door (under 200 lines); every relative link in README.md and docs/ names an existing
# file; the metrics.csv columns listed in docs/training.md are the ones a run writes; the files
# docs/contributing.md's add-a-layer recipe names exist; excerpts of source files are in them.
set -u
mpirun=$1 trainer=$2 src=$3
cd "$src" || exit 1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$trainer" --config-reference >"$tmp/configuration.md"
if diff -u docs/configuration.md "$tmp/configuration.md" >"$tmp/diff"; then
  check "docs/configuration.md is current" true
else
  head -20 "$tmp/diff"
  check "docs/configuration.md is current (run tools/make_docs.sh)" false
fi
keys=$(grep -c '^| `' "$tmp/configuration.md")
check "the reference lists keys ($keys)" test "$keys" -gt 40
check "README.md is under 200 lines ($(wc -l <README.md))" test "$(wc -l <README.md)" -lt 200

# The add-a-layer recipe of docs/contributing.md names files that exist (<name> as lm_head, its example).
missing=""
for f in $(sed -n '/^## Add a layer/,/^## /p' docs/contributing.md | grep -o '`[A-Za-z0-9_./<>-]*/[A-Za-z0-9_./<>-]*`' |
  tr -d '`' | sed 's/<name>/lm_head/g' | sort -u); do
  [ -e "$f" ] || [ -e "src/$f" ] || missing+="$f "  # (CMake sources are relative to src/)
done
check "the add-a-layer recipe names files that exist${missing:+ (missing: $missing)}" test -z "$missing"
check "... and all six places" test "$(sed -n '/^## Add a layer/,/^## /p' docs/contributing.md | grep -c '^[1-6]\. ')" -eq 6

# Every code block marked <!-- excerpt: FILE --> in docs/ is in FILE line by line (the layer contract's example).
stale=""
for f in docs/*.md; do
  while read -r file; do
    awk -v f="$file" '$0 == "<!-- excerpt: " f " -->" { on = 1; next } on && /^```/ { if (in_block) exit; in_block = 1; next }
      on && in_block' "$f" >"$tmp/excerpt"
    while IFS= read -r line; do grep -qxF -- "$line" "$file" || { stale+="$f: $file: '$line'; "; break; }; done <"$tmp/excerpt"
    [ -s "$tmp/excerpt" ] || stale+="$f: $file: empty excerpt; "
  done < <(sed -n 's/^<!-- excerpt: \(.*\) -->$/\1/p' "$f")
done
check "every excerpt in docs/ is in its file${stale:+ (stale: $stale)}" test -z "$stale"

broken=""
for f in README.md docs/*.md jobscripts/README.md; do
  dir=$(dirname "$f")
  while read -r link; do
    target=${link%%#*}
    [ -z "$target" ] && continue
    [ -e "$dir/$target" ] || broken+="$f -> $link; "
  done < <(awk '/^```/ { code = !code; next } !code' "$f" | grep -o '](\([^)h#][^)]*\|#[^)]*\))' |
    sed 's/^](//; s/)$//' | grep -v '^#')  # (not inside code blocks)
done
check "every relative link resolves${broken:+ (broken: $broken)}" test -z "$broken"

"$mpirun" -q -np 1 "$trainer" inputs/mnist_mlp.ini --set run.out_dir="$tmp/run" --set train.steps=2 \
  --set checkpoint.resume=none --set checkpoint.every_epochs=0 >/dev/null 2>&1
header=$(head -1 "$tmp/run/metrics.csv" | sed 's/,/, /g')
check "a run wrote metrics.csv" test -n "$header"
check "docs/training.md lists the metrics.csv columns ($header)" \
  grep -qF "$header" <(tr '\n' ' ' <docs/training.md | sed 's/  */ /g')
finish
