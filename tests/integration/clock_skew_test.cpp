// ElectorOptions::clock_skew on real servers: a master M and a replica R
// whose wall clock runs kSkew ahead. Redis 7 replicates a lease's expiry as
// an absolute wall-clock instant (SET ... PXAT, PEXPIREAT), so R, once
// promoted, expires the lease kSkew early in real time. A leader cut off from
// M keeps trusting its lease until its local deadline, while a standby on R
// leads as soon as the key expires there: with clock_skew >= kSkew the cut-off
// leader's term ends first; without it both believe they lead for about
// kSkew.

#include "support/elector_fixture.hpp"
#include "support/fault_proxy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace integration_clock_skew_test {
namespace {

namespace lh = leasehold;
using lh::test::Fleet;
using lh::test::run_until;
using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

constexpr auto kSkew = 1000ms;
constexpr auto kTtl = 4000ms;

double ms(Steady::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

/// M, and R replicating it with its wall clock kSkew ahead.
struct MasterAndSkewedReplica {
  lh::test::RedisServer master{node({"repl-diskless-sync-delay 0"}, 0ms)};
  lh::test::RedisServer replica{
      node({"replicaof 127.0.0.1 " + std::to_string(master.port()), "repl-diskless-sync-delay 0"}, kSkew)};

  MasterAndSkewedReplica() {
    // Linked and acknowledging: a write reaches R before a test begins.
    auto admin = master.admin();
    admin.set("warm-up", "1");
    const auto deadline = Steady::now() + 15s;
    while (admin.call({"WAIT", "1", "1000"}).integer < 1) {
      if (Steady::now() > deadline) throw std::runtime_error("the replica does not acknowledge");
      std::this_thread::sleep_for(20ms);
    }
  }

  static lh::test::RedisServerOptions node(std::vector<std::string> config, std::chrono::milliseconds skew) {
    lh::test::RedisServerOptions options;
    options.extra_config = std::move(config);
    options.clock_skew = skew;
    return options;
  }
};

/// The first claim of one elector on "default", from its audit hook: when it
/// began and when is_leader() turned false (the earlier of its last deadline
/// and the withdrawal).
struct FirstClaim {
  std::optional<Steady::time_point> began;
  Steady::time_point deadline{};
  std::optional<Steady::time_point> ended;

  void record(const lh::LeaseAuditEvent& a) {
    if (a.group != "default" || ended) return;
    if (a.kind == lh::LeaseAuditEvent::Kind::ended) {
      ended = std::min(a.at, deadline);
      return;
    }
    if (a.kind == lh::LeaseAuditEvent::Kind::began) began = a.at;
    deadline = a.deadline;
  }
};

class ClockSkewFailover : public ::testing::Test {
 protected:
  FirstClaim leader;   // L, on M through the proxy, then cut off
  FirstClaim standby;  // B, on R once R is promoted
  Steady::time_point promoted_at{};
  std::optional<lh::RevokedEvent> leader_revoked;
  std::optional<lh::ElectedEvent> leader_elected;
  std::optional<lh::ElectedEvent> standby_elected;

  static lh::ElectorOptions options(std::string id, std::chrono::milliseconds clock_skew) {
    auto o = lh::test::fast_options(std::move(id));
    o.ttl = kTtl;
    o.clock_skew = clock_skew;
    return o;
  }

  // L leads on M, is cut off, R is promoted, B campaigns on R; runs until L's
  // term ended and B leads.
  void cut_off_and_promote(std::chrono::milliseconds clock_skew) {
    MasterAndSkewedReplica redis;
    // An existing counter: L leads at once, and R has it too (no guard on R).
    redis.master.admin().set("leader:default:token", "7");
    lh::test::FaultProxy proxy(redis.master.port());
    Fleet fleet(redis.master);

    // Only the deadline may end L's term: a renewal timing out first would
    // end it by luck of the heartbeat phase, and the deadline is the promise
    // under test. (The elector warns about this command_timeout.)
    auto through_proxy = proxy.options_for(redis.master.options());
    through_proxy.command_timeout = 30s;
    fleet.add(options("leader", clock_skew), through_proxy)
        .on_lease_audit([this](const lh::LeaseAuditEvent& a) { leader.record(a); });
    ASSERT_TRUE(fleet.wait_leading(0));
    auto replica_admin = redis.replica.admin();
    ASSERT_TRUE(run_until(fleet.io, [&] { return replica_admin.get("leader:default") == "leader"; }, 5s));
    // The expiry reached R as an absolute instant, which R's clock reads
    // kSkew later (R first: a renewal in between only widens the gap).
    const long long replica_pttl = replica_admin.pttl("leader:default");
    const long long master_pttl = redis.master.admin().pttl("leader:default");
    ASSERT_GT(master_pttl - replica_pttl, kSkew.count() / 2)
        << "R counts the lease from its own receipt (a relative TTL), so its clock does not matter";

    proxy.blackhole();
    // Every renewal L saw confirmed ran on M before the cut: R has it once it
    // acknowledged everything M wrote until now.
    ASSERT_GE(redis.master.admin(10s).call({"WAIT", "1", "5000"}).integer, 1);
    ASSERT_EQ(replica_admin.call({"REPLICAOF", "NO", "ONE"}).str, "OK");
    promoted_at = Steady::now();

    fleet.add(options("standby", clock_skew), redis.replica.options())
        .on_lease_audit([this](const lh::LeaseAuditEvent& a) { standby.record(a); });
    ASSERT_TRUE(run_until(fleet.io, [&] { return !fleet.events(0).revoked.empty() && fleet.leading_with_event(1); },
                          3 * kTtl));
    ASSERT_TRUE(leader.ended.has_value());
    ASSERT_TRUE(standby.began.has_value());
    leader_elected = fleet.events(0).elected.front();
    leader_revoked = fleet.events(0).revoked.front();
    standby_elected = fleet.events(1).elected.front();
    // Positive: both believed they led for this long.
    const double overlap = ms(*leader.ended - *standby.began);
    std::cout << "[ overlap  ] " << overlap << " ms (skew " << kSkew.count() << " ms, clock_skew "
              << clock_skew.count() << " ms)\n";
  }

  // What R's copy of the counter gives: a term right after L's, on time.
  void expect_the_counter_was_replicated() {
    EXPECT_EQ(leader_elected->token, 8);
    EXPECT_EQ(standby_elected->token, 9) << "R had the fencing counter: no empty-restart guard, tokens go on";
    EXPECT_LT(*standby.began - promoted_at, kTtl)
        << "the standby led when L's lease expired on R, not one guard ttl after the promotion";
  }
};

TEST_F(ClockSkewFailover, WithTheSkewInTheMarginTheCutOffLeadersTermEndsBeforeTheStandbyLeads) {
  ASSERT_NO_FATAL_FAILURE(cut_off_and_promote(kSkew));
  EXPECT_EQ(leader_revoked->reason, lh::RevokeReason::deadline_passed);
  EXPECT_LT(*leader.ended, *standby.began)
      << "the standby led " << ms(*leader.ended - *standby.began) << " ms before the cut-off leader's term ended";
  expect_the_counter_was_replicated();
}

// The overlap the option exists for: about kSkew - drift_margin (here ~950 ms),
// far more than the noise of two processes' timers.
TEST_F(ClockSkewFailover, WithoutTheSkewInTheMarginTheStandbyLeadsWhileTheCutOffLeaderStillBelieves) {
  ASSERT_NO_FATAL_FAILURE(cut_off_and_promote(0ms));
  EXPECT_EQ(leader_revoked->reason, lh::RevokeReason::deadline_passed);
  EXPECT_LT(*standby.began, *leader.ended) << "no overlap: the promoted replica did not expire the lease early";
  expect_the_counter_was_replicated();
}

}  // namespace
}  // namespace integration_clock_skew_test
