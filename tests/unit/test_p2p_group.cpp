// The NCCL communicator's point-to-point pairing (comm/p2p_group.hpp) with injected library
// calls: sends and receives are not issued when asked for, but together inside one group, so
// two ranks that each send, then receive, cannot wait for each other forever.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "hpctrain/comm/p2p_group.hpp"

using namespace hpctrain;

namespace {
struct Recorder {
  std::vector<std::string> calls;
  P2pGroup group{{[this] { calls.push_back("group_start"); }, [this] { calls.push_back("group_end"); }}};
  void send(int peer) {
    group.add([this, peer] { calls.push_back("send " + std::to_string(peer)); },
              [this, peer] { calls.push_back("event send " + std::to_string(peer)); });
  }
  void recv(int peer) {
    group.add([this, peer] { calls.push_back("recv " + std::to_string(peer)); },
              [this, peer] { calls.push_back("event recv " + std::to_string(peer)); });
  }
};
}  // namespace

TEST(P2pGroup, SendThenReceiveAreIssuedAsOneGroup) {
  Recorder r;
  r.send(1);  // a pipeline stage sends its activations on ...
  r.recv(1);  // ... and receives the gradient from the same neighbour
  EXPECT_TRUE(r.calls.empty()) << "nothing reaches the library before it is needed";
  EXPECT_EQ(r.group.pending(), 2u);
  r.group.flush();
  const std::vector<std::string> want{"group_start", "send 1", "recv 1", "group_end", "event send 1", "event recv 1"};
  EXPECT_EQ(r.calls, want);
  EXPECT_EQ(r.group.pending(), 0u);
  r.group.flush();  // nothing queued: no empty group
  EXPECT_EQ(r.calls.size(), want.size());
}

TEST(P2pGroup, AFailedCallStillClosesTheGroup) {
  std::vector<std::string> calls;
  P2pGroup g{{[&] { calls.push_back("group_start"); }, [&] { calls.push_back("group_end"); }}};
  g.add([] { throw std::runtime_error("ncclSend failed"); }, [&] { calls.push_back("event"); });
  EXPECT_THROW(g.flush(), std::runtime_error);
  EXPECT_EQ(calls, (std::vector<std::string>{"group_start", "group_end"}));
}
