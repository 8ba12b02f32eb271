#include "lease_scripts.hpp"

namespace leasehold::detail {

const redis::Script& acquire_script() {
  static const redis::Script script(R"lua(local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local token = redis.pcall('INCR', KEYS[2])
  if type(token) ~= 'number' then token = tonumber(redis.call('GET', KEYS[2])) or 0 end
  return {1, holder, tonumber(ARGV[2]), token}
end
if holder then
  return {0, holder, redis.call('PTTL', KEYS[1]), 0}
end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
return {1, ARGV[1], tonumber(ARGV[2]), token}
)lua");
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
