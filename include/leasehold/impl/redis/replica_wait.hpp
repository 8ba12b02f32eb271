#pragma once
// Confirm mode's question to Redis: did enough replicas acknowledge what this
// connection wrote? WAIT counts the replicas that acknowledged every write of
// *its* connection, so a WAIT that ran on a later connection (a reconnect in
// between) vouches for nothing and counts as too few.

#include <leasehold/error.hpp>
#include <leasehold/redis/client.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace leasehold::detail {

/// Sends WAIT `replicas` `timeout` on `client` right after the command whose
/// writes it should vouch for. `done(error_code, bool enough, Reply wait)`:
/// the error of the WAIT itself (an error reply classified; `wait` holds its
/// text), else whether at least `replicas` acknowledged on the same connection.
template <typename Done>
void wait_for_replicas(redis::Client& client, int replicas, std::chrono::milliseconds timeout, Done done) {
  const std::uint64_t connection = client.stats().connects;
  redis::Request wait{"WAIT", std::to_string(replicas), std::to_string(timeout.count())};
  client.async_exec(std::move(wait), [&client, connection, replicas, done = std::move(done)](
                                         error_code ec, std::vector<redis::Reply> acks) mutable {
    if (!ec && (acks.size() != 1 || acks[0].is_error())) {
      ec = acks.size() == 1 ? make_error_code(classify_server_error(acks[0].str))
                            : make_error_code(errc::unexpected_reply);
    }
    const bool enough = !ec && acks[0].is_integer() && acks[0].integer >= replicas &&
                        client.stats().connects == connection;
    std::move(done)(ec, enough, acks.empty() ? redis::Reply{} : std::move(acks[0]));
  });
}

}  // namespace leasehold::detail
