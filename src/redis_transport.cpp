#include "redis_transport.hpp"

#include "group_state.hpp"
#include "lease_scripts.hpp"

namespace leasehold::detail {

RedisTransport::RedisTransport(redis::Client& client, KeyLayout layout, std::string instance_id, bool guarded)
    : client_(client),
      layout_(std::move(layout)),
      id_(std::move(instance_id)),
      acquire_(guarded ? guarded_acquire_script() : acquire_script()) {
  client_.preload(acquire_);
  client_.preload(renew_script());
  client_.preload(release_script());
}

void RedisTransport::send(GroupState& g, Command command, std::uint64_t seq, LeaseReplies& replies) {
  auto answer = [owner = owner_.lock(), g = &g, command, seq, r = &replies](error_code ec, redis::Reply reply) {
    r->on_lease_reply(*g, command, seq, ec, reply, Clock::now());
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

}  // namespace leasehold::detail
