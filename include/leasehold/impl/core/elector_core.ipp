#include <leasehold/impl/core/elector_core.hpp>

#include <leasehold/impl/lease/lease_replies.hpp>
#include <leasehold/impl/base/prefetch.hpp>
#include <leasehold/impl/base/quoted.hpp>
#include <leasehold/impl/base/validated.hpp>

#include <leasehold/log.hpp>

#include <boost/asio/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace leasehold::detail {
namespace {

// Connection-level failures are reported once, by the connection's state
// handler, not again for every group whose command they failed.
bool is_connection_failure(const error_code& ec) {
  return ec == errc::connection_lost || ec == errc::not_connected || ec == errc::stopped ||
         ec == errc::timeout || ec == errc::protocol_error || ec == boost::asio::error::operation_aborted;
}

// Whether an answer is for the command the group's machine still awaits: a
// stale one (overtaken by a demotion or a reconnect) counts for nothing.
bool awaited(const GroupState& g, Command command, std::uint64_t seq) {
  return g.machine.in_flight() == command && g.machine.in_flight_seq() == seq;
}

}  // namespace

// A hash-tagged layout (Cluster, or key_layout=hash_tagged) puts the name
// between braces: a brace in it would change which part of the key picks
// the slot.
ElectorCore::ElectorCore(ElectorOptions options, std::string instance_id, std::string incarnation,
                         LeaseTransport& transport, ElectorListener& listener, CoreLimits limits,
                         KeyLayout::Form form)
    : options_(validated(std::move(options))),
      id_(std::move(instance_id)),
      incarnation_(std::move(incarnation)),
      layout_(options_.key_prefix, form),
      timing_(LeaseTiming::from(options_)),
      ttl_ms_(std::to_string(options_.ttl.count())),
      lease_argv_(id_, ttl_ms_, incarnation_),
      context_{layout_, timing_, id_, incarnation_, ttl_ms_, options_, lease_argv_},
      limits_(limits),
      transport_(transport),
      listener_(listener),
      applier_(id_, incarnation_, listener, *this),
      window_(limits.max_in_flight * window_weight(Command::acquire)),
      wakes_(limits.groups_per_pass) {
  validate_key_prefix(layout_);
  registry_.reserve(options_.groups.size() + 1);
  registry_.insert(std::make_unique<GroupState>("default", context_, groups_made_++));
  for (const auto& g : options_.groups) {
    try {
      validate_group_name(g, layout_);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("ElectorOptions.groups: {}", e.what()));
    }
    if (registry_.find(g) == nullptr) registry_.insert(std::make_unique<GroupState>(g, context_, groups_made_++));
  }
}

std::pair<GroupState*, bool> ElectorCore::register_group(std::string_view name) {
  if (GroupState* g = registry_.find(name)) return {g, false};
  validate_group_name(name, layout_);
  return registry_.insert(std::make_unique<GroupState>(name, context_, groups_made_++));
}

void ElectorCore::abandon() noexcept {
  lifecycle_.store(Lifecycle::stopped, std::memory_order_release);
  for (GroupState* g : registry_.snapshot()) g->flag->close();
}

// ---- lifecycle ---------------------------------------------------------------

void ElectorCore::start(TimePoint now) {
  Lifecycle expected = Lifecycle::idle;
  if (!lifecycle_.compare_exchange_strong(expected, Lifecycle::running, std::memory_order_acq_rel)) return;
  for (GroupState* g : registry_.snapshot()) begin(*g, now);
}

void ElectorCore::begin(GroupState& g, TimePoint now) {
  if (g.begun || lifecycle() != Lifecycle::running) return;
  g.begun = true;
  begun_.push_back(&g);
  apply(g, g.machine.start(now), now);
  if (layout_.form() == KeyLayout::Form::hash_tagged) {
    ChannelGroups& shared = channels_[layout_.release_channel(g.name)];
    shared.groups.push_back(&g);
    g.slot_groups = &shared.groups;
    // Another group of its slot may have had the channel confirmed already.
    if (shared.available) apply(g, g.machine.on_notices_available(now, true), now);
  }
  if (notices_) apply(g, g.machine.on_notices_available(now, true), now);
  if (connected_) apply(g, g.machine.on_connected(now), now);
}

void ElectorCore::stop(TimePoint now) {
  Lifecycle expected = Lifecycle::running;
  if (!lifecycle_.compare_exchange_strong(expected, Lifecycle::stopping, std::memory_order_acq_rel)) {
    // Never started: nothing to release. Stopping or stopped: under way.
    if (expected == Lifecycle::idle) finish_stop(now);
    return;
  }
  for (GroupState* g : begun_) {
    end_term(*g, [&](bool drain) { return g->machine.stop(now, drain); }, now);
  }
  maybe_finish_stop(now);
}

void ElectorCore::machine_stopped(GroupState&, TimePoint now) { maybe_finish_stop(now); }

void ElectorCore::maybe_finish_stop(TimePoint now) {
  if (lifecycle() != Lifecycle::stopping) return;
  // No group begins while stopping and a stopped machine stays stopped, so
  // the scan resumes where it ended: one pass over the groups in all.
  while (stopped_prefix_ < begun_.size() && begun_[stopped_prefix_]->machine.state() == LeaseState::stopped) {
    ++stopped_prefix_;
  }
  if (stopped_prefix_ == begun_.size()) finish_stop(now);
}

void ElectorCore::finish_stop(TimePoint now) {
  // abandon() may have marked it stopped already: the groups still need
  // their terms ended here, once.
  if (finished_) return;
  finished_ = true;
  lifecycle_.store(Lifecycle::stopped, std::memory_order_release);
  connected_ = false;
  connect_next_ = connect_end_;
  wakes_.disarm();
  for (GroupState* g : registry_.snapshot()) applier_.withdraw(*g, RevokeReason::stopped, now);
  listener_.stopped();
}

// ---- connection and notices ------------------------------------------------

void ElectorCore::connection_up(TimePoint now) {
  if (lifecycle() != Lifecycle::running && lifecycle() != Lifecycle::stopping) return;
  connected_ = true;
  connect_next_ = 0;
  connect_end_ = begun_.size();
  connect_pass(now);
}

// Tells the groups the connection is up, a pass at a time: each sends its
// acquire, and thousands at once would be one burst. A group begun meanwhile
// was told by begin() itself.
void ElectorCore::connect_pass(TimePoint now) {
  const std::size_t end = std::min(connect_end_, connect_next_ + limits_.groups_per_pass);
  for (; connect_next_ < end; ++connect_next_) {
    GroupState& g = *begun_[connect_next_];
    apply(g, g.machine.on_connected(now), now);
  }
  if (connect_next_ < connect_end_) listener_.resume_later();
}

void ElectorCore::resume(TimePoint now) {
  if (connected_ && lifecycle() == Lifecycle::running) connect_pass(now);
}

void ElectorCore::connection_down(TimePoint now, bool timed_out) {
  connected_ = false;
  connect_next_ = connect_end_;
  // Losing the connection ends every claim at once, whatever the count. A
  // release in flight has an unknown outcome: its caller learns why.
  const error_code why = make_error_code(timed_out ? errc::timeout : errc::connection_lost);
  for (GroupState* g : begun_) {
    if (g->machine.in_flight() == Command::release) g->release_failed(why);
    apply(*g, g->machine.on_disconnected(now, timed_out), now);
  }
}

void ElectorCore::connection_switching(TimePoint now) {
  connected_ = false;
  connect_next_ = connect_end_;
  const error_code why = make_error_code(errc::master_changed);
  for (GroupState* g : begun_) {
    if (g->machine.in_flight() == Command::release) g->release_failed(why);
    apply(*g, g->machine.on_switching(now), now);
  }
}

void ElectorCore::notices_available(bool available, TimePoint now) {
  notices_ = available;
  for (GroupState* g : begun_) apply(*g, g->machine.on_notices_available(now, available), now);
}

void ElectorCore::channel_notices(std::string_view channel, bool available, TimePoint now) {
  const auto shared = channels_.find(channel);
  if (shared == channels_.end()) return;
  shared->second.available = available;
  for (GroupState* g : shared->second.groups) apply(*g, g->machine.on_notices_available(now, available), now);
}

void ElectorCore::release_notice(std::string_view channel, std::string_view message, TimePoint now) {
  const auto notice = layout_.read_release_notice(channel, message);
  if (!notice) return;
  GroupState* g = registry_.find(notice->group);
  // Groups not campaigned for share the pattern (or the slot's channel):
  // ignored.
  if (g != nullptr && g->begun) apply(*g, g->machine.on_release_notice(now, notice->releaser), now);
}

void ElectorCore::step_down(GroupState& g, TimePoint now) {
  end_term(g, [&](bool drain) { return g.machine.step_down(now, drain); }, now);
}

// The term ends first (its work is cancelled), then the work is asked
// about: work can only begin within a term, so from here it only winds down.
template <typename End>
void ElectorCore::end_term(GroupState& g, End end, TimePoint now) {
  apply(g, end(options_.drain_timeout.count() > 0), now);
  work_drained(g, now);
}

void ElectorCore::work_drained(GroupState& g, TimePoint now) {
  if (g.machine.state() == LeaseState::draining && !listener_.work_running(g)) {
    apply(g, g.machine.drained(now), now);
  }
}

// ---- wakes -------------------------------------------------------------------

void ElectorCore::schedule(GroupState& g, std::optional<TimePoint> wake, bool exact) {
  if (wakes_.set(g, lifecycle() == Lifecycle::stopped ? std::nullopt : wake, exact)) arm();
}

void ElectorCore::arm() {
  if (const auto at = wakes_.arm()) listener_.arm_timer(*at);
}

void ElectorCore::timer_expired(TimePoint armed_for, TimePoint now) {
  if (!wakes_.expired(armed_for)) return;
  wakes_.fire(now, [&](GroupState& g) { apply(g, g.machine.on_timer(now), now); });
  arm();
}

// ---- lease commands ----------------------------------------------------------

void ElectorCore::send(GroupState& g, Command command, std::uint64_t seq, TimePoint now) {
  const Queued queued{&g, command, seq};
  // A renewal overtakes held-back acquisitions and releases: a lease must
  // not run out while thousands of new groups wait to be taken.
  if (window_.admit(queued, window_weight(command), command == Command::renew)) write(queued, now);
  // At the instant the machine decided (not when the window lets it out),
  // so that the slot's groups share that instant from now on, and follow
  // one another through the window.
  if (command == Command::renew) renew_slot_groups(g, now);
}

void ElectorCore::write(const Queued& c, TimePoint now) {
  GroupState& g = *c.group;
  g.machine.left_at(c.seq, now);  // held back until now: its lease counts from here
  switch (c.command) {
    case Command::acquire:
      ++g.acquire_attempts;
      break;
    case Command::renew:
      // confirmed_at still names the previous confirmation, so this is how
      // late the renewal leaves against its schedule.
      g.renew_lag_ns.store(std::max<std::int64_t>(0, to_ns(now) - to_ns(g.machine.renewal_due())),
                           std::memory_order_relaxed);
      break;
    default:
      break;
  }
  transport_.send(g, c.command, c.seq, *this);
}

// Where one script renews only groups of one slot (a cluster node that
// cannot take cross-slot scripts): a group renewing takes along those of its
// slot due within half a heartbeat, so that they leave in one script
// (RedisTransport), and stay together from then on, as they renew at the
// same instants. A slot crowded by a prefix's own hash
// tag (every group in one slot) is left to the transport's per-turn batches.
void ElectorCore::renew_slot_groups(GroupState& g, TimePoint now) {
  constexpr std::size_t most_scanned = 64;
  // The transport first: the slot's list is likely a cache miss.
  if (g.slot_groups == nullptr || renewing_slot_ || !transport_.batches_by_slot() ||
      g.slot_groups->size() > most_scanned) {
    return;
  }
  renewing_slot_ = true;
  const Duration within = timing_.heartbeat_interval / 2;
  for (const GroupState* other : *g.slot_groups) detail::prefetch(&other->machine, sizeof(LeaseMachine));
  for (GroupState* other : *g.slot_groups) {
    if (other != &g && other->machine.may_renew_early(now, within)) {
      apply(*other, other->machine.renew_early(now, within), now);
    }
  }
  renewing_slot_ = false;
}

void ElectorCore::on_lease_reply(GroupState& g, Command command, std::uint64_t seq, error_code ec,
                                 const redis::Reply& reply, Replicated replicated, TimePoint now) {
  // Once half the window is free, the held-back commands go as one batch;
  // a demotion, a reconnect or a newer command made some stale meanwhile.
  window_.settle(
      window_weight(command),
      [](const Queued& q) { return q.group->machine.in_flight() == q.command && q.group->machine.in_flight_seq() == q.seq; },
      [this, now](const Queued& q) { write(q, now); });
  switch (command) {
    case Command::acquire: return on_acquire_result(g, seq, ec, reply, replicated, now);
    case Command::renew: return on_renew_result(g, seq, ec, reply, replicated, now);
    case Command::release: return on_release_result(g, seq, ec, reply, now);
    case Command::none: return;
  }
}

void ElectorCore::on_acquire_result(GroupState& g, std::uint64_t seq, error_code ec, const redis::Reply& reply,
                                    Replicated replicated, TimePoint now) {
  if (!awaited(g, Command::acquire, seq)) return apply(g, g.machine.on_acquire_reply(now, seq, {}), now);
  std::optional<AcquireReply> parsed;
  if (!ec) {
    parsed = parse_acquire_reply(reply, id_);
    if (!parsed) ec = make_error_code(errc::unexpected_reply);
  }
  if (ec) {
    ++g.acquire_errors;
    return fail(g, seq, ec, reply, "acquire", now);
  }
  g.first_acquire_answered = true;
  if (parsed->acquired && replicated == Replicated::too_few) {
    parsed->confirmed = false;
    ++g.acquire_errors;
    unconfirmed(g, "acquire");
  } else if (parsed->acquired || g.last_error != errc::not_confirmed) {
    // A lease held by someone else says nothing of the replicas: only a
    // confirmed acquisition ends a shortfall (else it is reported per retry).
    recovered(g, "acquire");
  }
  if (!parsed->acquired && parsed->holder.empty()) report_guard(g, parsed->pttl_ms, parsed->unmarked, now);
  apply(g, g.machine.on_acquire_reply(now, seq, *parsed), now);
}

// A new deployment on a new server sees this once per group; a Redis that
// lost its data shows up here too, which an operator wants to know: one
// line per ttl. A server without the data marker makes every new group
// wait: said once, with its reason.
void ElectorCore::report_guard(const GroupState& g, std::int64_t remaining_ms, std::string_view unmarked,
                               TimePoint now) {
  if (!unmarked.empty() && !unmarked_logged_) {
    unmarked_logged_ = true;
    log(LogLevel::warning,
        fmt::format("elector {}: the empty-restart guard cannot tell a new group from lost data on this server "
                    "({}): every new group waits one ttl before its first election (grant +info and +time)",
                    id_, unmarked));
  }
  if (guard_logged_at_ && now - *guard_logged_at_ < options_.ttl) return;
  guard_logged_at_ = now;
  log(LogLevel::info, fmt::format("elector {}: group \"{}\" waits out the empty-restart guard ({} ms left): its "
                                  "fencing counter was missing and this server has not proven for one ttl that "
                                  "it kept its data (a new server, a restart, a promotion or a flush)",
                                  id_, g.name, remaining_ms));
}

void ElectorCore::on_renew_result(GroupState& g, std::uint64_t seq, error_code ec, const redis::Reply& reply,
                                  Replicated replicated, TimePoint now) {
  if (!awaited(g, Command::renew, seq)) return apply(g, g.machine.on_renew_reply(now, seq, false), now);
  std::optional<RenewReply> renewed;
  if (!ec) {
    renewed = parse_renew_reply(reply);
    if (!renewed) ec = make_error_code(errc::unexpected_reply);
  }
  const bool extended = !ec && renewed->renewed;
  const bool confirmed = !(extended && replicated == Replicated::too_few);
  if (extended && confirmed) {
    ++g.renewals_ok;
  } else {
    ++g.renewals_failed;
  }
  if (ec) return fail(g, seq, ec, reply, "renew", now);
  if (!confirmed) {
    unconfirmed(g, "renew");
  } else if (extended || g.last_error != errc::not_confirmed) {
    // As for acquires: a refused renewal says nothing of the replicas.
    recovered(g, "renew");
  }
  renewed->confirmed = confirmed;
  apply(g, g.machine.on_renew_reply(now, seq, *renewed), now);
  work_drained(g, now);  // a hand-over with no guarded work running releases at once
}

void ElectorCore::on_release_result(GroupState& g, std::uint64_t seq, error_code ec, const redis::Reply& reply,
                                    TimePoint now) {
  if (!awaited(g, Command::release, seq)) return apply(g, g.machine.on_release_reply(now, seq, false), now);
  if (!ec && !is_release_reply(reply)) ec = make_error_code(errc::unexpected_reply);
  if (ec) return fail(g, seq, ec, reply, "release", now);
  // The release after an acquisition too few replicas acknowledged says
  // nothing of the replicas: only a confirmed acquire or renew clears that.
  if (g.last_error != errc::not_confirmed) recovered(g, "release");
  apply(g, g.machine.on_release_reply(now, seq, reply.integer == 1), now);
}

// A group's error is logged and reported when it first appears (or
// changes), not on every retry; recovered() logs its end.
void ElectorCore::fail(GroupState& g, std::uint64_t seq, error_code ec, const redis::Reply& reply,
                       std::string_view what, TimePoint now) {
  if (g.machine.in_flight() == Command::release && g.machine.in_flight_seq() == seq) g.release_failed(ec);
  if (!is_connection_failure(ec)) {
    g.failing.store(true, std::memory_order_relaxed);
    if (ec != g.last_error) {
      g.last_error = ec;
      Error error{ec, reply.is_error() ? reply.str : reply.debug_string()};
      log(LogLevel::warning, fmt::format("elector {}: group \"{}\": {} failed: {}; retrying every {} ms", id_, g.name,
                                         what, error.message(), options_.retry_interval.count()));
      listener_.group_error(g, error);
    }
  }
  apply(g, g.machine.on_failure(now, seq, ec == errc::timeout ? Failure::timeout : Failure::error), now);
}

// Confirm mode: Redis took the command, too few replicas have it. Reported
// like a failure (once until it works again); the machine decides the rest.
void ElectorCore::unconfirmed(GroupState& g, std::string_view what) {
  g.failing.store(true, std::memory_order_relaxed);
  const error_code ec = make_error_code(errc::not_confirmed);
  if (ec == g.last_error) return;
  g.last_error = ec;
  if (transport_.confirm_refused()) return;  // WAIT refused: reported once for the elector
  Error error{ec, fmt::format("fewer than {} replica(s) acknowledged the {} within {} ms", options_.confirm_replicas,
                              what, options_.confirm_timeout.count())};
  log(LogLevel::warning, fmt::format("elector {}: group \"{}\": {}", id_, g.name, error.message()));
  listener_.group_error(g, error);
}

void ElectorCore::recovered(GroupState& g, std::string_view what) {
  g.failing.store(false, std::memory_order_relaxed);
  if (!g.last_error) return;
  log(LogLevel::warning, fmt::format("elector {}: group \"{}\": {} works again after: {}", id_, g.name, what,
                                     g.last_error.message()));
  g.last_error = {};
}

}  // namespace leasehold::detail
