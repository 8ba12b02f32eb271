#include <leasehold/impl/lease/lease_replies.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>

namespace leasehold::detail {

std::optional<AcquireReply> parse_acquire_reply(const redis::Reply& reply, std::string_view instance_id) {
  if (!reply.is_array() || reply.elements.size() < 4 || reply.elements.size() > 5) return std::nullopt;
  const auto& e = reply.elements;
  if (!e[0].is_integer() || !e[1].is_string() || !e[2].is_integer() || !e[3].is_integer()) {
    return std::nullopt;
  }
  // A PTTL beyond a year is a foreign key's (or a hostile server's): read as
  // a year, which every use caps far lower, so that instants computed from
  // it cannot overflow (steady_clock counts nanoseconds in 64 bits).
  constexpr std::int64_t max_pttl_ms = std::int64_t{365} * 24 * 3600 * 1000;
  AcquireReply parsed{e[0].integer == 1, e[1].str, std::min(e[2].integer, max_pttl_ms), e[3].integer};
  if (parsed.acquired && parsed.holder != instance_id) return std::nullopt;
  if (e.size() == 5) {
    // Only a refusal under our own id names a rival incarnation; only the
    // guard's empty holder, why it has no data marker.
    if (parsed.acquired || !e[4].is_string() || e[4].str.empty()) return std::nullopt;
    if (parsed.holder.empty()) {
      parsed.unmarked = e[4].str;
    } else if (parsed.holder == instance_id) {
      parsed.rival = e[4].str;
    } else {
      return std::nullopt;
    }
  }
  return parsed;
}

std::optional<RenewReply> parse_renew_reply(const redis::Reply& reply) {
  if (reply.is_integer()) return RenewReply{.renewed = reply.integer == 1};
  if (!reply.is_array() || reply.elements.size() < 2 || !reply.elements[0].is_integer()) return std::nullopt;
  const auto& e = reply.elements;
  RenewReply parsed{.renewed = e[0].integer == 1};
  if (!parsed.renewed && e.size() == 2 && e[1].is_string() && !e[1].str.empty()) {
    parsed.rival = e[1].str;
    return parsed;
  }
  if (parsed.renewed && e.size() == 4 && e[1].is_string() && e[2].is_string() && !e[2].str.empty() &&
      e[3].is_integer() && e[3].integer >= std::numeric_limits<int>::min() &&
      e[3].integer <= std::numeric_limits<int>::max()) {
    parsed.bid = Bid{e[1].str, e[2].str, static_cast<int>(e[3].integer)};
    return parsed;
  }
  return std::nullopt;
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
