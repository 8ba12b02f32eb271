#pragma once
// A Lua script called by SHA1 (EVALSHA), falling back to EVAL on NOSCRIPT.

#include <string>
#include <string_view>

namespace leasehold::redis {

class Script {
 public:
  explicit Script(std::string body);

  const std::string& body() const noexcept { return body_; }
  /// Lower-case hex SHA1 of the body, as SCRIPT LOAD reports it.
  const std::string& sha1() const noexcept { return sha1_; }

 private:
  std::string body_;
  std::string sha1_;
};

/// Lower-case hex SHA1 of `data`.
std::string sha1_hex(std::string_view data);

}  // namespace leasehold::redis
