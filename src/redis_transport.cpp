#include "redis_transport.hpp"

#include "group_state.hpp"
#include "lease_scripts.hpp"
#include "replica_wait.hpp"

namespace leasehold::detail {

RedisTransport::RedisTransport(Commands& commands, KeyLayout layout, std::string instance_id,
                               std::string incarnation, Settings settings)
    : commands_(commands),
      layout_(std::move(layout)),
      id_(std::move(instance_id)),
      incarnation_(std::move(incarnation)),
      ttl_ms_(std::to_string(settings.ttl.count())),
      acquire_(settings.empty_restart_guard ? guarded_acquire_script() : acquire_script()),
      take_over_acquire_(settings.empty_restart_guard ? guarded_acquire_script(true) : acquire_script(true)),
      settings_(settings) {
  commands_.preload(acquire_);
  if (settings.reclaim_on_restart) commands_.preload(take_over_acquire_);
  commands_.preload(renew_script());
  commands_.preload(release_script(settings.notices));
  commands_.preload(hand_over_script(settings.notices));
}

namespace {

// Only a lease taken or extended needs the replicas' word: a 1, or an array
// that starts with one.
bool lease_granted(const redis::Reply& reply) {
  if (reply.is_integer()) return reply.integer == 1;
  return reply.is_array() && !reply.elements.empty() && reply.elements[0].is_integer() &&
         reply.elements[0].integer == 1;
}

}  // namespace

void RedisTransport::send(GroupState& g, Command command, std::uint64_t seq, LeaseReplies& replies) {
  const bool confirming = settings_.confirm_replicas > 0 && command != Command::release;
  auto answer = [this, owner = owner_.lock(), g = &g, command, seq, r = &replies, confirming](
                    error_code ec, redis::Reply reply, redis::Client* via) {
    if (confirming && !ec && lease_granted(reply)) return confirm(*g, command, seq, *r, std::move(reply), via);
    r->on_lease_reply(*g, command, seq, ec, reply, Replicated::not_asked, Clock::now());
  };
  switch (command) {
    case Command::acquire: {
      const bool take_over = settings_.reclaim_on_restart && !g.first_acquire_answered;
      return commands_.eval(take_over ? take_over_acquire_ : acquire_, g.lease_arguments, g.key, std::move(answer));
    }
    // A renewal may wait out a slot migration or a shard failover on a
    // cluster (TRYAGAIN, CLUSTERDOWN) for as long as its lease lasts: only
    // a success extends the lease, and giving up earlier would demote a
    // leader whose lease still holds.
    case Command::renew:
      return commands_.eval(renew_script(), g.lease_arguments, g.key, std::move(answer), g.machine.deadline());
    case Command::release: {
      std::vector<std::string> keys{g.key, layout_.holder_key(g.name)};
      std::vector<std::string> args{id_, layout_.release_channel(g.name), incarnation_};
      if (const Bid* to = g.machine.hand_over_target()) {
        args.insert(args.end(), {to->id, to->incarnation, std::to_string(to->priority), ttl_ms_});
        return commands_.eval(hand_over_script(settings_.notices), std::move(keys), std::move(args), std::move(answer));
      }
      return commands_.eval(release_script(settings_.notices), std::move(keys), std::move(args), std::move(answer));
    }
    case Command::none: return;
  }
}

void RedisTransport::confirm(GroupState& g, Command command, std::uint64_t seq, LeaseReplies& replies,
                             redis::Reply reply, redis::Client* via) {
  if (via == nullptr) {
    return replies.on_lease_reply(g, command, seq, make_error_code(errc::not_connected), reply, Replicated::not_asked,
                                  Clock::now());
  }
  wait_for_replicas(*via, settings_.confirm_replicas, settings_.confirm_timeout,
                    [owner = owner_.lock(), g = &g, command, seq, r = &replies, reply = std::move(reply)](
                        error_code ec, bool enough, const redis::Reply& wait) {
                      if (ec) return r->on_lease_reply(*g, command, seq, ec, wait, Replicated::not_asked, Clock::now());
                      r->on_lease_reply(*g, command, seq, {}, reply,
                                        enough ? Replicated::enough : Replicated::too_few, Clock::now());
                    });
}

}  // namespace leasehold::detail
