#include "lease_replies.hpp"

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

}  // namespace leasehold::detail
