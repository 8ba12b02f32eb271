#include <leasehold/elector_options.hpp>
#include <leasehold/key_layout.hpp>

#include <leasehold/impl/base/quoted.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <random>
#include <stdexcept>

namespace leasehold {
namespace {

constexpr std::size_t max_group_length = 200;
constexpr std::size_t max_prefix_length = 100;
constexpr std::size_t max_instance_id_length = 256;

using detail::has_control_char;
using detail::quoted;

[[noreturn]] void fail(std::string message) { throw std::invalid_argument(std::move(message)); }

// A renewal waits up to confirm_timeout for the replicas after its script:
// it must still fit between the renewal's send and the deadline.
void validate_confirm_mode(const ElectorOptions& o) {
  if (o.confirm_replicas < 0) {
    fail(fmt::format("ElectorOptions.confirm_replicas must be >= 0 (got {})", o.confirm_replicas));
  }
  if (o.confirm_replicas == 0) return;
  if (o.confirm_timeout.count() <= 0) {
    fail(fmt::format("ElectorOptions.confirm_timeout must be > 0 (got {} ms); WAIT 0 would wait forever",
                     o.confirm_timeout.count()));
  }
  const auto budget = o.ttl - o.effective_deadline_margin() - o.effective_heartbeat();
  if (o.confirm_timeout >= budget) {
    fail(fmt::format("ElectorOptions.confirm_timeout ({} ms) must be shorter than ttl - drift_margin - "
                     "clock_skew - heartbeat_interval ({} ms), or a confirmed renewal lands after the deadline",
                     o.confirm_timeout.count(), budget.count()));
  }
}

}  // namespace

void validate_group_name(std::string_view group) {
  if (group.empty()) fail("invalid group name \"\": a group name must not be empty");
  if (group.size() > max_group_length) {
    fail(fmt::format("invalid group name {}: {} bytes is longer than the limit of {}", quoted(group),
                     group.size(), max_group_length));
  }
  if (has_control_char(group)) {
    fail(fmt::format("invalid group name {}: control characters are not allowed", quoted(group)));
  }
  // Keys beside a group's lease: its fencing counter and the scheduler's
  // tick record. A group named like one of them would collide with it.
  for (const std::string_view suffix : KeyLayout::sibling_suffixes) {
    if (group.size() >= suffix.size() && group.substr(group.size() - suffix.size()) == suffix) {
      fail(fmt::format("invalid group name {}: names ending in \"{}\" are reserved for leasehold's own keys",
                       quoted(group), suffix));
    }
  }
}

void ElectorOptions::validate() const {
  using std::chrono::milliseconds;
  if (ttl < milliseconds(100)) {
    fail(fmt::format("ElectorOptions.ttl must be at least 100 ms (got {} ms)", ttl.count()));
  }
  const auto drift = effective_drift_margin();
  if (drift.count() < 0 || drift >= ttl / 2) {
    fail(fmt::format("ElectorOptions.drift_margin must be >= 0 and less than half the ttl (got {} ms, ttl {} ms)",
                     drift.count(), ttl.count()));
  }
  if (clock_skew.count() < 0) {
    fail(fmt::format("ElectorOptions.clock_skew must be >= 0 (got {} ms)", clock_skew.count()));
  }
  // Both margins come off every lease: together they must leave most of it.
  // (Compared without the sum, which a huge skew would overflow.)
  if (clock_skew >= ttl / 2 - drift) {
    fail(fmt::format("ElectorOptions.clock_skew: drift_margin + clock_skew must be less than half the ttl "
                     "(got {} + {} ms, ttl {} ms)",
                     drift.count(), clock_skew.count(), ttl.count()));
  }
  const auto margin = effective_deadline_margin();
  const auto heartbeat = effective_heartbeat();
  if (heartbeat.count() <= 0) {
    fail(fmt::format("ElectorOptions.heartbeat_interval must be > 0 (got {} ms)", heartbeat.count()));
  }
  if (heartbeat >= ttl - margin) {
    fail(fmt::format(
        "ElectorOptions.heartbeat_interval ({} ms) must be shorter than ttl - drift_margin - clock_skew ({} ms), "
        "or the lease lapses before it is renewed",
        heartbeat.count(), (ttl - margin).count()));
  }
  if (retry_interval.count() <= 0) {
    fail(fmt::format("ElectorOptions.retry_interval must be > 0 (got {} ms)", retry_interval.count()));
  }
  if (effective_hold_off().count() < 0) {
    fail(fmt::format("ElectorOptions.step_down_hold_off must be >= 0 (got {} ms)",
                     effective_hold_off().count()));
  }
  if (stop_timeout.count() <= 0) {
    fail(fmt::format("ElectorOptions.stop_timeout must be > 0 (got {} ms)", stop_timeout.count()));
  }
  if (drain_timeout.count() < 0) {
    fail(fmt::format("ElectorOptions.drain_timeout must be >= 0 (got {} ms)", drain_timeout.count()));
  }
  validate_confirm_mode(*this);
  if (key_prefix.empty()) fail("ElectorOptions.key_prefix must not be empty");
  if (key_prefix.size() > max_prefix_length || has_control_char(key_prefix)) {
    fail(fmt::format("ElectorOptions.key_prefix {} must be at most {} bytes without control characters",
                     quoted(key_prefix), max_prefix_length));
  }
  if (!instance_id.empty() &&
      (instance_id.size() > max_instance_id_length || has_control_char(instance_id))) {
    fail(fmt::format("ElectorOptions.instance_id {} must be at most {} bytes without control characters",
                     quoted(instance_id), max_instance_id_length));
  }
  for (const auto& group : groups) {
    try {
      validate_group_name(group);
    } catch (const std::invalid_argument& e) {
      fail(fmt::format("ElectorOptions.groups: {}", e.what()));
    }
  }
  for (const auto& [group, group_priority] : group_priorities) {
    try {
      validate_group_name(group);
    } catch (const std::invalid_argument& e) {
      fail(fmt::format("ElectorOptions.group_priorities: {}", e.what()));
    }
  }
}

std::string default_instance_id() {
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  std::random_device rd;
  const auto random = (static_cast<std::uint64_t>(rd()) << 32) | rd();
  return fmt::format("{}-{}-{:016x}", host.data()[0] ? host.data() : "host", getpid(), random);
}

}  // namespace leasehold
