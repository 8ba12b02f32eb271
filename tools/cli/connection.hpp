#pragma once
// Talking to Redis from a command: connect once (no silent retrying: an
// operator wants to hear at once that Redis is unreachable) and send
// requests, turning transport failures into exit code 3. One server (or the
// master Sentinel names) through a redis::Client, or a Redis Cluster through
// the library's cluster client, which sends each group's commands to the
// master of the group's slot: the same seam the Elector uses (CommandRoute).

#include <leasehold/impl/transport/command_route.hpp>  // leasehold::detail::CommandRoute

#include <leasehold/key_layout.hpp>
#include <leasehold/redis/client.hpp>
#include <leasehold/redis_options.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leasehold::cli {

/// A request whose commands all touch keys that hash like `key`.
struct KeyedRequest {
  std::string key;
  redis::Request request;
};

class Connection {
 public:
  Connection(boost::asio::any_io_executor executor, RedisOptions options);
  ~Connection() { stop(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool is_cluster() const noexcept { return commands_.is_cluster(); }
  const RedisOptions& options() const noexcept { return commands_.options(); }
  /// The library's connection(s), for what the CLI shares with the Elector.
  detail::CommandRoute& commands() noexcept { return commands_; }
  /// Connected (a cluster: its slot map read and its masters connected).
  bool connected() const noexcept;
  /// Told when the connection goes down or comes back (the client reconnects).
  void on_state(redis::Client::StateHandler handler) { commands_.on_state(std::move(handler)); }

  /// Starts the connection and returns once it is usable. Throws
  /// Failure(exit_unavailable) with the reason (never a password) when the
  /// first attempt fails; the connection is stopped then.
  boost::asio::awaitable<void> connect();
  void stop() { commands_.stop(); }

  /// Sends `request` (every command on keys that hash like `key`) and
  /// returns one reply per command (server error replies included). Throws
  /// Failure(exit_unavailable) when the request fails.
  boost::asio::awaitable<std::vector<redis::Reply>> exec(redis::Request request, std::string_view key);
  /// Every request at once (pipelined on one connection; on a cluster, each
  /// to its slot's master); their replies in the same order. Throws as exec().
  boost::asio::awaitable<std::vector<std::vector<redis::Reply>>> exec_each(std::vector<KeyedRequest> requests);
  /// The script on the keys' node; server error replies are returned.
  boost::asio::awaitable<redis::Reply> eval(const redis::Script& script, std::vector<std::string> keys,
                                            std::vector<std::string> args);
  /// SCAN MATCH `pattern` to the end on the server, or on every master of a
  /// cluster; `visit` gets each reply's list of keys.
  boost::asio::awaitable<void> scan(const std::string& pattern, const std::function<void(const redis::Reply&)>& visit);

  /// "<what> at <endpoint>: <why>" for a failed request or connection.
  std::string unavailable(std::string_view what, const Error& error) const;

 private:
  boost::asio::awaitable<std::vector<redis::Reply>> exec_on_master(const std::string& master, redis::Request request);

  detail::CommandRoute commands_;
};

/// The layout of `prefix` on this connection's kind of Redis: hash-tagged
/// keys on a cluster or with the URL's key_layout=hash_tagged (see KeyLayout).
KeyLayout layout_for(const RedisOptions& options, std::string prefix);

/// Throws Failure(exit_unavailable) naming `what` if `reply` is an error reply.
void check_reply(const redis::Reply& reply, std::string_view what);

}  // namespace leasehold::cli
