#pragma once
// A Lua script called by SHA1 (EVALSHA), falling back to EVAL on NOSCRIPT.

#include <string>
#include <string_view>

namespace leasehold::redis {

/// A Lua script with its SHA1 computed once. Usually a static: the Client
/// keeps references to preloaded scripts and to those of pending calls.
class Script {
 public:
  /// Takes the Lua source and computes its SHA1.
  explicit Script(std::string body);

  /// The Lua source.
  const std::string& body() const noexcept { return body_; }
  /// Lower-case hex SHA1 of the body, as SCRIPT LOAD reports it.
  const std::string& sha1() const noexcept { return sha1_; }
  /// "EVALSHA" and the SHA1 as RESP bulk strings, encoded once: the start of
  /// every call after its array header.
  const std::string& evalsha_slots() const noexcept { return evalsha_slots_; }

 private:
  std::string body_;
  std::string sha1_;
  std::string evalsha_slots_;
};

/// `command` (one encoded RESP array) without its "*<count>\r\n" header.
std::string_view without_array_header(std::string_view command);
/// `verb` and `script` (EVAL and a body, or EVALSHA and a SHA1) as two RESP
/// bulk strings, to follow an array header.
std::string encode_slots(std::string_view verb, std::string_view script);

/// Lower-case hex SHA1 of `data`.
std::string sha1_hex(std::string_view data);

}  // namespace leasehold::redis
