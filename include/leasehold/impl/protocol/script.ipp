#include <leasehold/redis/codec.hpp>
#include <leasehold/redis/script.hpp>

#include <boost/uuid/detail/sha1.hpp>

#include <fmt/format.h>

#include <array>

namespace leasehold::redis {

std::string sha1_hex(std::string_view data) {
  boost::uuids::detail::sha1 hasher;
  hasher.process_bytes(data.data(), data.size());
  boost::uuids::detail::sha1::digest_type digest;
  hasher.get_digest(digest);
  std::string hex;
  hex.reserve(40);
  for (unsigned word : digest) hex += fmt::format("{:08x}", word);
  return hex;
}

std::string_view without_array_header(std::string_view command) {
  return command.substr(command.find("\r\n") + 2);
}

std::string encode_slots(std::string_view verb, std::string_view script) {
  const std::array<std::string_view, 2> slots{verb, script};
  std::string command;
  encode_command(command, slots);
  return std::string(without_array_header(command));
}

Script::Script(std::string body)
    : body_(std::move(body)), sha1_(sha1_hex(body_)), evalsha_slots_(encode_slots("EVALSHA", sha1_)) {}

}  // namespace leasehold::redis
