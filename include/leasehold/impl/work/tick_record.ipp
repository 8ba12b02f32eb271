#include <leasehold/impl/work/tick_record.hpp>

#include <leasehold/impl/work/confirmed_eval.hpp>

#include <leasehold/log.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

namespace leasehold::detail {

namespace asio = boost::asio;

namespace {

// KEYS: lease key, tick record hash. ARGV: instance id, schedule, tick (ms
// since the epoch), "1" for a catch-up claim. Replies 1 run, 0 already ran,
// -1 not the holder, -2 no history.
const redis::Script& claim_script() {
  static const redis::Script script(R"lua(if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
local last = redis.call('HGET', KEYS[2], ARGV[2])
if last then
  if tonumber(last) >= tonumber(ARGV[3]) then
    return 0
  end
elseif ARGV[4] == '1' then
  return -2
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return 1
)lua");
  return script;
}

}  // namespace

std::string_view to_string(TickClaim claim) noexcept {
  switch (claim) {
    case TickClaim::run: return "run";
    case TickClaim::already_ran: return "already ran";
    case TickClaim::not_holder: return "not the lease holder";
    case TickClaim::no_history: return "no history";
    case TickClaim::failed: return "failed";
    case TickClaim::not_confirmed: return "too few replicas acknowledged the claim";
  }
  return "unknown";
}

asio::awaitable<TickClaim> claim_tick(Elector& elector, std::string group, std::string schedule, SysTime tick,
                                      bool catch_up) {
  const auto tick_ms = std::chrono::duration_cast<std::chrono::milliseconds>(tick.time_since_epoch()).count();
  const KeyLayout& layout = elector.key_layout();
  std::vector<std::string> keys{layout.lease_key(group), layout.tick_record_key(group)};
  std::vector<std::string> args{elector.instance_id(), schedule, std::to_string(tick_ms), catch_up ? "1" : "0"};
  // An empty slot: the caller's cancellation must not reach the command.
  auto token = asio::bind_cancellation_slot(asio::cancellation_slot(), asio::as_tuple(asio::use_awaitable));
  auto [ec, reply, confirmed] =
      co_await ConfirmedEval::run(elector, claim_script(), std::move(keys), std::move(args), std::move(token));
  if (ec || !reply.is_integer()) {
    log(LogLevel::warning, fmt::format("leasehold: tick claim for \"{}\" in group \"{}\" failed: {}", schedule,
                                       group, ec ? ec.message() : reply.debug_string()));
    co_return TickClaim::failed;
  }
  switch (reply.integer) {
    case 1:
      // Confirm mode: a record too few replicas have could vanish in a
      // failover and the tick run again there; not running it is the lesser
      // harm (at most once).
      if (!confirmed) {
        log(LogLevel::warning,
            fmt::format("leasehold: tick claim for \"{}\" in group \"{}\": too few replicas acknowledged it; "
                        "the tick is skipped",
                        schedule, group));
        co_return TickClaim::not_confirmed;
      }
      co_return TickClaim::run;
    case 0: co_return TickClaim::already_ran;
    case -1: co_return TickClaim::not_holder;
    case -2: co_return TickClaim::no_history;
    default: co_return TickClaim::failed;
  }
}

}  // namespace leasehold::detail
