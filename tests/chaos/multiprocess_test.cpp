// Three leasehold_member processes x five groups against one Redis for 20 s,
// with random step-downs and SIGKILL + respawn of leaders (same or new id).
// The checker then proves from their audit records that no two instances
// ever claimed a group at once, that elected and revoked alternate, and that
// every group led again within a stated bound after each disruption.
//
// The seed is fixed and printed; LEASEHOLD_CHAOS_SEED=<n> runs (or replays)
// another schedule.

#include "chaos/checker.hpp"
#include "chaos/fleet.hpp"

#include "support/redis_server.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>

namespace chaos = leasehold::chaos;
using namespace std::chrono_literals;

namespace {

constexpr auto kTtl = 1000ms;
constexpr auto kRetry = 250ms;
// Scheduling slack on a loaded 2-core CI machine (and under sanitizers).
constexpr auto kMargin = 400ms;
constexpr auto kRunFor = 20s;

chaos::Nanos ns(std::chrono::milliseconds ms) { return ms.count() * chaos::kNanosPerMs; }

std::uint64_t seed() {
  if (const char* env = std::getenv("LEASEHOLD_CHAOS_SEED")) return std::strtoull(env, nullptr, 10);
  return 20261202;  // fixed, so that CI's verdict belongs to the commit; explore with the variable
}

}  // namespace

TEST(MultiProcess, NoTwoLeadersAndEveryGroupLeadsAgainAfterStepDownsAndKills) {
  const std::uint64_t s = seed();
  std::cout << "seed " << s << " (replay: LEASEHOLD_CHAOS_SEED=" << s << ")\n";
  RecordProperty("seed", std::to_string(s));
  std::mt19937_64 rng(s);
  auto chance = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  auto between = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };

  leasehold::test::RedisServer server;
  const std::string dir = chaos::make_temp_dir("leasehold-multiprocess-");
  chaos::MemberFleet fleet({LEASEHOLD_MEMBER_BINARY, dir, {"g1", "g2", "g3", "g4"}, kTtl, kRetry});
  const auto groups = fleet.all_groups();
  for (int i = 0; i < 3; ++i) fleet.add(server.url());

  auto admin = server.admin();
  ASSERT_TRUE(fleet.wait_until_led(admin, 10s)) << "the groups never all had a leader";
  const chaos::Nanos from = chaos::now_ns();

  // One disruption at a time, each followed by its whole bound, so that
  // every leaderless gap belongs to exactly one of them.
  std::vector<chaos::Disruption> disruptions;
  int kills = 0, step_downs = 0;
  for (const auto end = std::chrono::steady_clock::now() + kRunFor; std::chrono::steady_clock::now() < end;) {
    fleet.wait(std::chrono::milliseconds(between(200, 600)));
    const std::string group = groups[static_cast<std::size_t>(between(0, static_cast<int>(groups.size()) - 1))];
    const auto holder = chaos::holders(admin, {group});
    const auto slot = holder.empty() ? std::nullopt : fleet.slot_of(holder[0]);
    if (!slot) continue;
    // The first two are one of each; then 40 % step-downs.
    const bool step_down = disruptions.size() < 2 ? disruptions.empty() : chance(0.4);
    const chaos::Nanos start = chaos::now_ns();
    if (step_down) {
      // A standby leads within a round trip of the release notice.
      fleet.step_down(*slot, group);
      disruptions.push_back({"step_down " + group, start, start, ns(kMargin)});
      ++step_downs;
    } else {
      // The lease expires at most ttl after the kill; a standby takes it then.
      fleet.kill(*slot);
      fleet.respawn(*slot, chance(0.5));
      disruptions.push_back({"kill " + holder[0], start, start, ns(kTtl + kMargin)});
      ++kills;
    }
    fleet.wait(std::chrono::milliseconds(disruptions.back().bound / chaos::kNanosPerMs));
  }
  const chaos::Nanos to = chaos::now_ns();

  const auto stop_problems = fleet.stop_all(kTtl * 2 + 3s);
  EXPECT_TRUE(fleet.crashes().empty()) << fmt::format("crashed:\n{}", fmt::join(fleet.crashes(), "\n"));
  EXPECT_TRUE(stop_problems.empty()) << fmt::format("{}", fmt::join(stop_problems, "\n"));
  EXPECT_GE(kills, 3);
  EXPECT_GE(step_downs, 1);

  const auto runs = fleet.load_runs();
  std::size_t claims = 0;
  for (const auto& run : runs) {
    for (const auto& problem : run.problems) ADD_FAILURE() << problem;
    for (const auto& [group, list] : run.claims) claims += list.size();
  }
  EXPECT_GT(claims, static_cast<std::size_t>(kills));

  for (const auto& o : chaos::find_overlaps(runs)) {
    ADD_FAILURE() << fmt::format("OVERLAP on {}: {} and {} both claimed it for {} ms from {}", o.group, o.first,
                                 o.second, chaos::format_ms(o.length), o.start);
  }

  const auto live = chaos::check_liveness(chaos::leaderless_gaps(runs, groups, from, to), disruptions, ns(kMargin));
  for (const auto& r : live.recoveries) {
    const auto& d = disruptions[r.disruption];
    std::cout << fmt::format("{:<22} leader again after {:>7} ms (bound {} ms), longest gap {} ms\n", d.kind,
                             chaos::format_ms(r.time_to_leader), chaos::format_ms(d.bound),
                             chaos::format_ms(r.longest_gap));
    EXPECT_TRUE(r.ok) << d.kind << ": group " << r.worst_group << " had no leader for "
                      << chaos::format_ms(r.time_to_leader) << " ms, bound " << chaos::format_ms(d.bound) << " ms";
  }
  for (const auto& [group, gap] : live.unexplained) {
    ADD_FAILURE() << fmt::format("group {} had no leader for {} ms from {} without a disruption", group,
                                 chaos::format_ms(gap.length()), gap.begin);
  }

  if (HasFailure()) {
    std::cout << "member output kept in " << dir << "\n";
  } else {
    std::filesystem::remove_all(dir);
  }
}
