#pragma once
// When to connect, how long an attempt may take, how long to wait before the
// next, and what a new connection must say first (the handshake) — without
// I/O. Time is passed in; randomness (the backoff's jitter) is injected.
//
//   stopped --start--> connecting --on_up--> up
//   connecting/up --on_failed, on_connect_timeout--> waiting --on_wait_elapsed--> connecting
//   any --stop--> stopped

#include <leasehold/error.hpp>
#include <leasehold/redis/codec.hpp>
#include <leasehold/redis/reply.hpp>
#include <leasehold/redis/script.hpp>
#include <leasehold/redis_options.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace leasehold::redis::detail {

class Reconnect {
 public:
  using clock = std::chrono::steady_clock;
  /// A uniformly random integer in [0, max].
  using Jitter = std::function<std::int64_t(std::int64_t max)>;

  enum class State : std::uint8_t { stopped, connecting, up, waiting };

  struct Action {
    enum class Kind : std::uint8_t {
      none,     ///< nothing to do (start() while running)
      connect,  ///< open and handshake a connection by `at`
      wait,     ///< the connection or attempt ended with `error`; connect again at `at`
      stop,     ///< stopped: end the loop
    };
    Kind kind = Kind::none;
    clock::time_point at{};
    Error error{};
    bool report = false;        ///< wait: news for the state handler (a fall, or the first failure in a row)
    bool disconnected = false;  ///< wait: a connection that was up ended
  };

  /// `options` must outlive the machine. An empty `jitter` draws from a
  /// generator seeded by std::random_device.
  explicit Reconnect(const RedisOptions& options, Jitter jitter = {});

  State state() const noexcept { return state_; }
  bool stopped() const noexcept { return state_ == State::stopped; }

  Action start(clock::time_point now);
  void stop() noexcept;

  /// Whether a connection without Sentinel checks ROLE as well
  /// (RedisOptions::require_primary, for a request/response connection to
  /// one server); a server that refuses ROLE passes that check.
  void check_primary(bool on) noexcept { check_primary_ = on; }

  /// The handshake of a freshly opened stream: AUTH, SELECT, CLIENT SETNAME,
  /// ROLE (Sentinel, or check_primary: the server must be a master) and one
  /// SCRIPT LOAD per preloaded script, as far as configured, in one request.
  /// Empty when there is nothing to say.
  Request begin_handshake(std::span<const Script* const> preloaded);
  /// Handshake replies still expected.
  std::size_t handshake_remaining() const noexcept { return steps_.size() - next_step_; }
  /// The reply to the next handshake step: an error that makes the
  /// connection unusable ends the attempt (a SCRIPT LOAD failure does not:
  /// EVALSHA falls back to EVAL and reports a real error then).
  Error on_handshake_reply(const Reply& reply);

  /// The handshake succeeded: the connection serves requests. False when
  /// the machine was stopped meanwhile.
  bool on_up();
  /// A reply past the handshake: the connection is known to work, so its end
  /// restarts the backoff from reconnect_min.
  void on_reply() noexcept { served_ = state_ == State::up; }
  /// The attempt (connecting) or the connection (up) ended.
  Action on_failed(Error error, clock::time_point now);
  /// The attempt outlived connect_timeout.
  Action on_connect_timeout(clock::time_point now);
  /// The backoff is over.
  Action on_wait_elapsed(clock::time_point now);

 private:
    // role: Sentinel's check, which a refusal fails; role_if_answered: the
  // check_primary one, which a refusal skips.
  enum class Step : std::uint8_t { auth, select, setname, role, role_if_answered, script };

  std::chrono::milliseconds backoff();

  const RedisOptions& options_;
  Jitter jitter_;
  State state_ = State::stopped;
  unsigned attempt_ = 0;  // failures in a row, for the backoff
  bool served_ = false;   // the current connection answered after its handshake
  bool check_primary_ = false;
  std::vector<Step> steps_;
  std::size_t next_step_ = 0;
};

}  // namespace leasehold::redis::detail
