#include "redis_transport.hpp"

#include "group_state.hpp"
#include "lease_scripts.hpp"

namespace leasehold::detail {

RedisTransport::RedisTransport(redis::Client& client, KeyLayout layout, std::string instance_id, Settings settings)
    : client_(client),
      layout_(std::move(layout)),
      id_(std::move(instance_id)),
      acquire_(settings.empty_restart_guard ? guarded_acquire_script() : acquire_script()),
      settings_(settings) {
  client_.preload(acquire_);
  client_.preload(renew_script());
  client_.preload(release_script());
}

namespace {

// Only a lease taken or extended needs the replicas' word.
bool lease_granted(Command command, const redis::Reply& reply) {
  if (command == Command::renew) return reply.is_integer() && reply.integer == 1;
  return reply.is_array() && !reply.elements.empty() && reply.elements[0].is_integer() &&
         reply.elements[0].integer == 1;
}

}  // namespace

void RedisTransport::send(GroupState& g, Command command, std::uint64_t seq, LeaseReplies& replies) {
  const bool confirming = settings_.confirm_replicas > 0 && command != Command::release;
  auto answer = [this, owner = owner_.lock(), g = &g, command, seq, r = &replies, confirming](error_code ec,
                                                                                               redis::Reply reply) {
    if (confirming && !ec && lease_granted(command, reply)) return confirm(*g, command, seq, *r, std::move(reply));
    r->on_lease_reply(*g, command, seq, ec, reply, Replicated::not_asked, Clock::now());
  };
  switch (command) {
    case Command::acquire: return client_.async_eval(acquire_, g.lease_arguments, std::move(answer));
    case Command::renew: return client_.async_eval(renew_script(), g.lease_arguments, std::move(answer));
    case Command::release:
      return client_.async_eval(release_script(), {g.key}, {id_, layout_.release_channel(g.name)},
                                std::move(answer));
    case Command::none: return;
  }
}

// WAIT counts the replicas that acknowledged every write of *this*
// connection: a WAIT that ran on a later connection (a reconnect in
// between) would vouch for nothing, so it counts as too few.
void RedisTransport::confirm(GroupState& g, Command command, std::uint64_t seq, LeaseReplies& replies,
                             redis::Reply reply) {
  const std::uint64_t connection = client_.stats().connects;
  redis::Request wait{"WAIT", std::to_string(settings_.confirm_replicas),
                      std::to_string(settings_.confirm_timeout.count())};
  client_.async_exec(std::move(wait), [this, owner = owner_.lock(), g = &g, command, seq, r = &replies,
                                       reply = std::move(reply), connection](error_code ec,
                                                                             std::vector<redis::Reply> acks) {
    if (!ec && (acks.size() != 1 || acks[0].is_error())) {
      ec = acks.size() == 1 ? make_error_code(classify_server_error(acks[0].str))
                            : make_error_code(errc::unexpected_reply);
    }
    if (ec) return r->on_lease_reply(*g, command, seq, ec, acks.empty() ? redis::Reply{} : acks[0],
                                     Replicated::not_asked, Clock::now());
    const bool same_connection = client_.stats().connects == connection;
    const bool enough = same_connection && acks[0].is_integer() && acks[0].integer >= settings_.confirm_replicas;
    r->on_lease_reply(*g, command, seq, {}, reply, enough ? Replicated::enough : Replicated::too_few, Clock::now());
  });
}

}  // namespace leasehold::detail
