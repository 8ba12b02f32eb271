#pragma once
// One decoded RESP2 reply. leasehold only meets status, error, integer, bulk
// string, nil and small arrays, so a plain tree is enough.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::redis {

struct Reply {
  enum class Type : std::uint8_t { nil, status, error, integer, string, array };

  Type type = Type::nil;
  std::int64_t integer = 0;      ///< for Type::integer
  std::string str;               ///< for status, error and string
  std::vector<Reply> elements;   ///< for Type::array

  bool is_nil() const noexcept { return type == Type::nil; }
  bool is_error() const noexcept { return type == Type::error; }
  bool is_integer() const noexcept { return type == Type::integer; }
  bool is_string() const noexcept { return type == Type::string; }
  bool is_status() const noexcept { return type == Type::status; }
  bool is_array() const noexcept { return type == Type::array; }

  /// A compact, bounded rendering for logs and test failures.
  std::string debug_string(std::size_t max_len = 200) const;

  static Reply make_status(std::string s) { return {Type::status, 0, std::move(s), {}}; }
  static Reply make_error(std::string s) { return {Type::error, 0, std::move(s), {}}; }
  static Reply make_integer(std::int64_t v) { return {Type::integer, v, {}, {}}; }
  static Reply make_string(std::string s) { return {Type::string, 0, std::move(s), {}}; }
  static Reply make_array(std::vector<Reply> v) { return {Type::array, 0, {}, std::move(v)}; }
};

}  // namespace leasehold::redis
