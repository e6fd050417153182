#!/usr/bin/env bash
# tools/fuzz.sh [SECONDS] [HARNESS...]: a libFuzzer campaign over hpctrain's parsers
# (tests/fuzz; docs/testing.md, "Fuzzing"). Installs clang-14 and its libFuzzer and OpenMP runtimes
# when apt can (as tools/setup.sh does), builds the harnesses with clang, AddressSanitizer and
# UBSan into build-fuzz/ (only they and the library areas they use), then runs each for SECONDS
# (default 60) from a working corpus in fuzz-work/NAME seeded with tests/fuzz/corpus/NAME (and the
# decks for the configuration). Prints executions per harness and the findings, which libFuzzer
# writes to fuzz-work/findings/NAME-crash-*; copy each into tests/fuzz/corpus/NAME (a regression
# input the CI replay runs) after fixing it. Exit 1 when a harness found something.
#   tools/fuzz.sh 600                 # 10 minutes each
#   tools/fuzz.sh 60 safetensors      # one harness
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
seconds=${1:-60}
shift || true
packages=(clang-14 libclang-rt-14-dev libomp-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] && command -v apt-get >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "fuzz: installing ${missing[*]}"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null || exit 1
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B build-fuzz "${generator[@]}" -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DHPCTRAIN_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >build-fuzz.log 2>&1 || { tail -20 build-fuzz.log; exit 1; }
cmake --build build-fuzz --target fuzz >>build-fuzz.log 2>&1 || { tail -20 build-fuzz.log; exit 1; }
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=($(ls build-fuzz/fuzz | sed 's/^fuzz_//'))
mkdir -p fuzz-work/findings
printf '%-12s %12s %10s %8s %9s  %s\n' harness executions "exec/s" corpus seconds findings
found=0
for h in "${harnesses[@]}"; do
  mkdir -p "fuzz-work/$h"
  extra=()
  [ "$h" = config ] && extra=(inputs)
  [ "$h" = chat ] && extra=(tests/data/chat)
  log=fuzz-work/$h.log
  ASAN_OPTIONS=detect_leaks=0 "build-fuzz/fuzz/fuzz_$h" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="fuzz-work/findings/$h-" -rss_limit_mb=4096 -timeout=10 \
    "fuzz-work/$h" "tests/fuzz/corpus/$h" "${extra[@]}" >"$log" 2>&1
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  crashes=$(ls fuzz-work/findings 2>/dev/null | grep -c "^$h-")
  [ "$crashes" -gt 0 ] && found=1
  printf '%-12s %12s %10s %8s %9s  %s\n' "$h" "${runs:-?}" "${rate:-?}" "$(ls "fuzz-work/$h" | wc -l)" "$seconds" \
    "$([ "$crashes" -gt 0 ] && echo "$crashes: fuzz-work/findings/$h-*, $log" || echo none)"
done
[ $found -eq 0 ] && echo "PASS: no findings" || echo "FAIL: findings above"
exit $found
