// The cuBLAS function table (backend/cuda/cublas_api.hpp), loaded on first use.
#include "hpctrain/backend/cuda/cublas_api.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <vector>

namespace hpctrain::cuda {
namespace {

// The directory (with its trailing '/') of the loaded CUDA runtime, or "".
std::string cudart_directory() {
  std::string dir;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        const char* name = info->dlpi_name;
        const char* base = name ? std::strrchr(name, '/') : nullptr;
        if (!base || std::strncmp(base + 1, "libcudart.so", 12) != 0) return 0;
        *static_cast<std::string*>(out) = std::string(name, static_cast<std::size_t>(base + 1 - name));
        return 1;
      },
      &dir);
  return dir;
}

void* open_library() {
  const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  std::vector<std::string> places{soname};
  if (const std::string dir = cudart_directory(); !dir.empty()) places.push_back(dir + soname);
  std::string tried;
  for (const std::string& path : places) {
    if (void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + (why ? std::string(why) : path + ": not found");
  }
  throw Error(ExitCode::internal, Scope::this_rank,
              "[" + rank_and_host() + "] cannot load cuBLAS (" + tried +
                  "); put the CUDA toolkit's library directory on LD_LIBRARY_PATH");
}

template <typename Fn>
void bind(void* lib, Fn& fn, const char* name) {
  void* sym = dlsym(lib, name);
  if (!sym)
    throw Error(ExitCode::internal, Scope::this_rank,
                "[" + rank_and_host() + "] cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) + " lacks " + name +
                    ": the library found is older than the headers hpctrain was built with");
  fn = reinterpret_cast<Fn>(sym);
}

CublasApi load() {
  void* lib = open_library();  // kept open for the life of the process
  CublasApi api;
  bind(lib, api.create, "cublasCreate_v2");
  bind(lib, api.destroy, "cublasDestroy_v2");
  bind(lib, api.set_stream, "cublasSetStream_v2");
  bind(lib, api.set_math_mode, "cublasSetMathMode");
  bind(lib, api.set_workspace, "cublasSetWorkspace_v2");
  bind(lib, api.status_name, "cublasGetStatusName");
  bind(lib, api.status_string, "cublasGetStatusString");
  bind(lib, api.gemm_ex, "cublasGemmEx");
  bind(lib, api.gemm_strided_batched_ex, "cublasGemmStridedBatchedEx");
  return api;
}

}  // namespace

const CublasApi& cublas() {
  static const CublasApi api = load();
  return api;
}

std::string cublas_status_text(cublasStatus_t s) {
  return std::string(cublas().status_name(s)) + ": " + cublas().status_string(s);
}

}  // namespace hpctrain::cuda
