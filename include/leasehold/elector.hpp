#pragma once
// The Elector: campaigns for leadership of election groups on Redis, with one
// lease per group, and tells the process which groups it leads.
//
//   lh::Elector elector{io.get_executor(), lh::RedisOptions::from_url(url),
//                       lh::ElectorOptions{.groups = {"reports"}}};
//   elector.start();
//   if (elector.is_leader("reports")) { ... }        // local check, no round trip
//   auto term = co_await elector.acquire("reports"); // suspends until leading
//   co_await elector.step_down("reports");           // hands over at once
//   co_await elector.stop();                         // releases every lease
//
// Two modes:
//  - Executor mode: Elector(executor, ...) runs on a strand of `executor`;
//    callbacks are posted to `executor`.
//  - Standalone mode: Elector(redis, options) owns an I/O thread and a
//    separate callback thread; a non-Asio program calls start(), is_leader()
//    and stop() only.
//
// Thread safety: is_leader(), group(), Group::is_leader(), start(), stop(),
// health(), metrics() and every async operation may be called from any
// thread.
//
// Asynchronous operations follow Asio's completion-token model (callbacks,
// use_awaitable, deferred, use_future, ...). Unless an operation says
// otherwise, its handler runs on the handler's associated executor, by
// default the elector's strand; it is never invoked inside the initiating
// call. Arguments are copied before the initiating call returns; the Elector
// itself must outlive the call that initiates an operation (not the
// operation: destroying or stopping the Elector completes pending operations
// with errc::stopped, in executor mode when the executor next runs).
//
// Lifetime in executor mode: the io_context (or other execution context)
// behind the executor must outlive the Elector, and must keep running for
// renewals to happen: a leader whose executor stops running loses
// is_leader() at its local deadline.
#include <leasehold/elector_options.hpp>
#include <leasehold/error.hpp>
#include <leasehold/events.hpp>
#include <leasehold/health.hpp>
#include <leasehold/leader_info.hpp>
#include <leasehold/detail/internal.hpp>
#include <leasehold/detail/leader_flag.hpp>
#include <leasehold/key_layout.hpp>
#include <leasehold/metrics.hpp>
#include <leasehold/redis/reply.hpp>
#include <leasehold/redis/script.hpp>
#include <leasehold/redis_options.hpp>
#include <leasehold/term.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leasehold {

namespace detail {
class ElectorImpl;
struct Standalone;
struct ElectorAccess;
struct ConfirmedEval;
}  // namespace detail

/// A cheap handle to one group's local view. Copyable; valid for as long as
/// any copy exists, even after the Elector is gone (then never leader).
class Group {
 public:
  /// No group: an empty name, never leader.
  Group() = default;
  /// Made by Elector::group() around the group's published flag; user code
  /// has no use for it.
  Group(detail::Internal, std::string name, std::shared_ptr<const detail::LeaderFlag> flag)
      : name_(std::move(name)), flag_(std::move(flag)) {}

  /// The group's name.
  const std::string& name() const noexcept { return name_; }
  /// True while this instance leads the group (as Elector::is_leader()).
  /// One atomic load and one steady_clock read; lock-free, allocation-free.
  bool is_leader() const noexcept {
    return flag_ && flag_->leading(std::chrono::steady_clock::now());
  }

 private:
  std::string name_;
  std::shared_ptr<const detail::LeaderFlag> flag_;
};

class Elector;

/// The result of stop() without a completion token: `co_await elector.stop()`
/// stops and resumes when every lease is released; discarding it
/// (`elector.stop();`) starts the stop and returns at once, from any thread,
/// including a signal handler running on the elector's own single-threaded
/// io_context. It never blocks: stop_and_wait() is the one blocking form.
class StopOperation {
 public:
  /// Made by Elector::stop(); user code does not make one.
  StopOperation(detail::Internal, Elector& elector) : elector_(&elector) {}
  /// Takes over the stop; `other` no longer starts it when destroyed.
  StopOperation(StopOperation&& other) noexcept : elector_(std::exchange(other.elector_, nullptr)) {}
  StopOperation(const StopOperation&) = delete;
  StopOperation& operator=(const StopOperation&) = delete;
  StopOperation& operator=(StopOperation&&) = delete;
  ~StopOperation();

  /// Makes this an Asio async operation (so that co_await works). Constrained
  /// so that Asio's probe for async operations sees a proper signature.
  template <typename CompletionToken>
    requires boost::asio::completion_token_for<CompletionToken, void(error_code)>
  auto operator()(CompletionToken&& token) &&;

 private:
  Elector* elector_;
};

/// Campaigns for the leadership of election groups, one Redis lease per
/// group, and tells the process which groups it leads (see the top of this
/// header for the two modes, thread safety and the asynchronous model).
/// Neither copyable nor movable.
class Elector {
 public:
  /// The type get_executor() returns.
  using executor_type = boost::asio::any_io_executor;
  /// Callback for on_elected().
  using ElectedHandler = std::function<void(const ElectedEvent&)>;
  /// Callback for on_revoked().
  using RevokedHandler = std::function<void(const RevokedEvent&)>;
  /// Callback for on_leader_changed().
  using LeaderChangedHandler = std::function<void(const LeaderChangedEvent&)>;
  /// Callback for on_error().
  using ErrorHandler = std::function<void(const ErrorEvent&)>;
  /// Callback for on_lease_audit().
  using AuditHandler = std::function<void(const LeaseAuditEvent&)>;

  /// Executor mode: all elector work runs on a strand of `executor`, and
  /// event callbacks are posted to (another strand of) `executor`. Throws
  /// std::invalid_argument, naming the field, for invalid options. Connects
  /// nothing until start().
  Elector(executor_type executor, RedisOptions redis, ElectorOptions options = {});
  /// Standalone mode: owns an I/O thread (the elector's work) and a callback
  /// thread (event callbacks), both started here. Throws like the other
  /// constructor.
  explicit Elector(RedisOptions redis, ElectorOptions options = {});
  /// Safe at any point. Standalone mode: stops (releasing leases, bounded by
  /// drain_timeout + stop_timeout) and joins its threads. Executor mode: if still running,
  /// drops the connections without releasing (leases expire after ttl).
  ~Elector();
  Elector(const Elector&) = delete;
  Elector& operator=(const Elector&) = delete;

  /// The strand that runs the elector's work (and, by default, completion
  /// handlers). Posting blocking work to it stalls renewals.
  executor_type get_executor() const noexcept;
  /// The id stored as the lease value (options().instance_id or the default).
  const std::string& instance_id() const noexcept;
  /// The validated options.
  const ElectorOptions& options() const noexcept;

  /// Connects and campaigns for every registered group. Returns at once;
  /// connection problems are reported through on_error() and the log, and
  /// retried with backoff. Idempotent; no effect once stop() has begun (a
  /// stopped Elector cannot be restarted: make a new one).
  void start();

  /// Local view: true only while this instance's lease on `group` is
  /// confirmed and before its local deadline. Never talks to Redis.
  /// Lock-free, allocation-free, callable from any thread. False for groups
  /// that were never registered.
  bool is_leader(std::string_view group = "default") const noexcept;

  /// Registers `name` (campaigning at once if started) and returns a handle
  /// for fast is_leader() checks. Registering a group twice returns a handle
  /// to the same group. Groups are never unregistered. Throws
  /// std::invalid_argument for a bad name.
  Group group(std::string_view name);

  /// Event callbacks, posted to the callback executor (executor mode: a
  /// strand of the elector's executor; standalone mode: the callback thread),
  /// one at a time, never on the renewal path, so a slow callback delays
  /// other callbacks but not renewals. Elected and revoked alternate per
  /// group, exactly once per term; by the time a callback runs the state may
  /// have moved on (check is_leader() or the Term for the current truth).
  /// Set them before start() to see every event; replacing one is
  /// thread-safe and affects events emitted afterwards. An exception from a
  /// callback is logged and dropped.
  ///
  /// on_elected() receives each term this instance begins (ElectedEvent).
  void on_elected(ElectedHandler handler);
  /// Each term of this instance that ends (RevokedEvent). Delivered like
  /// on_elected().
  void on_revoked(RevokedHandler handler);
  /// Each change of a group's holder as this instance saw it, another
  /// instance included (LeaderChangedEvent). Delivered like on_elected().
  void on_leader_changed(LeaderChangedHandler handler);
  /// Redis and connection errors (ErrorEvent), which the elector also
  /// retries by itself. Delivered like on_elected().
  void on_error(ErrorHandler handler);

  /// Audit hook: called synchronously on the elector's executor each time the
  /// local claim on a group begins, is extended or ends, before a new claim
  /// is published and after an ended one is withdrawn. It runs on the renewal
  /// path, so it must be fast and must not block (append to a buffer or a
  /// file). Set it before start().
  void on_lease_audit(AuditHandler handler);

  /// Runs a Lua script on the elector's Redis connection (for extensions that
  /// keep state beside a lease, such as the scheduler's once-per-tick record).
  /// Handler: void(error_code, redis::Reply); server errors are classified as
  /// in redis::Client::async_eval; errc::not_connected while disconnected.
  /// `script` must outlive the operation. Cancellation (terminal or partial)
  /// completes the handler with operation_aborted at once; the script may
  /// still run (its reply is dropped), and the connection and every group
  /// carry on (see redis::Client::async_exec).
  template <typename CompletionToken = boost::asio::deferred_t>
  auto async_eval(const redis::Script& script, std::vector<std::string> keys, std::vector<std::string> args,
                  CompletionToken&& token = {}) {
    return boost::asio::async_initiate<CompletionToken, void(error_code, redis::Reply)>(
        [this, &script](auto handler, std::vector<std::string> k, std::vector<std::string> a) {
          start_eval(script, std::move(k), std::move(a), EvalHandler(std::move(handler)));
        },
        token, std::move(keys), std::move(args));
  }

  /// Where this elector's groups live in Redis (keys and channels).
  const KeyLayout& key_layout() const noexcept;
  /// The Redis key of `group`'s lease (key_layout().lease_key(group)).
  std::string key_of(std::string_view group) const { return key_layout().lease_key(group); }

  /// Completes once this instance leads `group` (registering it if needed;
  /// at once if it leads already). Handler: void(error_code, Term). Fails
  /// with errc::stopped when the elector stops, errc::invalid_argument for a
  /// bad group name. Cancellation (any type) completes it with
  /// operation_aborted and leaves the campaign running. Runs on the
  /// handler's associated executor (default: the elector's). Before start(),
  /// it waits for start().
  template <typename CompletionToken = boost::asio::deferred_t>
  auto acquire(std::string_view group, CompletionToken&& token = {}) {
    return boost::asio::async_initiate<CompletionToken, void(error_code, Term)>(
        [this](auto handler, std::string g) {
          start_acquire(std::move(g), TermHandler(std::move(handler)));
        },
        token, std::string(group));
  }

  /// Releases `group`'s lease if held (standbys take over at once) and does
  /// not campaign for it during step_down_hold_off; then campaigns again.
  /// The term ends at once; the release waits for the term's guarded work
  /// (leader_only coroutines, run_while_leader tasks) to finish, at most
  /// drain_timeout, while the lease is still held and renewed.
  /// Handler: void(error_code); completes when the release is confirmed
  /// (success), or has failed: then with the failure (a server error, or
  /// errc::connection_lost / errc::timeout when its outcome is unknown) — the
  /// term still ended locally, and the key, if it stayed, expires after ttl.
  /// errc::invalid_argument for a group that was never registered,
  /// errc::stopped if the elector stops first. Not cancellable. Runs on the
  /// handler's associated executor.
  template <typename CompletionToken = boost::asio::deferred_t>
  auto step_down(std::string_view group, CompletionToken&& token = {}) {
    return boost::asio::async_initiate<CompletionToken, void(error_code)>(
        [this](auto handler, std::string g) {
          start_step_down(std::move(g), VoidHandler(std::move(handler)));
        },
        token, std::string(group));
  }

  /// Releases every lease held, stops campaigning and closes the
  /// connections: terms end at once, each release follows its term's
  /// guarded work (at most drain_timeout, as for step_down()); bounded by
  /// drain_timeout + stop_timeout (leases not released by then expire after
  /// ttl). Idempotent: later calls complete once the first has
  /// finished. Handler: void(error_code), always success. Not cancellable.
  /// Runs on the handler's associated executor.
  template <typename CompletionToken>
  auto stop(CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(error_code)>(
        [this](auto handler) { start_stop(VoidHandler(std::move(handler))); }, token);
  }
  /// See StopOperation: `co_await elector.stop()` or `elector.stop();`.
  StopOperation stop() { return StopOperation(detail::Internal{}, *this); }

  /// Asks Redis who holds `group` now (GET and PTTL of the lease key, GET of
  /// the fencing counter, in one round trip); the group need not be
  /// registered. Handler: void(error_code, LeaderInfo); errc::invalid_argument
  /// for a bad name, errc::not_connected while disconnected, a classified
  /// server error (for example errc::no_permission). Not cancellable;
  /// bounded by command_timeout. Runs on the handler's associated executor.
  template <typename CompletionToken = boost::asio::deferred_t>
  auto leader_of(std::string_view group, CompletionToken&& token = {}) {
    return boost::asio::async_initiate<CompletionToken, void(error_code, LeaderInfo)>(
        [this](auto handler, std::string g) {
          start_leader_of(std::move(g), LeaderInfoHandler(std::move(handler)));
        },
        token, std::string(group));
  }

  /// Stops and blocks the calling thread until every lease is released
  /// (bounded by drain_timeout + stop_timeout + 1 s). Must not be called on the elector's
  /// own executor, nor on a thread that must run it (it would wait for
  /// itself, then give up): from there use `co_await stop()` or stop(handler).
  void stop_and_wait();

  /// A snapshot of the elector's counters, per group and per connection
  /// (see metrics.hpp; render it with to_prometheus()). Computed on the
  /// elector's executor, so it is consistent. Handler: void(Metrics).
  /// Completes on the handler's associated executor (default: the
  /// elector's); not cancellable (it needs one turn of the executor). Works
  /// before start() and after stop().
  template <typename CompletionToken = boost::asio::deferred_t>
  auto async_metrics(CompletionToken&& token = {}) {
    return boost::asio::async_initiate<CompletionToken, void(Metrics)>(
        [this](auto handler) { start_metrics(MetricsHandler(std::move(handler))); }, token);
  }
  /// Blocking form of async_metrics(), for standalone mode and for threads
  /// that do not run the elector's executor. On the elector's own executor it
  /// computes in place. Waits at most 5 s for the executor, then throws
  /// std::runtime_error (a thread that runs the executor and calls this from
  /// outside the elector's strand would otherwise wait for itself: use
  /// async_metrics() there).
  Metrics metrics();

  /// Liveness and readiness (see health.hpp for the facts and thresholds).
  /// Reads atomics only and never waits for the executor, so it answers even
  /// when the executor is stuck. Callable from any thread.
  Health health() const;

 private:
  using TermHandler = boost::asio::any_completion_handler<void(error_code, Term)>;
  using VoidHandler = boost::asio::any_completion_handler<void(error_code)>;
  using LeaderInfoHandler = boost::asio::any_completion_handler<void(error_code, LeaderInfo)>;
  using EvalHandler = boost::asio::any_completion_handler<void(error_code, redis::Reply)>;
  using MetricsHandler = boost::asio::any_completion_handler<void(Metrics)>;

  void start_acquire(std::string group, TermHandler handler);
  void start_step_down(std::string group, VoidHandler handler);
  void start_stop(VoidHandler handler);
  void start_leader_of(std::string group, LeaderInfoHandler handler);
  void start_metrics(MetricsHandler handler);
  void start_eval(const redis::Script& script, std::vector<std::string> keys, std::vector<std::string> args,
                  EvalHandler handler);
  /// As start_eval, then in confirm mode a WAIT on the same connection; the
  /// handler's bool says whether enough replicas acknowledged (always true
  /// when confirm mode is off). For the library's own records (tick claims).
  void start_eval_confirmed(const redis::Script& script, std::vector<std::string> keys, std::vector<std::string> args,
                            boost::asio::any_completion_handler<void(error_code, redis::Reply, bool)> handler);
  friend class StopOperation;
  friend struct detail::ConfirmedEval;
  friend struct detail::ElectorAccess;  // the tests' (tests/support/elector_access.hpp)
  bool on_own_executor() const noexcept;

  // Declared first so that it is destroyed last, after the impl.
  std::unique_ptr<detail::Standalone> standalone_;
  std::shared_ptr<detail::ElectorImpl> impl_;
};

// Defined here, where Elector is complete. Hidden from Doxygen 1.9, which
// does not match a constrained definition to its declaration and would list
// it twice.
/// \cond
template <typename CompletionToken>
  requires boost::asio::completion_token_for<CompletionToken, void(error_code)>
auto StopOperation::operator()(CompletionToken&& token) && {
  Elector* e = std::exchange(elector_, nullptr);
  return e->stop(std::forward<CompletionToken>(token));
}
/// \endcond

}  // namespace leasehold
