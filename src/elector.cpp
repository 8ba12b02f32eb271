#include <leasehold/detail/wake_queue.hpp>
#include <leasehold/elector.hpp>
#include <leasehold/log.hpp>
#include <leasehold/redis/client.hpp>

#include "complete.hpp"
#include "group_registry.hpp"
#include "lease_replies.hpp"
#include "lease_scripts.hpp"
#include "quoted.hpp"
#include "term_state.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_future.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <future>
#include <optional>
#include <stdexcept>
#include <thread>

namespace leasehold::detail {

namespace asio = boost::asio;
using TermHandler = asio::any_completion_handler<void(error_code, Term)>;
using VoidHandler = asio::any_completion_handler<void(error_code)>;
using LeaderInfoHandler = asio::any_completion_handler<void(error_code, LeaderInfo)>;
using MetricsHandler = asio::any_completion_handler<void(Metrics)>;

namespace {

std::int64_t to_ns(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

long long to_ms(Duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

// What each reason means, for the log line of a lost term.
std::string_view explain(RevokeReason reason) {
  switch (reason) {
    case RevokeReason::renew_refused: return "the lease key was gone or held by another instance";
    case RevokeReason::renew_failed: return "the renewal failed";
    case RevokeReason::timeout: return "the renewal timed out, so its outcome is unknown";
    case RevokeReason::connection_lost: return "the connection to Redis was lost";
    case RevokeReason::stepped_down: return "step_down() released the lease";
    case RevokeReason::stopped: return "stop() released the lease";
    case RevokeReason::deadline_passed: return "no renewal was confirmed before the local deadline";
    case RevokeReason::released_elsewhere: return "a release notice named this instance (an operator's step-down)";
  }
  return "unknown reason";
}

// The pulse that proves to health() that the executor runs.
Duration pulse_period(const ElectorOptions& o) {
  return std::clamp<Duration>(o.ttl / 10, std::chrono::milliseconds(10), std::chrono::milliseconds(500));
}

// Connection-level failures are reported once, by the connection's state
// handler, not again for every group whose command they failed.
bool is_connection_failure(const error_code& ec) {
  return ec == errc::connection_lost || ec == errc::not_connected || ec == errc::stopped ||
         ec == errc::timeout || ec == errc::protocol_error || ec == asio::error::operation_aborted;
}

}  // namespace

// KEYS: the lease and its fencing counter; ARGV: holder id and ttl.
redis::ScriptArguments lease_arguments_of(const std::string& key, const std::string& id, const std::string& ttl_ms) {
  const std::string token_key = key + ":token";
  const std::array<std::string_view, 2> keys{key, token_key};
  const std::array<std::string_view, 2> args{id, ttl_ms};
  return redis::ScriptArguments(keys, args);
}

std::string release_channel(std::string_view key) { return std::string(key) + ":released"; }

// The PSUBSCRIBE pattern matching release_channel() of every key under
// `prefix`; glob characters in the prefix match only themselves.
std::string release_pattern(std::string_view prefix) {
  std::string pattern;
  for (const char c : prefix) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') pattern += '\\';
    pattern += c;
  }
  return pattern + "*:released";
}

struct GroupState {
  GroupState(std::string n, const ElectorOptions& o, const LeaseTiming& timing, const std::string& id,
             const std::string& ttl_ms)
      : key(o.key_prefix + n),
        name(std::string_view(key).substr(o.key_prefix.size())),
        lease_arguments(lease_arguments_of(key, id, ttl_ms)),
        machine(timing, id),
        flag(std::make_shared<LeaderFlag>()) {}

  const std::string key;
  const std::string_view name;  // the end of `key`: one copy of the name
  // Acquire and renew, encoded once: the renew script ignores the counter key
  // it is given, so one encoding serves both.
  const redis::ScriptArguments lease_arguments;
  LeaseMachine machine;
  const std::shared_ptr<LeaderFlag> flag;

  // Strand-only from here on.
  bool begun = false;
  bool in_term = false;             // elected, and the term not yet ended
  std::shared_ptr<TermState> term;  // made on demand: see term_of()
  struct Waiters {
    std::vector<std::pair<std::uint64_t, TermHandler>> acquire;
    std::vector<VoidHandler> step_down;
  };
  std::unique_ptr<Waiters> waiters;  // made for the first waiter: most groups never have one
  Waiters& waiting() {
    if (!waiters) waiters = std::make_unique<Waiters>();
    return *waiters;
  }
  std::vector<std::pair<std::uint64_t, TermHandler>> take_acquire_waiters() {
    return waiters ? std::exchange(waiters->acquire, {}) : decltype(Waiters::acquire){};
  }
  std::vector<VoidHandler> take_step_down_waiters() {
    return waiters ? std::exchange(waiters->step_down, {}) : decltype(Waiters::step_down){};
  }
  TimePoint wake_at{};              // when the timer queue wakes this group
  std::size_t wake_slot = unqueued;  // its place in that queue
  error_code last_error;  // the last reported error, so a repeating one is reported once
  std::int64_t last_token = 0;  // token of this instance's last term, to tell a re-claim

  // Counters for metrics() (strand only).
  std::uint64_t terms_won = 0;
  std::uint64_t acquire_attempts = 0;
  std::uint64_t acquire_errors = 0;
  std::uint64_t renewals_ok = 0;
  std::uint64_t renewals_failed = 0;
  std::array<std::uint32_t, revoke_reason_count> demotions{};  // widened for metrics()
  Duration time_as_leader{};
  TimePoint leading_since{};

  // Written on the strand, read by health() from any thread.
  std::atomic<std::int64_t> renew_due_ns{0};  // next renewal's scheduled instant; 0: none pending
  std::atomic<std::int64_t> renew_lag_ns{0};  // how late the last renewal of this term was sent
  std::atomic<bool> failing{false};           // the last lease command got an error reply

  // How late this group's renewal is at `now` (any thread).
  Duration heartbeat_lag(TimePoint now) const noexcept {
    if (!flag->leading(now)) return Duration::zero();
    std::int64_t lag = renew_lag_ns.load(std::memory_order_relaxed);
    const std::int64_t due = renew_due_ns.load(std::memory_order_relaxed);
    if (due != 0) lag = std::max(lag, to_ns(now) - due);
    return std::chrono::duration_cast<Duration>(std::chrono::nanoseconds(lag));
  }
};

// Whether a message at `level` would be logged: per-group messages are not
// even formatted when an elector of 10,000 groups is told to be quiet.
bool logs(LogLevel level) { return level != LogLevel::off && level >= log_level(); }

struct Callbacks {
  Elector::ElectedHandler elected;
  Elector::RevokedHandler revoked;
  Elector::LeaderChangedHandler leader_changed;
  Elector::ErrorHandler error;
  std::string elector_id;  // for the log line of a callback that throws
};

class ElectorImpl : public std::enable_shared_from_this<ElectorImpl> {
 public:
  ElectorImpl(asio::any_io_executor io, asio::any_io_executor callbacks, RedisOptions redis,
              ElectorOptions options)
      : options_(validated(std::move(options))),
        id_(options_.instance_id.empty() ? default_instance_id() : options_.instance_id),
        timing_{options_.ttl, options_.effective_heartbeat(), options_.retry_interval,
                options_.effective_drift_margin(), options_.effective_hold_off()},
        ttl_ms_(std::to_string(options_.ttl.count())),
        strand_(asio::make_strand(io)),
        callback_strand_(asio::make_strand(callbacks)),
        client_(strand_, redis),
        subscriber_(strand_, subscriber_options(redis), redis::Role::subscriber),
        timer_(strand_),
        stop_timer_(strand_),
        pulse_timer_(strand_) {
    client_.preload(acquire_script());
    client_.preload(renew_script());
    client_.preload(release_script());
    warn_about_timing(redis);
    // Not started yet, so nothing to begin: start() begins every group.
    registry_.reserve(options_.groups.size() + 1);
    registry_.insert(std::make_unique<GroupState>("default", options_, timing_, id_, ttl_ms_));
    for (const auto& g : options_.groups) {
      if (registry_.find(g) == nullptr) registry_.insert(std::make_unique<GroupState>(g, options_, timing_, id_, ttl_ms_));
    }
  }

  // ---- any thread -----------------------------------------------------------

  const ElectorOptions& options() const noexcept { return options_; }
  const std::string& id() const noexcept { return id_; }
  asio::any_io_executor executor() const { return strand_; }
  bool running_in_strand() const noexcept { return strand_.running_in_this_thread(); }

  bool is_leader(std::string_view group) const noexcept {
    const GroupState* g = registry_.find(group);
    return g != nullptr && g->flag->leading(Clock::now());
  }

  GroupState& register_group(std::string_view name) {
    if (GroupState* g = registry_.find(name)) return *g;
    validate_group_name(name);
    auto [g, fresh] = registry_.insert(std::make_unique<GroupState>(std::string(name), options_, timing_, id_, ttl_ms_));
    if (fresh) {
      asio::post(strand_, [self = shared_from_this(), g = g] {
        if (self->started_ && !self->stopping_) self->begin(*g);
      });
    }
    return *g;
  }

  void set_callbacks(const std::function<void(Callbacks&)>& edit) {
    std::lock_guard lock(callbacks_mutex_);
    auto next = std::make_shared<Callbacks>(callbacks_ ? *callbacks_ : Callbacks{});
    edit(*next);
    next->elector_id = id_;
    callbacks_ = std::move(next);
  }

  void start() {
    asio::dispatch(strand_, [self = shared_from_this()] { self->start_on_strand(); });
  }

  void acquire(std::string group, TermHandler handler) {
    GroupState* g = nullptr;
    try {
      g = &register_group(group);
    } catch (const std::invalid_argument& e) {
      log(LogLevel::warning, e.what());
      return complete_later(strand_, std::move(handler), make_error_code(errc::invalid_argument), Term{});
    }
    // The cancellation handler is installed now, not on the strand: a cancel
    // emitted before the strand runs would otherwise be lost. It posts behind
    // acquire_on_strand, so it always finds the waiter if there is one.
    const std::uint64_t id = next_waiter_.fetch_add(1, std::memory_order_relaxed);
    auto slot = asio::get_associated_cancellation_slot(handler);
    if (slot.is_connected()) {
      slot.assign([weak = weak_from_this(), g, id](asio::cancellation_type) {
        if (auto self = weak.lock()) {
          asio::post(self->strand_, [self, g, id] { self->cancel_acquire(*g, id); });
        }
      });
    }
    asio::dispatch(strand_, [self = shared_from_this(), g, id, h = std::move(handler)]() mutable {
      self->acquire_on_strand(*g, id, std::move(h));
    });
  }

  void step_down(std::string group, VoidHandler handler) {
    GroupState* g = registry_.find(group);
    if (g == nullptr) {
      log(LogLevel::warning, fmt::format("step_down: group {} is not registered", quoted(group)));
      return complete_later(strand_, std::move(handler), make_error_code(errc::invalid_argument));
    }
    asio::dispatch(strand_, [self = shared_from_this(), g, h = std::move(handler)]() mutable {
      g->waiting().step_down.push_back(std::move(h));
      self->apply(*g, g->machine.step_down(Clock::now()));
    });
  }

  void stop(VoidHandler handler) {
    asio::dispatch(strand_, [self = shared_from_this(), h = std::move(handler)]() mutable {
      self->stop_on_strand(std::move(h));
    });
  }

  void set_audit(Elector::AuditHandler handler) {
    asio::dispatch(strand_, [self = shared_from_this(), h = std::move(handler)]() mutable {
      self->audit_ = std::move(h);
    });
  }

  void eval(const redis::Script& script, std::vector<std::string> keys, std::vector<std::string> args,
            redis::EvalHandler handler) {
    asio::dispatch(strand_, [self = shared_from_this(), &script, k = std::move(keys), a = std::move(args),
                             h = std::move(handler)]() mutable {
      self->client_.async_eval(script, std::move(k), std::move(a), std::move(h));
    });
  }

  void leader_of(std::string group, LeaderInfoHandler handler) {
    try {
      validate_group_name(group);
    } catch (const std::invalid_argument&) {
      return complete_later(strand_, std::move(handler), make_error_code(errc::invalid_argument), LeaderInfo{});
    }
    const std::string key = options_.key_prefix + group;
    redis::Request request;
    request.push({"GET", key}).push({"PTTL", key}).push({"GET", key + ":token"});
    asio::dispatch(strand_, [self = shared_from_this(), r = std::move(request), h = std::move(handler)]() mutable {
      self->client_.async_exec(
          std::move(r), [self, h = std::move(h)](error_code ec, std::vector<redis::Reply> replies) mutable {
            LeaderInfo info;
            if (!ec && replies.size() == 3) {
              for (const auto& reply : replies) {
                if (reply.is_error()) ec = make_error_code(classify_server_error(reply.str));
              }
              if (replies[0].is_string()) info.holder = replies[0].str;
              if (replies[1].is_integer() && replies[1].integer >= -1) {
                info.remaining = std::chrono::milliseconds(replies[1].integer);
              }
              if (replies[2].is_string()) info.token = std::atoll(replies[2].str.c_str());
            }
            complete_later(self->strand_, std::move(h), ec, std::move(info));
          });
    });
  }

  void metrics(MetricsHandler handler) {
    asio::dispatch(strand_, [self = shared_from_this(), h = std::move(handler)]() mutable {
      complete_later(self->strand_, std::move(h), self->snapshot());
    });
  }

  // Strand only.
  Metrics snapshot() const {
    const auto now = Clock::now();
    Metrics m;
    m.instance = id_;
    for (const GroupState* g : registry_.snapshot()) {
      GroupMetrics gm;
      gm.group = g->name;
      gm.leader = g->flag->leading(now);
      gm.token = g->machine.token();
      gm.terms_won = g->terms_won;
      gm.acquire_attempts = g->acquire_attempts;
      gm.acquire_errors = g->acquire_errors;
      gm.renewals_ok = g->renewals_ok;
      gm.renewals_failed = g->renewals_failed;
      std::copy(g->demotions.begin(), g->demotions.end(), gm.demotions.begin());
      gm.time_as_leader = g->time_as_leader + (g->in_term ? now - g->leading_since : Duration::zero());
      gm.heartbeat_lag = g->heartbeat_lag(now);
      m.groups.push_back(std::move(gm));
    }
    m.commands = connection_metrics("commands", client_, now);
    m.subscriber = connection_metrics("subscriber", subscriber_, now);
    m.subscriber.last_reply_age.reset();  // pushes, not replies: see the commands connection
    return m;
  }

  // Any thread: atomics, the registry's snapshot and immutable options only.
  Health health() const {
    const auto now = Clock::now();
    Health h;
    const Phase phase = phase_.load(std::memory_order_acquire);
    h.started = phase != Phase::idle;
    h.stopped = phase == Phase::stopped;
    h.connected = connected_.load(std::memory_order_relaxed);
    h.notices = notices_up_.load(std::memory_order_relaxed);
    if (const auto at = client_.last_reply_at()) h.last_reply_age = now - *at;
    if (const std::int64_t seen = loop_seen_ns_.load(std::memory_order_relaxed); seen != 0) {
      h.loop_age = std::chrono::duration_cast<Duration>(std::chrono::nanoseconds(to_ns(now) - seen));
    }
    for (const GroupState* g : registry_.snapshot()) {
      h.heartbeat_lag = std::max(h.heartbeat_lag, g->heartbeat_lag(now));
      if (g->failing.load(std::memory_order_relaxed)) ++h.failing_groups;
    }
    const auto& redis = client_.options();
    h.max_loop_age = options_.ttl;
    h.max_reply_age = std::max<Duration>(options_.ttl / 2, redis.health_check_interval + redis.command_timeout);
    h.evaluate();
    return h;
  }

  /// The elector is going away without a graceful stop: drop everything now.
  void abandon() {
    phase_.store(Phase::stopped, std::memory_order_release);
    for (GroupState* g : registry_.snapshot()) g->flag->deadline_ns.store(0, std::memory_order_release);
    asio::post(strand_, [self = shared_from_this()] { self->finish_stop(); });
  }

 private:
  static ElectorOptions validated(ElectorOptions o) {
    o.validate();
    return o;
  }

  static RedisOptions subscriber_options(RedisOptions o) {
    if (!o.client_name.empty()) o.client_name += "-sub";
    return o;
  }

  // Valid but risky: a renewal that times out only after the local deadline
  // cannot be followed by a re-claim while the key is still ours.
  void warn_about_timing(const RedisOptions& redis) const {
    const auto room = options_.ttl - options_.effective_drift_margin() - options_.effective_heartbeat();
    if (redis.command_timeout < room) return;
    log(LogLevel::warning,
        fmt::format("elector {}: command_timeout ({} ms) is not shorter than ttl - drift_margin - heartbeat_interval "
                    "({} ms): a hung renewal is detected only after the lease is lost",
                    id_, redis.command_timeout.count(), room.count()));
  }

  static ConnectionMetrics connection_metrics(std::string name, const redis::Client& c, TimePoint now) {
    const auto& s = c.stats();
    ConnectionMetrics m;
    m.name = std::move(name);
    m.connected = c.connected();
    m.connects = s.connects;
    m.reconnects = s.connects > 0 ? s.connects - 1 : 0;
    m.disconnects = s.disconnects;
    m.commands_sent = s.commands_sent;
    m.timeouts = s.timeouts;
    m.protocol_errors = s.protocol_errors;
    m.round_trip = s.round_trip;
    if (const auto at = c.last_reply_at()) m.last_reply_age = now - *at;
    return m;
  }

  // ---- strand only ----------------------------------------------------------

  void start_on_strand() {
    if (started_ || stopping_) return;
    started_ = true;
    phase_.store(Phase::running, std::memory_order_release);
    pulse();
    client_.on_state([this](bool up, const Error& error) { on_connection(up, error); });
    subscriber_.on_state([this](bool up, const Error& error) {
      on_subscriber(up, error);
      notices_confirmed_ = false;
      if (up) return;  // notices count as available once the pattern is confirmed
      for (GroupState* g : begun_) apply(*g, g->machine.on_notices_available(Clock::now(), false));
    });
    subscriber_.on_error_reply([this](const Error& error) { on_subscriber_error(error); });
    subscriber_.on_subscribed([this](std::string_view) {
      notices_confirmed_ = true;
      for (GroupState* g : begun_) apply(*g, g->machine.on_notices_available(Clock::now(), true));
    });
    subscriber_.on_message([this](std::string_view channel, std::string_view releaser) {
      if (GroupState* g = group_of_channel(channel)) apply(*g, g->machine.on_release_notice(Clock::now(), releaser));
    });
    // One pattern for the release notices of every group under the prefix
    // (channels of groups not campaigned for are ignored on arrival): a
    // channel per group cost ~130 B each and a 10,000-name SUBSCRIBE.
    subscriber_.psubscribe({release_pattern(options_.key_prefix)});
    client_.start();
    subscriber_.start();
    for (GroupState* g : registry_.snapshot()) begin(*g);
    log(LogLevel::info, fmt::format("elector {} started against {}", id_, client_.options().to_string()));
  }

  // The campaigning group whose release notices `channel` carries.
  GroupState* group_of_channel(std::string_view channel) const {
    constexpr std::string_view suffix = ":released";
    const std::string_view prefix = options_.key_prefix;
    if (channel.size() < prefix.size() + suffix.size() || !channel.starts_with(prefix) || !channel.ends_with(suffix)) {
      return nullptr;
    }
    GroupState* g = registry_.find(channel.substr(prefix.size(), channel.size() - prefix.size() - suffix.size()));
    return g != nullptr && g->begun ? g : nullptr;
  }

  void begin(GroupState& g) {
    if (g.begun) return;
    g.begun = true;
    begun_.push_back(&g);
    const auto now = Clock::now();
    apply(g, g.machine.start(now));
    if (notices_confirmed_) apply(g, g.machine.on_notices_available(now, true));
    if (client_.connected()) apply(g, g.machine.on_connected(now));
  }

  // The client reports each outage once (the first failure, not every
  // retry), so each is logged once here, and its end once.
  void on_connection(bool up, const Error& error) {
    const auto now = Clock::now();
    connected_.store(up, std::memory_order_relaxed);
    const std::string endpoint = client_.options().to_string();
    if (up) {
      if (outage_since_) {
        // Warning, like the outage itself, so that the default log shows
        // both ends of it.
        log(LogLevel::warning,
            fmt::format("elector {}: {} Redis {} after {} ms; campaigning again", id_,
                        ever_connected_ ? "reconnected to" : "connected to", endpoint, to_ms(now - *outage_since_)));
      } else {
        log(LogLevel::info, fmt::format("elector {}: connected to Redis {}", id_, endpoint));
      }
      outage_since_.reset();
      ever_connected_ = true;
    } else if (!stopping_) {
      if (!outage_since_) outage_since_ = now;
      log(LogLevel::warning,
          fmt::format("elector {}: {} Redis {}: {}; nobody here leads until it is back, retrying with backoff", id_,
                      ever_connected_ ? "lost the connection to" : "cannot connect to", endpoint, error.message()));
      emit_error("", error);
    }
    ++connection_epoch_;
    if (up) return connect_groups(0, begun_.size(), connection_epoch_);
    // Losing the connection ends every claim at once, whatever the count.
    for (GroupState* g : begun_) apply(*g, g->machine.on_disconnected(now, error.code == errc::timeout));
  }

  // Tells groups [from, to) that the connection is up, a pass at a time: each
  // sends its acquire, and thousands at once would be one burst holding a
  // pending entry and the encoded command of every group until the replies
  // come back. A group begun meanwhile was told by begin() itself.
  void connect_groups(std::size_t from, std::size_t to, std::uint64_t epoch) {
    const auto now = Clock::now();
    const std::size_t end = std::min(to, from + groups_per_pass);
    for (std::size_t i = from; i < end; ++i) apply(*begun_[i], begun_[i]->machine.on_connected(now));
    if (end == to) return;
    asio::post(strand_, [self = shared_from_this(), end, to, epoch] {
      if (self->connection_epoch_ == epoch && !self->stopping_) self->connect_groups(end, to, epoch);
    });
  }

  // Without release notices standbys still fail over, by polling: worth a
  // warning once per outage, not an error event.
  void on_subscriber(bool up, const Error& error) {
    notices_up_.store(up, std::memory_order_relaxed);
    if (up) {
      subscriber_error_ = {};  // a refusal on the new connection is news again
      if (notices_lost_) {
        log(LogLevel::warning, fmt::format("elector {}: release notices available again", id_));
        notices_lost_ = false;
      }
      return;
    }
    if (stopping_ || notices_lost_) return;
    notices_lost_ = true;
    log(LogLevel::warning, fmt::format("elector {}: release notices unavailable ({}); standbys poll every {} ms", id_,
                                       error.message(), options_.retry_interval.count()));
  }

  // PSUBSCRIBE refused (NOPERM on the pattern): the connection stays up but
  // the refused groups only ever learn of releases by polling.
  void on_subscriber_error(const Error& error) {
    if (error.code == subscriber_error_) return;
    subscriber_error_ = error.code;
    log(LogLevel::warning, fmt::format("elector {}: subscribing to release notices failed: {}; standbys poll every {} ms",
                                       id_, error.message(), options_.retry_interval.count()));
    emit_error("", error);
  }

  void pulse() {
    loop_seen_ns_.store(to_ns(Clock::now()), std::memory_order_relaxed);
    if (stopped_) return;
    pulse_timer_.expires_after(pulse_period(options_));
    pulse_timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec) self->pulse();
    });
  }

  void acquire_on_strand(GroupState& g, std::uint64_t id, TermHandler handler) {
    if (stopping_) {
      return complete_later(strand_, std::move(handler), make_error_code(errc::stopped), Term{});
    }
    if (g.in_term && g.flag->leading(Clock::now())) {
      return complete_later(strand_, std::move(handler), error_code{}, Term(term_of(g)));
    }
    g.waiting().acquire.emplace_back(id, std::move(handler));
    if (started_) begin(g);
  }

  void cancel_acquire(GroupState& g, std::uint64_t id) {
    if (!g.waiters) return;
    auto& waiters = g.waiters->acquire;
    auto it = std::find_if(waiters.begin(), waiters.end(), [id](const auto& w) { return w.first == id; });
    if (it == waiters.end()) return;  // already completed
    auto h = std::move(it->second);
    waiters.erase(it);
    complete_later(strand_, std::move(h), error_code(asio::error::operation_aborted), Term{});
  }

  // Turns one Output of a group's machine into effects. The order matters:
  // the published deadline changes first, so that no callback can observe a
  // revoked group as leader.
  void apply(GroupState& g, Output out) {
    publish(g);

    if (out.revoked) end_term(g, *out.revoked);
    if (out.elected) begin_term(g);
    if (out.holder_changed) {
      if (g.machine.holder() != id_ && logs(LogLevel::info)) {
        log(LogLevel::info, fmt::format("elector {}: group \"{}\": leader is now {}", id_, g.name, g.machine.holder()));
      }
      emit(&Callbacks::leader_changed, LeaderChangedEvent{std::string(g.name), std::string(g.machine.holder())});
    }
    if (out.released) {
      for (auto& h : g.take_step_down_waiters()) complete_later(strand_, std::move(h), error_code{});
    }
    if (out.send != Command::none) send(g, out.send, out.seq);
    // For health(): when the next renewal is due while none is in flight.
    const auto& m = g.machine;
    const bool renewal_pending = m.is_leader() && m.in_flight() != Command::renew;
    g.renew_due_ns.store(renewal_pending ? to_ns(m.renewal_due()) : 0,
                         std::memory_order_relaxed);
    schedule(g, out.wake);
    if (out.stopped) maybe_finish_stop();
  }

  // Publishes the machine's deadline for is_leader(). The audit hook sees a
  // claim before it is published and its end after it is withdrawn.
  void publish(GroupState& g) {
    const auto deadline = g.machine.deadline();
    const std::int64_t next = deadline ? to_ns(*deadline) : 0;
    const std::int64_t previous = g.flag->deadline_ns.load(std::memory_order_relaxed);
    if (next == previous) return;
    using Kind = LeaseAuditEvent::Kind;
    const Kind kind = next == 0 ? Kind::ended : previous == 0 ? Kind::began : Kind::extended;
    if (kind != Kind::ended) audit(g, kind, *deadline);
    g.flag->deadline_ns.store(next, std::memory_order_release);
    if (g.term) g.term->deadline_ns.store(next, std::memory_order_release);
    if (kind == Kind::ended) audit(g, kind, {});
  }

  void audit(const GroupState& g, LeaseAuditEvent::Kind kind, TimePoint deadline) {
    if (!audit_) return;
    audit_(LeaseAuditEvent{kind, g.name, g.machine.token(), Clock::now(), g.machine.confirmed_at(), deadline});
  }

  void begin_term(GroupState& g) {
    const auto& m = g.machine;
    // A re-claim of our own lease keeps the token of our previous term.
    const bool reclaimed = g.terms_won > 0 && m.token() == g.last_token;
    g.in_term = true;
    ++g.terms_won;
    g.last_token = m.token();
    g.leading_since = Clock::now();
    g.renew_lag_ns.store(0, std::memory_order_relaxed);
    if (logs(LogLevel::info)) {
      log(LogLevel::info, fmt::format("elector {}: group \"{}\": elected leader (token {}): {}", id_, g.name, m.token(),
                                      reclaimed ? "re-claimed its own lease" : "acquired the lease"));
    }
    for (auto& [id, h] : g.take_acquire_waiters()) {
      complete_later(strand_, std::move(h), error_code{}, Term(term_of(g)));
    }
    emit(&Callbacks::elected, ElectedEvent{std::string(g.name), m.token(), m.term_started()});
  }

  // A term's shared state is made when somebody asks for a Term: a group
  // nobody awaits (most of 10,000) never pays for one.
  const std::shared_ptr<TermState>& term_of(GroupState& g) {
    if (!g.term) {
      g.term = std::make_shared<TermState>(std::string(g.name), g.last_token, g.machine.term_started(), strand_);
      g.term->deadline_ns.store(g.flag->deadline_ns.load(std::memory_order_relaxed), std::memory_order_release);
    }
    return g.term;
  }

  void end_term(GroupState& g, RevokeReason reason) {
    const std::int64_t token = g.in_term ? g.last_token : g.machine.token();
    if (g.in_term) {
      g.time_as_leader += Clock::now() - g.leading_since;
      ++g.demotions[static_cast<std::size_t>(reason)];
    }
    if (g.term) g.term->end(reason);
    g.term.reset();
    g.in_term = false;
    const LogLevel level = (reason == RevokeReason::stepped_down || reason == RevokeReason::stopped)
                               ? LogLevel::info
                               : LogLevel::warning;
    if (logs(level)) {
      log(level, fmt::format("elector {}: group \"{}\": no longer leader (token {}): {} ({})", id_, g.name, token,
                             to_string(reason), explain(reason)));
    }
    emit(&Callbacks::revoked, RevokedEvent{std::string(g.name), token, reason});
  }

  // ---- lease commands: at most max_in_flight awaiting their replies --------

  void send(GroupState& g, Command command, std::uint64_t seq) {
    // Behind the held-back ones, if any: in order, and none waits for long.
    if (in_flight_ >= max_in_flight || !held_back_.empty()) return held_back_.push_back({&g, command, seq});
    write_command(g, command, seq);
  }

  // One lease command was answered (or failed): once half the window is free,
  // the held-back commands go, as one pipelined batch.
  void settled() {
    --in_flight_;
    if (held_back_.empty() || in_flight_ > max_in_flight / 2) return;
    while (!held_back_.empty() && in_flight_ < max_in_flight) {
      const HeldBack c = held_back_.front();
      held_back_.pop_front();
      // A demotion, a reconnect or a newer command made it stale meanwhile.
      const LeaseMachine& m = c.group->machine;
      if (m.in_flight() == c.command && m.in_flight_seq() == c.seq) write_command(*c.group, c.command, c.seq);
    }
  }

  // The reply handler runs later, never inside async_eval, so counting the
  // command after the switch is in time.
  void write_command(GroupState& g, Command command, std::uint64_t seq) {
    auto self = shared_from_this();
    switch (command) {
      case Command::acquire:
        ++g.acquire_attempts;
        client_.async_eval(acquire_script(), g.lease_arguments,
                           [self, g = &g, seq](error_code ec, redis::Reply reply) {
                             self->settled();
                             self->on_acquire_result(*g, seq, ec, reply);
                           });
        break;
      case Command::renew: {
        // confirmed_at still names the previous confirmation, so this is
        // how late the renewal leaves against its schedule.
        const auto scheduled = g.machine.renewal_due();
        g.renew_lag_ns.store(std::max<std::int64_t>(0, to_ns(Clock::now()) - to_ns(scheduled)),
                             std::memory_order_relaxed);
        client_.async_eval(renew_script(), g.lease_arguments,
                           [self, g = &g, seq](error_code ec, redis::Reply reply) {
                             self->settled();
                             self->on_renew_result(*g, seq, ec, reply);
                           });
        break;
      }
      case Command::release:
        client_.async_eval(release_script(), {g.key}, {id_, release_channel(g.key)},
                           [self, g = &g, seq](error_code ec, redis::Reply reply) {
                             self->settled();
                             self->on_release_result(*g, seq, ec, reply);
                           });
        break;
      case Command::none:
        return;  // nothing sent
    }
    ++in_flight_;
  }

  void on_acquire_result(GroupState& g, std::uint64_t seq, error_code ec, const redis::Reply& reply) {
    const auto now = Clock::now();
    std::optional<AcquireReply> parsed;
    if (!ec) {
      parsed = parse_acquire_reply(reply, id_);
      if (!parsed) ec = make_error_code(errc::unexpected_reply);
    }
    if (ec) {
      ++g.acquire_errors;
      return fail(g, seq, ec, reply, "acquire");
    }
    recovered(g, "acquire");
    apply(g, g.machine.on_acquire_reply(now, seq, *parsed));
  }

  void on_renew_result(GroupState& g, std::uint64_t seq, error_code ec, const redis::Reply& reply) {
    std::optional<bool> renewed;
    if (!ec) {
      renewed = parse_renew_reply(reply);
      if (!renewed) ec = make_error_code(errc::unexpected_reply);
    }
    if (ec || !*renewed) {
      ++g.renewals_failed;
    } else {
      ++g.renewals_ok;
    }
    if (ec) return fail(g, seq, ec, reply, "renew");
    recovered(g, "renew");
    apply(g, g.machine.on_renew_reply(Clock::now(), seq, *renewed));
  }

  void on_release_result(GroupState& g, std::uint64_t seq, error_code ec, const redis::Reply& reply) {
    if (!ec && !is_release_reply(reply)) ec = make_error_code(errc::unexpected_reply);
    if (ec) return fail(g, seq, ec, reply, "release");
    recovered(g, "release");
    apply(g, g.machine.on_release_reply(Clock::now(), seq));
  }

  // A group's error is logged and reported when it first appears (or
  // changes), not on every retry; recovered() logs its end.
  void fail(GroupState& g, std::uint64_t seq, error_code ec, const redis::Reply& reply, std::string_view what) {
    if (!is_connection_failure(ec)) {
      g.failing.store(true, std::memory_order_relaxed);
      if (ec != g.last_error) {
        g.last_error = ec;
        Error error{ec, reply.is_error() ? reply.str : reply.debug_string()};
        log(LogLevel::warning, fmt::format("elector {}: group \"{}\": {} failed: {}; retrying every {} ms", id_,
                                           g.name, what, error.message(), options_.retry_interval.count()));
        emit_error(std::string(g.name), error);
      }
    }
    apply(g, g.machine.on_failure(Clock::now(), seq, ec == errc::timeout ? Failure::timeout : Failure::error));
  }

  void recovered(GroupState& g, std::string_view what) {
    g.failing.store(false, std::memory_order_relaxed);
    if (!g.last_error) return;
    log(LogLevel::warning, fmt::format("elector {}: group \"{}\": {} works again after: {}", id_, g.name, what,
                                       g.last_error.message()));
    g.last_error = {};
  }

  // ---- timers: one steady_timer for every group, earliest wake first --------

  void schedule(GroupState& g, std::optional<TimePoint> at) {
    if (!at || stopped_) return wakes_.remove(g);
    g.wake_at = *at;
    wakes_.set(g);
    arm();
  }

  void arm() {
    if (wakes_.empty()) return;
    const TimePoint next = wakes_.top().wake_at;
    if (armed_ && armed_at_ <= next) return;
    armed_ = true;
    armed_at_ = next;
    timer_.expires_at(next);
    timer_.async_wait(asio::bind_executor(strand_, [self = shared_from_this(), next](error_code ec) {
      if (ec || self->armed_at_ != next) return;  // re-armed earlier meanwhile
      self->armed_ = false;
      self->fire();
    }));
  }

  void fire() {
    const auto now = Clock::now();
    // The groups due now are handled groups_per_pass at a time, the rest on
    // the next turn of the strand (the timer is then armed in the past); what
    // they send is paced by send(). The budget stops a group that keeps
    // asking to be woken at once from holding the strand.
    std::size_t handled = 0;
    for (std::size_t budget = 2 * begun_.size() + 1; budget > 0 && !wakes_.empty(); --budget) {
      GroupState& g = wakes_.top();
      if (g.wake_at > now || handled++ == groups_per_pass) break;
      wakes_.remove(g);
      apply(g, g.machine.on_timer(now));
    }
    arm();
  }

  // ---- stop -----------------------------------------------------------------

  void stop_on_strand(VoidHandler handler) {
    if (stopped_) return complete_later(strand_, std::move(handler), error_code{});
    stop_waiters_.push_back(std::move(handler));
    if (stopping_) return;
    stopping_ = true;
    phase_.store(Phase::stopped, std::memory_order_release);
    for (GroupState* g : registry_.snapshot()) {
      for (auto& [id, h] : g->take_acquire_waiters()) {
        complete_later(strand_, std::move(h), make_error_code(errc::stopped), Term{});
      }
    }
    const auto now = Clock::now();
    for (GroupState* g : begun_) apply(*g, g->machine.stop(now));
    maybe_finish_stop();  // nothing to release (disconnected, not started): done already
    if (stopped_) return;
    stop_timer_.expires_after(options_.stop_timeout);
    stop_timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (ec) return;
      log(LogLevel::warning, fmt::format("elector {}: stop timed out waiting for releases", self->id_));
      self->finish_stop();
    });
    maybe_finish_stop();
  }

  void maybe_finish_stop() {
    if (!stopping_ || stopped_) return;
    // No group begins while stopping and a stopped machine stays stopped, so
    // the scan resumes where it ended: 10,000 release replies cost one pass
    // over the groups, not one pass each.
    while (stopped_prefix_ < begun_.size() && begun_[stopped_prefix_]->machine.state() == LeaseState::stopped) {
      ++stopped_prefix_;
    }
    if (stopped_prefix_ == begun_.size()) finish_stop();
  }

  void finish_stop() {
    if (stopped_) return;
    stopping_ = true;
    stopped_ = true;
    phase_.store(Phase::stopped, std::memory_order_release);
    connected_.store(false, std::memory_order_relaxed);
    notices_up_.store(false, std::memory_order_relaxed);
    stop_timer_.cancel();
    timer_.cancel();
    pulse_timer_.cancel();
    for (GroupState* g : registry_.snapshot()) {
      if (g->flag->deadline_ns.exchange(0, std::memory_order_acq_rel) != 0) {
        audit(*g, LeaseAuditEvent::Kind::ended, {});
      }
      if (g->in_term) end_term(*g, RevokeReason::stopped);
      for (auto& h : g->take_step_down_waiters()) {
        complete_later(strand_, std::move(h), make_error_code(errc::stopped));
      }
      for (auto& [id, h] : g->take_acquire_waiters()) {
        complete_later(strand_, std::move(h), make_error_code(errc::stopped), Term{});
      }
    }
    client_.stop();
    subscriber_.stop();
    for (auto& h : std::exchange(stop_waiters_, {})) complete_later(strand_, std::move(h), error_code{});
    log(LogLevel::info, fmt::format("elector {} stopped", id_));
  }

  // ---- events ---------------------------------------------------------------

  // Posts `event` to the callback in `slot`, if one is registered: an
  // elector winning 10,000 groups at once queues no event nobody listens to.
  template <typename Event>
  void emit(std::function<void(const Event&)> Callbacks::*slot, Event event) {
    std::shared_ptr<const Callbacks> callbacks;
    {
      std::lock_guard lock(callbacks_mutex_);
      callbacks = callbacks_;
    }
    if (!callbacks || !((*callbacks).*slot)) return;
    // Posted, never run here: a slow callback must not delay a renewal.
    asio::post(callback_strand_, [callbacks, slot, event = std::move(event)] {
      try {
        ((*callbacks).*slot)(event);
      } catch (const std::exception& e) {
        log(LogLevel::error, fmt::format("elector {}: an event callback threw: {}", callbacks->elector_id, e.what()));
      }
    });
  }

  void emit_error(const std::string& group, const Error& error) { emit(&Callbacks::error, ErrorEvent{group, error}); }

  const ElectorOptions options_;
  const std::string id_;
  const LeaseTiming timing_;
  const std::string ttl_ms_;
  asio::strand<asio::any_io_executor> strand_;
  asio::strand<asio::any_io_executor> callback_strand_;
  redis::Client client_;
  redis::Client subscriber_;
  GroupRegistry<GroupState> registry_;

  std::mutex callbacks_mutex_;
  std::shared_ptr<const Callbacks> callbacks_;

  // Strand only.
  Elector::AuditHandler audit_;
  std::vector<GroupState*> begun_;
  std::size_t stopped_prefix_ = 0;  // begun_[0, this) are known to be stopped
  WakeQueue<GroupState> wakes_;
  // Groups handled in one strand turn by fire() and connect_groups(), so
  // that 10,000 due at once do not hold the strand for one long turn.
  static constexpr std::size_t groups_per_pass = 1024;
  // Lease commands awaiting replies at most: 10,000 renewals due at once
  // leave as Redis answers, in pipelined batches of at least half of this,
  // instead of holding 10,000 pending entries, encoded commands and replies
  // at the same time (their peak stays resident after they are freed).
  static constexpr std::size_t max_in_flight = 1024;
  struct HeldBack {
    GroupState* group;
    Command command;
    std::uint64_t seq;
  };
  std::size_t in_flight_ = 0;
  std::deque<HeldBack> held_back_;  // sent in order as the window frees
  std::uint64_t connection_epoch_ = 0;  // bumped by every connect and disconnect
  asio::steady_timer timer_;
  bool armed_ = false;
  TimePoint armed_at_{};
  asio::steady_timer stop_timer_;
  asio::steady_timer pulse_timer_;
  std::vector<VoidHandler> stop_waiters_;
  std::atomic<std::uint64_t> next_waiter_{1};  // acquire() runs on any thread
  bool started_ = false;
  bool stopping_ = false;
  bool stopped_ = false;
  bool ever_connected_ = false;
  std::optional<TimePoint> outage_since_;  // the commands connection is down since
  bool notices_lost_ = false;              // the subscriber's outage was logged
  error_code subscriber_error_;            // the last SUBSCRIBE refusal logged

  // Read by health() from any thread.
  enum class Phase : std::uint8_t { idle, running, stopped };
  std::atomic<Phase> phase_{Phase::idle};
  std::atomic<bool> connected_{false};
  std::atomic<bool> notices_up_{false};
  bool notices_confirmed_ = false;  // the server confirmed the release pattern (strand)
  std::atomic<std::int64_t> loop_seen_ns_{0};
};

/// Standalone mode's threads: one runs the elector, one runs callbacks.
struct Standalone {
  asio::io_context io{1};
  asio::io_context callbacks{1};
  asio::executor_work_guard<asio::io_context::executor_type> io_work = asio::make_work_guard(io);
  asio::executor_work_guard<asio::io_context::executor_type> callback_work = asio::make_work_guard(callbacks);
  std::thread io_thread;
  std::thread callback_thread;
  std::atomic<int> running{0};

  void run() {
    running = 2;
    io_thread = std::thread([this] {
      io.run();
      --running;
    });
    callback_thread = std::thread([this] {
      callbacks.run();
      --running;
    });
  }

  bool owns_this_thread() const {
    const auto self = std::this_thread::get_id();
    return self == io_thread.get_id() || self == callback_thread.get_id();
  }

  // Lets both threads run out of work, so that every handler, and with it
  // every reference to the elector, is gone before the io_contexts are
  // destroyed (a strand outliving its io_context's services is undefined).
  // Bounded: whatever is still queued after that is abandoned.
  void join() {
    io_work.reset();
    callback_work.reset();
    const auto bound = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (running.load() > 0 && std::chrono::steady_clock::now() < bound) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    io.stop();
    callbacks.stop();
    if (io_thread.joinable()) io_thread.join();
    if (callback_thread.joinable()) callback_thread.join();
  }
};

}  // namespace leasehold::detail

namespace leasehold {

namespace asio = boost::asio;

Elector::Elector(executor_type executor, RedisOptions redis, ElectorOptions options)
    : impl_(std::make_shared<detail::ElectorImpl>(executor, executor, std::move(redis), std::move(options))) {}

Elector::Elector(RedisOptions redis, ElectorOptions options)
    : standalone_(std::make_unique<detail::Standalone>()),
      impl_(std::make_shared<detail::ElectorImpl>(standalone_->io.get_executor(),
                                                  standalone_->callbacks.get_executor(), std::move(redis),
                                                  std::move(options))) {
  standalone_->run();
}

Elector::~Elector() {
  if (!standalone_) {
    impl_->abandon();
    return;
  }
  if (standalone_->owns_this_thread()) {
    // Destroyed from its own callback: its threads cannot be joined from
    // here. Stop in the background and leave the threads' state alive.
    log(LogLevel::error, "leasehold: a standalone Elector was destroyed from one of its own callbacks");
    impl_->abandon();
    (void)standalone_.release();
    return;
  }
  stop_and_wait();
  impl_->abandon();
  standalone_->join();
  impl_.reset();  // the last reference: destroyed here, while the io_contexts live
}

Elector::executor_type Elector::get_executor() const noexcept { return impl_->executor(); }
const std::string& Elector::instance_id() const noexcept { return impl_->id(); }
const ElectorOptions& Elector::options() const noexcept { return impl_->options(); }
void Elector::start() { impl_->start(); }
bool Elector::is_leader(std::string_view group) const noexcept { return impl_->is_leader(group); }

Group Elector::group(std::string_view name) {
  auto& g = impl_->register_group(name);
  return Group(std::string(g.name), g.flag);
}

void Elector::on_elected(ElectedHandler h) {
  impl_->set_callbacks([&](detail::Callbacks& c) { c.elected = std::move(h); });
}
void Elector::on_revoked(RevokedHandler h) {
  impl_->set_callbacks([&](detail::Callbacks& c) { c.revoked = std::move(h); });
}
void Elector::on_leader_changed(LeaderChangedHandler h) {
  impl_->set_callbacks([&](detail::Callbacks& c) { c.leader_changed = std::move(h); });
}
void Elector::on_error(ErrorHandler h) {
  impl_->set_callbacks([&](detail::Callbacks& c) { c.error = std::move(h); });
}

void Elector::on_lease_audit(AuditHandler h) { impl_->set_audit(std::move(h)); }

void Elector::start_eval(const redis::Script& script, std::vector<std::string> keys, std::vector<std::string> args,
                         EvalHandler handler) {
  impl_->eval(script, std::move(keys), std::move(args), std::move(handler));
}

void Elector::start_acquire(std::string group, TermHandler handler) {
  impl_->acquire(std::move(group), std::move(handler));
}
void Elector::start_step_down(std::string group, VoidHandler handler) {
  impl_->step_down(std::move(group), std::move(handler));
}
void Elector::start_stop(VoidHandler handler) { impl_->stop(std::move(handler)); }
void Elector::start_leader_of(std::string group, LeaderInfoHandler handler) {
  impl_->leader_of(std::move(group), std::move(handler));
}

bool Elector::on_own_executor() const noexcept { return impl_->running_in_strand(); }

void Elector::start_metrics(MetricsHandler handler) { impl_->metrics(std::move(handler)); }

Metrics Elector::metrics() {
  if (on_own_executor()) return impl_->snapshot();
  auto promise = std::make_shared<std::promise<Metrics>>();
  auto result = promise->get_future();
  impl_->metrics(MetricsHandler([promise](Metrics m) { promise->set_value(std::move(m)); }));
  if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    throw std::runtime_error(
        "leasehold: Elector::metrics() waited 5 s for the elector's executor; is it running, or is this thread "
        "the one that should run it? (use async_metrics there)");
  }
  return result.get();
}

Health Elector::health() const { return impl_->health(); }

void Elector::stop_and_wait() {
  if (on_own_executor()) {
    throw std::logic_error("Elector::stop_and_wait() called on the elector's own executor: it would deadlock");
  }
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  impl_->stop(VoidHandler([done](error_code) { done->set_value(); }));
  // stop() itself is bounded by stop_timeout; the extra second covers an
  // executor that nobody runs (executor mode), so this never hangs.
  const auto bound = options().stop_timeout + std::chrono::seconds(1);
  if (finished.wait_for(bound) != std::future_status::ready) {
    log(LogLevel::warning, "leasehold: stop did not finish in time; is the elector's executor running?");
  }
}

StopOperation::~StopOperation() {
  if (elector_ == nullptr) return;
  if (elector_->on_own_executor()) {
    elector_->stop([](error_code) {});
  } else {
    elector_->stop_and_wait();
  }
}

}  // namespace leasehold
