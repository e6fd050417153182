# tools/gpu/prepare.sh: what travels to the GPU machine, made on the CPU machine (sourced by
# tools/gpu-check.sh for --prepare and --fetch). Everything lands in $carry (.gpu-carry/, ignored by
# git), which the device tool's `carry` names; the tree and the carry travel in at most 64 MiB.
#   --prepare  the CUDA binaries for sm_90 (nvcc compiles for the H200 here), stripped, in bin/; the
#              .debs of every library they, mpirun and Open MPI's and PMIx's plugins load (found by
#              ldd and dpkg -S, so the list follows the binaries), in debs/; the data
#   --fetch    the data and the .debs a build on the GPU machine needs (headers and all), no binaries

# The Debian packages a build there needs: the run-time stack and its development files.
build_debs=(openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev libpmix2 libhwloc15 libevent-core-2.1-7
  libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200 libpsm2-2
  libpsm-infinipath1 libnuma1 libmunge2 libltdl7 libpciaccess0
  libhdf5-openmpi-103-1 libhdf5-openmpi-dev libsz2 libaec0 hdf5-tools libudev1
  libcurl4 libldap-2.5-0 libsasl2-2 libsasl2-modules-db libssh2-1 librtmp1 libpsl5 libnghttp2-14 libbrotli1
  libboost-program-options1.74.0 libboost-program-options1.74-dev libboost1.74-dev libboost-program-options-dev
  libopenblas0 libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libgfortran5 libdeflate0
  libgtest-dev googletest zlib1g-dev nlohmann-json3-dev libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0
  libpcre2-posix3)
carried_binaries=(trainer hpctrain-data gpu_tests allreduce-bench)

fetch_debs() {  # PACKAGE...: their .debs into $carry/debs (the folder is made anew)
  rm -rf "$carry/debs" && mkdir -p "$carry/debs"
  (cd "$carry/debs" && apt-get download "$@" 2>&1 | grep -v "^W: Download is performed unsandboxed\|^Get:") || {
    echo "gpu-check: apt-get download failed (is Debian's registry reachable? apt-get update first)" >&2
    return 1
  }
}

# The packages that own the libraries the carried binaries, orterun and the MPI and PMIx plugins load,
# with Open MPI's and PMIx's own packages (plugins, help files, parameter file); never the C library
# or the compiler's run time (the GPU machine's newer ones serve), never CUDA (not Debian packages).
runtime_debs() {
  local lib=/usr/lib/x86_64-linux-gnu
  {
    printf '%s\n' openmpi-bin openmpi-common libopenmpi3 libpmix2
    for f in "$carry"/bin/* /usr/bin/orterun "$lib"/openmpi/lib/openmpi3/*.so "$lib"/pmix2/lib/pmix/*.so; do
      ldd "$f" 2>/dev/null | awk '$3 ~ /^\// {print $3}'
    done | sort -u | while read -r so; do
      dpkg -S "$so" 2>/dev/null || dpkg -S "$(realpath "$so")" 2>/dev/null || dpkg -S "/usr$so" 2>/dev/null ||
        dpkg -S "${so#/usr}" 2>/dev/null
    done | sed 's/[:,].*//'
  } | sort -u | grep -vxE 'libc6|libgcc-s1|libstdc\+\+6'
}

build_binaries() {
  local b=${HPCTRAIN_GPU_PREPARE_DIR:-$root/build-gpu-carry} gen=()
  command -v ninja >/dev/null && [ ! -f "$b/CMakeCache.txt" ] && gen=(-G Ninja)
  mkdir -p "$b"
  echo "gpu-check --prepare: building the CUDA binaries for sm_90 in $b (a few minutes)"
  cmake -S "$root" -B "$b" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc" \
    -DHPCTRAIN_REQUIRE_CUDA=ON -DHPCTRAIN_CUDA_ARCHITECTURES=90-real -DHPCTRAIN_ENABLE_ONEDNN=OFF \
    >"$b/configure.log" 2>&1 || { tail -20 "$b/configure.log"; return 1; }
  cmake --build "$b" -j "$(nproc)" --target "${carried_binaries[@]}" >"$b/build.log" 2>&1 ||
    { grep -E "error|FAILED" "$b/build.log" | head -20; return 1; }
  rm -rf "$carry/bin" && mkdir -p "$carry/bin"
  local t
  for t in "${carried_binaries[@]}"; do
    cp "$( [ -x "$b/$t" ] && echo "$b/$t" || echo "$b/tests/$t")" "$carry/bin/$t" && strip "$carry/bin/$t" || return 1
  done
}

fetch_data() {
  local mnist=${MNIST_DIR:-$root/../shared/data/mnist} shakespeare=${SHAKESPEARE_DIR:-$root/../shared/data/tinyshakespeare}
  if [ -d "$mnist" ]; then mkdir -p "$carry/mnist" && cp "$mnist"/*-ubyte.gz "$carry/mnist/"; fi
  if [ -f "$shakespeare/input.txt" ]; then
    mkdir -p "$carry/tinyshakespeare" && cp "$shakespeare/input.txt" "$carry/tinyshakespeare/"
  fi
}

prepare_carry() {  # prepare | fetch
  mkdir -p "$carry"
  fetch_data
  if [ "$1" = prepare ]; then
    build_binaries || return 1
    mapfile -t pkgs < <(runtime_debs)
    fetch_debs "${pkgs[@]}" || return 1
  else
    rm -rf "$carry/bin"
    fetch_debs "${build_debs[@]}" || return 1
  fi
  local c t
  c=$(du -sm "$carry" | cut -f1)
  t=$(cd "$root" && git ls-files -z | du -cm --files0-from=- 2>/dev/null | tail -1 | cut -f1)
  echo "gpu-check --$1: $(ls "$carry"/debs | wc -l) .debs, $(ls "$carry"/bin 2>/dev/null | wc -l) binaries;" \
    "$c MiB in $carry + $t MiB of tracked files = $((c + t)) of the 64 MiB that travel"
  [ $((c + t)) -le 64 ] || { echo "gpu-check --$1: too large to travel" >&2; return 1; }
}
