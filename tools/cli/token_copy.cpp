#include "token_copy.hpp"

#include <charconv>

namespace leasehold::cli {

CopyOutcome plan_copy(std::optional<std::int64_t> source, std::optional<std::int64_t> target) noexcept {
  if (!source) return CopyOutcome::missing;
  return target && *target >= *source ? CopyOutcome::kept : CopyOutcome::copied;
}

std::optional<std::int64_t> parse_counter(std::string_view text) noexcept {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

std::optional<std::vector<std::pair<std::string, std::int64_t>>> parse_ticks(const redis::Reply& reply) {
  if (!reply.is_array() || reply.elements.size() % 2 != 0) return std::nullopt;
  std::vector<std::pair<std::string, std::int64_t>> ticks;
  for (std::size_t i = 0; i < reply.elements.size(); i += 2) {
    const auto tick = parse_counter(reply.elements[i + 1].str);
    if (!reply.elements[i].is_string() || !tick) return std::nullopt;
    ticks.emplace_back(reply.elements[i].str, *tick);
  }
  return ticks;
}

std::pair<std::size_t, std::size_t> plan_ticks(const std::vector<std::pair<std::string, std::int64_t>>& source,
                                               const std::vector<std::pair<std::string, std::int64_t>>& target) {
  std::size_t raised = 0;
  for (const auto& [schedule, tick] : source) {
    std::optional<std::int64_t> theirs;
    for (const auto& [name, value] : target) {
      if (name == schedule) theirs = value;
    }
    if (plan_copy(tick, theirs) == CopyOutcome::copied) ++raised;
  }
  return {raised, source.size() - raised};
}

// Both compare as Lua numbers (doubles): exact up to 2^53, far beyond any
// count of terms or any tick in milliseconds.
const redis::Script& raise_counter_script() {
  static const redis::Script script(R"lua(local current = redis.call('GET', KEYS[1])
if current then
  if not string.match(current, '^%-?%d+$') then
    return redis.error_reply('ERR ' .. KEYS[1] .. ' holds "' .. current .. '", not a fencing counter')
  end
  if tonumber(current) >= tonumber(ARGV[1]) then return {0, current} end
end
redis.call('SET', KEYS[1], ARGV[1])
return {1, current or ''}
)lua");
  return script;
}

const redis::Script& raise_ticks_script() {
  static const redis::Script script(R"lua(local raised = 0
for i = 1, #ARGV, 2 do
  local current = redis.call('HGET', KEYS[1], ARGV[i])
  if current and not string.match(current, '^%-?%d+$') then
    return redis.error_reply('ERR ' .. KEYS[1] .. ' holds "' .. current .. '" for ' .. ARGV[i] .. ', not a tick')
  end
  if not current or tonumber(current) < tonumber(ARGV[i + 1]) then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
    raised = raised + 1
  end
end
return raised
)lua");
  return script;
}

}  // namespace leasehold::cli
