// The process mesh's arithmetic, the batch contract and the device / backend
// choices, as pure functions (the MPI tests check the communicators).
#include <gtest/gtest.h>

#include <set>

#include "hpctrain/core/error.hpp"
#include "hpctrain/runtime/mesh.hpp"
#include "hpctrain/runtime/runtime.hpp"

using namespace hpctrain;

TEST(Mesh, EveryLegalLayoutOfFourRanks) {
  for (int p : {1, 2, 4}) {
    const auto s = make_mesh_shape(4, p);
    EXPECT_EQ(s.size(MeshDim::dp) * s.size(MeshDim::pp), 4);
    EXPECT_EQ(s.size(MeshDim::tp) * s.size(MeshDim::sp), 1);
    std::set<std::pair<int, int>> seen;
    for (int r = 0; r < 4; ++r) {
      const auto c = mesh_coords(r, s);
      EXPECT_EQ(c[MeshDim::pp], r % p);  // one replica's stages on adjacent ranks
      EXPECT_EQ(c[MeshDim::dp], r / p);
      EXPECT_EQ(mesh_world_rank(c, s), r);
      seen.insert({c[MeshDim::dp], c[MeshDim::pp]});
      const auto dp = mesh_group_members(r, s, MeshDim::dp);
      const auto pp = mesh_group_members(r, s, MeshDim::pp);
      EXPECT_EQ(static_cast<int>(dp.size()), s.size(MeshDim::dp));
      EXPECT_EQ(static_cast<int>(pp.size()), p);
      EXPECT_EQ(dp[static_cast<std::size_t>(c[MeshDim::dp])], r);
      EXPECT_EQ(pp[static_cast<std::size_t>(c[MeshDim::pp])], r);
      for (int x : dp) EXPECT_EQ(x % p, c[MeshDim::pp]);
      for (int x : pp) EXPECT_EQ(x / p, c[MeshDim::dp]);
      EXPECT_EQ(mesh_group_members(r, s, MeshDim::tp), std::vector<int>{r});
    }
    EXPECT_EQ(seen.size(), 4u);
  }
}

// With a tensor-parallel size (not configurable yet): tp varies fastest, then pp, then dp.
TEST(Mesh, PlacementOrderTpThenPpThenDp) {
  const auto s = make_mesh_shape(12, 3, 2);  // tp 2, pp 3, dp 2
  EXPECT_EQ(s.size(MeshDim::dp), 2);
  EXPECT_EQ(s.stride(MeshDim::tp), 1);
  EXPECT_EQ(s.stride(MeshDim::pp), 2);
  EXPECT_EQ(s.stride(MeshDim::dp), 6);
  const auto c = mesh_coords(11, s);
  EXPECT_EQ(c[MeshDim::tp], 1);
  EXPECT_EQ(c[MeshDim::pp], 2);
  EXPECT_EQ(c[MeshDim::dp], 1);
  EXPECT_EQ(mesh_group_members(7, s, MeshDim::tp), (std::vector<int>{6, 7}));
  EXPECT_EQ(mesh_group_members(7, s, MeshDim::pp), (std::vector<int>{7, 9, 11}));
  EXPECT_EQ(mesh_group_members(7, s, MeshDim::dp), (std::vector<int>{1, 7}));
  std::set<int> ranks;  // every (dp, pp, tp) a different rank
  for (int r = 0; r < 12; ++r) ranks.insert(mesh_world_rank(mesh_coords(r, s), s));
  EXPECT_EQ(ranks.size(), 12u);
  // Names: the other dimensions larger than 1, slowest first.
  EXPECT_EQ(mesh_group_name(c, s, MeshDim::dp), "dp[pp=2,tp=1]");
  EXPECT_EQ(mesh_group_name(c, s, MeshDim::tp), "tp[dp=1,pp=2]");
  const auto flat = make_mesh_shape(4, 1);
  EXPECT_EQ(mesh_group_name(mesh_coords(3, flat), flat, MeshDim::dp), "dp");
  EXPECT_EQ(mesh_group_name(mesh_coords(3, flat), flat, MeshDim::pp), "pp[dp=3]");
  EXPECT_STREQ(dim_name(MeshDim::sp), "sp");
}

TEST(Mesh, ImpossibleLayoutNamesTheNumbers) {
  try {
    make_mesh_shape(6, 4);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_STREQ(e.what(),
                 "[parallel] pipeline_parallel = 4 does not divide the world size 6 (with 6 ranks it must be one of 1, "
                 "2, 3, 6)");
  }
  EXPECT_THROW(make_mesh_shape(2, 4), Error);
  EXPECT_THROW(make_mesh_shape(8, 2, 3), Error);
}

TEST(Mesh, BatchContract) {
  const auto s = make_mesh_shape(6, 2);  // dp = 3
  EXPECT_EQ(per_rank_batch(96, 4, s), 32);
  try {
    per_rank_batch(100, 1, s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("global_batch = 100 is not divisible by the data-parallel size 3"),
              std::string::npos);
  }
  try {
    per_rank_batch(96, 5, s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("micro_batches = 5 does not divide the per-rank batch 32"), std::string::npos);
  }
}

TEST(Mesh, MicroBatchKeepsTheGlobalBatchOnAnyRankCount) {
  TrainConfig t;
  t.global_batch = 512;
  t.micro_batch = 64;  // the GPT-2 124M deck: 8 micro-batches on 1 GPU, 1 on 8
  EXPECT_EQ(micro_batches_for(t, make_mesh_shape(1, 1)), 8);
  EXPECT_EQ(micro_batches_for(t, make_mesh_shape(2, 1)), 4);
  EXPECT_EQ(micro_batches_for(t, make_mesh_shape(8, 1)), 1);
  EXPECT_EQ(micro_batches_for(t, make_mesh_shape(8, 2)), 2);  // dp = 4
  try {
    micro_batches_for(t, make_mesh_shape(16, 1));  // 32 a rank
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "[train] micro_batch = 64 does not divide the per-rank batch 32 (global_batch 512 / 16 "
                 "data-parallel ranks)");
  }
  t.micro_batch = 0;  // auto: micro_batches as given
  t.micro_batches = 3;
  EXPECT_EQ(micro_batches_for(t, make_mesh_shape(8, 1)), 3);
}

TEST(Device, PeakFlopsForMfu) {
  DeviceAssignment d;
  d.kind = DeviceKind::cuda;
  d.description = "cuda:0 NVIDIA H200 (139.8 GiB)";
  EXPECT_EQ(peak_flops(d, Precision::bf16, false), 989e12);
  EXPECT_EQ(peak_flops(d, Precision::fp32, true), 494.5e12);
  EXPECT_EQ(peak_flops(d, Precision::fp32, false), 66.9e12);
  d.description = "cuda:1 NVIDIA A100-SXM4-80GB (79.2 GiB)";
  EXPECT_EQ(peak_flops(d, Precision::fp16, false), 312e12);
  d.description = "cuda:0 NVIDIA GeForce RTX 4090 (23.6 GiB)";
  EXPECT_FALSE(peak_flops(d, Precision::bf16, false));  // unknown: no MFU
  d.kind = DeviceKind::cpu;
  d.description = "cpu";
  EXPECT_FALSE(peak_flops(d, Precision::fp32, false));
}

TEST(Device, AutoWithoutGpusIsCpu) {
  RankInfo me;
  const auto d = choose_device(DeviceKind::auto_, me, {}, "no driver");
  EXPECT_EQ(d.kind, DeviceKind::cpu);
  EXPECT_EQ(choose_comm(CommBackend::auto_, d.kind), CommBackend::mpi);
}

TEST(Device, OneGpuPerLocalRank) {
  RankInfo me;
  me.local_rank = 1;
  me.local_size = 2;
  me.host = "n1";
  std::vector<cuda::GpuInfo> gpus{{0, "A", 1ull << 30, 9, 0, "GPU-a", "00000000:0A:00.0"},
                                  {1, "B", 2ull << 30, 9, 0, "GPU-b", "00000000:0B:00.0"}};
  const auto d = choose_device(DeviceKind::auto_, me, gpus, "");
  EXPECT_EQ(d.kind, DeviceKind::cuda);
  EXPECT_EQ(d.gpu, 1);
  EXPECT_EQ(d.pci_bus_id, "00000000:0B:00.0");  // what NVML finds it by
  EXPECT_TRUE(d.first_on_gpu);
  EXPECT_EQ(d.description, "cuda:1 B (2.0 GiB)");
  EXPECT_EQ(choose_comm(CommBackend::auto_, DeviceKind::cuda), cuda::compiled() ? CommBackend::nccl : CommBackend::mpi);
  EXPECT_EQ(choose_comm(CommBackend::mpi, DeviceKind::cuda), CommBackend::mpi);
}

TEST(Device, MoreRanksThanGpusIsAnError) {
  RankInfo me;
  me.local_size = 3;
  me.host = "n1";
  std::vector<cuda::GpuInfo> gpus{{0, "A", 1, 9, 0, "GPU-a", ""}, {1, "B", 1, 9, 0, "GPU-b", ""}};
  try {
    choose_device(DeviceKind::cuda, me, gpus, "");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("3 ranks on n1 but only 2 GPU(s) visible"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("share_gpus = true"), std::string::npos) << e.what();
  }
}

TEST(Device, SharingGpusWhenAllowed) {
  RankInfo me;
  me.local_rank = 2;
  me.local_size = 3;
  me.host = "n1";
  std::vector<cuda::GpuInfo> gpus{{0, "A", 1ull << 30, 9, 0, "GPU-a", ""}, {1, "B", 1ull << 30, 9, 0, "GPU-b", ""}};
  const auto d = choose_device(DeviceKind::cuda, me, gpus, "", true);
  EXPECT_EQ(d.gpu, 0);  // local rank 2 of 3 on 2 GPUs
  EXPECT_TRUE(d.shared);
  EXPECT_FALSE(d.first_on_gpu);  // local rank 0 counts GPU 0's energy and hours
  EXPECT_EQ(d.description, "cuda:0 A (1.0 GiB), shared");
  EXPECT_EQ(choose_comm(CommBackend::auto_, DeviceKind::cuda, true), CommBackend::mpi);
  try {
    choose_comm(CommBackend::nccl, DeviceKind::cuda, true);
    FAIL() << "NCCL with shared GPUs must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("NCCL cannot put two ranks"), std::string::npos);
  }
  me.local_size = 2;  // not oversubscribed: sharing allowed but not used
  me.local_rank = 1;
  EXPECT_FALSE(choose_device(DeviceKind::cuda, me, gpus, "", true).shared);
}

// Under Slurm's --gpus-per-task=1 (or CUDA_VISIBLE_DEVICES set per rank) every rank sees one
// GPU, a different one: by count that looks like 4 ranks on 1 GPU; by UUID nothing is shared.
TEST(Device, RanksThatEachSeeOneDifferentGpuShareNothing) {
  RankInfo me;
  me.local_size = 4;
  me.host = "n1";
  const std::vector<std::string> picks{"GPU-a", "GPU-b", "GPU-c", "GPU-d"};
  for (int r = 0; r < 4; ++r) {
    me.local_rank = r;
    std::vector<cuda::GpuInfo> mine{{0, "H200", 1ull << 30, 9, 0, picks[static_cast<std::size_t>(r)], ""}};
    EXPECT_EQ(pick_uuid(me, mine), picks[static_cast<std::size_t>(r)]);
    const auto d = choose_device(DeviceKind::cuda, me, mine, "", false, picks);
    EXPECT_EQ(d.gpu, 0);
    EXPECT_FALSE(d.shared);
    EXPECT_TRUE(d.first_on_gpu);
  }
}

TEST(Device, RanksOnOneGpuByUuidAreRefusedUnlessSharingIsAllowed) {
  RankInfo me;
  me.local_size = 3;
  me.local_rank = 2;
  me.host = "n1";
  // Ranks 0 and 2 each see both GPUs; rank 2 takes index 0 (2 % 2): the same GPU as rank 0.
  std::vector<cuda::GpuInfo> gpus{{0, "A", 1ull << 30, 9, 0, "GPU-a", ""}, {1, "B", 1ull << 30, 9, 0, "GPU-b", ""}};
  const std::vector<std::string> picks{"GPU-a", "GPU-b", pick_uuid(me, gpus)};
  EXPECT_EQ(picks[2], "GPU-a");
  try {
    choose_device(DeviceKind::cuda, me, gpus, "", false, picks);
    FAIL() << "two ranks on GPU-a must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("local ranks 0, 2 on n1 would share one GPU (GPU-a, A)"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("share_gpus = true"), std::string::npos) << e.what();
  }
  const auto shared = choose_device(DeviceKind::cuda, me, gpus, "", true, picks);
  EXPECT_TRUE(shared.shared);
  EXPECT_FALSE(shared.first_on_gpu);  // local rank 0 is first on GPU-a
  me.local_rank = 0;
  EXPECT_TRUE(choose_device(DeviceKind::cuda, me, gpus, "", true, picks).first_on_gpu);
  me.local_rank = 1;  // rank 1 is alone on GPU-b
  const auto alone = choose_device(DeviceKind::cuda, me, gpus, "", false, picks);
  EXPECT_FALSE(alone.shared);
  EXPECT_TRUE(alone.first_on_gpu);
}

// The cuDNN math per precision: a down-conversion to fp16 only in fp16 mode (bf16-rounded values
// above 65504 would become inf), tensor cores without conversion for tf32 and bf16, FMA for fp32.
TEST(Device, CudnnConvolutionMathPerPrecision) {
  EXPECT_EQ(cuda::conv_math(cuda::GemmMath::fp32), cuda::ConvMath::fma);
  EXPECT_EQ(cuda::conv_math(cuda::GemmMath::tf32), cuda::ConvMath::default_math);
  EXPECT_EQ(cuda::conv_math(cuda::GemmMath::bf16), cuda::ConvMath::default_math);
  EXPECT_EQ(cuda::conv_math(cuda::GemmMath::fp16), cuda::ConvMath::allow_fp16_conversion);
  EXPECT_STREQ(cuda::to_string(cuda::conv_math(cuda::GemmMath::bf16)), "CUDNN_DEFAULT_MATH");
}

TEST(Device, MemoryOperationsAreRefusedWhileAGraphIsRecorded) {
  EXPECT_NO_THROW(cuda::refuse_during_capture(false, "growing the CUDA scratch area"));
  try {
    cuda::refuse_during_capture(true, "growing the CUDA scratch area");
    FAIL() << "no error while capturing";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::internal);
    EXPECT_NE(std::string(e.what()).find("growing the CUDA scratch area while the compute stream is recorded"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("cuda_graphs = false"), std::string::npos) << e.what();
  }
}

TEST(Device, CudaRequestedWithoutGpuSaysWhy) {
  RankInfo me;
  me.host = "n1";
  try {
    choose_device(DeviceKind::cuda, me, {}, "cudaErrorNoDevice: no CUDA-capable device is detected");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("no GPU is visible on n1: cudaErrorNoDevice"), std::string::npos);
  }
}

TEST(Device, VisibleGpusNeverThrowsWithoutADriver) {
  std::string why;
  std::vector<cuda::GpuInfo> gpus;
  EXPECT_NO_THROW(gpus = cuda::visible_gpus(&why));
  if (gpus.empty()) {
    EXPECT_FALSE(why.empty());
  }
}
