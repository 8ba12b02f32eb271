#pragma once
// Reading the lease scripts' replies (see lease_scripts.hpp). The elector and
// the reply fuzzer share this, so that the fuzzer feeds the state machine
// exactly what the elector would.

#include <leasehold/impl/lease/lease_machine.hpp>
#include <leasehold/leader_info.hpp>
#include <leasehold/error.hpp>
#include <leasehold/redis/reply.hpp>

#include <optional>
#include <string_view>
#include <vector>

namespace leasehold::detail {

/// The acquire script's {acquired, holder, pttl, token[, rival incarnation]}.
/// nullopt for any other shape, for a claim of acquisition on behalf of an
/// id that is not `instance_id` (a reply that could only make us lead by
/// mistake), and for a rival named anywhere but in a refusal under our id.
std::optional<AcquireReply> parse_acquire_reply(const redis::Reply& reply, std::string_view instance_id);

/// The renew script's 1 or 0, {0, rival} or {1, bid id, bid incarnation,
/// bid priority}; nullopt for any other shape.
std::optional<RenewReply> parse_renew_reply(const redis::Reply& reply);

/// The release script's reply is an integer (1 released, 0 not ours); false
/// for any other shape.
bool is_release_reply(const redis::Reply& reply);

/// leader_of()'s GET lease, PTTL lease, GET token: fills `info` and returns
/// the first server error among them (errc::unexpected_reply for any other
/// shape).
error_code parse_leader_info(const std::vector<redis::Reply>& replies, LeaderInfo& info);

}  // namespace leasehold::detail
