// Point-to-point operations of the NCCL communicator, deferred and issued together as one
// group. NCCL makes a send on a stream wait until the peer has posted the matching receive, so
// two ranks that each send, then receive, on one stream would wait for each other forever;
// inside ncclGroupStart/ncclGroupEnd the library pairs them. The group is issued when a request
// of one of its operations is tested or waited for, or before any collective (so operations
// still reach the library in call order). The library calls are injected: the pairing is tested
// on the CPU (tests/unit/test_p2p_group.cpp).
#pragma once

#include <functional>
#include <mutex>
#include <vector>

namespace hpctrain {

class P2pGroup {
 public:
  struct Calls {
    std::function<void()> group_start, group_end;
  };
  explicit P2pGroup(Calls calls) : calls_(std::move(calls)) {}

  // Queues one send or receive: `issue` makes the library call, `after` runs once the whole group
  // was issued (recording the operation's completion event).
  void add(std::function<void()> issue, std::function<void()> after);
  // Issues everything queued, in order, as one group, then each `after`; nothing when empty.
  void flush();
  std::size_t pending() const;

 private:
  struct Entry {
    std::function<void()> issue, after;
  };
  Calls calls_;
  mutable std::mutex mu_;
  std::vector<Entry> queued_;
};

}  // namespace hpctrain
