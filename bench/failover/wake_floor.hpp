#pragma once
// The machine's own floor under a hand-over: how long a PUBLISH takes to
// wake a subscriber in another process, through the same redis-server,
// without leasehold. A step_down hand-over makes two such trips (the release
// notice to the standby, then its acquire's round trip), so its tail cannot
// be shorter than this one's on the same machine.

#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

namespace leasehold::bench {

/// `rounds` PUBLISHes to a subscriber process on `port` (loopback), each
/// after an idle wait of 20-60 ms like a benchmark round; returns each
/// publish -> subscriber-woken span in ms. Throws std::runtime_error.
std::vector<double> measure_wake_floor(int port, int rounds, std::mt19937& rng);

}  // namespace leasehold::bench
