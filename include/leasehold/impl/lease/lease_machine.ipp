#include <leasehold/impl/lease/lease_machine.hpp>

#include <algorithm>

namespace leasehold::detail {

std::string_view to_string(LeaseState state) noexcept {
  switch (state) {
    case LeaseState::idle: return "idle";
    case LeaseState::disconnected: return "disconnected";
    case LeaseState::candidate: return "candidate";
    case LeaseState::leader: return "leader";
    case LeaseState::draining: return "draining";
    case LeaseState::held_off: return "held_off";
    case LeaseState::stopping: return "stopping";
    case LeaseState::stopped: return "stopped";
  }
  return "unknown";
}

LeaseTiming LeaseTiming::from(const ElectorOptions& options) {
  return {options.ttl, options.effective_heartbeat(), options.retry_interval, options.effective_deadline_margin(),
          options.effective_hold_off(), options.drain_timeout};
}

LeaseMachine::LeaseMachine(const LeaseTiming& timing, std::string_view instance_id, int priority)
    : timing_(timing), id_(instance_id), priority_(priority) {}

std::optional<TimePoint> LeaseMachine::deadline() const noexcept {
  if (state_ != LeaseState::leader) return std::nullopt;
  return lease_end(confirmed_at_);
}

// ---- leadership: the only two places that start and end a term -----------

void LeaseMachine::enter_leader(Output& out, TimePoint sent_at, std::int64_t token) {
  state_ = LeaseState::leader;
  term_started_ = sent_at;
  confirmed_at_ = sent_at;
  renew_from_ = sent_at - renewal_phase();  // the first renewal comes sooner: always safe
  token_ = token;
  out.elected = true;
  see_holder(out, id_);
}

void LeaseMachine::leave_leader(Output& out, RevokeReason reason, LeaseState next) {
  state_ = next;
  switching_ = false;
  out.revoked = reason;
  forget_holder();  // unknown until the next acquire reply says who holds it
}

void LeaseMachine::see_holder(Output& out, std::string_view holder) {
  if (holder == this->holder()) return;
  // This instance as holder is a flag, not a copy of its id: one less
  // string per group when one elector leads thousands.
  holder_is_self_ = holder == id_;
  if (holder_is_self_) {
    std::string().swap(foreign_holder_);
  } else {
    foreign_holder_.assign(holder);
  }
  out.holder_changed = !holder.empty();
}

void LeaseMachine::forget_holder() {
  holder_is_self_ = false;
  foreign_holder_.clear();
}

TimePoint LeaseMachine::confirming_instant([[maybe_unused]] TimePoint reply_instant) const {
  return in_flight_sent_at_;
}

Output LeaseMachine::send(Output out, Command command, TimePoint now) {
  // A later command replaces the one in flight: replies to the old one carry
  // an old seq and are ignored. On the wire the old one still runs first.
  in_flight_ = command;
  in_flight_seq_ = next_seq_++;
  if (command == Command::acquire) look_again_ = false;
  in_flight_sent_at_ = now;
  out.send = command;
  out.seq = in_flight_seq_;
  return out;
}

// Applies whatever is due at `now` (renewal, expiry, end of hold-off, next
// acquire attempt) and computes the next wake-up. Every input ends here.
Output LeaseMachine::settle(Output out, TimePoint now) {
  if (state_ == LeaseState::leader && now >= lease_end(confirmed_at_)) {
    // Between masters there is nothing to re-claim on yet.
    leave_leader(out, RevokeReason::deadline_passed, switching_ ? LeaseState::disconnected : LeaseState::candidate);
    next_attempt_ = now;  // the key may still be ours: re-claim at once
  }
  if (state_ == LeaseState::draining && (now >= drain_until_ || now >= lease_end(confirmed_at_))) {
    // Past the bound: release anyway, and say so. Past the deadline the
    // lease may be gone already; the release (compare-and-delete) is harmless.
    out.drain_overrun = now >= drain_until_;
    out = finish_drain(std::move(out), now);
  }
  if (state_ == LeaseState::held_off && now >= hold_until_ && !unconfirmed_claim_) {
    state_ = LeaseState::candidate;
    next_attempt_ = now;
  }
  const bool idle_line = in_flight_ == Command::none && out.send == Command::none;
  if (idle_line) {
    if (state_ == LeaseState::leader && !switching_ && now >= renewal_due()) {
      out = send(std::move(out), Command::renew, now);
    } else if (state_ == LeaseState::draining && now >= std::max(renewal_due(), next_attempt_)) {
      out = send(std::move(out), Command::renew, now);  // keeps standbys out while the work winds down
    } else if (state_ == LeaseState::candidate && now >= next_attempt_) {
      out = send(std::move(out), Command::acquire, now);
    } else if (state_ == LeaseState::held_off && unconfirmed_claim_ && now >= hold_until_) {
      out = send(std::move(out), Command::renew, now);
    }
  }

  out.wake.reset();
  switch (state_) {
    case LeaseState::leader: {
      const TimePoint end = lease_end(confirmed_at_);
      out.wake = in_flight_ == Command::renew || switching_ ? end : std::min(end, renewal_wake());
      break;
    }
    case LeaseState::candidate:
      if (in_flight_ == Command::none) {
        out.wake = next_attempt_;
        out.exact_wake = exact_attempt_;
      }
      break;
    case LeaseState::held_off:
      if (!(unconfirmed_claim_ && in_flight_ == Command::renew)) out.wake = hold_until_;  // the reply wakes it
      break;
    case LeaseState::draining: {
      const TimePoint end = std::min(drain_until_, lease_end(confirmed_at_));
      out.wake = in_flight_ == Command::renew ? end : std::min(end, std::max(renewal_wake(), next_attempt_));
      break;
    }
    default:
      break;
  }
  return out;
}

// ---- lifecycle ------------------------------------------------------------

Output LeaseMachine::start(TimePoint now) {
  if (state_ == LeaseState::idle || state_ == LeaseState::stopped) {
    state_ = LeaseState::disconnected;
  }
  return settle({}, now);
}

Output LeaseMachine::stop(TimePoint now, bool drain) {
  Output out;
  switch (state_) {
    case LeaseState::stopping:
    case LeaseState::stopped:
      return settle(out, now);
    case LeaseState::draining:
      after_drain_ = LeaseState::stopping;  // the release still waits for the drain
      return settle(out, now);
    case LeaseState::idle:
    case LeaseState::disconnected:
      state_ = LeaseState::stopped;
      in_flight_ = Command::none;
      out.stopped = true;
      return settle(out, now);
    case LeaseState::leader:
      if (switching_) {  // no connection to release on: the lease runs out
        leave_leader(out, RevokeReason::stopped, LeaseState::stopped);
        out.stopped = true;
        return settle(out, now);
      }
      if (drain) return start_drain(std::move(out), RevokeReason::stopped, LeaseState::stopping, now);
      leave_leader(out, RevokeReason::stopped, LeaseState::stopping);
      break;
    case LeaseState::candidate:
    case LeaseState::held_off:
      state_ = LeaseState::stopping;
      unconfirmed_claim_ = false;
      break;
  }
  // Always release when connected: an acquire in flight or a stale own lease
  // left by an unconfirmed renewal would otherwise block the group for a TTL.
  return settle(send(out, Command::release, now), now);
}

Output LeaseMachine::step_down(TimePoint now, bool drain) {
  Output out;
  switch (state_) {
    case LeaseState::idle:
    case LeaseState::stopping:
    case LeaseState::stopped:
      out.released = true;
      return settle(out, now);
    case LeaseState::draining:  // the release follows the drain
      return settle(out, now);
    case LeaseState::disconnected:
      hold_until_ = now + timing_.step_down_hold_off;
      out.released = true;
      return settle(out, now);
    case LeaseState::leader:
      if (switching_) {  // as when disconnected: the hold-off starts now, no release to send
        leave_leader(out, RevokeReason::stepped_down, LeaseState::disconnected);
        hold_until_ = now + timing_.step_down_hold_off;
        out.released = true;
        return settle(out, now);
      }
      if (drain) return start_drain(std::move(out), RevokeReason::stepped_down, LeaseState::held_off, now);
      leave_leader(out, RevokeReason::stepped_down, LeaseState::held_off);
      break;
    case LeaseState::candidate:
    case LeaseState::held_off:
      state_ = LeaseState::held_off;
      unconfirmed_claim_ = false;
      break;
  }
  hold_until_ = now + timing_.step_down_hold_off;
  return settle(send(out, Command::release, now), now);
}

Output LeaseMachine::start_drain(Output out, RevokeReason reason, LeaseState after, TimePoint now) {
  leave_leader(out, reason, LeaseState::draining);
  after_drain_ = after;
  drain_until_ = now + timing_.drain_timeout;
  next_attempt_ = now;  // renewals keep their schedule (renewal_due)
  return settle(out, now);
}

Output LeaseMachine::drained(TimePoint now) {
  if (state_ != LeaseState::draining) return settle({}, now);
  return settle(finish_drain({}, now), now);
}

Output LeaseMachine::finish_drain(Output out, TimePoint now) {
  state_ = after_drain_;
  if (state_ == LeaseState::held_off) hold_until_ = now + timing_.step_down_hold_off;
  return send(std::move(out), Command::release, now);
}

Output LeaseMachine::on_timer(TimePoint now) { return settle({}, now); }

bool LeaseMachine::may_renew_early(TimePoint now, Duration within) const noexcept {
  return state_ == LeaseState::leader && !switching_ && in_flight_ == Command::none &&
         renewal_due() - now <= within && now < lease_end(confirmed_at_);
}

Output LeaseMachine::renew_early(TimePoint now, Duration within) {
  if (!may_renew_early(now, within)) return settle({}, now);
  return settle(send({}, Command::renew, now), now);
}

// ---- connection -----------------------------------------------------------

Output LeaseMachine::on_connected(TimePoint now) {
  if (state_ == LeaseState::leader && switching_) {
    // On the new master: renew at once, the same term and token if the
    // lease made it there, a refusal (and demotion) if it did not.
    switching_ = false;
    return settle(send({}, Command::renew, now), now);
  }
  if (state_ == LeaseState::disconnected) {
    if (now < hold_until_) {
      state_ = LeaseState::held_off;
    } else {
      state_ = LeaseState::candidate;
      next_attempt_ = now;  // own unexpired leases are re-claimed at once
    }
  }
  return settle({}, now);
}

Output LeaseMachine::on_disconnected(TimePoint now, bool timed_out) {
  Output out;
  // A release that dies with the connection has finished, as in on_failure.
  if (in_flight_ == Command::release) out.released = out.release_failed = true;
  if (rare_) rare_->hand_over_to.reset();  // the bidder takes the lease when it runs out
  in_flight_ = Command::none;  // every pending command failed with the connection
  unconfirmed_claim_ = false;  // re-claimed (if still ours) once connected
  switch (state_) {
    case LeaseState::leader:
      leave_leader(out, timed_out ? RevokeReason::timeout : RevokeReason::connection_lost,
                   LeaseState::disconnected);
      break;
    case LeaseState::candidate:
    case LeaseState::held_off:
      state_ = LeaseState::disconnected;
      break;
    case LeaseState::stopping:
      state_ = LeaseState::stopped;
      out.released = true;
      out.stopped = true;
      break;
    case LeaseState::draining:
      // Nothing can be renewed or released now: the lease runs out by itself.
      out.released = out.release_failed = true;
      if (after_drain_ == LeaseState::stopping) {
        state_ = LeaseState::stopped;
        out.stopped = true;
      } else {
        state_ = LeaseState::disconnected;
        hold_until_ = now + timing_.step_down_hold_off;
      }
      break;
    default:
      break;
  }
  return settle(out, now);
}

Output LeaseMachine::on_switching(TimePoint now) {
  if (state_ != LeaseState::leader) return on_disconnected(now);
  Output out;
  // The renewal in flight died with the old connection: its outcome is
  // unknown, and the deadline still counts from the last confirmed one.
  in_flight_ = Command::none;
  switching_ = true;
  return settle(out, now);
}

Output LeaseMachine::on_release_notice(TimePoint now, std::string_view releaser) {
  if (!releaser.empty() && releaser == id_ && own_notices_due_ > 0) {
    // The notice of our own release, late (with no hold-off, we may lead
    // again already): nothing happened that we do not know of.
    --own_notices_due_;
    return settle({}, now);
  }
  if (state_ == LeaseState::draining && !releaser.empty() && releaser == id_) {
    return settle(finish_drain({}, now), now);  // released by hand: nothing left to keep
  }
  if (state_ == LeaseState::leader && !releaser.empty() && releaser == id_) {
    // Our lease was released by someone acting as us (an operator's
    // step-down): stop claiming it now rather than at the next renewal, and
    // hold off like a step-down so that a standby takes over.
    Output out;
    leave_leader(out, RevokeReason::released_elsewhere, LeaseState::held_off);
    hold_until_ = now + timing_.step_down_hold_off;
    return settle(out, now);
  }
  if (state_ == LeaseState::candidate) {
    next_attempt_ = std::min(next_attempt_, now);
    // The acquire in flight may have run just before the release: its reply
    // would then name the old holder, so look again after it.
    look_again_ = in_flight_ == Command::acquire;
    forget_holder();
  }
  return settle({}, now);
}

Output LeaseMachine::on_notices_available(TimePoint now, bool available) {
  notices_available_ = available;
  if (!available) own_notices_due_ = 0;  // those in flight are lost with the connection
  if (state_ == LeaseState::candidate) {
    // Back to notices: a release may have gone unheard meanwhile, so look now.
    // Without notices: poll at retry_interval at the latest.
    next_attempt_ = available ? now : std::min(next_attempt_, now + timing_.retry_interval);
    exact_attempt_ = false;
    if (available && in_flight_ == Command::acquire) look_again_ = true;
  }
  return settle({}, now);
}

// ---- replies --------------------------------------------------------------

Output LeaseMachine::on_acquire_reply(TimePoint now, std::uint64_t seq, const AcquireReply& reply) {
  Output out;
  if (seq != in_flight_seq_ || in_flight_ != Command::acquire) return settle(out, now);
  in_flight_ = Command::none;
  if (state_ != LeaseState::candidate) return settle(out, now);
  out.no_duplicate = reply.rival.empty();  // no other incarnation holds it under our id
  const TimePoint sent_at = confirming_instant(now);

  if (reply.acquired && !reply.confirmed) {
    // Redis gave us the lease, but too few replicas have it: a failover now
    // could lose it while we lead. Keep it without leading, renewing it every
    // retry_interval until the replicas acknowledge one renewal. Given back,
    // every standby in turn would take it, spend a token and give it back.
    state_ = LeaseState::held_off;
    unconfirmed_claim_ = true;
    token_ = reply.token;
    hold_until_ = now + timing_.retry_interval;
    forget_holder();
    return settle(out, now);
  }
  if (reply.acquired) {
    if (rare_) rare_->rival.reset();
    if (now >= lease_end(sent_at)) {
      next_attempt_ = now;  // confirmed too late to lead on: re-claim afresh
    } else {
      enter_leader(out, sent_at, reply.token);
    }
    return settle(out, now);
  }

  see_holder(out, reply.holder);
  // Try again when the holder's lease can first have expired: its PTTL was
  // read after we sent, so sent_at + pttl (+1 ms for Redis's whole
  // milliseconds) is the earliest expiry instant. The elector wakes groups
  // on whole milliseconds, up to 1 ms late, which a failover would add to
  // its gap: so a wait ends lapse_check early with one more look, and only
  // a lease seen that close to its end (a live holder renews long before)
  // gets an exact wake at its end.
  TimePoint next = now + timing_.retry_interval;  // no TTL on the key: poll
  TimePoint lapse{};
  if (reply.pttl_ms >= 0) {
    const auto pttl = std::chrono::milliseconds(reply.pttl_ms);
    lapse = sent_at + pttl + std::chrono::milliseconds(1);
    next = pttl > lapse_check ? lapse - lapse_check : lapse;
  }
  // A key deleted by hand sends no notice, and a foreign holder may use a
  // longer TTL than ours: look again after one ttl at the latest.
  next = std::min(next, now + timing_.ttl);
  if (!notices_available_) next = std::min(next, now + timing_.retry_interval);
  watch_rival(out, reply, sent_at, now);
  if (rival()) next = std::min(next, now + timing_.heartbeat_interval);  // to see whether it renews
  if (look_again_) next = now;
  next_attempt_ = next;
  exact_attempt_ = next == lapse;
  return settle(out, now);
}

Output LeaseMachine::on_renew_reply(TimePoint now, std::uint64_t seq, const RenewReply& reply) {
  Output out;
  if (seq != in_flight_seq_ || in_flight_ != Command::renew) return settle(out, now);
  in_flight_ = Command::none;
  const TimePoint sent_at = confirming_instant(now);
  // Another incarnation of our id took the lease, or bid for it: either
  // is a live process using our id. A bid under our id is renewed every
  // heartbeat while its process lives, so a renewal without one ends it.
  out.duplicate_id = !reply.rival.empty() || (reply.bid && reply.bid->id == id_);
  out.no_duplicate = reply.renewed && !out.duplicate_id;

  if (state_ == LeaseState::leader) {
    if (!reply.renewed) {
      leave_leader(out, RevokeReason::renew_refused, LeaseState::candidate);
      next_attempt_ = now;  // see who holds it now, or take it if it is free
    } else if (reply.confirmed) {
      confirm_renewal(sent_at);  // settle() demotes if even this came too late
    }
    // Unconfirmed: the deadline stays; the renewal is due again at once, each
    // try paced by the replicas' wait (confirm_timeout).
  } else if (state_ == LeaseState::draining) {
    if (!reply.renewed) return settle(finish_drain(std::move(out), now), now);  // lost: nothing left to keep
    if (reply.confirmed) confirm_renewal(sent_at);
  } else if (state_ == LeaseState::candidate) {
    next_attempt_ = now;  // the term already ended; re-claim if the key is ours
  } else if (state_ == LeaseState::held_off && unconfirmed_claim_) {
    if (!reply.renewed) {
      unconfirmed_claim_ = false;  // gone (expired, taken): campaign afresh
      hold_until_ = now;
    } else if (reply.confirmed && now < lease_end(sent_at)) {
      unconfirmed_claim_ = false;
      enter_leader(out, sent_at, token_);  // the replicas have the acquire's writes too
    } else {
      hold_until_ = now + timing_.retry_interval;
    }
  }
  if (reply.renewed && reply.bid) return consider_bid(std::move(out), *reply.bid, now);
  return settle(out, now);
}

// Renewal wakes fall on a grid shared by every group of the elector, so
// that the groups due within one step leave in one executor turn as a few
// scripts, instead of a wake (and a write to each node) every millisecond.
// Sent late by less than a step, a renewal keeps its schedule
// (confirm_renewal), and its lease counts from the send instant as ever.
TimePoint LeaseMachine::renewal_wake() const noexcept {
  using std::chrono::nanoseconds;
  constexpr std::int64_t max_step = nanoseconds(std::chrono::milliseconds(25)).count();
  const std::int64_t step = std::min<std::int64_t>(nanoseconds(timing_.heartbeat_interval).count() / 64, max_step);
  const TimePoint due = renewal_due();
  if (step <= 1) return due;
  const std::int64_t at = due.time_since_epoch().count();
  const std::int64_t rest = ((at % step) + step) % step;
  return rest == 0 ? due : due + nanoseconds(step - rest);
}

// The lease counts from the send instant, always. The schedule: a renewal
// sent a little late (a busy executor; the driver's whole-millisecond
// wakes) keeps it, the next falling due one heartbeat after this one was
// due. Counted from the late send instead, groups woken together would
// share that instant from then on, and at 100,000 groups they drift into
// ever larger bursts. Renewing sooner than the lease needs is always safe.
// An early renewal (renew_early: a slot's groups renewing together) or a
// much later one (retries) starts the schedule anew.
void LeaseMachine::confirm_renewal(TimePoint sent_at) {
  const TimePoint due = renewal_due();
  confirmed_at_ = sent_at;
  const bool slightly_late = sent_at >= due && sent_at - due < timing_.heartbeat_interval / 4;
  renew_from_ = slightly_late ? due : sent_at;
}

// Only a strictly higher priority takes the lease: equals never flap. A
// leader hands over after its drain; a draining one hands over instead of
// releasing, so that no lower standby slips in between.
Output LeaseMachine::consider_bid(Output out, const Bid& bid, TimePoint now) {
  if (bid.priority <= priority_) return settle(out, now);
  const Bid* target = hand_over_target();
  if (state_ == LeaseState::draining && (target == nullptr || bid.priority > target->priority)) {
    rare().hand_over_to = bid;
  }
  if (state_ != LeaseState::leader || switching_) return settle(out, now);
  rare().hand_over_to = bid;
  if (timing_.drain_timeout > Duration::zero()) {
    return start_drain(std::move(out), RevokeReason::handed_over, LeaseState::held_off, now);
  }
  leave_leader(out, RevokeReason::handed_over, LeaseState::held_off);
  hold_until_ = now + timing_.step_down_hold_off;
  return settle(send(std::move(out), Command::release, now), now);
}

void LeaseMachine::watch_rival(Output& out, const AcquireReply& reply, TimePoint sent_at, TimePoint now) {
  if (reply.rival.empty() || reply.pttl_ms < 0) {
    if (rare_) rare_->rival.reset();
    return;
  }
  // The PTTL was read between our send and the reply: the lease ends no
  // earlier than sent_at + pttl and no later than now + pttl, give or take
  // Redis's whole milliseconds. A renewal moves the end on by the holder's
  // heartbeat; a lease nobody renews keeps its end.
  constexpr auto rounding = std::chrono::milliseconds(5);
  const auto pttl = std::chrono::milliseconds(reply.pttl_ms);
  if (const Rival* seen = rival()) {
    out.duplicate_id = seen->incarnation != reply.rival || sent_at + pttl > seen->latest_expiry + rounding;
  }
  rare().rival = Rival{reply.rival, now + pttl};
}

Output LeaseMachine::on_release_reply(TimePoint now, std::uint64_t seq, bool deleted) {
  Output out;
  if (seq != in_flight_seq_ || in_flight_ != Command::release) return settle(out, now);
  in_flight_ = Command::none;
  if (rare_) rare_->hand_over_to.reset();
  if (deleted && notices_available_) ++own_notices_due_;
  out.released = true;
  if (state_ == LeaseState::stopping) {
    state_ = LeaseState::stopped;
    out.stopped = true;
  }
  return settle(out, now);
}

Output LeaseMachine::on_failure(TimePoint now, std::uint64_t seq, Failure failure) {
  Output out;
  if (seq != in_flight_seq_ || in_flight_ == Command::none) return settle(out, now);
  const Command failed = in_flight_;
  in_flight_ = Command::none;

  switch (failed) {
    case Command::renew:
      if (state_ == LeaseState::leader) {
        leave_leader(out,
                     failure == Failure::timeout ? RevokeReason::timeout : RevokeReason::renew_failed,
                     LeaseState::candidate);
      }
      // Draining: keep trying until the deadline, the lease may still be ours.
      next_attempt_ = now + timing_.retry_interval;
      if (unconfirmed_claim_) hold_until_ = next_attempt_;
      break;
    case Command::acquire:
      next_attempt_ = now + timing_.retry_interval;
      break;
    case Command::release:
      if (rare_) rare_->hand_over_to.reset();
      out.released = out.release_failed = true;
      if (state_ == LeaseState::stopping) {
        state_ = LeaseState::stopped;
        out.stopped = true;
      }
      break;
    case Command::none:
      break;
  }
  return settle(out, now);
}

}  // namespace leasehold::detail
