// Every collective of the MPI communicator against a serial reference, for
// several sizes (0, 1, sizes not divisible by the rank count, > 1 MiB) and
// types, in and out of place; point-to-point; many requests in flight; and
// progress of a non-blocking collective while the caller computes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "hpctrain/comm/mpi_communicator.hpp"
#include "hpctrain/core/error.hpp"

#include "mpi_test_util.hpp"

using namespace hpctrain;

namespace {

// Rank r's i-th input element: small integers, so float sums are exact.
template <typename T>
T value(int rank, std::size_t i) {
  return static_cast<T>(static_cast<long>((i * 7 + static_cast<std::size_t>(rank) * 13) % 101) - 50);
}

template <typename T>
T reduce_ref(ReduceOp op, std::size_t i, int size) {
  T acc = value<T>(0, i);
  for (int r = 1; r < size; ++r) {
    const T v = value<T>(r, i);
    if (op == ReduceOp::sum || op == ReduceOp::avg) acc = static_cast<T>(acc + v);
    if (op == ReduceOp::max) acc = std::max(acc, v);
    if (op == ReduceOp::min) acc = std::min(acc, v);
  }
  if (op == ReduceOp::avg && size > 1) acc = static_cast<T>(acc * static_cast<T>(1.0 / size));
  return acc;
}

const std::vector<std::size_t> kSizes{0, 1, 7, 1000, 65537, 300001};

MpiCommOptions with_shm() {
  MpiCommOptions o;
  o.name = "shm";
  o.shm_allreduce = true;
  return o;
}

template <typename T>
class Collectives : public ::testing::Test {
 protected:
  MpiCommunicator comm{MPI_COMM_WORLD, MpiCommOptions{}};
  // Float32 sums, reduce-scatters and all-gathers go through node-shared memory here (the others: MPI).
  MpiCommunicator shm{MPI_COMM_WORLD, with_shm()};
};

using Types = ::testing::Types<float, double, std::int32_t, std::int64_t>;
TYPED_TEST_SUITE(Collectives, Types);

TYPED_TEST(Collectives, AllreduceEveryOpAndSize) {
  using T = TypeParam;
  const int r = world_rank(), n = world_size();
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
    if (op == ReduceOp::avg && !std::is_floating_point<T>::value) continue;
    for (std::size_t count : kSizes) {
      for (bool in_place : {false, true}) {
        std::vector<T> send(count), recv(count, T(-99));
        for (std::size_t i = 0; i < count; ++i) send[i] = value<T>(r, i);
        if (in_place)
          this->comm.allreduce(send.data(), send.data(), count, dtype_of<T>(), op);
        else
          this->comm.allreduce(send.data(), recv.data(), count, dtype_of<T>(), op);
        const auto& out = in_place ? send : recv;
        std::size_t bad = 0;
        for (std::size_t i = 0; i < count; ++i) bad += out[i] != reduce_ref<T>(op, i, n);
        EXPECT_EQ(bad, 0u) << to_string(op) << " count " << count << (in_place ? " in place" : "");
      }
    }
  }
}

TYPED_TEST(Collectives, BroadcastFromEveryRoot) {
  using T = TypeParam;
  const int r = world_rank(), n = world_size();
  for (int root = 0; root < n; ++root)
    for (std::size_t count : kSizes) {
      std::vector<T> buf(count);
      for (std::size_t i = 0; i < count; ++i) buf[i] = value<T>(r, i);
      this->comm.broadcast(buf.data(), count, dtype_of<T>(), root);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < count; ++i) bad += buf[i] != value<T>(root, i);
      EXPECT_EQ(bad, 0u) << "root " << root << " count " << count;
    }
}

TYPED_TEST(Collectives, AllgatherEqualBlocks) {
  using T = TypeParam;
  const int r = world_rank(), n = world_size();
  for (std::size_t count : kSizes) {
    for (bool in_place : {false, true})
      for (MpiCommunicator* c : {&this->comm, &this->shm}) {
        std::vector<T> send(count), recv(count * static_cast<std::size_t>(n), T(-99));
        for (std::size_t i = 0; i < count; ++i) send[i] = value<T>(r, i);
        if (in_place) {
          std::copy(send.begin(), send.end(),
                    recv.begin() + static_cast<std::ptrdiff_t>(count * static_cast<std::size_t>(r)));
          c->allgather(recv.data() + count * static_cast<std::size_t>(r), recv.data(), count, dtype_of<T>());
        } else {
          c->allgather(send.data(), recv.data(), count, dtype_of<T>());
        }
        std::size_t bad = 0;
        for (int q = 0; q < n; ++q)
          for (std::size_t i = 0; i < count; ++i)
            bad += recv[static_cast<std::size_t>(q) * count + i] != value<T>(q, i);
        EXPECT_EQ(bad, 0u) << c->name() << " count " << count << (in_place ? " in place" : "");
      }
  }
}

TYPED_TEST(Collectives, ReduceScatterEqualBlocks) {
  using T = TypeParam;
  const int r = world_rank(), n = world_size();
  const std::size_t nn = static_cast<std::size_t>(n), rr = static_cast<std::size_t>(r);
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max}) {
    if (op == ReduceOp::avg && !std::is_floating_point<T>::value) continue;
    for (std::size_t count : kSizes) {
      for (bool in_place : {false, true})
        for (MpiCommunicator* c : {&this->comm, &this->shm}) {
          std::vector<T> send(count * nn), recv(count, T(-99));
          for (std::size_t i = 0; i < send.size(); ++i) send[i] = value<T>(r, i);
          T* out = recv.data();
          if (in_place) {
            out = send.data() + rr * count;
            c->reduce_scatter(send.data(), out, count, dtype_of<T>(), op);
          } else {
            c->reduce_scatter(send.data(), recv.data(), count, dtype_of<T>(), op);
          }
          std::size_t bad = 0;
          for (std::size_t i = 0; i < count; ++i) bad += out[i] != reduce_ref<T>(op, rr * count + i, n);
          EXPECT_EQ(bad, 0u) << c->name() << " " << to_string(op) << " count " << count
                             << (in_place ? " in place" : "");
        }
    }
  }
}

TEST(PointToPoint, RingBothDirectionsLargeAndEmpty) {
  MpiCommunicator comm(MPI_COMM_WORLD, MpiCommOptions{});
  const int r = world_rank(), n = world_size();
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  for (std::size_t count : {std::size_t{0}, std::size_t{3}, std::size_t{1} << 20}) {
    std::vector<float> out(count), in(count, -1.f);
    for (std::size_t i = 0; i < count; ++i) out[i] = value<float>(r, i);
    // Both directions posted before either is waited on: needs true non-blocking p2p.
    auto s = comm.isend(out.data(), count, DType::f32, next);
    auto q = comm.irecv(in.data(), count, DType::f32, prev);
    q->wait();
    s->wait();
    std::size_t bad = 0;
    for (std::size_t i = 0; i < count; ++i) bad += in[i] != value<float>(prev, i);
    EXPECT_EQ(bad, 0u) << "count " << count;
  }
}

TEST(NonBlocking, ManyInFlightWaitedInReverse) {
  MpiCommunicator comm(MPI_COMM_WORLD, MpiCommOptions{});
  const int r = world_rank(), n = world_size();
  constexpr int kOps = 16;
  std::vector<std::vector<double>> bufs(kOps, std::vector<double>(5000));
  std::vector<Request> reqs;
  for (int k = 0; k < kOps; ++k) {
    for (std::size_t i = 0; i < bufs[static_cast<std::size_t>(k)].size(); ++i)
      bufs[static_cast<std::size_t>(k)][i] = value<double>(r, i) * (k + 1);
    reqs.push_back(comm.iallreduce(bufs[static_cast<std::size_t>(k)].data(), bufs[static_cast<std::size_t>(k)].data(),
                                   5000, DType::f64, ReduceOp::sum));
  }
  reqs.push_back(comm.ibarrier());
  for (auto it = reqs.rbegin(); it != reqs.rend(); ++it) (*it)->wait();
  for (int k = 0; k < kOps; ++k)
    EXPECT_EQ(bufs[static_cast<std::size_t>(k)][17], reduce_ref<double>(ReduceOp::sum, 17, n) * (k + 1));
}

TEST(NonBlocking, ProgressesWhileTheCallerComputes) {
  // Ranks other than 0 join 200 ms late; rank 0 starts first, then computes for
  // 1.5 s without calling MPI. The allreduce must be complete when it looks:
  // only the communicator's progress thread can have moved it.
  MpiCommunicator comm(MPI_COMM_WORLD, MpiCommOptions{});
  const int r = world_rank();
  std::vector<float> buf(1 << 21, 1.0f);  // 8 MiB: rendezvous protocol, several rounds
  MPI_Barrier(MPI_COMM_WORLD);
  if (r != 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto req = comm.iallreduce(buf.data(), buf.data(), buf.size(), DType::f32, ReduceOp::sum);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  volatile double sink = 0;
  while (std::chrono::steady_clock::now() < until) sink = sink + 1.0;  // compute, no MPI
  EXPECT_TRUE(req->test()) << "the allreduce did not progress while the caller computed";
  req->wait();
  EXPECT_EQ(buf[12345], static_cast<float>(world_size()));
}

TEST(Misuse, BadArgumentsAreClearErrors) {
  MpiCommunicator comm(MPI_COMM_WORLD, MpiCommOptions{});
  float x = 0;
  std::uint16_t h = 0;
  std::int32_t i = 0;
  try {
    comm.broadcast(&x, 1, DType::f32, world_size());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("broadcast on 'world': rank " + std::to_string(world_size()) + " outside 0.."),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(comm.allreduce(&h, &h, 1, DType::bf16, ReduceOp::sum), Error);
  try {
    comm.allreduce(&i, &i, 1, DType::i32, ReduceOp::avg);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("avg needs a floating-point dtype, got i32"), std::string::npos);
  }
  // The communicator still works after refused calls.
  x = 1;
  comm.allreduce(&x, &x, 1, DType::f32, ReduceOp::sum);
  EXPECT_EQ(x, static_cast<float>(world_size()));
}

}  // namespace

// [parallel] host_allreduce = shm: float32 sums and averages through node-shared memory equal the
// serial reference (exact: small integers) for every size, in and out of place, several slots'
// worth included, and give every rank the same bits; other ops and types still go through MPI.
TEST(ShmAllreduce, EqualsTheReferenceAndIsTheSameOnEveryRank) {
  MpiCommOptions o;
  o.name = "shm";
  o.shm_allreduce = true;
  MpiCommunicator shm(MPI_COMM_WORLD, o);
  const int r = world_rank(), n = world_size();
  EXPECT_EQ(shm.shm_allreduce_nodes(), n > 1 ? 1 : 0);  // (one node; one rank alone has nothing to share)
  std::vector<std::size_t> sizes = kSizes;
  sizes.push_back(3 * 65536 + 5);  // several 256 KiB slots and a remainder
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max}) {
    for (std::size_t count : sizes) {
      for (bool in_place : {false, true}) {
        std::vector<float> send(count), recv(count, -99.f);
        for (std::size_t i = 0; i < count; ++i) send[i] = value<float>(r, i);
        float* out = in_place ? send.data() : recv.data();
        shm.allreduce(send.data(), out, count, DType::f32, op);
        std::size_t bad = 0;
        double checksum = 0;
        for (std::size_t i = 0; i < count; ++i) {
          bad += out[i] != reduce_ref<float>(op, i, n);
          checksum += out[i] * static_cast<double>(i % 17 + 1);
        }
        EXPECT_EQ(bad, 0u) << to_string(op) << " count " << count << (in_place ? " in place" : "");
        double first = checksum;
        shm.broadcast(&first, 1, DType::f64, 0);
        EXPECT_EQ(first, checksum) << "rank " << r << " differs from rank 0, count " << count;
      }
    }
  }
  std::vector<double> d(1000);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = value<double>(r, i);
  shm.allreduce(d.data(), d.data(), d.size(), DType::f64, ReduceOp::sum);  // float64: MPI's path
  for (std::size_t i = 0; i < d.size(); i += 111) EXPECT_EQ(d[i], reduce_ref<double>(ReduceOp::sum, i, n));
}
