#!/usr/bin/env bash
# tools/setup.sh: the set-up shared by quickstart.sh and test.sh. Installs the
# system packages hpctrain needs (Debian/Ubuntu apt; skipped when all are
# present), then configures and builds into build/. Source it or run it.
#   HPCTRAIN_WERROR=ON    treat warnings as errors (CI)
#   HPCTRAIN_BUILD_DIR    build directory (default: build)
#   HPCTRAIN_CMAKE_ARGS   extra arguments for cmake's configure step
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

packages=(build-essential cmake ninja-build pkg-config git
          openmpi-bin libopenmpi-dev libhdf5-openmpi-dev hdf5-tools
          libboost-program-options-dev libgtest-dev libopenblas-dev zlib1g-dev
          nlohmann-json3-dev  # header only: the safetensors header of trainer --export
          libdnnl-dev  # oneDNN: the faster convolution where measured so (docs/performance.md)
          libhdf5-dev  # the serial flavour too: a test checks CMake still picks the parallel one
          python3-h5py python3-numpy python3-matplotlib  # matplotlib: tools/*.py plots
          protobuf-compiler python3-protobuf  # tests and tools/tensorboard decode the event files
          python3-torch  # the reference checks against PyTorch (tests/reference) and the benchmarks
          iproute2)  # the multi-node test: network namespaces and veth links

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

# Open MPI refuses to start as root unless told; containers and CI run as root.
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

build_dir=${HPCTRAIN_BUILD_DIR:-build}
# CUDA is found in its standard prefix even when nvcc is not on PATH (see CMakeLists).
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -G Ninja -DHPCTRAIN_WERROR="${HPCTRAIN_WERROR:-OFF}" ${HPCTRAIN_CMAKE_ARGS:-} >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
echo "setup: built $build_dir/trainer"
