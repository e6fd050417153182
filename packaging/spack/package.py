# Spack recipe for hpctrain (docs/building.md, "Spack"). Not built on the machines hpctrain is
# developed on (no Spack there): it passes the CMake options the build documents, and is kept
# by hand beside cmake/HpctrainDependencies.cmake.
#
# Use it from a Spack repository of your own:
#   spack repo create ~/spack-repo && mkdir -p ~/spack-repo/packages/hpctrain
#   cp packaging/spack/package.py ~/spack-repo/packages/hpctrain/ && spack repo add ~/spack-repo
#   spack install hpctrain@main +cuda cuda_arch=90 ^openmpi
from spack.package import *


class Hpctrain(CMakePackage, CudaPackage):
    """Data- and model-parallel neural-network training on many GPUs and nodes: MPI and NCCL,
    sharded parallel-HDF5 datasets and checkpoints."""

    homepage = "https://github.com/hpctrain/hpctrain"
    git = "https://github.com/hpctrain/hpctrain.git"

    version("main", branch="main")

    variant("onednn", default=True, description="oneDNN convolutions and GEMMs on the CPU")
    variant("tests", default=False, description="build the test suite (GoogleTest)")

    depends_on("cmake@3.24:", type="build")
    depends_on("nlohmann-json@3.2:", type="build")
    depends_on("mpi")
    depends_on("hdf5+mpi")
    depends_on("boost+program_options")
    depends_on("openblas")
    depends_on("zlib-api")
    depends_on("libdeflate")  # the reader's inflating of gzip chunks (else zlib)
    depends_on("pcre2@10.34:")  # GPT-2's pre-tokenization pattern (Unicode classes, invalid UTF-8)
    depends_on("libjpeg-turbo")  # hpctrain-data import-images (JPEG)
    depends_on("libpng")  # hpctrain-data import-images (PNG)
    depends_on("onednn", when="+onednn")
    depends_on("googletest", type="build", when="+tests")
    depends_on("nccl", when="+cuda")
    depends_on("cudnn", when="+cuda")
    conflicts("cuda_arch=none", when="+cuda", msg="give the GPUs' architecture, e.g. cuda_arch=90")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define_from_variant("HPCTRAIN_ENABLE_CUDA", "cuda"),
            self.define("HPCTRAIN_REQUIRE_CUDA", spec.satisfies("+cuda")),
            self.define_from_variant("HPCTRAIN_ENABLE_ONEDNN", "onednn"),
            self.define("HPCTRAIN_BUILD_TESTS", spec.satisfies("+tests") or self.run_tests),
            self.define("MPI_CXX_COMPILER", spec["mpi"].mpicxx),
            self.define("MPI_C_COMPILER", spec["mpi"].mpicc),
            self.define("HDF5_ROOT", spec["hdf5"].prefix),
            self.define("Boost_ROOT", spec["boost"].prefix),
        ]
        if spec.satisfies("+cuda"):
            archs = spec.variants["cuda_arch"].value
            args.append(self.define("HPCTRAIN_CUDA_ARCHITECTURES", ";".join(a + "-real" for a in archs)))
            args.append(self.define("CUDAToolkit_ROOT", spec["cuda"].prefix))
            args.append(self.define("CUDNN_ROOT", spec["cudnn"].prefix))
            args.append(self.define("NCCL_ROOT", spec["nccl"].prefix))
        return args
