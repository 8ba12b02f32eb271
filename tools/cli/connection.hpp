#pragma once
// Talking to Redis from a command: connect once (no silent retrying: an
// operator wants to hear at once that Redis is unreachable) and send
// requests, turning transport failures into exit code 3.

#include <leasehold/redis/client.hpp>

#include <boost/asio/awaitable.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace leasehold::cli {

/// Starts `client` and returns once it is connected. Throws
/// Failure(exit_unavailable) with the reason (never a password) when the first
/// attempt fails; the client is stopped then.
boost::asio::awaitable<void> connect(redis::Client& client);

/// Sends `request` and returns one reply per command (server error replies
/// included). Throws Failure(exit_unavailable) when the request fails.
boost::asio::awaitable<std::vector<redis::Reply>> exec(redis::Client& client, redis::Request request);

/// "<what> at <endpoint>: <why>" for an error of `client`'s connection.
std::string unavailable(const redis::Client& client, std::string_view what, const Error& error);

/// Throws Failure(exit_unavailable) naming `what` if `reply` is an error reply.
void check_reply(const redis::Reply& reply, std::string_view what);

}  // namespace leasehold::cli
