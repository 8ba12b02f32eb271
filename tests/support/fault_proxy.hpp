#pragma once
// A TCP proxy between the library and a Redis server that can drop, delay,
// stall, refuse and reset traffic on command, from any thread.

#include <leasehold/redis_options.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace leasehold::test {

class FaultProxy {
 public:
  /// What happens to bytes on proxied connections.
  enum class Mode {
    forward,    ///< pass through (after the configured latency)
    blackhole,  ///< swallow everything, both directions, including EOF/RST
    stall,      ///< hold everything, both directions, until the mode changes
  };

  /// Listens on a free 127.0.0.1 port (its own thread and io_context) and
  /// forwards each accepted connection to target_host:target_port.
  explicit FaultProxy(std::uint16_t target_port, std::string target_host = "127.0.0.1");
  /// Stops the thread; every proxied connection is reset.
  ~FaultProxy();

  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;
  FaultProxy(FaultProxy&&) = delete;
  FaultProxy& operator=(FaultProxy&&) = delete;

  std::uint16_t port() const noexcept;

  // Every control below is thread-safe and synchronous: when it returns, the
  // new behaviour is in effect on the proxy's thread. Do not call them from
  // inside the proxy thread (there is no callback that would run there).

  /// Accept new connections and pass bytes through. Bytes held by stall()
  /// are delivered, in order. Connections that lost bytes in blackhole mode
  /// are reset now: their byte stream has a hole in it, so they behave like
  /// connections the peer has forgotten during the partition.
  void forward();
  /// Accept new connections but swallow every byte in both directions,
  /// existing connections included; nothing reaches either side and the
  /// sockets stay open (like a network partition whose packets are dropped).
  /// A connection that swallows any byte (or its peer's close) is reset when
  /// the mode later changes back.
  void blackhole();
  /// Like blackhole(), but bytes are held rather than dropped and delivered
  /// in order by forward(): a partition that heals without losing data.
  void stall();
  /// New connections are accepted and reset (RST) at once; existing
  /// connections keep the current mode. forward(), blackhole() and stall()
  /// accept connections again.
  void refuse();
  /// Closes every current connection abruptly (SO_LINGER 0: both the client
  /// and the server see a reset). New connections work in the current mode.
  void reset_all();
  /// Delays each chunk read from either side by `latency` before writing it
  /// to the other side, preserving order (a round trip costs 2 x latency).
  /// Applies to chunks read from now on.
  void set_latency(std::chrono::milliseconds latency);

  Mode mode() const noexcept;
  bool refusing() const noexcept;

  /// Currently open proxied connections.
  std::size_t connection_count() const noexcept;
  /// Connections accepted since construction (including refused ones).
  std::size_t accepted_count() const noexcept;
  /// Polls until connection_count() >= n; false on timeout.
  bool wait_for_connections(std::size_t n, std::chrono::milliseconds timeout) const;

  /// base pointed at this proxy: host 127.0.0.1, port(), no unix socket.
  /// TLS settings are kept (the proxy is transparent to TLS; keep
  /// tls.server_name set, e.g. "localhost" as RedisServer::options() does).
  leasehold::RedisOptions options_for(leasehold::RedisOptions base) const;


 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace leasehold::test
