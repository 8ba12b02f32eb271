#pragma once
// The keys and arguments of a script call, encoded once. A lease command of
// one group always carries the same keys and arguments, so the elector keeps
// them encoded instead of building and formatting them on every renewal.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace leasehold::redis {

class Script;
class ScriptArguments;
namespace detail {
struct ScriptBatch;
}

/// Trailing arguments (ARGV) shared by many ScriptArguments, encoded once:
/// the elector's groups all campaign with one instance id, ttl and
/// incarnation, which need not be stored again with each group's keys.
class SharedArguments {
 public:
  /// Encodes `args` once; the views need not outlive the call.
  explicit SharedArguments(std::span<const std::string_view> args);

 private:
  friend class ScriptArguments;
  std::string encoded_;
  std::size_t count_ = 0;
};

/// The encoded keys and arguments of one script call, for
/// Client::async_eval calls repeated with the same values.
class ScriptArguments {
 public:
  /// Encodes `keys` (KEYS in the script) and `args` (ARGV) once; the views
  /// need not outlive the call. `shared`, when given, continues ARGV after
  /// `args`; it is referred to, not copied, and must outlive this object.
  ScriptArguments(std::span<const std::string_view> keys, std::span<const std::string_view> args,
                  const SharedArguments* shared = nullptr);

  /// KEYS[index + 1] as given (a view into this object; empty when there is
  /// no such key).
  std::string_view key(std::size_t index) const;


  /// Appends the whole call to `out`: EVALSHA with the script's SHA1, or
  /// (`by_body`) EVAL with its body, which also reloads it after NOSCRIPT.
  void encode_call(std::string& out, const Script& script, bool by_body) const;

 private:
  friend struct detail::ScriptBatch;
  static constexpr std::size_t all_keys = SIZE_MAX;
  ScriptArguments() = default;
  static ScriptArguments joined(std::span<const ScriptArguments* const> parts, const SharedArguments* shared,
                                bool as_keys, std::size_t keys_each, std::span<const std::string_view> more_args = {},
                                std::size_t lean_parts = 0);
  /// This call's first keys (at most `most`), still encoded, and how many.
  std::pair<std::string_view, std::size_t> encoded_keys(std::size_t most = all_keys) const;
  std::pair<std::size_t, std::size_t> numkeys() const;
  std::size_t find_keys_end() const;

  // RESP bulk strings of numkeys, the keys and the arguments (hiredis's
  // encoding without its array header, which depends on the verb's slots).
  std::string encoded_;
  std::uint32_t count_ = 0;
  // Where the keys end in encoded_: batches copy each part's keys, and
  // finding them again would read every key's length.
  std::uint32_t keys_end_ = 0;
  const SharedArguments* shared_ = nullptr;
};

}  // namespace leasehold::redis
