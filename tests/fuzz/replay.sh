#!/usr/bin/env bash
# replay.sh BIN_DIR SOURCE_DIR SECONDS: every fuzz harness over its corpus (tests/fuzz/corpus/NAME,
# plus the real files the suite has for it: the decks for the configuration) and SECONDS of
# mutations each (fuzz_main.cpp; seeded, the same inputs every run), in a scratch folder (a
# finding leaves fuzz-finding-NAME there, printed). Exit 1 on any finding.
set -u
bin=$(cd "$1" && pwd) src=$(cd "$2" && pwd) seconds=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
declare -A extra=([config]="$src/inputs" [chat]="$src/tests/data/chat")
fail=0
for h in "$bin"/fuzz_*; do
  name=${h##*/fuzz_}
  if ! "$h" -seconds="$seconds" -seed=1 "$src/tests/fuzz/corpus/$name" ${extra[$name]:-}; then
    [ -e "fuzz-finding-fuzz_$name" ] && echo "FAIL fuzz_$name: a finding (the input: $(od -c "fuzz-finding-fuzz_$name" | head -5))"
    [ -e "fuzz-finding-fuzz_$name" ] || echo "FAIL fuzz_$name: shallow seeds (above)"
    fail=1
  fi
done
[ $fail -eq 0 ] && echo PASS || echo FAIL
exit $fail
