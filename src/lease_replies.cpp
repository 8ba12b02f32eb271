#include "lease_replies.hpp"

#include <charconv>

namespace leasehold::detail {

std::optional<AcquireReply> parse_acquire_reply(const redis::Reply& reply, std::string_view instance_id) {
  if (!reply.is_array() || reply.elements.size() != 4) return std::nullopt;
  const auto& e = reply.elements;
  if (!e[0].is_integer() || !e[1].is_string() || !e[2].is_integer() || !e[3].is_integer()) {
    return std::nullopt;
  }
  AcquireReply parsed{e[0].integer == 1, e[1].str, e[2].integer, e[3].integer};
  if (parsed.acquired && parsed.holder != instance_id) return std::nullopt;
  return parsed;
}

std::optional<bool> parse_renew_reply(const redis::Reply& reply) {
  if (!reply.is_integer()) return std::nullopt;
  return reply.integer == 1;
}

bool is_release_reply(const redis::Reply& reply) { return reply.is_integer(); }

error_code parse_leader_info(const std::vector<redis::Reply>& replies, LeaderInfo& info) {
  if (replies.size() != 3) return make_error_code(errc::unexpected_reply);
  for (const auto& reply : replies) {
    if (reply.is_error()) {
      info.server_error = reply.str;
      return make_error_code(classify_server_error(reply.str));
    }
  }
  const redis::Reply& holder = replies[0];
  const redis::Reply& pttl = replies[1];
  const redis::Reply& token = replies[2];
  if (holder.is_string()) info.holder = holder.str;
  // PTTL: -2 no key (nobody holds it), -1 a key without TTL.
  if (pttl.is_integer() && pttl.integer >= -1) info.remaining = std::chrono::milliseconds(pttl.integer);
  if (token.is_string()) {
    const char* end = token.str.data() + token.str.size();
    if (std::from_chars(token.str.data(), end, info.token).ptr != end) return make_error_code(errc::unexpected_reply);
  }
  return {};
}

}  // namespace leasehold::detail
