#pragma once
// The Asio elector behind Elector: the wiring around ElectorCore. It owns the
// strand, the Redis connections, the timers and the user's callbacks and
// waiters, and turns each of them into an input of the core (which holds the
// logic). Only elector.ipp includes it.

#include <leasehold/elector.hpp>
#include <leasehold/log.hpp>
#include <leasehold/redis/client.hpp>

#include <leasehold/impl/cluster/cluster_notices.hpp>
#include <leasehold/impl/base/complete.hpp>
#include <leasehold/impl/observe/connection_reports.hpp>
#include <leasehold/impl/elector/event_callbacks.hpp>
#include <leasehold/impl/base/incarnation.hpp>
#include <leasehold/impl/core/elector_core.hpp>
#include <leasehold/impl/observe/collect.hpp>
#include <leasehold/impl/lease/lease_replies.hpp>
#include <leasehold/impl/base/quoted.hpp>
#include <leasehold/impl/transport/redis_transport.hpp>
#include <leasehold/impl/transport/slot_markers.hpp>
#include <leasehold/impl/redis/replica_wait.hpp>
#include <leasehold/impl/lease/term_state.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

namespace leasehold::detail {

namespace asio = boost::asio;
using LeaderInfoHandler = asio::any_completion_handler<void(error_code, LeaderInfo)>;
using MetricsHandler = asio::any_completion_handler<void(Metrics)>;

// The pulse that proves to health() that the executor runs.
inline Duration pulse_period(const ElectorOptions& o) {
  return std::clamp<Duration>(o.ttl / 10, std::chrono::milliseconds(10), std::chrono::milliseconds(500));
}

// The release notices' connection (one server, Sentinel); a Redis Cluster's
// go through sharded pub/sub instead (ClusterNotices).
inline std::unique_ptr<redis::Client> make_subscriber(const asio::any_io_executor& executor, RedisOptions o) {
  if (o.cluster) return nullptr;
  if (!o.client_name.empty()) o.client_name += "-sub";
  return std::make_unique<redis::Client>(executor, std::move(o), redis::Role::subscriber);
}

class ElectorImpl final : public std::enable_shared_from_this<ElectorImpl>, private ElectorListener {
 public:
  ElectorImpl(asio::any_io_executor io, asio::any_io_executor callbacks, RedisOptions redis,
              ElectorOptions options)
      : id_(options.instance_id.empty() ? default_instance_id() : options.instance_id),
        strand_(asio::make_strand(io)),
        commands_(strand_, redis),
        subscriber_(make_subscriber(strand_, redis)),
        cluster_notices_(commands_.is_cluster()
                             ? std::make_unique<cluster::detail::ClusterNotices>(*commands_.cluster(), redis)
                             : nullptr),
        incarnation_(new_incarnation()),
        transport_(commands_, KeyLayout(options.key_prefix, redis.effective_key_layout()), id_, incarnation_,
                   {options.empty_restart_guard, options.reclaim_on_restart, options.confirm_replicas,
                    options.confirm_timeout, options.ttl,
                    notices_for(redis.cluster.has_value(), redis.effective_key_layout()),
                    !redis.cluster.has_value() && redis.effective_key_layout() == KeyLayout::Form::plain}),
        slot_markers_(commands_.is_cluster() && options.empty_restart_guard
                          ? std::make_unique<SlotMarkers>(*commands_.cluster(),
                                                          KeyLayout(options.key_prefix, redis.effective_key_layout()),
                                                          [this](const SlotMarkers::Pass& pass) { report(pass); })
                          : nullptr),
        core_(std::move(options), id_, incarnation_, transport_, *this, CoreLimits{}, redis.effective_key_layout()),
        events_(callbacks, id_),
        reports_(id_, commands_.describe(), core_.options().retry_interval),
        timer_(strand_),
        stop_timer_(strand_),
        pulse_timer_(strand_) {
    warn_about_timing(redis);
  }

  // ---- any thread -----------------------------------------------------------

  const ElectorOptions& options() const noexcept { return core_.options(); }
  const std::string& id() const noexcept { return core_.id(); }
  const KeyLayout& layout() const noexcept { return core_.layout(); }
  asio::any_io_executor executor() const { return strand_; }
  bool running_in_strand() const noexcept { return strand_.running_in_this_thread(); }

  bool is_leader(std::string_view group) const noexcept {
    const GroupState* g = core_.find(group);
    return g != nullptr && g->flag->leading(Clock::now());
  }

  GroupState& register_group(std::string_view name) {
    auto [g, fresh] = core_.register_group(name);
    if (fresh) {
      asio::post(strand_, [self = shared_from_this(), g = g] {
        self->core_.begin(*g, Clock::now());
        if (self->cluster_notices_) self->cluster_notices_->watch(self->layout().release_channel(g->name));
      });
    }
    return *g;
  }

  void set_callbacks(const std::function<void(Callbacks&)>& edit) { events_.edit(edit); }

  void start() {
    transport_.keep_alive(weak_from_this());
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
    GroupState* g = core_.find(group);
    if (g == nullptr) {
      log(LogLevel::warning, fmt::format("step_down: group {} is not registered", quoted(group)));
      return complete_later(strand_, std::move(handler), make_error_code(errc::invalid_argument));
    }
    asio::dispatch(strand_, [self = shared_from_this(), g, h = std::move(handler)]() mutable {
      g->waiting().step_down.push_back(std::move(h));
      self->core_.step_down(*g, Clock::now());
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
      self->commands_.eval(script, std::move(k), std::move(a),
                           [h = std::move(h)](error_code ec, redis::Reply reply, redis::Client*) mutable {
                             std::move(h)(ec, std::move(reply));
                           });
    });
  }

  // Confirm mode: the record counts once enough replicas have it (replica_wait.hpp).
  void eval_confirmed(const redis::Script& script, std::vector<std::string> keys, std::vector<std::string> args,
                      asio::any_completion_handler<void(error_code, redis::Reply, bool)> handler) {
    asio::dispatch(strand_, [self = shared_from_this(), &script, k = std::move(keys), a = std::move(args),
                             h = std::move(handler)]() mutable {
      self->commands_.eval(script, std::move(k), std::move(a),
                           [self, h = std::move(h)](error_code ec, redis::Reply reply, redis::Client* via) mutable {
        if (ec || self->options().confirm_replicas == 0) return std::move(h)(ec, std::move(reply), true);
        if (via == nullptr) return std::move(h)(make_error_code(errc::not_connected), std::move(reply), false);
        wait_for_replicas(*via, self->options().confirm_replicas, self->options().confirm_timeout,
                          [h = std::move(h), reply = std::move(reply)](error_code, bool enough, const redis::Reply&) mutable {
                            std::move(h)(error_code{}, std::move(reply), enough);
                          });
      });
    });
  }

  void leader_of(std::string group, LeaderInfoHandler handler) {
    try {
      validate_group_name(group, layout());
    } catch (const std::invalid_argument&) {
      return complete_later(strand_, std::move(handler), make_error_code(errc::invalid_argument), LeaderInfo{});
    }
    std::string key = layout().lease_key(group);
    redis::Request request;
    request.push({"GET", key}).push({"PTTL", key}).push({"GET", layout().token_key(group)});
    asio::dispatch(strand_, [self = shared_from_this(), r = std::move(request), key = std::move(key),
                             h = std::move(handler)]() mutable {
      self->commands_.exec(
          std::move(r), key, [self, h = std::move(h)](error_code ec, std::vector<redis::Reply> replies) mutable {
            LeaderInfo info;
            if (!ec) ec = parse_leader_info(replies, info);
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
    m.instance = id();
    for (const GroupState* g : core_.groups()) m.groups.push_back(group_metrics(*g, now));
    m.commands = route_metrics(commands_, "commands", now);
    m.nodes = node_metrics(commands_, now);
    if (subscriber_) {
      m.subscriber = connection_metrics("subscriber", *subscriber_, now);
    } else {
      m.subscriber.name = "subscriber";
    }
    m.subscriber.last_reply_age.reset();  // pushes, not replies: see the commands connection
    return m;
  }

  // Any thread: atomics, the registry's snapshot and immutable options only.
  Health health() const {
    const auto now = Clock::now();
    Health h;
    const Lifecycle phase = core_.lifecycle();
    h.started = phase != Lifecycle::idle;
    h.stopped = phase == Lifecycle::stopping || phase == Lifecycle::stopped;
    h.connected = connected_.load(std::memory_order_relaxed);
    h.notices = notices_up_.load(std::memory_order_relaxed);
    if (const auto at = commands_.last_reply_at()) h.last_reply_age = now - *at;
    if (const std::int64_t seen = loop_seen_ns_.load(std::memory_order_relaxed); seen != 0) {
      h.loop_age = std::chrono::duration_cast<Duration>(std::chrono::nanoseconds(to_ns(now) - seen));
    }
    add_group_health(h, core_.groups(), now);
    const auto& redis = commands_.options();
    h.max_loop_age = options().ttl;
    h.max_reply_age = std::max<Duration>(options().ttl / 2, redis.health_check_interval + redis.command_timeout);
    h.evaluate();
    return h;
  }

  /// The elector is going away without a graceful stop: drop everything now.
  void abandon() {
    core_.abandon();
    asio::post(strand_, [self = shared_from_this()] { self->core_.finish_stop(Clock::now()); });
  }

 private:
  // Valid but risky: a renewal that times out only after the local deadline
  // cannot be followed by a re-claim while the key is still ours.
  void warn_about_timing(const RedisOptions& redis) const {
    const auto room = options().ttl - options().effective_deadline_margin() - options().effective_heartbeat();
    if (redis.command_timeout < room) return;
    log(LogLevel::warning,
        fmt::format("elector {}: command_timeout ({} ms) is not shorter than ttl - drift_margin - clock_skew - "
                    "heartbeat_interval ({} ms): a hung renewal is detected only after the lease is lost",
                    id(), redis.command_timeout.count(), room.count()));
  }

  // ---- strand only ----------------------------------------------------------

  void start_on_strand() {
    if (core_.lifecycle() != Lifecycle::idle) return;
    pulse();
    commands_.on_state([this](bool up, const Error& error) { on_connection(up, error); });
    transport_.on_confirm_refused([this](const Error& error) { emit_error("", error); });
    if (auto* cluster = commands_.cluster()) report_cluster_nodes(*cluster);
    commands_.start();
    if (subscriber_) listen_for_notices(*subscriber_);
    core_.start(Clock::now());
    if (cluster_notices_) listen_for_shard_notices(*cluster_notices_);
    log(LogLevel::info, fmt::format("elector {} started against {}", id(), commands_.describe()));
    // Every elector campaigns for "default": two services that both keep the
    // default prefix on one Redis would share (and fight over) one lease.
    if (const auto& prefix = options().key_prefix; prefix == ElectorOptions{}.key_prefix) {
      log(LogLevel::warning,
          fmt::format("elector {}: key_prefix is the default {}, so every service on this Redis that keeps it "
                      "competes for the same leases ({}default); give each service its own key_prefix, e.g. "
                      "\"billing:leader:\" (docs/configuration.md)",
                      id(), quoted(prefix), prefix));
    }
  }

  void listen_for_notices(redis::Client& subscriber) {
    subscriber.on_state([this](bool up, const Error& error) {
      notices_up_.store(up, std::memory_order_relaxed);
      reports_.subscriber(up, error, core_.lifecycle() != Lifecycle::running);
      // Notices count as available once the pattern is confirmed.
      if (!up) core_.notices_available(false, Clock::now());
    });
    subscriber.on_error_reply([this](const Error& error) {
      if (reports_.subscribe_refused(error)) emit_error("", error);
    });
    subscriber.on_subscribed([this](std::string_view) { core_.notices_available(true, Clock::now()); });
    subscriber.on_message([this](std::string_view channel, std::string_view message) {
      core_.release_notice(channel, message, Clock::now());
    });
    // One pattern for the release notices of every group under the prefix
    // (channels of groups not campaigned for are ignored on arrival).
    subscriber.psubscribe({layout().release_pattern()});
    subscriber.start();
  }

  // A Redis Cluster: each slot's shard channel (shared by the slot's groups)
  // on its slot's master, its groups told when its notices come and go.
  void listen_for_shard_notices(cluster::detail::ClusterNotices& notices) {
    notices.on_refusal([this](const std::string& address, const Error& error) {
      const Error named{error.code, fmt::format("cluster node {}: {}", address, error.detail)};
      if (reports_.subscribe_refused(named)) emit_error("", named);
    });
    notices.on_message([this](std::string_view channel, std::string_view message) {
      core_.release_notice(channel, message, Clock::now());
    });
    notices.on_availability([this](std::string_view channel, bool available) {
      core_.channel_notices(channel, available, Clock::now());
    });
    notices.start();
    for (const GroupState* g : core_.groups()) notices.watch(layout().release_channel(g->name));
  }

  // A Redis Cluster: each node's outage and each failed slot map read,
  // naming the node and what it serves; the cluster as a whole stays up
  // while other shards still work.
  void report_cluster_nodes(cluster::detail::ClusterClient& cluster) {
    cluster.on_node_state([this, &cluster](const std::string& address, bool up, const Error& error) {
      const auto now = Clock::now();
      const std::string what = cluster.describe_node(address);
      if (up) {
        transport_.connection_up();
        if (slot_markers_) slot_markers_->node_up(address);
        return reports_.node_up(address, what, now);
      }
      if (auto event = reports_.node_down(address, what, now, error, core_.lifecycle() != Lifecycle::running)) {
        emit_error("", *event);
      }
    });
    cluster.on_map_read([this](const Error& error) {
      if (!error) return reports_.map_read();
      if (reports_.map_failed(error)) emit_error("", error);
    });
  }

  // For people: a node's pass of slot markers (slot_markers.hpp). A refusal
  // costs the node's new groups one ttl each, as before markers.
  void report(const SlotMarkers::Pass& pass) const {
    if (pass.error && !pass.refused) {
      return log(LogLevel::debug, fmt::format("elector {}: {}; trying again later", id(), pass.error.detail));
    }
    if (pass.error) {
      return log(LogLevel::info, fmt::format("elector {}: {}; a group new to one of its slots waits one ttl "
                                             "before its first election",
                                             id(), pass.error.detail));
    }
    log(LogLevel::debug, fmt::format("elector {}: cluster node {}: {} slot markers written, {} already current, "
                                     "{} keys of another type in their place, {} slots not served there (tried "
                                     "again later)",
                                     id(), pass.address, pass.written,
                                     pass.markers - pass.written - pass.other_type - pass.unserved, pass.other_type,
                                     pass.unserved));
  }

  void on_connection(bool up, const Error& error) {
    const auto now = Clock::now();
    connected_.store(up, std::memory_order_relaxed);
    if (up) {
      reports_.commands_up(now);
      transport_.connection_up();
      return core_.connection_up(now);
    }
    if (reports_.commands_down(now, error, core_.lifecycle() != Lifecycle::running)) emit_error("", error);
    if (error.code == errc::master_changed) {
      core_.connection_switching(now);
    } else {
      core_.connection_down(now, error.code == errc::timeout);
    }
  }

  void pulse() {
    loop_seen_ns_.store(to_ns(Clock::now()), std::memory_order_relaxed);
    if (core_.lifecycle() == Lifecycle::stopped) return;
    pulse_timer_.expires_after(pulse_period(options()));
    pulse_timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec) self->pulse();
    });
  }

  void acquire_on_strand(GroupState& g, std::uint64_t id, TermHandler handler) {
    const Lifecycle phase = core_.lifecycle();
    if (phase == Lifecycle::stopping || phase == Lifecycle::stopped) {
      return complete_later(strand_, std::move(handler), make_error_code(errc::stopped), Term{});
    }
    if (g.in_term && g.flag->leading(Clock::now())) {
      return complete_later(strand_, std::move(handler), error_code{}, Term(Internal{}, term_of(g)));
    }
    g.waiting().acquire.emplace_back(id, std::move(handler));
    core_.begin(g, Clock::now());
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

  // A term's shared state is made when somebody asks for a Term: a group
  // nobody awaits (most of 10,000) never pays for one.
  const std::shared_ptr<TermState>& term_of(GroupState& g) {
    if (!g.term) {
      g.term = std::make_shared<TermState>(std::string(g.name), g.last_token, g.machine.term_started(), strand_);
      // Any thread: the last guarded work of the ended term just finished.
      g.term->on_drained = [weak = weak_from_this(), group = &g] {
        if (auto self = weak.lock()) {
          asio::post(self->strand_, [self, group] { self->core_.work_drained(*group, Clock::now()); });
        }
      };
      g.term->deadline_ns.store(g.flag->deadline_ns.load(std::memory_order_relaxed), std::memory_order_release);
    }
    return g.term;
  }

  // ---- stop -----------------------------------------------------------------

  // A stop is under way while somebody waits for it: stopped() completes
  // them all.
  void stop_on_strand(VoidHandler handler) {
    const bool under_way = !stop_waiters_.empty();
    if (core_.lifecycle() == Lifecycle::stopped && !under_way) {
      return complete_later(strand_, std::move(handler), error_code{});
    }
    stop_waiters_.push_back(std::move(handler));
    if (under_way) return;
    for (GroupState* g : core_.groups()) {
      for (auto& [id, h] : g->take_acquire_waiters()) {
        complete_later(strand_, std::move(h), make_error_code(errc::stopped), Term{});
      }
    }
    core_.stop(Clock::now());  // nothing to release (disconnected, not started): done at once
    if (core_.lifecycle() == Lifecycle::stopped) return;
    stop_timer_.expires_after(options().drain_timeout + options().stop_timeout);
    stop_timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (ec) return;
      log(LogLevel::warning, fmt::format("elector {}: stop timed out waiting for releases", self->id()));
      self->core_.finish_stop(Clock::now());
    });
  }

  // ---- ElectorListener ------------------------------------------------------

  void term_began(GroupState& g) override {
    for (auto& [id, h] : g.take_acquire_waiters()) {
      complete_later(strand_, std::move(h), error_code{}, Term(Internal{}, term_of(g)));
    }
    emit(&Callbacks::elected, ElectedEvent{std::string(g.name), g.machine.token(), g.machine.term_started()});
  }

  void term_ended(GroupState& g, std::int64_t token, RevokeReason reason) override {
    emit(&Callbacks::revoked, RevokedEvent{std::string(g.name), token, reason});
  }

  void leader_changed(GroupState& g) override {
    emit(&Callbacks::leader_changed, LeaderChangedEvent{std::string(g.name), std::string(g.machine.holder())});
  }

  // A release that was not confirmed still ended the term here, but the key
  // may stand until it expires: the caller learns why.
  void released(GroupState& g, bool failed) override {
    const error_code ec = failed ? g.take_release_error() : error_code{};
    for (auto& h : g.take_step_down_waiters()) complete_later(strand_, std::move(h), ec);
  }

  void group_error(GroupState& g, const Error& error) override { emit_error(std::string(g.name), error); }

  bool work_running(GroupState& g) override { return g.ended_term && g.ended_term->work_running(); }

  void audit(const LeaseAuditEvent& event) override {
    if (audit_) audit_(event);
  }

  // The wake scheduler arms whole milliseconds (thousands of groups wake at
  // thousands of instants a second, and each expiry costs a timer syscall
  // and a turn), up to 1 ms late, except for a lapsing lease's exact wake.
  // A term's end does not wait for it (is_leader() reads the published
  // deadline).
  void arm_timer(TimePoint at) override {
    const TimePoint fires_at = at;
    timer_wanted_ = at;
    if (timer_armed_ && fires_at == timer_fires_at_) return;
    timer_armed_ = true;
    timer_fires_at_ = fires_at;
    auto expired = [self = shared_from_this(), fires_at](error_code ec) {
      // An expiry already queued when the timer was moved still runs.
      if (ec || !self->timer_armed_ || self->timer_fires_at_ != fires_at) return;
      self->timer_armed_ = false;
      self->core_.timer_expired(self->timer_wanted_, Clock::now());
    };
    // Due already (a burst of wakes spread over turns): the next turn. A
    // timer would reprogram the kernel's timer twice for it.
    if (fires_at <= Clock::now()) return asio::post(strand_, [expired = std::move(expired)] { expired({}); });
    timer_.expires_at(fires_at);
    timer_.async_wait(asio::bind_executor(strand_, std::move(expired)));
  }

  void resume_later() override {
    asio::post(strand_, [self = shared_from_this()] { self->core_.resume(Clock::now()); });
  }

  void stopped() override {
    connected_.store(false, std::memory_order_relaxed);
    notices_up_.store(false, std::memory_order_relaxed);
    stop_timer_.cancel();
    timer_.cancel();
    timer_armed_ = false;
    pulse_timer_.cancel();
    for (GroupState* g : core_.groups()) {
      for (auto& h : g->take_step_down_waiters()) complete_later(strand_, std::move(h), make_error_code(errc::stopped));
      for (auto& [id, h] : g->take_acquire_waiters()) {
        complete_later(strand_, std::move(h), make_error_code(errc::stopped), Term{});
      }
    }
    commands_.stop();
    if (subscriber_) subscriber_->stop();
    if (cluster_notices_) cluster_notices_->stop();
    if (slot_markers_) slot_markers_->stop();
    for (auto& h : std::exchange(stop_waiters_, {})) complete_later(strand_, std::move(h), error_code{});
    log(LogLevel::info, fmt::format("elector {} stopped", id()));
  }

  template <typename Event>
  void emit(std::function<void(const Event&)> Callbacks::*slot, Event event) {
    events_.emit(slot, std::move(event));
  }
  void emit_error(const std::string& group, const Error& error) { emit(&Callbacks::error, ErrorEvent{group, error}); }

  const std::string id_;
  asio::strand<asio::any_io_executor> strand_;
  CommandRoute commands_;
  std::unique_ptr<redis::Client> subscriber_;  // release notices (one server, Sentinel)
  std::unique_ptr<cluster::detail::ClusterNotices> cluster_notices_;  // ... on a Redis Cluster
  const std::string incarnation_;
  RedisTransport transport_;
  std::unique_ptr<SlotMarkers> slot_markers_;  // a Redis Cluster's, with the empty-restart guard
  ElectorCore core_;

  EventCallbacks events_;
  ConnectionReports reports_;

  // Strand only.
  Elector::AuditHandler audit_;
  asio::steady_timer timer_;
  TimePoint timer_wanted_{};    // the wake the core asked for last (arm_timer)
  TimePoint timer_fires_at_{};  // ... rounded up: when timer_ expires
  bool timer_armed_ = false;
  asio::steady_timer stop_timer_;
  asio::steady_timer pulse_timer_;
  std::vector<VoidHandler> stop_waiters_;
  std::atomic<std::uint64_t> next_waiter_{1};  // acquire() runs on any thread

  // Read by health() from any thread.
  std::atomic<bool> connected_{false};
  std::atomic<bool> notices_up_{false};
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
