#pragma once
// The Client's wiring: Asio moves bytes and runs timers; what to send, how
// replies match, when to reconnect and what pushes mean is decided by the
// I/O-free parts (multiplexer, reconnect, watchdog, subscriber). Only
// client.ipp includes it.

#include <leasehold/redis/client.hpp>

#include <leasehold/config.hpp>

#include <leasehold/impl/base/complete.hpp>
#include <leasehold/impl/protocol/reply_decoder.hpp>
#include <leasehold/impl/redis/multiplexer.hpp>
#include <leasehold/impl/redis/reconnect.hpp>
#include <leasehold/impl/redis/sentinel_resolver.hpp>
#include <leasehold/impl/redis/sentinel_watcher.hpp>
#include <leasehold/impl/redis/stream.hpp>
#include <leasehold/impl/redis/subscriber.hpp>
#include <leasehold/impl/redis/watchdog.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <utility>
#include <variant>

namespace leasehold::redis::detail {

using leasehold::detail::complete_later;
using namespace asio::experimental::awaitable_operators;
using clock = std::chrono::steady_clock;

inline Error make_error(errc code, std::string detail = {}) {
  return {make_error_code(code), std::move(detail)};
}

inline bool cancelled(const asio::cancellation_state& state) {
  return state.cancelled() != asio::cancellation_type::none;
}

inline Error io_error(const error_code& ec) {
  if (ec == asio::error::eof) return make_error(errc::connection_lost, "server closed the connection");
  return make_error(errc::connection_lost, ec.message());
}

class ClientImpl : public std::enable_shared_from_this<ClientImpl> {
 public:
  ClientImpl(asio::any_io_executor ex, RedisOptions options, Role role)
      : ex_(std::move(ex)),
        options_(std::move(options)),
        target_(options_),
        role_(role),
        fsm_(options_),
        mux_(options_.command_timeout, stats_),
        watchdog_(options_.command_timeout, options_.health_check_interval),
        write_signal_(ex_),
        watchdog_timer_(ex_),
        backoff_timer_(ex_),
        stop_signal_(ex_) {
    options_.validate();
    fsm_.check_primary(role_ == Role::commands && options_.require_primary);
    if (options_.cluster) {
      // One connection to one server: refuse rather than connect to
      // host:port as if it were the cluster.
      throw std::invalid_argument("RedisOptions.cluster: " + options_.to_string() +
                                  " names a Redis Cluster; a redis::Client talks to one server (an Elector "
                                  "reaches a cluster through one connection per node)");
    }
    if (options_.sentinel) {
      resolver_.emplace(options_);
      target_.sentinel.reset();
    }
#if LEASEHOLD_HAS_TLS
    if (options_.tls.enabled) tls_context_.emplace(make_tls_context(options_.tls));
#else
    if (options_.tls.enabled) {
      throw std::invalid_argument("rediss:// requested but leasehold was built without TLS support");
    }
#endif
  }

  // ---- control and state --------------------------------------------------

  void start() {
    if (running_) return;
    const auto action = fsm_.start(clock::now());
    if (action.kind != Reconnect::Action::Kind::connect) return;
    running_ = true;
    stop_signal_.expires_at(clock::time_point::max());
    if (resolver_ && options_.sentinel->follow_switch_master) {
      if (!watcher_) {
        watcher_ = std::make_unique<SentinelWatcher>(
            ex_, options_, [weak = weak_from_this()](const MasterAddress& master, const std::string& sentinel) {
              if (auto self = weak.lock()) self->on_switch_master(master, sentinel);
            });
      }
      watcher_->start();
    }
    asio::co_spawn(ex_, run(shared_from_this(), action), asio::detached);
  }

  void stop() {
    if (fsm_.stopped()) return;
    fsm_.stop();
    if (stream_) stream_->close();
    if (watcher_) watcher_->stop();
    stop_signal_.cancel();
    write_signal_.cancel();
    watchdog_timer_.cancel();
    backoff_timer_.cancel();
    mux_.fail_all(make_error_code(errc::stopped), ex_);
  }

  // The owner is going away: nothing may call back into it.
  void clear_handlers() {
    state_handler_ = nullptr;
    message_handler_ = nullptr;
    subscribed_handler_ = nullptr;
    error_reply_handler_ = nullptr;
    dropped_handler_ = nullptr;
  }

  const asio::any_io_executor& executor() const noexcept { return ex_; }
  const RedisOptions& options() const noexcept { return options_; }
  const ClientStats& stats() const noexcept { return stats_; }
  const Error& last_error() const noexcept { return last_error_; }
  bool connected() const noexcept { return fsm_.state() == Reconnect::State::up; }

  std::optional<clock::time_point> last_reply_at() const noexcept {
    const std::int64_t ns = last_reply_ns_.load(std::memory_order_relaxed);
    if (ns == 0) return std::nullopt;
    return clock::time_point(std::chrono::duration_cast<clock::duration>(std::chrono::nanoseconds(ns)));
  }

  void on_state(Client::StateHandler h) { state_handler_ = std::move(h); }
  void on_message(Client::MessageHandler h) { message_handler_ = std::move(h); }
  void on_subscribed(Client::SubscribedHandler h) { subscribed_handler_ = std::move(h); }
  void on_error_reply(Client::ErrorReplyHandler h) { error_reply_handler_ = std::move(h); }
  void on_dropped(Client::SubscribedHandler h) { dropped_handler_ = std::move(h); }
  void preload(const Script& script) { preloaded_.push_back(&script); }

  // ---- requests -----------------------------------------------------------

  void exec(Request request, ExecHandler handler, bool direct) {
    if (const error_code ec = refusal()) return complete_later(ex_, std::move(handler), ec, std::vector<Reply>{});
    if (request.empty()) {
      return complete_later(ex_, std::move(handler), error_code{}, std::vector<Reply>{});
    }
    auto slot = asio::get_associated_cancellation_slot(handler);
    const bool was_idle = mux_.idle();
    enqueued(slot, mux_.exec(request, std::move(handler), direct, clock::now()), was_idle);
  }

  void eval(ScriptCall call) {
    if (const error_code ec = refusal()) return complete_later(ex_, std::move(call.handler), ec, Reply{});
    auto slot = asio::get_associated_cancellation_slot(call.handler);
    const bool was_idle = mux_.idle();
    enqueued(slot, mux_.eval(std::move(call), clock::now()), was_idle);
  }

  // ---- pub/sub ------------------------------------------------------------

  void subscribe(const std::vector<std::string>& channels) {
    send_pubsub([&](std::string& out) { return subscriber_.subscribe(channels, out); });
  }
  void psubscribe(const std::vector<std::string>& patterns) {
    send_pubsub([&](std::string& out) { return subscriber_.psubscribe(patterns, out); });
  }
  void unsubscribe(const std::vector<std::string>& channels) {
    send_pubsub([&](std::string& out) { return subscriber_.unsubscribe(channels, out); });
  }
  void ssubscribe(const std::vector<std::string>& channels) {
    send_pubsub([&](std::string& out) { return subscriber_.ssubscribe(channels, out); });
  }
  void sunsubscribe(const std::vector<std::string>& channels) {
    send_pubsub([&](std::string& out) { return subscriber_.sunsubscribe(channels, out); });
  }
  bool subscribed() const noexcept { return connected() && subscriber_.confirmed(); }

 private:
  error_code refusal() const {
    if (role_ == Role::subscriber) return make_error_code(errc::invalid_argument);
    if (fsm_.stopped()) return make_error_code(errc::stopped);
    if (!connected()) return make_error_code(errc::not_connected);
    return {};
  }

  // A request is queued: wake the writer, and the watchdog if it slept until
  // an idle health check instead of this request's deadline.
  void enqueued(asio::cancellation_slot slot, Multiplexer::RequestId id, bool was_idle) {
    if (slot.is_connected()) {
      // Detaching keeps the connection (and every other request on it); the
      // request's outcome is unknown to the caller, as the operation
      // documents. `total` would promise no effect, which a sent command
      // cannot keep. Posted: the cancellation may be emitted on any thread.
      slot.assign([weak = weak_from_this(), id](asio::cancellation_type type) {
        if ((type & (asio::cancellation_type::terminal | asio::cancellation_type::partial)) ==
            asio::cancellation_type::none) {
          return;
        }
        if (auto self = weak.lock()) {
          asio::post(self->ex_, [self, id] { self->mux_.detach(id, self->ex_); });
        }
      });
    }
    write_signal_.cancel();
    if (was_idle) watchdog_timer_.cancel();
  }

  template <typename Build>
  void send_pubsub(Build build) {
    std::string command;
    const std::size_t commands = build(command);
    if (commands == 0 || !connected()) return;
    mux_.send_untracked(command, commands);
    write_signal_.cancel();
  }

  // Every reply read in one turn of the reader completes in one posted turn.
  void schedule_completions() {
    if (completions_posted_ || !mux_.has_completions()) return;
    completions_posted_ = true;
    asio::post(ex_, [self = shared_from_this()] {
      self->completions_posted_ = false;
      try {
        self->mux_.run_completions(self->ex_);
      } catch (...) {
        self->schedule_completions();  // the handlers after the one that threw
        throw;
      }
    });
  }

  void note_reply(clock::time_point now) noexcept {
    fsm_.on_reply();
    last_reply_ns_.store(std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count(),
                         std::memory_order_relaxed);
  }

  // ---- connection loop ----------------------------------------------------

  asio::awaitable<void> run(std::shared_ptr<ClientImpl> self, Reconnect::Action action) {
    while (action.kind == Reconnect::Action::Kind::connect) {
      action = co_await attempt(action.at);
      if (action.kind != Reconnect::Action::Kind::wait) break;
      went_down(action);
      backoff_timer_.expires_at(action.at);
      co_await backoff_timer_.async_wait(nothrow);
      action = fsm_.on_wait_elapsed(clock::now());
    }
    mux_.fail_all(make_error_code(errc::stopped), ex_);
    running_ = false;
    (void)self;
  }

  // One connection, from opening it by `deadline` to its end.
  asio::awaitable<Reconnect::Action> attempt(clock::time_point deadline) {
    decoder_ = ReplyDecoder{};
    if (resolver_) {
      // Resolution has its own bound (query_timeout per sentinel); the
      // connection to the master then gets all of connect_timeout.
      if (Error error = co_await resolve_master()) co_return fsm_.on_failed(std::move(error), clock::now());
      deadline = clock::now() + options_.connect_timeout;
    }
    asio::steady_timer timer(ex_, deadline);
    auto result = co_await (connect() || timer.async_wait(nothrow));
    const bool timed_out = result.index() == 1;
    Error error = timed_out ? Error{} : std::get<0>(std::move(result));
    if (!timed_out && !error) error = co_await serve();
    if (recycle_reason_) error = std::exchange(recycle_reason_, Error{});
    subscriber_.on_disconnect();
    if (stream_) stream_->close();
    stream_.reset();
    if (timed_out) co_return fsm_.on_connect_timeout(clock::now());
    co_return fsm_.on_failed(std::move(error), clock::now());
  }

  // Sentinel: where the master is now. A stop() cancels the round.
  asio::awaitable<Error> resolve_master() {
    if (fsm_.stopped()) co_return make_error(errc::stopped);
    auto result = co_await (resolver_->resolve(ex_) || stop_signal_.async_wait(nothrow));
    if (result.index() == 1) co_return make_error(errc::stopped);
    auto resolution = std::get<0>(std::move(result));
    if (resolution.error) co_return std::move(resolution.error);
    target_.host = resolution.address.host;
    target_.port = resolution.address.port;
    resolved_by_ = std::move(resolution.sentinel);
    co_return Error{};
  }

  // A sentinel announced a new master: leave the old one now rather than
  // when it fails (or, frozen, never does). The new address is resolved and
  // checked with ROLE like any other.
  void on_switch_master(const MasterAddress& master, const std::string& sentinel) {
    if (fsm_.stopped()) return;
    if (connected() && target_.host == master.host && target_.port == master.port) return;
    if (switching_to_ == master) return;  // every sentinel announces the switch: the first one moves us
    switching_to_ = master;
    if (stream_) {
      recycle_reason_ = make_error(errc::master_changed,
                                   fmt::format("sentinel {} announced +switch-master for \"{}\" to {}; reconnecting",
                                               sentinel, options_.sentinel->master_name, master.to_string()));
      stream_->close();
    }
    backoff_timer_.cancel();  // a reconnect waiting out its backoff goes now
  }

  void went_down(const Reconnect::Action& action) {
    last_error_ = action.error;
    mux_.fail_all(action.error.code, ex_);
    if (action.disconnected) ++stats_.disconnects;
    if (action.report && state_handler_) state_handler_(false, action.error);
  }

  asio::awaitable<Error> connect() {
    TlsContext* tls = nullptr;
#if LEASEHOLD_HAS_TLS
    if (tls_context_) tls = &*tls_context_;
#endif
    if (Error e = co_await open_stream(ex_, target_, tls, stream_)) co_return e;
    if (Error e = co_await handshake()) {
      if (e.code == errc::not_master && resolver_) {
        resolver_->distrust_last_answer();
        e.detail = fmt::format("{}, named by sentinel {} as master \"{}\": {}; asking again", target_.to_string(),
                               resolved_by_, options_.sentinel->master_name, e.detail);
      } else if (e.code == errc::not_master) {
        e.detail = fmt::format("{}: {}", target_.to_string(), e.detail);
      }
      co_return e;
    }
    if (!fsm_.on_up()) co_return make_error(errc::stopped);
    switching_to_.reset();
    ++stats_.connects;
    last_error_ = {};
    watchdog_.reset(clock::now());
    if (role_ == Role::subscriber) {
      std::string commands;
      if (const std::size_t n = subscriber_.resubscribe(commands)) mux_.send_untracked(commands, n);
    }
    if (state_handler_) state_handler_(true, {});
    co_return Error{};
  }

  // The handshake's commands pipelined in one write; the machine judges each
  // reply in turn.
  asio::awaitable<Error> handshake() {
    const Request request = fsm_.begin_handshake(preloaded_);
    if (request.empty()) co_return Error{};
    auto [wec, written] = co_await stream_->async_write(asio::buffer(request.payload()), nothrow);
    if (wec) co_return make_error(errc::connection_lost, fmt::format("handshake write: {}", wec.message()));
    std::array<char, 4096> buffer;
    while (fsm_.handshake_remaining() > 0) {
      Error error;
      if (auto reply = decoder_.next(error)) {
        if (Error e = fsm_.on_handshake_reply(*reply)) co_return e;
        continue;
      }
      if (error) co_return error;
      auto [ec, n] = co_await stream_->async_read_some(asio::buffer(buffer), nothrow);
      if (ec) co_return io_error(ec);
      if (Error e = decoder_.feed(buffer.data(), n)) co_return e;
    }
    co_return Error{};
  }

  asio::awaitable<Error> serve() {
    auto result = co_await (reader() || writer() || watchdog());
    co_return std::visit([](Error e) { return e; }, std::move(result));
  }

  Error finish(Error e) {
    if (stream_) stream_->close();
    return e;
  }

  asio::awaitable<Error> reader() {
    std::array<char, 16 * 1024> buffer;
    for (;;) {
      // First what is already buffered: bytes that arrived with the last
      // handshake reply are served now, not when the next bytes come.
      if (Error e = dispatch_buffered()) {
        if (e.code != errc::not_master && e.code != errc::read_only && e.code != errc::loading) {
          ++stats_.protocol_errors;
        }
        co_return finish(std::move(e));
      }
      auto [ec, n] = co_await stream_->async_read_some(asio::buffer(buffer), nothrow);
      if (ec) co_return finish(io_error(ec));
      watchdog_.on_read(clock::now());
      if (Error e = decoder_.feed(buffer.data(), n)) {
        ++stats_.protocol_errors;
        co_return finish(std::move(e));
      }
    }
  }

  // Every complete reply the decoder holds; then their completions, as one
  // batch, and any output they caused (an EVAL retry after NOSCRIPT).
  Error dispatch_buffered() {
    const auto now = clock::now();
    Error error;
    while (auto reply = decoder_.next(error)) {
      error = role_ == Role::subscriber ? on_push(*reply, now) : on_reply(std::move(*reply), now);
      if (error) break;
    }
    schedule_completions();
    if (mux_.has_output()) {
      write_signal_.cancel();
      watchdog_timer_.cancel();
    }
    return error;
  }

  Error on_reply(Reply reply, clock::time_point now) {
    const bool ok = !reply.is_error();
    // The caller gets the reply; then the connection goes, so that the next
    // one asks the sentinels again or resolves the host name again.
    Error leave = ok ? Error{} : reason_to_leave(reply.str);
    Error error = mux_.on_reply(std::move(reply), now);
    if (!error && ok) note_reply(now);
    return error ? error : leave;
  }

  // A primary turned replica (a failover, a manual REPLICAOF) answers writes
  // with READONLY, and a restarted server answers LOADING until its dataset
  // is read: on every transport the server behind the address may change.
  Error reason_to_leave(std::string_view reply) const {
    const char* next = resolver_ ? "asking the sentinels again" : "reconnecting";
    if (reply.starts_with("READONLY")) {
      return make_error(resolver_ ? errc::not_master : errc::read_only,
                        fmt::format("{} answered READONLY: it is a replica now; {}", target_.to_string(), next));
    }
    if (reply.starts_with("LOADING")) {
      return make_error(errc::loading,
                        fmt::format("{} answered LOADING: it is loading its dataset; {}", target_.to_string(), next));
    }
    return {};
  }

  Error on_push(const Reply& reply, clock::time_point now) {
    if (!reply.is_error()) note_reply(now);
    const Subscriber::Event event = subscriber_.on_push(reply);
    switch (event.kind) {
      case Subscriber::Event::Kind::message:
        if (message_handler_) message_handler_(event.channel, event.payload);
        break;
      case Subscriber::Event::Kind::subscribed:
        if (subscribed_handler_) subscribed_handler_(event.channel);
        break;
      case Subscriber::Event::Kind::error_reply:
        // For example NOPERM on SUBSCRIBE: keep the connection, report the cause.
        last_error_ = event.error;
        if (error_reply_handler_) error_reply_handler_(last_error_);
        break;
      case Subscriber::Event::Kind::dropped:
        if (dropped_handler_) dropped_handler_(event.channel);
        break;
      case Subscriber::Event::Kind::protocol_error:
        return event.error;
      case Subscriber::Event::Kind::none:
        break;
    }
    return {};
  }

  asio::awaitable<Error> writer() {
    for (;;) {
      if (!mux_.has_output()) {
        write_signal_.expires_at(clock::time_point::max());
        co_await write_signal_.async_wait(nothrow);
        if (cancelled(co_await asio::this_coro::cancellation_state)) co_return Error{};
        if (!stream_ || !stream_->is_open()) co_return make_error(errc::connection_lost);
        continue;
      }
      mux_.take_output(writing_);
      watchdog_.on_write_started(clock::now());
      auto [ec, n] = co_await stream_->async_write(asio::buffer(writing_), nothrow);
      Multiplexer::recycle(writing_);
      if (ec) co_return finish(io_error(ec));
      watchdog_.on_write_done(clock::now());
    }
  }

  asio::awaitable<Error> watchdog() {
    for (;;) {
      const auto now = clock::now();
      const Watchdog::Verdict verdict = watchdog_.check(now, mux_.oldest_deadline());
      if (verdict.kind == Watchdog::Verdict::Kind::send_ping) {
        send_health_check(now);
        continue;
      }
      if (verdict.kind != Watchdog::Verdict::Kind::wait) {
        ++stats_.timeouts;
        co_return finish(watchdog_.error(verdict.kind, target_.to_string()));
      }
      watchdog_timer_.expires_at(verdict.wake);
      co_await watchdog_timer_.async_wait(nothrow);
      if (cancelled(co_await asio::this_coro::cancellation_state)) co_return Error{};
      if (!stream_ || !stream_->is_open()) co_return make_error(errc::connection_lost);
    }
  }

  void send_health_check(clock::time_point now) {
    if (role_ == Role::subscriber) {
      const Request ping{"PING"};
      mux_.send_untracked(ping.payload(), 1);  // answered by a "pong" push
      watchdog_.on_ping_sent(now);
    } else {
      mux_.health_check(now);
    }
    write_signal_.cancel();
  }

  asio::any_io_executor ex_;
  RedisOptions options_;
  RedisOptions target_;  // the server to connect to: options_, or the master the sentinels named
  Role role_;
  Error last_error_;
  ClientStats stats_;
  Reconnect fsm_;
  Multiplexer mux_;
  Watchdog watchdog_;
  Subscriber subscriber_;
  Client::StateHandler state_handler_;
  Client::MessageHandler message_handler_;
  Client::SubscribedHandler subscribed_handler_;
  Client::ErrorReplyHandler error_reply_handler_;
  Client::SubscribedHandler dropped_handler_;
  std::vector<const Script*> preloaded_;
  std::optional<Stream> stream_;
  ReplyDecoder decoder_;
  std::string writing_;
  asio::steady_timer write_signal_;
  asio::steady_timer watchdog_timer_;
  asio::steady_timer backoff_timer_;
  asio::steady_timer stop_signal_;  // cancelled by stop(): ends a sentinel round
  std::optional<SentinelResolver> resolver_;
  std::unique_ptr<SentinelWatcher> watcher_;
  std::optional<MasterAddress> switching_to_;  // announced, not yet connected to: repeats are ignored
  std::string resolved_by_;  // the sentinel that named target_
  Error recycle_reason_;     // why on_switch_master closed the connection
#if LEASEHOLD_HAS_TLS
  std::optional<asio::ssl::context> tls_context_;
#endif
  // Nanoseconds since the steady_clock epoch; 0: no reply yet. Atomic because
  // health probes read it from any thread.
  std::atomic<std::int64_t> last_reply_ns_{0};
  bool completions_posted_ = false;
  bool running_ = false;  // the connection loop runs (it outlives stop() by a turn or two)
};

}  // namespace leasehold::redis::detail
