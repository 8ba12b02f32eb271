#include "failover/steady_load.hpp"

#include "common/redis_info.hpp"
#include "failover/fleet.hpp"
#include "support/redis_server.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <set>
#include <stdexcept>
#include <thread>

namespace leasehold::bench {

LoadResult measure_steady_load(const LoadConfig& config) {
  test::RedisServer server;
  auto admin = server.admin();
  const std::string dir = fmt::format("{}/load-{}", config.dir, config.standbys);
  std::filesystem::create_directories(dir);
  Fleet fleet(FleetConfig{config.member_binary, server.url(), dir, "default", config.ttl, config.heartbeat,
                          config.retry, {}});
  for (int i = 0; i < config.standbys + 1; ++i) fleet.spawn();
  if (!fleet.wait_until([&] { return fleet.leader() != nullptr; }, config.ttl * 3 + std::chrono::seconds(5))) {
    throw std::runtime_error("load: no leader emerged");
  }
  // Two ttls: every standby has seen the leader's lease and is in its cycle.
  std::this_thread::sleep_for(config.ttl * 2);

  const auto stats = [&] { return parse_commandstats(admin.call({"INFO", "commandstats"}).str); };
  const auto before = stats();
  const std::int64_t t0 = now_ns();
  std::this_thread::sleep_for(config.window);
  const std::int64_t t1 = now_ns();
  const auto after = stats();
  fleet.poll();

  LoadResult r;
  r.standbys = config.standbys;
  r.seconds = static_cast<double>(t1 - t0) / 1e9;
  const auto d = diff(before, after);
  const auto per_s = [&](std::string_view name) { return static_cast<double>(calls(d, name)) / r.seconds; };
  r.evalsha_per_s = per_s("evalsha");
  r.renewals_per_s = per_s("pexpire");
  r.standby_acquires_per_s = per_s("pttl");
  r.ping_per_s = per_s("ping");
  double other = 0, all = 0;
  for (const auto& [name, n] : d) {
    if (name == "info") continue;  // the benchmark's own
    all += static_cast<double>(n);
    // What runs inside the scripts (the only place members send these).
    static const std::set<std::string> known{"evalsha", "ping", "get", "mget", "pexpire", "pttl", "hget", "hmget"};
    if (!known.count(name)) other += static_cast<double>(n);
  }
  r.other_per_s = other / r.seconds;
  r.redis_commands_per_s = all / r.seconds;
  r.client_commands_per_s = r.evalsha_per_s + r.ping_per_s + r.other_per_s;

  std::set<std::string> leaders;
  std::uint64_t extended = 0;
  for (const auto& m : fleet.members()) {
    for (const auto& e : m->log.events()) {
      if (e.at < t0 || e.at > t1) continue;
      if (e.kind == MemberEvent::Kind::extended) ++extended;
      if (e.kind == MemberEvent::Kind::began || e.kind == MemberEvent::Kind::extended) leaders.insert(m->id);
    }
  }
  r.audit_renewals_per_s = static_cast<double>(extended) / r.seconds;
  r.leaders_seen = static_cast<int>(leaders.size());
  fleet.stop_all();
  return r;
}

}  // namespace leasehold::bench
