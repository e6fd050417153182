// Multi-rank runtime pieces: the process mesh's communicators for every legal
// layout of the world, the injected NCCL bootstrap, device-buffer staging
// through a fake device, error agreement, CHECK_MPI messages, gathering, and
// the configuration broadcast from rank 0.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "hpctrain/app/app.hpp"
#include "hpctrain/comm/mpi_communicator.hpp"
#include "hpctrain/comm/nccl_bootstrap.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/log.hpp"
#include "hpctrain/runtime/mesh.hpp"
#include "hpctrain/runtime/runtime.hpp"

#include "mpi_test_util.hpp"

using namespace hpctrain;

namespace {

std::vector<int> allgather_world_ranks(MPI_Comm c) {
  int n = 0;
  MPI_Comm_size(c, &n);
  std::vector<int> out(static_cast<std::size_t>(n));
  int me = world_rank();
  MPI_Allgather(&me, 1, MPI_INT, out.data(), 1, MPI_INT, c);
  return out;
}

}  // namespace

TEST(Mesh, EveryLegalLayoutOfThisWorld) {
  const int n = world_size(), r = world_rank();
  for (int tp : {1, 2}) {  // (tp is not configurable yet; the mesh handles it already)
    for (int p = 1; p * tp <= n; ++p) {
      if (n % (p * tp) != 0) continue;
      const Mesh g(MPI_COMM_WORLD, make_mesh_shape(n, p, tp));
      const std::string what = "pp=" + std::to_string(p) + " tp=" + std::to_string(tp);
      EXPECT_EQ(g.size(MeshDim::dp), n / (p * tp)) << what;
      EXPECT_EQ(g.coord(MeshDim::tp), r % tp) << what;
      EXPECT_EQ(g.coord(MeshDim::pp), r / tp % p) << what;
      EXPECT_EQ(g.coord(MeshDim::dp), r / (tp * p)) << what;
      for (MeshDim d : kMeshOrder) {
        EXPECT_EQ(allgather_world_ranks(g.comm(d)), mesh_group_members(r, g.shape(), d)) << what << " " << dim_name(d);
        int rank = -1;
        MPI_Comm_rank(g.comm(d), &rank);
        EXPECT_EQ(rank, g.coord(d)) << what << " " << dim_name(d);
      }
    }
  }
  if (n > 1) {
    EXPECT_THROW(Mesh(MPI_COMM_WORLD, make_mesh_shape(n, n + 1)), Error);
  }
}

TEST(NcclBootstrap, EveryGroupGetsOneIdFromItsRoot) {
  const int n = world_size(), r = world_rank();
  for (int m = 1; m <= n; ++m) {
    if (n % m != 0) continue;
    const Mesh g(MPI_COMM_WORLD, make_mesh_shape(n, m));
    for (const bool dp_group : {true, false}) {
      const MeshDim d = dp_group ? MeshDim::dp : MeshDim::pp;
      MPI_Comm c = g.comm(d);
      const auto members = mesh_group_members(r, g.shape(), d);
      int made = 0, init_calls = 0, seen_nranks = -1, seen_rank = -1;
      NcclId seen;
      const NcclId id = bootstrap_nccl(
          c,
          [&] {
            ++made;
            NcclId x;
            std::snprintf(x.bytes.data(), x.bytes.size(), "id-from-world-rank-%d-%s-M%d", r, dp_group ? "dp" : "mp", m);
            return x;
          },
          [&](const NcclId& got, int nranks, int rank) {
            ++init_calls;
            seen = got;
            seen_nranks = nranks;
            seen_rank = rank;
          });
      int group_rank = -1;
      MPI_Comm_rank(c, &group_rank);
      EXPECT_EQ(made, group_rank == 0 ? 1 : 0);
      EXPECT_EQ(init_calls, 1);
      EXPECT_EQ(seen_nranks, static_cast<int>(members.size()));
      EXPECT_EQ(seen_rank, group_rank);
      EXPECT_EQ(std::memcmp(seen.bytes.data(), id.bytes.data(), kNcclIdBytes), 0);
      char expected[kNcclIdBytes] = {0};
      std::snprintf(expected, sizeof(expected), "id-from-world-rank-%d-%s-M%d", members.front(), dp_group ? "dp" : "mp",
                    m);
      EXPECT_STREQ(seen.bytes.data(), expected) << "M=" << m << (dp_group ? " dp group" : " mp group");
    }
  }
}

namespace {
// Host memory standing in for a GPU: "device" buffers are plain host vectors,
// and the copies are counted so the test can see which path ran.
class FakeDevice final : public cuda::DeviceMemory {
 public:
  std::size_t to_host = 0, to_device = 0, scales = 0, pinned_allocs = 0;
  void* alloc_pinned(std::size_t b) override {
    ++pinned_allocs;
    return std::malloc(b ? b : 1);
  }
  void free_pinned(void* p) override { std::free(p); }
  void copy_to_host(void* h, const void* d, std::size_t b) override {
    ++to_host;
    std::memcpy(h, d, b);
  }
  void copy_to_device(void* d, const void* h, std::size_t b) override {
    ++to_device;
    std::memcpy(d, h, b);
  }
  void scale(void* buf, std::size_t n, DType t, double f) override {
    ++scales;
    ASSERT_EQ(t, DType::f32);
    for (std::size_t i = 0; i < n; ++i) static_cast<float*>(buf)[i] *= static_cast<float>(f);
  }
  // "Kernels" queued on the compute stream run only when a marker recorded after them is waited
  // for: a communicator that hands a device buffer to MPI without waiting reads stale values.
  std::vector<std::function<void()>> queued;
  std::atomic<int> markers_waited{0}, binds{0};
  std::thread::id bound_thread;
  void* record_marker() override { return new std::size_t(queued.size()); }
  void wait_marker(void* m) override {
    auto* upto = static_cast<std::size_t*>(m);
    for (std::size_t i = 0; i < *upto; ++i)
      if (queued[i]) std::exchange(queued[i], nullptr)();
    delete upto;
    ++markers_waited;
  }
  void bind_thread() override {
    ++binds;
    bound_thread = std::this_thread::get_id();
  }
};
}  // namespace

TEST(Staging, DeviceBuffersThroughPinnedHostMemory) {
  const int n = world_size(), r = world_rank();
  const std::size_t nn = static_cast<std::size_t>(n), rr = static_cast<std::size_t>(r);
  FakeDevice dev;
  MpiCommOptions o;
  o.name = "staged";
  o.memory = MemorySpace::device;
  o.cuda_aware = false;
  o.device = &dev;
  MpiCommunicator comm(MPI_COMM_WORLD, o);
  const std::size_t count = 1001;

  std::vector<float> a(count);
  for (std::size_t i = 0; i < count; ++i) a[i] = static_cast<float>(i + rr);
  comm.allreduce(a.data(), a.data(), count, DType::f32, ReduceOp::avg);
  const float avg_sum = static_cast<float>(n * (n - 1) / 2);
  for (std::size_t i : {std::size_t{0}, std::size_t{500}, count - 1})
    EXPECT_EQ(a[i], (static_cast<float>(i) * static_cast<float>(n) + avg_sum) * static_cast<float>(1.0 / n));

  std::vector<float> g(count * nn, -1.f);  // in-place allgather
  for (std::size_t i = 0; i < count; ++i) g[rr * count + i] = static_cast<float>(rr * 10000 + i);
  comm.allgather(g.data() + rr * count, g.data(), count, DType::f32);
  for (std::size_t q = 0; q < nn; ++q) EXPECT_EQ(g[q * count + 7], static_cast<float>(q * 10000 + 7));

  std::vector<float> s(count * nn, 1.f);  // in-place reduce-scatter
  comm.reduce_scatter(s.data(), s.data() + rr * count, count, DType::f32, ReduceOp::sum);
  EXPECT_EQ(s[rr * count + 3], static_cast<float>(n));

  std::vector<float> b(count, static_cast<float>(r));
  comm.broadcast(b.data(), count, DType::f32, n - 1);
  EXPECT_EQ(b[count - 1], static_cast<float>(n - 1));

  EXPECT_GT(comm.staged_bytes(), 0u);
  EXPECT_GE(dev.to_device, 4u);
  EXPECT_EQ(dev.scales, 0u);         // averaging happened on the staged host copy
  EXPECT_LE(dev.pinned_allocs, 6u);  // staging buffers are reused, not allocated per call
}

TEST(Staging, CudaAwarePassesDeviceBuffersDirectly) {
  const int n = world_size();
  FakeDevice dev;
  MpiCommOptions o;
  o.name = "cuda-aware";
  o.memory = MemorySpace::device;
  o.cuda_aware = true;
  o.device = &dev;
  MpiCommunicator comm(MPI_COMM_WORLD, o);
  std::vector<float> a(100, 2.f);
  comm.allreduce(a.data(), a.data(), a.size(), DType::f32, ReduceOp::avg);
  EXPECT_EQ(a[99], 2.f);
  EXPECT_EQ(comm.staged_bytes(), 0u);
  EXPECT_EQ(dev.to_host + dev.to_device, 0u);
  EXPECT_EQ(dev.scales, n > 1 ? 1u : 0u);  // the average is taken on the device
}

TEST(Staging, CudaAwareWaitsForTheKernelsThatWriteTheBuffer) {
  const int n = world_size(), r = world_rank();
  FakeDevice dev;
  MpiCommOptions o;
  o.name = "cuda-aware-ordered";
  o.memory = MemorySpace::device;
  o.cuda_aware = true;
  o.device = &dev;
  MpiCommunicator comm(MPI_COMM_WORLD, o);
  std::vector<float> a(64, -100.f);                                                         // stale contents
  dev.queued.push_back([&] { std::fill(a.begin(), a.end(), static_cast<float>(r + 1)); });  // "backward"
  comm.allreduce(a.data(), a.data(), a.size(), DType::f32, ReduceOp::sum);
  EXPECT_EQ(a[0], static_cast<float>(n * (n + 1) / 2));  // the written values were reduced, not the stale ones
  EXPECT_EQ(a[63], static_cast<float>(n * (n + 1) / 2));
  EXPECT_EQ(dev.markers_waited.load(), 1);
  EXPECT_EQ(dev.binds.load(), 1);  // the progress thread selected the GPU before its first CUDA call
  EXPECT_NE(dev.bound_thread, std::this_thread::get_id());
}

TEST(Agreement, AnErrorOnOneRankIsRaisedOnAll) {
  const int n = world_size(), r = world_rank();
  EXPECT_NO_THROW(raise_if_any(MPI_COMM_WORLD, ""));
  // Every rank but rank 0 has a problem (rank 0 too when alone): all raise the lowest one's.
  const int lowest = n > 1 ? 1 : 0;
  try {
    raise_if_any(MPI_COMM_WORLD, r >= lowest ? "shard train/000" + std::to_string(r) + ".h5: /labels missing" : "");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_EQ(std::string(e.what()), "shard train/000" + std::to_string(lowest) + ".h5: /labels missing");
  }
}

TEST(Errors, CheckMpiNamesCallRankAndMpiText) {
  int buf = 0;
  try {
    CHECK_MPI(MPI_Bcast(&buf, -1, MPI_INT, 0, MPI_COMM_WORLD));
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[rank " + std::to_string(world_rank()) + " on "), std::string::npos) << m;
    EXPECT_NE(m.find("test_runtime.cpp:"), std::string::npos) << m;
    EXPECT_NE(m.find("MPI_Bcast(&buf, -1, MPI_INT, 0, MPI_COMM_WORLD) failed: MPI error"), std::string::npos) << m;
    EXPECT_NE(m.find("MPI_ERR_COUNT"), std::string::npos) << m;
  }
}

TEST(Logging, GatherStringsInRankOrder) {
  const auto rows =
      gather_strings(MPI_COMM_WORLD, "rank-" + std::to_string(world_rank()) + std::string(world_rank(), 'x'));
  if (world_rank() == 0) {
    ASSERT_EQ(static_cast<int>(rows.size()), world_size());
    for (int q = 0; q < world_size(); ++q)
      EXPECT_EQ(rows[static_cast<std::size_t>(q)], "rank-" + std::to_string(q) + std::string(q, 'x'));
  } else {
    EXPECT_TRUE(rows.empty());
  }
}

TEST(ConfigBroadcast, EveryRankGetsRankZerosConfig) {
  // Only rank 0 has the variable set: every rank must end with rank 0's values.
  std::string path = "/tmp/hpctrain_test_bcast_" + std::to_string(getpid()) + ".ini";
  broadcast_string(MPI_COMM_WORLD, path, 0);
  if (world_rank() == 0) {
    std::ofstream(path) << "[train]\nglobal_batch = 96\n[data]\npath = ${HPCT_TEST_ROOT}/data\n";
    setenv("HPCT_TEST_ROOT", "/from/rank0", 1);
  } else {
    unsetenv("HPCT_TEST_ROOT");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const Config c = load_config(MPI_COMM_WORLD, path, {"run.seed=5"});
  EXPECT_EQ(c.train.global_batch, 96);
  EXPECT_EQ(c.data.path, "/from/rank0/data");
  EXPECT_EQ(c.run.seed, 5u);
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::remove(path.c_str());

  try {
    load_config(MPI_COMM_WORLD, "/no/such/file.ini", {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.scope(), Scope::every_rank);
    EXPECT_NE(std::string(e.what()).find("'/no/such/file.ini' cannot be read"), std::string::npos);
  }
}
