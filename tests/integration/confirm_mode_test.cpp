// Confirm mode (ElectorOptions::confirm_replicas): a lease counts only when
// enough replicas acknowledged it (WAIT after each acquire and renewal), on
// a real master with two real replicas; a replica frozen with SIGSTOP stops
// acknowledging.

#include "support/elector_fixture.hpp"

#include <leasehold/scheduler.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <thread>
#include <string>
#include <vector>

namespace integration_confirm_mode_test {
namespace {

namespace lh = leasehold;
using lh::test::Fleet;
using lh::test::run_until;
using namespace std::chrono_literals;

// Redis waits 5 s before a full sync by default: no reason to here.
lh::test::RedisServerOptions without_sync_delay() {
  lh::test::RedisServerOptions options;
  options.extra_config = {"repl-diskless-sync-delay 0"};
  return options;
}

/// One master and two replicas, both acknowledging writes.
struct Replicated {
  lh::test::RedisServer master;
  std::vector<std::unique_ptr<lh::test::RedisServer>> replicas;

  Replicated() : master(without_sync_delay()) {
    for (int i = 0; i < 2; ++i) {
      lh::test::RedisServerOptions options;
      options.extra_config = {"replicaof 127.0.0.1 " + std::to_string(master.port()),
                              "repl-diskless-sync-delay 0"};
      replicas.push_back(std::make_unique<lh::test::RedisServer>(options));
    }
    auto admin = master.admin();
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (admin.call({"INFO", "replication"}).str.find("connected_slaves:2") == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("replicas did not connect");
      std::this_thread::sleep_for(20ms);
    }
    // Linked is not yet acknowledging: a replica fresh from its first sync
    // may miss a WAIT or two. Both acknowledge a write before a test begins.
    admin.set("warm-up", "1");
    while (admin.call({"WAIT", "2", "1000"}).integer < 2) {
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("replicas do not acknowledge");
    }
  }
};

lh::ElectorOptions confirming(std::string id, int replicas) {
  auto o = lh::test::fast_options(std::move(id));
  o.confirm_replicas = replicas;
  o.confirm_timeout = 200ms;
  o.empty_restart_guard = false;  // every test here starts from a fresh group
  return o;
}

TEST(ConfirmMode, ALeaseBothReplicasAcknowledgedLeadsAndIsOnTheReplicas) {
  Replicated redis;
  Fleet fleet(redis.master);
  fleet.add(confirming("confirmed", 2));
  ASSERT_TRUE(fleet.wait_leading(0));
  for (const auto& error : fleet.events(0).errors) ADD_FAILURE() << error.group << ": " << error.error.message();
  for (auto& replica : redis.replicas) EXPECT_EQ(replica->admin().get("leader:default"), "confirmed");
}

// A replica that does not acknowledge: the acquisition falls short and is
// reported; the instance keeps the key without leading and renews it until
// the replica is back, then leads.
TEST(ConfirmMode, AnAcquisitionTooFewReplicasAcknowledgedIsKeptUnledReportedAndLedOnceAcknowledged) {
  Replicated redis;
  redis.replicas[1]->pause();
  Fleet fleet(redis.master);
  auto& e = fleet.add(confirming("short", 2));
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).has_error(lh::errc::not_confirmed); }));
  const lh::ErrorEvent* error = fleet.events(0).first_error(lh::errc::not_confirmed);
  EXPECT_EQ(error->group, "default");
  EXPECT_NE(error->error.message().find("fewer than 2 replica(s) acknowledged the acquire within 200 ms"),
            std::string::npos)
      << error->error.message();
  lh::test::run_for(fleet.io, 500ms);
  EXPECT_FALSE(e.is_leader());
  EXPECT_TRUE(fleet.events(0).elected.empty());
  EXPECT_FALSE(e.health().ready);
  EXPECT_GE(fleet.metrics(0).groups.at(0).acquire_errors, 1u) << "a short acquisition counts as an acquire error";

  redis.replicas[1]->resume();
  ASSERT_TRUE(fleet.wait_leading(0, "default", 15s));
}

// One shortfall, one report: an acquire refused meanwhile (someone else
// holds the lease) says nothing of the replicas and does not end it.
TEST(ConfirmMode, AShortfallIsReportedOnceWhileAcquiresAreRefusedInBetween) {
  Replicated redis;
  redis.replicas[1]->pause();
  Fleet fleet(redis.master);
  fleet.add(confirming("short", 2));
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).has_error(lh::errc::not_confirmed); }));
  redis.master.admin().call({"SET", "leader:default", "someone-else", "PX", "700"});
  const auto attempts_before = fleet.metrics(0).groups.at(0).acquire_attempts;
  // The claim's renewal is refused, acquires too while the foreign key
  // lasts; then the key is taken again, short again.
  lh::test::run_for(fleet.io, 2s);
  EXPECT_GE(fleet.metrics(0).groups.at(0).acquire_attempts, attempts_before + 2);
  std::size_t reports = 0;
  for (const auto& error : fleet.events(0).errors) reports += error.error.code == lh::errc::not_confirmed;
  EXPECT_EQ(reports, 1u);
  redis.replicas[1]->resume();
}

// No replica at all (a shard whose replicas are gone): the first claimant
// keeps the key unled, the others see it held and wait quietly. One token is
// spent, the holder does not change, each shortfall is reported once; a
// replica that joins later lets the claimant lead on that token.
TEST(ConfirmMode, WithoutAnyReplicaTheGroupDoesNotFlapOrSpendTokens) {
  lh::test::RedisServer master(without_sync_delay());
  Fleet fleet(master);
  fleet.add(confirming("a", 1));
  fleet.add(confirming("b", 1));
  ASSERT_TRUE(run_until(fleet.io, [&] {
    return fleet.events(0).has_error(lh::errc::not_confirmed) || fleet.events(1).has_error(lh::errc::not_confirmed);
  }, 10s));
  lh::test::run_for(fleet.io, 3s);  // ten retry intervals
  EXPECT_TRUE(fleet.leaders().empty());
  EXPECT_EQ(master.admin().get("leader:default:token"), "1") << "a token spent per round";
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_LE(fleet.events(i).leader_changed.size(), 1u) << "elector " << i << " saw the holder change";
    std::size_t reports = 0;
    for (const auto& error : fleet.events(i).errors) reports += error.error.code == lh::errc::not_confirmed;
    EXPECT_LE(reports, 1u) << "elector " << i;
  }
  const auto claimant = master.admin().get("leader:default");
  ASSERT_TRUE(claimant);

  lh::test::RedisServerOptions replica_options;
  replica_options.extra_config = {"replicaof 127.0.0.1 " + std::to_string(master.port()),
                                  "repl-diskless-sync-delay 0"};
  lh::test::RedisServer replica(replica_options);
  const auto leader = fleet.wait_single_leader("default", 20s);
  ASSERT_TRUE(leader);
  EXPECT_EQ(fleet.at(*leader).instance_id(), *claimant);
  ASSERT_EQ(fleet.events(*leader).elected.size(), 1u);
  EXPECT_EQ(fleet.events(*leader).elected.front().token, 1) << "the claim's token";
}

// A leader whose renewals fall short keeps its term only until the deadline
// of its last confirmed renewal, then demotes; it leads again (a new term)
// once the replica acknowledges again.
TEST(ConfirmMode, ALeaderWhoseRenewalsFallShortDemotesAtItsDeadlineAndLeadsAgainAfter) {
  Replicated redis;
  Fleet fleet(redis.master);
  auto& e = fleet.add(confirming("leader", 2));
  ASSERT_TRUE(fleet.wait_leading(0));
  redis.replicas[0]->pause();
  ASSERT_TRUE(run_until(fleet.io, [&] { return !fleet.events(0).revoked.empty(); }, 15s));
  EXPECT_EQ(fleet.events(0).revoked.front().reason, lh::RevokeReason::deadline_passed)
      << "renewals were answered, so only the deadline ends the term";
  EXPECT_TRUE(fleet.events(0).has_error(lh::errc::not_confirmed));
  EXPECT_FALSE(e.is_leader());
  EXPECT_GE(fleet.metrics(0).groups.at(0).renewals_failed, 1u) << "a short renewal counts as a failed renewal";
  redis.replicas[0]->resume();
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).elected.size() == 2; }, 15s));
  EXPECT_GT(fleet.events(0).elected.back().token, fleet.events(0).elected.front().token);
}

// N = 1 of 2: one frozen replica does not matter.
TEST(ConfirmMode, OneOfTwoReplicasIsEnoughWhenOneIsAsked) {
  Replicated redis;
  redis.replicas[0]->pause();
  Fleet fleet(redis.master);
  fleet.add(confirming("one", 1));
  ASSERT_TRUE(fleet.wait_leading(0));
  EXPECT_FALSE(fleet.events(0).has_error(lh::errc::not_confirmed));
  redis.replicas[0]->resume();
}

// Once per tick in confirm mode: a tick whose record too few replicas have is
// not run (a failover could lose the record and run the tick again). While a
// replica is frozen, the leader's remaining term runs no tick; after it
// resumes, ticks run again.
TEST(ConfirmMode, ATickWhoseRecordTooFewReplicasAcknowledgedIsNotRun) {
  Replicated redis;
  Fleet fleet(redis.master);
  auto& e = fleet.add(confirming("ticker", 2));
  std::vector<std::chrono::steady_clock::time_point> ran;
  auto schedule = lh::every(e, "default", 100ms, [&] { ran.push_back(std::chrono::steady_clock::now()); },
                            {.once_per_tick = true, .misfire = lh::Misfire::skip});
  ASSERT_TRUE(run_until(fleet.io, [&] { return ran.size() >= 3; }, 15s));
  redis.replicas[0]->pause();
  const auto paused_at = std::chrono::steady_clock::now();
  // The term lasts until its deadline (up to a ttl): ticks come due meanwhile.
  ASSERT_TRUE(run_until(fleet.io, [&] { return !fleet.events(0).revoked.empty(); }, 15s));
  const auto claims_settled = paused_at + 300ms;  // a claim confirmed just before the pause may still run
  for (const auto at : ran) EXPECT_LT(at, claims_settled) << "a tick ran on an unconfirmed record";
  redis.replicas[0]->resume();
  const auto resumed_count = ran.size();
  EXPECT_TRUE(run_until(fleet.io, [&] { return ran.size() >= resumed_count + 3; }, 15s));
  schedule.cancel();
}

}  // namespace
}  // namespace integration_confirm_mode_test
