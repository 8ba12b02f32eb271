#include <leasehold/redis/script.hpp>

#include <boost/uuid/detail/sha1.hpp>

#include <fmt/format.h>

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

Script::Script(std::string body) : body_(std::move(body)), sha1_(sha1_hex(body_)) {}

}  // namespace leasehold::redis
