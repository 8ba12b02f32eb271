#include <leasehold/impl/core/group_applier.hpp>

#include <leasehold/log.hpp>

#include <fmt/format.h>

namespace leasehold::detail {
namespace {

// Whether a message at `level` would be logged: per-group messages are not
// even formatted when an elector of 10,000 groups is told to be quiet.
bool logs(LogLevel level) { return level != LogLevel::off && level >= log_level(); }

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
    case RevokeReason::handed_over: return "a standby of higher priority asked for the lease";
  }
  return "unknown reason";
}

}  // namespace

void GroupApplier::apply(GroupState& g, const Output& out, TimePoint now) {
  publish(g, now);
  if (out.revoked) end_term(g, *out.revoked, now);
  if (out.elected) begin_term(g, now);
  if (out.holder_changed) {
    if (g.machine.holder() != id_ && logs(LogLevel::info)) {
      log(LogLevel::info, fmt::format("elector {}: group \"{}\": leader is now {}", id_, g.name, g.machine.holder()));
    }
    listener_.leader_changed(g);
  }
  if (out.drain_overrun) report_overrun(g);
  if (out.duplicate_id) report_duplicate(g);
  if (out.no_duplicate) clear_duplicate(g);
  if (out.released) listener_.released(g, out.release_failed);
  if (out.send != Command::none) commands_.send(g, out.send, out.seq, now);
  // For health(): when the next renewal is due while none is in flight.
  const auto& m = g.machine;
  const bool renewal_pending = m.is_leader() && m.in_flight() != Command::renew;
  g.renew_due_ns.store(renewal_pending ? to_ns(m.renewal_due()) : 0, std::memory_order_relaxed);
  commands_.schedule(g, out.wake, out.exact_wake);
  if (out.stopped) commands_.machine_stopped(g, now);
}

void GroupApplier::withdraw(GroupState& g, RevokeReason reason, TimePoint now) {
  g.published_ns = 0;
  if (const std::int64_t previous = g.flag->publish(0); previous > 0) {
    audit(g, LeaseAuditEvent::Kind::ended, now, {});
  }
  if (g.in_term) end_term(g, reason, now);
}

// The audit hook sees a claim before it is published and its end after it
// is withdrawn.
void GroupApplier::publish(GroupState& g, TimePoint now) {
  const auto deadline = g.machine.deadline();
  const std::int64_t next = deadline ? to_ns(*deadline) : 0;
  if (next == g.published_ns) return;
  g.published_ns = next;
  const std::int64_t previous = g.flag->deadline_ns.load(std::memory_order_relaxed);
  if (next == previous || previous == LeaderFlag::closed) return;  // closed: the elector is gone
  using Kind = LeaseAuditEvent::Kind;
  const Kind kind = next == 0 ? Kind::ended : previous == 0 ? Kind::began : Kind::extended;
  if (kind != Kind::ended) audit(g, kind, now, *deadline);
  g.flag->publish(next);
  if (g.term) g.term->deadline_ns.store(next, std::memory_order_release);
  if (kind == Kind::ended) audit(g, kind, now, {});
}

void GroupApplier::audit(const GroupState& g, LeaseAuditEvent::Kind kind, TimePoint now, TimePoint deadline) {
  listener_.audit(LeaseAuditEvent{kind, g.name, g.machine.token(), now, g.machine.confirmed_at(), deadline});
}

// The standby may now start while this instance's work still runs: the
// operator must hear of it, every time.
void GroupApplier::report_overrun(GroupState& g) {
  ++g.drain_overruns;
  const Error error{make_error_code(errc::drain_timeout),
                    fmt::format("the lease was released after {} ms with guarded work still running",
                                std::chrono::duration_cast<std::chrono::milliseconds>(g.machine.timing().drain_timeout)
                                    .count())};
  log(LogLevel::warning, fmt::format("elector {}: group \"{}\": {}", id_, g.name, error.message()));
  listener_.group_error(g, error);
}

// Loud, but once per episode: the other process shows itself every
// heartbeat for as long as it runs.
void GroupApplier::report_duplicate(GroupState& g) {
  if (g.duplicate_id.exchange(true, std::memory_order_relaxed)) return;
  ++g.duplicate_ids;
  const Error error{make_error_code(errc::duplicate_instance_id),
                    fmt::format("instance id \"{}\" is used by another live process as well (this one is incarnation "
                                "{}); at most one of them leads, but give each process its own instance_id",
                                id_, incarnation_)};
  log(LogLevel::error, fmt::format("elector {}: group \"{}\": {}", id_, g.name, error.message()));
  listener_.group_error(g, error);
}

void GroupApplier::clear_duplicate(GroupState& g) {
  if (!g.duplicate_id.exchange(false, std::memory_order_relaxed)) return;
  log(LogLevel::warning,
      fmt::format("elector {}: group \"{}\": no other process shows itself with instance id \"{}\" any more", id_,
                  g.name, id_));
}

void GroupApplier::begin_term(GroupState& g, TimePoint now) {
  const auto& m = g.machine;
  g.in_term = true;
  ++g.terms_won;
  g.last_token = m.token();
  g.leading_since = now;
  g.renew_lag_ns.store(0, std::memory_order_relaxed);
  if (logs(LogLevel::info)) {
    log(LogLevel::info,
        fmt::format("elector {}: group \"{}\": elected leader (token {}): acquired the lease", id_, g.name, m.token()));
  }
  listener_.term_began(g);
}

void GroupApplier::end_term(GroupState& g, RevokeReason reason, TimePoint now) {
  const std::int64_t token = g.in_term ? g.last_token : g.machine.token();
  if (g.in_term) {
    g.time_as_leader += now - g.leading_since;
    ++g.demotions[static_cast<std::size_t>(reason)];
  }
  if (g.term) g.term->end(reason);
  g.ended_term = std::move(g.term);  // a drain asks whether its work still runs
  g.in_term = false;
  const LogLevel level =
      (reason == RevokeReason::stepped_down || reason == RevokeReason::stopped || reason == RevokeReason::handed_over)
          ? LogLevel::info
          : LogLevel::warning;
  if (logs(level)) {
    log(level, fmt::format("elector {}: group \"{}\": no longer leader (token {}): {} ({})", id_, g.name, token,
                           to_string(reason), explain(reason)));
  }
  listener_.term_ended(g, token, reason);
}

}  // namespace leasehold::detail
