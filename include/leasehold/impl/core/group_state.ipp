#include <leasehold/impl/core/group_state.hpp>

#include <leasehold/impl/protocol/key_slot.hpp>

#include <algorithm>

namespace leasehold::detail {
LeaseArgv::LeaseArgv(std::string instance_id, std::string ttl_ms, std::string incarnation)
    : id_(std::move(instance_id)), ttl_ms_(std::move(ttl_ms)), incarnation_(std::move(incarnation)) {}

const redis::SharedArguments& LeaseArgv::of(int priority) {
  const std::lock_guard lock(mutex_);
  auto it = by_priority_.find(priority);
  if (it == by_priority_.end()) {
    const std::string priority_text = std::to_string(priority);
    const std::array<std::string_view, 4> args{id_, ttl_ms_, incarnation_, priority_text};
    it = by_priority_.emplace(priority, redis::SharedArguments(args)).first;
  }
  return it->second;
}

namespace {

// KEYS: the lease, its fencing counter, holder record and bid.
redis::ScriptArguments lease_arguments_of(const GroupContext& c, std::string_view group) {
  const std::string key = c.layout.lease_key(group);
  const std::string token_key = c.layout.token_key(group);
  const std::string holder_key = c.layout.holder_key(group);
  const std::string bid_key = c.layout.bid_key(group);
  const std::array<std::string_view, 4> keys{key, token_key, holder_key, bid_key};
  return redis::ScriptArguments(keys, {}, &c.argv.of(c.options.priority_of(group)));
}

std::string_view name_in(std::string_view key, const KeyLayout& layout, std::size_t length) {
  const std::size_t open = layout.form() == KeyLayout::Form::hash_tagged ? 1 : 0;
  return key.substr(layout.prefix().size() + open, length);
}

}  // namespace

GroupState::GroupState(std::string_view group, const GroupContext& context, std::size_t index)
    : lease_arguments(lease_arguments_of(context, group)),
      key(lease_arguments.key(0)),
      name(name_in(key, context.layout, group.size())),
      machine(context.timing, context.instance_id, context.options.priority_of(group)),
      flag(std::make_shared<LeaderFlag>()),
      slot(context.layout.form() == KeyLayout::Form::hash_tagged ? cluster::detail::key_slot(key) : 0),
      stagger(static_cast<std::uint8_t>(index)) {
  machine.set_renewal_phase(renewal_phase_share(index));
}

Duration GroupState::heartbeat_lag(TimePoint now) const noexcept {
  if (!flag->leading(now)) return Duration::zero();
  std::int64_t lag = renew_lag_ns.load(std::memory_order_relaxed);
  const std::int64_t due = renew_due_ns.load(std::memory_order_relaxed);
  if (due != 0) lag = std::max(lag, to_ns(now) - due);
  return std::chrono::duration_cast<Duration>(std::chrono::nanoseconds(lag));
}

}  // namespace leasehold::detail
