#include "lease_scripts.hpp"

#include <string>
#include <string_view>

namespace leasehold::detail {

namespace {

// Both acquire scripts start alike: a re-claim of this instance's own key,
// or a refusal naming the live holder...
constexpr std::string_view acquire_head = R"lua(local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local token = redis.pcall('INCR', KEYS[2])
  if type(token) ~= 'number' then token = tonumber(redis.call('GET', KEYS[2])) or 0 end
  return {1, holder, tonumber(ARGV[2]), token}
end
if holder then
  return {0, holder, redis.call('PTTL', KEYS[1]), 0}
end
)lua";

// ... and end alike: a fresh term on a free key.
constexpr std::string_view acquire_fresh = R"lua(local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
return {1, ARGV[1], tonumber(ARGV[2]), token}
)lua";

// No fencing counter: a new group, or a Redis that lost its data (an empty
// restart, a promoted replica that never had the group) while a leader may
// still believe in its lease. An empty holder keeps the key for one ttl.
constexpr std::string_view empty_restart_guard = R"lua(if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('SET', KEYS[2], 0)
  redis.call('SET', KEYS[1], '', 'PX', ARGV[2])
  return {0, '', tonumber(ARGV[2]), 0}
end
)lua";

}  // namespace

const redis::Script& acquire_script() {
  static const redis::Script script(std::string(acquire_head).append(acquire_fresh));
  return script;
}

const redis::Script& guarded_acquire_script() {
  static const redis::Script script(std::string(acquire_head).append(empty_restart_guard).append(acquire_fresh));
  return script;
}

const redis::Script& renew_script() {
  static const redis::Script script(R"lua(if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
)lua");
  return script;
}

const redis::Script& release_script() {
  static const redis::Script script(R"lua(if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], ARGV[1])
  return 1
end
return 0
)lua");
  return script;
}

}  // namespace leasehold::detail
