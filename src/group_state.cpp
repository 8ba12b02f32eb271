#include "group_state.hpp"

#include <algorithm>

namespace leasehold::detail {
redis::SharedArguments lease_argv(std::string_view instance_id, std::string_view ttl_ms,
                                  std::string_view incarnation, int priority) {
  const std::string priority_text = std::to_string(priority);
  const std::array<std::string_view, 4> args{instance_id, ttl_ms, incarnation, priority_text};
  return redis::SharedArguments(args);
}

namespace {

std::unique_ptr<const redis::SharedArguments> own_arguments_of(const GroupContext& c, std::string_view group) {
  const int priority = c.options.priority_of(group);
  if (priority == c.options.priority) return nullptr;
  return std::make_unique<const redis::SharedArguments>(lease_argv(c.instance_id, c.ttl_ms, c.incarnation, priority));
}

// KEYS: the lease, its fencing counter, holder record and bid.
redis::ScriptArguments lease_arguments_of(const GroupContext& c, std::string_view group, const std::string& key,
                                          const redis::SharedArguments* own) {
  const std::string token_key = c.layout.token_key(group);
  const std::string holder_key = c.layout.holder_key(group);
  const std::string bid_key = c.layout.bid_key(group);
  const std::array<std::string_view, 4> keys{key, token_key, holder_key, bid_key};
  return redis::ScriptArguments(keys, {}, own != nullptr ? own : &c.lease_arguments);
}

std::string_view name_in(std::string_view key, const KeyLayout& layout, std::size_t length) {
  const std::size_t open = layout.form() == KeyLayout::Form::hash_tagged ? 1 : 0;
  return key.substr(layout.prefix().size() + open, length);
}

}  // namespace

GroupState::GroupState(std::string_view group, const GroupContext& context)
    : key(context.layout.lease_key(group)),
      name(name_in(key, context.layout, group.size())),
      own_arguments(own_arguments_of(context, group)),
      lease_arguments(lease_arguments_of(context, group, key, own_arguments.get())),
      machine(context.timing, context.instance_id, context.options.priority_of(group)),
      flag(std::make_shared<LeaderFlag>()) {}

Duration GroupState::heartbeat_lag(TimePoint now) const noexcept {
  if (!flag->leading(now)) return Duration::zero();
  std::int64_t lag = renew_lag_ns.load(std::memory_order_relaxed);
  const std::int64_t due = renew_due_ns.load(std::memory_order_relaxed);
  if (due != 0) lag = std::max(lag, to_ns(now) - due);
  return std::chrono::duration_cast<Duration>(std::chrono::nanoseconds(lag));
}

}  // namespace leasehold::detail
