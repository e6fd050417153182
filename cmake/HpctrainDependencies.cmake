# Finds hpctrain's dependencies with CMake's own modules (plus two small find
# modules for cuDNN and NCCL, which ship no CMake config) and defines imported
# targets and the HPCTRAIN_HAVE_CUDA switch.

# A required dependency that is missing is listed with how to point CMake at it, and the
# configure step fails once, after every dependency was looked for (docs/building.md).
set(HPCTRAIN_MISSING "")
macro(hpctrain_missing what hint)
  message(STATUS "missing dependency: ${what}: ${hint}")
  list(APPEND HPCTRAIN_MISSING "${what}")
endmacro()

# ---- MPI (C and C++) -----------------------------------------------------------
find_package(MPI COMPONENTS C CXX)
if(NOT MPI_FOUND)
  hpctrain_missing("MPI" "load an MPI module or give -DMPI_CXX_COMPILER=/path/to/mpicxx -DMPI_C_COMPILER=/path/to/mpicc")
endif()
# The C API only (MPI::MPI_C): the C++ bindings, removed from the standard in MPI 3.0, add about
# 46,000 lines to every file that includes <mpi.h> (39 of 131 here). Side by side, 3 runs each
# (2026-12-02, -O3): src/comm/mpi_communicator.cpp 2.27 s against 3.04 s; about 27 s of compile
# time over the build.
add_compile_definitions(OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)

# ---- parallel HDF5 ---------------------------------------------------------------
# Prefer the parallel flavour when serial and parallel are both installed, and
# refuse a serial-only installation: checkpoints need the MPI-IO driver.
set(HDF5_PREFER_PARALLEL ON)
find_package(HDF5 COMPONENTS C)
if(NOT HDF5_FOUND)
  hpctrain_missing("HDF5 (parallel)" "point HDF5_ROOT at a parallel (MPI-IO) HDF5, e.g. -DHDF5_ROOT=/opt/hdf5-mpi")
elseif(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR
    "hpctrain needs PARALLEL HDF5 (MPI-IO driver), but the HDF5 found (${HDF5_C_LIBRARIES}) is serial. "
    "Install the MPI flavour (Debian/Ubuntu: apt-get install libhdf5-openmpi-dev) or point "
    "HDF5_ROOT at a parallel build, e.g. -DHDF5_ROOT=/usr/lib/x86_64-linux-gnu/hdf5/openmpi")
endif()
add_library(hpctrain_hdf5 INTERFACE)
target_include_directories(hpctrain_hdf5 SYSTEM INTERFACE ${HDF5_C_INCLUDE_DIRS})
target_link_libraries(hpctrain_hdf5 INTERFACE ${HDF5_C_LIBRARIES})
target_compile_definitions(hpctrain_hdf5 INTERFACE ${HDF5_C_DEFINITIONS} H5_USE_110_API)

# ---- Boost.Program_options -------------------------------------------------------
find_package(Boost 1.66 COMPONENTS program_options)
if(NOT Boost_FOUND)
  hpctrain_missing("Boost.Program_options (>= 1.66)" "give -DBoost_ROOT=/path/to/boost or add it to CMAKE_PREFIX_PATH")
endif()

# ---- nlohmann-json (header only): the safetensors header of trainer --export ----------
find_package(nlohmann_json 3.2)
if(NOT nlohmann_json_FOUND)
  hpctrain_missing("nlohmann_json" "add its prefix to CMAKE_PREFIX_PATH, e.g. -DCMAKE_PREFIX_PATH=/opt/nlohmann_json (Debian: nlohmann-json3-dev)")
endif()

# ---- OpenBLAS (cblas) -------------------------------------------------------------
set(BLA_VENDOR OpenBLAS)
find_package(BLAS)
find_path(HPCTRAIN_CBLAS_INCLUDE_DIR cblas.h
  PATH_SUFFIXES openblas openblas-pthread x86_64-linux-gnu/openblas-pthread
  DOC "directory holding OpenBLAS's cblas.h")
if(NOT BLAS_FOUND OR NOT HPCTRAIN_CBLAS_INCLUDE_DIR)
  hpctrain_missing("OpenBLAS (library and cblas.h)" "add its prefix to CMAKE_PREFIX_PATH, e.g. -DCMAKE_PREFIX_PATH=/opt/openblas")
endif()
add_library(hpctrain_blas INTERFACE)
target_include_directories(hpctrain_blas SYSTEM INTERFACE ${HPCTRAIN_CBLAS_INCLUDE_DIR})
target_link_libraries(hpctrain_blas INTERFACE ${BLAS_LIBRARIES})

# ---- zlib (IDX import; HDF5's gzip filter needs it anyway) -----------------------------
find_package(ZLIB)
if(NOT ZLIB_FOUND)
  hpctrain_missing("zlib" "give -DZLIB_ROOT=/path/to/zlib")
endif()
# ---- PCRE2 (8-bit): GPT-2's pre-tokenization pattern -------------------------------------
# The field's standard regular-expression library with Unicode properties (\p{L}, \p{N}) and
# matching over invalid UTF-8 (PCRE2_MATCH_INVALID_UTF, 10.34+); std::regex has neither.
find_path(HPCTRAIN_PCRE2_INCLUDE_DIR pcre2.h)
find_library(HPCTRAIN_PCRE2_LIBRARY pcre2-8)
if(NOT HPCTRAIN_PCRE2_INCLUDE_DIR OR NOT HPCTRAIN_PCRE2_LIBRARY)
  hpctrain_missing("PCRE2 (8-bit, >= 10.34)" "add its prefix to CMAKE_PREFIX_PATH, e.g. -DCMAKE_PREFIX_PATH=/opt/pcre2 (Debian: libpcre2-dev)")
else()
  add_library(hpctrain_pcre2 INTERFACE)
  target_include_directories(hpctrain_pcre2 SYSTEM INTERFACE ${HPCTRAIN_PCRE2_INCLUDE_DIR})
  target_link_libraries(hpctrain_pcre2 INTERFACE ${HPCTRAIN_PCRE2_LIBRARY})
  target_compile_definitions(hpctrain_pcre2 INTERFACE PCRE2_CODE_UNIT_WIDTH=8)
endif()

# ---- libjpeg(-turbo) and libpng: hpctrain-data import-images decodes JPEG and PNG files -------
# The field's standard decoders (libjpeg-turbo is what Pillow and torchvision use).
find_package(JPEG)
if(NOT JPEG_FOUND)
  hpctrain_missing("libjpeg (libjpeg-turbo)" "give -DJPEG_ROOT=/path/to/libjpeg-turbo (Debian: libjpeg-dev)")
endif()
find_package(PNG)
if(NOT PNG_FOUND)
  hpctrain_missing("libpng" "give -DPNG_ROOT=/path/to/libpng (Debian: libpng-dev)")
endif()

if(HPCTRAIN_MISSING)
  list(LENGTH HPCTRAIN_MISSING _n)
  message(FATAL_ERROR "${_n} required dependencies missing (listed above: ${HPCTRAIN_MISSING}); docs/building.md")
endif()

# ---- libdeflate (optional): the reader inflates gzip-compressed chunks with it, else zlib ----
option(HPCTRAIN_ENABLE_LIBDEFLATE "inflate compressed dataset chunks with libdeflate when found" ON)
set(HPCTRAIN_HAVE_LIBDEFLATE OFF)
add_library(hpctrain_inflate INTERFACE)
target_link_libraries(hpctrain_inflate INTERFACE ZLIB::ZLIB)
if(HPCTRAIN_ENABLE_LIBDEFLATE)
  find_path(HPCTRAIN_LIBDEFLATE_INCLUDE_DIR libdeflate.h)
  find_library(HPCTRAIN_LIBDEFLATE_LIBRARY deflate)
  if(HPCTRAIN_LIBDEFLATE_INCLUDE_DIR AND HPCTRAIN_LIBDEFLATE_LIBRARY)
    set(HPCTRAIN_HAVE_LIBDEFLATE ON)
    target_include_directories(hpctrain_inflate SYSTEM INTERFACE ${HPCTRAIN_LIBDEFLATE_INCLUDE_DIR})
    target_link_libraries(hpctrain_inflate INTERFACE ${HPCTRAIN_LIBDEFLATE_LIBRARY})
    target_compile_definitions(hpctrain_inflate INTERFACE HPCTRAIN_HAVE_LIBDEFLATE=1)
  else()
    message(STATUS "libdeflate not found (libdeflate-dev): compressed chunks are inflated with zlib")
  endif()
endif()

# ---- Threads ----------------------------------------------------------------------
find_package(Threads REQUIRED)

# ---- oneDNN (optional): the second CPU convolution ---------------------------------
# Found by header and library directly: Debian's CMake config of oneDNN also wants
# the OpenCL loader. Its CPU runtime is OpenMP, whose thread count we set.
option(HPCTRAIN_ENABLE_ONEDNN "use oneDNN for convolutions when found" ON)
set(HPCTRAIN_HAVE_ONEDNN OFF)
if(HPCTRAIN_ENABLE_ONEDNN)
  find_path(HPCTRAIN_DNNL_INCLUDE_DIR dnnl.hpp PATH_SUFFIXES oneapi/dnnl)
  find_library(HPCTRAIN_DNNL_LIBRARY dnnl)
  find_package(OpenMP COMPONENTS CXX)
  if(HPCTRAIN_DNNL_INCLUDE_DIR AND HPCTRAIN_DNNL_LIBRARY AND OpenMP_CXX_FOUND)
    set(HPCTRAIN_HAVE_ONEDNN ON)
    add_library(hpctrain_onednn INTERFACE)
    target_include_directories(hpctrain_onednn SYSTEM INTERFACE ${HPCTRAIN_DNNL_INCLUDE_DIR})
    target_link_libraries(hpctrain_onednn INTERFACE ${HPCTRAIN_DNNL_LIBRARY} OpenMP::OpenMP_CXX)
    target_compile_definitions(hpctrain_onednn INTERFACE HPCTRAIN_HAVE_ONEDNN=1)
  else()
    message(STATUS "oneDNN not found (libdnnl-dev): convolutions use im2col + GEMM only")
  endif()
endif()

# ---- CUDA stack (optional, on by default when found) --------------------------------
set(HPCTRAIN_HAVE_CUDA OFF)
if(HPCTRAIN_ENABLE_CUDA)
  # nvcc is often not on PATH: look in the standard prefix before giving up.
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_ARCHITECTURES ${HPCTRAIN_CUDA_ARCHITECTURES})
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    enable_language(CUDA)
    find_package(CUDAToolkit)
    find_package(CUDNN)
    find_package(NCCL)
    if(CUDAToolkit_FOUND AND TARGET CUDA::cublas AND CUDNN_FOUND AND NCCL_FOUND)
      set(HPCTRAIN_HAVE_CUDA ON)
    else()
      set(_missing "")
      if(NOT CUDAToolkit_FOUND)
        list(APPEND _missing "CUDA toolkit")
      endif()
      if(NOT CUDNN_FOUND)
        list(APPEND _missing "cuDNN")
      endif()
      if(NOT NCCL_FOUND)
        list(APPEND _missing "NCCL")
      endif()
      set(_why "missing: ${_missing}")
    endif()
  else()
    set(_why "no CUDA compiler (set CUDACXX=/path/to/nvcc)")
  endif()
  if(NOT HPCTRAIN_HAVE_CUDA)
    if(HPCTRAIN_REQUIRE_CUDA)
      message(FATAL_ERROR "HPCTRAIN_REQUIRE_CUDA=ON but the CUDA stack is incomplete (${_why})")
    endif()
    message(STATUS "CUDA backend disabled: ${_why}")
  endif()
elseif(HPCTRAIN_REQUIRE_CUDA)
  message(FATAL_ERROR "HPCTRAIN_REQUIRE_CUDA=ON contradicts HPCTRAIN_ENABLE_CUDA=OFF")
endif()
