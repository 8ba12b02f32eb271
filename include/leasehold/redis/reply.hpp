#pragma once
// One decoded RESP2 reply. leasehold only meets status, error, integer, bulk
// string, nil and small arrays, so a plain tree is enough.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::redis {

/// One reply: its type and the one field that type uses. A value type.
struct Reply {
  /// The RESP2 reply types: nil (a missing value), status (`+OK`), error
  /// (`-ERR ...`), integer, bulk string and array.
  enum class Type : std::uint8_t { nil, status, error, integer, string, array };

  Type type = Type::nil;         ///< which of the fields below holds the value
  std::int64_t integer = 0;      ///< for Type::integer
  std::string str;               ///< for status, error and string
  std::vector<Reply> elements;   ///< for Type::array

  /// True for a nil reply.
  bool is_nil() const noexcept { return type == Type::nil; }
  /// True for an error reply (the text is in str).
  bool is_error() const noexcept { return type == Type::error; }
  /// True for an integer reply.
  bool is_integer() const noexcept { return type == Type::integer; }
  /// True for a bulk string reply (not a status).
  bool is_string() const noexcept { return type == Type::string; }
  /// True for a status reply such as OK.
  bool is_status() const noexcept { return type == Type::status; }
  /// True for an array reply.
  bool is_array() const noexcept { return type == Type::array; }

  /// A compact, bounded rendering for logs and test failures.
  std::string debug_string(std::size_t max_len = 200) const;

  /// A status reply with text `s` (for tests and fakes, like the ones below).
  static Reply make_status(std::string s) { return {Type::status, 0, std::move(s), {}}; }
  /// An error reply with text `s`.
  static Reply make_error(std::string s) { return {Type::error, 0, std::move(s), {}}; }
  /// An integer reply.
  static Reply make_integer(std::int64_t v) { return {Type::integer, v, {}, {}}; }
  /// A bulk string reply.
  static Reply make_string(std::string s) { return {Type::string, 0, std::move(s), {}}; }
  /// An array reply of `v`.
  static Reply make_array(std::vector<Reply> v) { return {Type::array, 0, {}, std::move(v)}; }
};

}  // namespace leasehold::redis
