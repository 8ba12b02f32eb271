#pragma once
// An Asio-native Redis client over one connection at a time, reconnecting with
// backoff. Asio owns the socket (TCP, unix or TLS); hiredis is the codec.
//
// Guarantees the elector relies on:
//  - requests are pipelined and their replies matched in order;
//  - after a timeout, a protocol error or a lost connection the connection is
//    closed and every pending request fails, so a late reply can never be
//    matched to a newer request;
//  - a cancelled request is detached, not the connection closed: its handler
//    completes at once and its reply, still read in its place, is dropped;
//  - a request made while disconnected fails at once with errc::not_connected
//    (nothing is queued across reconnects: a lease command must not be
//    replayed later than it was meant).
//
// Threading: a Client is not thread-safe. Call it, and let its handlers run,
// on its executor (use a strand when the io_context has several threads).

#include <leasehold/error.hpp>
#include <leasehold/latency_histogram.hpp>
#include <leasehold/redis/codec.hpp>
#include <leasehold/redis/reply.hpp>
#include <leasehold/redis/script.hpp>
#include <leasehold/redis/script_arguments.hpp>
#include <leasehold/redis_options.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace leasehold::redis {

/// What a Client's connection is for: it cannot do both (a subscribed
/// connection accepts only pub/sub commands).
enum class Role : std::uint8_t {
  commands,    ///< request/response traffic
  subscriber,  ///< pub/sub: SUBSCRIBE and message delivery
};

/// Counters of one Client since it was made; they only grow. Read them on
/// the client's executor (Client::stats()).
struct ClientStats {
  std::uint64_t connects = 0;         ///< successful handshakes
  std::uint64_t disconnects = 0;      ///< connections that ended
  std::uint64_t commands_sent = 0;    ///< commands written, health-check PINGs included
  std::uint64_t timeouts = 0;         ///< replies or writes past command_timeout (each closes the connection)
  std::uint64_t protocol_errors = 0;  ///< bad or unexpected bytes from the server (each closes the connection)
  /// Round trip of each request, from enqueue to its last reply (a pipelined
  /// request counts once); requests that fail get no sample.
  LatencyHistogram round_trip;
};

/// The type-erased handler of Client::async_exec (the Client's own plumbing).
using ExecHandler = boost::asio::any_completion_handler<void(error_code, std::vector<Reply>)>;
/// The type-erased handler of Client::async_eval (the Client's own plumbing).
using EvalHandler = boost::asio::any_completion_handler<void(error_code, Reply)>;

namespace detail {
class ClientImpl;

struct NoExecutor {};

// A handler with no executor and no cancellation slot of its own completes on
// the client's executor anyway, so it may be called directly from one posted
// turn that completes every reply of a read, instead of being posted alone
// (through type-erased executors: a dozen allocations per reply).
template <typename Handler>
bool completes_on_client_executor(const Handler& handler) {
  return std::is_same_v<typename boost::asio::associated_executor<Handler, NoExecutor>::type, NoExecutor> &&
         !boost::asio::get_associated_cancellation_slot(handler).is_connected();
}
}  // namespace detail

/// One Redis connection, kept up with reconnects, that pipelines requests
/// and runs scripts (Role::commands) or holds subscriptions
/// (Role::subscriber). See the top of this header for its guarantees and
/// threading rules. Neither copyable nor movable.
class Client {
 public:
  /// The type get_executor() returns.
  using executor_type = boost::asio::any_io_executor;
  /// Called on the executor each time the connection comes up (error empty)
  /// or goes down (error says why).
  using StateHandler = std::function<void(bool up, const Error& error)>;
  /// Called on the executor for each pub/sub message (Role::subscriber).
  using MessageHandler = std::function<void(std::string_view channel, std::string_view payload)>;
  /// Called on the executor when the server confirms a subscription.
  using SubscribedHandler = std::function<void(std::string_view channel)>;
  /// Role::subscriber: called on the executor when the server refuses a
  /// command that has no caller to tell (SUBSCRIBE without channel
  /// permission: NOPERM). The connection stays up.
  using ErrorReplyHandler = std::function<void(const Error& error)>;

  /// A client on `executor` for `options` in the given role. Throws
  /// std::invalid_argument naming the field for invalid options. Connects
  /// nothing until start().
  Client(executor_type executor, RedisOptions options, Role role = Role::commands);
  /// Closes the connection; pending requests complete with errc::stopped.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// The executor the client runs on and calls its handlers on.
  executor_type get_executor() const noexcept;

  /// Starts connecting (and reconnecting after every failure) until stop().
  void start();
  /// Closes the connection for good; pending requests fail with errc::stopped.
  void stop();

  /// True while a connection is up and through its handshake.
  bool connected() const noexcept;
  /// Why the last connection attempt or connection failed (never a password).
  const Error& last_error() const noexcept;
  /// The client's counters; the reference stays valid for the client's life.
  const ClientStats& stats() const noexcept;
  /// When the last non-error reply arrived (any reply, health checks
  /// included), or nullopt before the first. Unlike the rest of the Client,
  /// callable from any thread: it is one atomic load.
  std::optional<std::chrono::steady_clock::time_point> last_reply_at() const noexcept;
  /// The validated options.
  const RedisOptions& options() const noexcept;

  /// Sets the callback for connection state changes; set it before start() to miss none.
  void on_state(StateHandler handler);

  /// Scripts loaded with SCRIPT LOAD on every new connection, so that the
  /// first EVALSHA does not pay for NOSCRIPT. `script` must outlive the Client.
  void preload(const Script& script);

  /// Sends every command of `request` in one write.
  /// Handler: void(error_code, std::vector<Reply>) with one reply per command
  /// (server error replies are replies, not errors). Completes through the
  /// handler's associated executor. Cancellation (terminal or partial, from
  /// any thread) completes the handler with operation_aborted at once; the
  /// request stays in the pipeline (it is sent if it was not yet, and its
  /// replies are read and dropped), so its outcome is unknown and the
  /// connection and every other request carry on. Total cancellation is not
  /// supported: a sent command cannot be taken back.
  template <typename CompletionToken>
  auto async_exec(Request request, CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(error_code, std::vector<Reply>)>(
        [this](auto handler, Request req) {
          const bool direct = detail::completes_on_client_executor(handler);
          start_exec(std::move(req), ExecHandler(std::move(handler)), direct);
        },
        token, std::move(request));
  }

  /// EVALSHA, and on NOSCRIPT an EVAL of the body that also reloads it.
  /// `script` must outlive the operation (scripts are usually static).
  /// Handler: void(error_code, Reply). A server error reply gives the
  /// classified code (errc::wrong_type, errc::no_permission, ...) and the
  /// error reply itself, whose text says more. Cancellation: as async_exec
  /// (a detached EVALSHA is not retried after NOSCRIPT).
  template <typename CompletionToken>
  auto async_eval(const Script& script, std::vector<std::string> keys, std::vector<std::string> args,
                  CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(error_code, Reply)>(
        [this, &script](auto handler, std::vector<std::string> k, std::vector<std::string> a) {
          const bool direct = detail::completes_on_client_executor(handler);
          start_eval(script, std::move(k), std::move(a), EvalHandler(std::move(handler)), direct);
        },
        token, std::move(keys), std::move(args));
  }

  /// The same with keys and arguments encoded beforehand (a call repeated
  /// many times); `arguments` must outlive the operation too.
  template <typename CompletionToken>
  auto async_eval(const Script& script, const ScriptArguments& arguments, CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(error_code, Reply)>(
        [this, &script, &arguments](auto handler) {
          const bool direct = detail::completes_on_client_executor(handler);
          start_eval(script, arguments, EvalHandler(std::move(handler)), direct);
        },
        token);
  }

  /// Role::subscriber: channels to be subscribed to now and after every
  /// reconnect.
  void subscribe(const std::vector<std::string>& channels);
  /// Role::subscriber: stops wanting `channels` (names never subscribed are
  /// ignored) and sends UNSUBSCRIBE for them if connected.
  void unsubscribe(const std::vector<std::string>& channels);
  /// Role::subscriber: Redis Cluster shard channels (SSUBSCRIBE, one command
  /// each), now and after every reconnect; their messages reach on_message,
  /// confirmations on_subscribed. The node must serve each channel's slot
  /// (else it refuses with MOVED: on_error_reply).
  void ssubscribe(const std::vector<std::string>& channels);
  /// Role::subscriber: stops wanting shard channels and sends SUNSUBSCRIBE.
  void sunsubscribe(const std::vector<std::string>& channels);
  /// Sets the callback for shard channels the server ended without being
  /// asked (their slot moved to another node); they are no longer wanted
  /// here. Set it before start() to miss none.
  void on_dropped(SubscribedHandler handler);
  /// Role::subscriber: glob patterns (PSUBSCRIBE), now and after every
  /// reconnect; their messages reach on_message with the channel they were
  /// published on, confirmations reach on_subscribed with the pattern.
  void psubscribe(const std::vector<std::string>& patterns);
  /// Sets the callback for pub/sub messages; set it before start() to miss none.
  void on_message(MessageHandler handler);
  /// Sets the callback for subscription confirmations; set it before start() to miss none.
  void on_subscribed(SubscribedHandler handler);
  /// Sets the callback for refused subscriber commands; set it before start() to miss none.
  void on_error_reply(ErrorReplyHandler handler);
  /// Role::subscriber: true once the server confirmed every wanted channel
  /// and pattern on the current connection.
  bool subscribed() const noexcept;

 private:
  // `direct`: see detail::completes_on_client_executor.
  void start_exec(Request request, ExecHandler handler, bool direct);
  void start_eval(const Script& script, std::vector<std::string> keys, std::vector<std::string> args,
                  EvalHandler handler, bool direct);
  void start_eval(const Script& script, const ScriptArguments& arguments, EvalHandler handler, bool direct);

  std::shared_ptr<detail::ClientImpl> impl_;
};

}  // namespace leasehold::redis
