#pragma once
// Copying a group's history (its fencing counter and its once-per-tick
// record, the keys that outlive every lease) to another deployment or key
// layout without ever lowering what the target holds: the rule, and the
// scripts that apply it atomically on the target. No I/O here.

#include <leasehold/redis/reply.hpp>
#include <leasehold/redis/script.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leasehold::cli {

/// What copying a counter does (or, in a dry run, would do) to the target.
enum class CopyOutcome {
  copied,   ///< the target had no counter or a lower one: it takes the source's
  kept,     ///< the target had as much or more: untouched, never lowered
  missing,  ///< the source has no counter: nothing to copy
};

/// The rule both the dry run and raise_counter_script() follow.
CopyOutcome plan_copy(std::optional<std::int64_t> source, std::optional<std::int64_t> target) noexcept;

/// A counter's value as Redis keeps it ("-12", "7"); nullopt for anything
/// else (INCR would refuse it too).
std::optional<std::int64_t> parse_counter(std::string_view text) noexcept;

/// A tick record (HGETALL's flat field/value list) as schedule/tick pairs.
/// nullopt when the reply is not such a list or a tick is not a number.
std::optional<std::vector<std::pair<std::string, std::int64_t>>> parse_ticks(const redis::Reply& reply);

/// How many of `source`'s ticks the target would raise (its own lower or
/// missing), and how many it would keep.
std::pair<std::size_t, std::size_t> plan_ticks(const std::vector<std::pair<std::string, std::int64_t>>& source,
                                               const std::vector<std::pair<std::string, std::int64_t>>& target);

/// KEYS: the target's counter. ARGV: the source's value. Sets the counter
/// to it unless it already holds as much or more, in one script, so that a
/// term begun on the target meanwhile is never undone. Answers {1, previous
/// value or ""} when set, {0, current value} when kept, and an error reply
/// naming the key when it holds something other than an integer.
const redis::Script& raise_counter_script();

/// KEYS: the target's tick record. ARGV: schedule, tick, schedule, tick ...
/// Raises each schedule's last tick to the given one unless it is already
/// as late. Answers how many it raised; an error naming the key and the
/// schedule when a recorded tick is not a number.
const redis::Script& raise_ticks_script();

}  // namespace leasehold::cli
