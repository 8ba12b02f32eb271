#pragma once
// One script call's arguments made of several calls' (the elector's batched
// renewals): copies of the parts' encodings, nothing formatted again.

#include <leasehold/redis/script_arguments.hpp>

#include <cstddef>
#include <span>
#include <string_view>

namespace leasehold::redis::detail {

struct ScriptBatch {
  /// keys_each of args_of(): every key of each part.
  static constexpr std::size_t all_keys = ScriptArguments::all_keys;

  /// KEYS are each part's keys in turn (their own ARGV is dropped), ARGV is
  /// `shared`: for a script that repeats one script's work for each part.
  /// `more_args` follow `shared` in ARGV (copied, like the keys); the
  /// first `lean_parts` parts give only their first key.
  static ScriptArguments keys_of(std::span<const ScriptArguments* const> parts, const SharedArguments* shared,
                                 std::span<const std::string_view> more_args = {}, std::size_t lean_parts = 0) {
    return ScriptArguments::joined(parts, shared, true, all_keys, more_args, lean_parts);
  }
  /// No KEYS: ARGV is `shared`'s arguments (copied), then each part's keys
  /// in turn. For a script that reaches keys of several slots held by one
  /// cluster node, which it may not declare (a script's KEYS must share a
  /// slot; undeclared keys need the allow-cross-slot-keys flag). `keys_each`:
  /// only each part's first keys, at most that many (a script that derives
  /// the other keys' names from the first sends less).
  static ScriptArguments args_of(std::span<const ScriptArguments* const> parts, const SharedArguments& shared,
                                 std::size_t keys_each = all_keys) {
    return ScriptArguments::joined(parts, &shared, false, keys_each);
  }
};

}  // namespace leasehold::redis::detail
