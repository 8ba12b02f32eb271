#pragma once
// Asking the nodes of a test topology (Sentinel, Cluster) while they change
// underneath: one question per fresh connection, and polling until a
// condition holds.

#include "support/admin_client.hpp"

#include <leasehold/redis/reply.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace leasehold::test {

/// Polls `done` every 100 ms (each poll may open a connection) until it
/// holds (true) or `bound` has passed (false).
template <typename Predicate>
bool poll_until(std::chrono::milliseconds bound, Predicate done) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return true;
}

/// One command on a fresh connection; nullopt when the node cannot be
/// reached or does not answer in time (killed, paused, restarting).
std::optional<redis::Reply> try_call(const AdminClientOptions& options, std::vector<std::string> args);

/// The value of `key` in an INFO text ("key:value" lines), or empty.
std::string info_field(const std::string& info, std::string_view key);

/// How many scripts (EVALSHA and EVAL calls) the node has run since it
/// started, from INFO commandstats.
std::uint64_t script_calls(AdminClient& admin);

}  // namespace leasehold::test
