// Two live electors configured with one instance_id (a copied config): the
// lease scripts tell them apart by incarnation, so at most one ever leads;
// both report the duplicate (error event, log, metric, health not ready)
// within a few heartbeats. A restarted process with a stable id is not a
// duplicate: it waits out its predecessor's lease quietly, then leads.

#include <leasehold/leasehold.hpp>

#include "support/elector_fixture.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace integration_duplicate_id_test {
namespace {

namespace lh = leasehold;
using lh::test::Fleet;
using lh::test::run_until;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

lh::ElectorOptions twin(std::string id = "twin") {
  auto o = lh::test::fast_options(std::move(id));
  o.ttl = 3000ms;  // heartbeat 1 s
  o.empty_restart_guard = false;
  return o;
}

std::uint64_t duplicate_reports(Fleet& fleet, std::size_t i) {
  const lh::Metrics metrics = fleet.metrics(i);  // group() points into it
  const auto* g = metrics.group("default");
  return g == nullptr ? 0 : g->duplicate_ids;
}

// The whole file; empty if it does not exist (yet).
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t count_lines(const std::string& text, const std::string& start) {
  std::size_t n = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) n += line.rfind(start, 0) == 0 ? 1 : 0;
  return n;
}

TEST(DuplicateId, TwoElectorsWithOneIdNeverBothLeadAndBothReportIt) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  fleet.add(twin());
  ASSERT_TRUE(fleet.wait_leading(0));
  const auto second_started = Clock::now();
  fleet.add(twin());

  // Both hear of it: the standby when it sees the leader renew under their
  // shared id, the leader when it finds the standby's bid.
  bool both_leading = false;
  ASSERT_TRUE(run_until(fleet.io, [&] {
    both_leading = both_leading || (fleet.at(0).is_leader() && fleet.at(1).is_leader());
    return fleet.events(0).has_error(lh::errc::duplicate_instance_id) &&
           fleet.events(1).has_error(lh::errc::duplicate_instance_id);
  }, 10s)) << "the duplicate id was not reported by both";
  std::printf("both reported the duplicate %lld ms after the second started (heartbeat 1000 ms)\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() -
                                                                                           second_started).count()));
  for (std::size_t i : {0u, 1u}) {
    const lh::Health h = fleet.at(i).health();
    EXPECT_FALSE(h.ready) << i;
    EXPECT_EQ(h.duplicate_id_groups, 1u) << i;
    EXPECT_NE(h.reason.find("instance id"), std::string::npos) << h.reason;
    EXPECT_EQ(duplicate_reports(fleet, i), 1u) << i << ": reported once per episode";
  }
  const auto* error = fleet.events(1).first_error(lh::errc::duplicate_instance_id);
  EXPECT_NE(error->error.message().find("twin"), std::string::npos) << error->error.message();

  // Several heartbeats on: still the first leads, the second never has.
  EXPECT_TRUE(fleet.run_checking_single_leader(3s));
  EXPECT_FALSE(both_leading);
  EXPECT_TRUE(fleet.at(0).is_leader());
  EXPECT_EQ(fleet.events(0).elected.size(), 1u);
  EXPECT_TRUE(fleet.events(1).elected.empty());
  EXPECT_EQ(duplicate_reports(fleet, 0), 1u);

  // The second goes away: its bid expires within a ttl, and the leader is
  // ready again.
  fleet.crash(1);
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.at(0).health().ready; }, 10s)) << fleet.at(0).health().reason;
  EXPECT_TRUE(fleet.at(0).is_leader());
}

TEST(DuplicateId, ARestartedProcessWithAStableIdWaitsOutItsPredecessorsLeaseWithoutAlarm) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  fleet.add(twin("stable-id"));
  ASSERT_TRUE(fleet.wait_leading(0));
  const auto token = fleet.events(0).elected.back().token;
  fleet.crash(0);  // no release: its lease runs out by itself
  auto admin = server.admin();
  const auto restart = Clock::now();
  auto& again = fleet.add(twin("stable-id"));
  ASSERT_TRUE(fleet.wait_leading(1, "default", 10s));
  const auto waited = Clock::now() - restart;
  // A duplicate could still be alive: the restarted process does not take
  // a lease another incarnation of its id holds, so it led only after the
  // old lease expired (at most one ttl after the crash).
  EXPECT_GE(waited, 1000ms) << "took over a lease its predecessor still held";
  EXPECT_TRUE(again.is_leader());
  EXPECT_GT(fleet.events(1).elected.back().token, token);
  EXPECT_FALSE(fleet.events(1).has_error(lh::errc::duplicate_instance_id)) << "a dead predecessor is no duplicate";
  EXPECT_EQ(duplicate_reports(fleet, 1), 0u);
  EXPECT_TRUE(again.health().ready) << again.health().reason;
}

TEST(DuplicateId, TwoProcessesStartedWithOneIdLeadOneAtATimeAndBothReportIt) {
  lh::test::RedisServer server;
  auto admin = server.admin();
  const std::string dir = ::testing::TempDir();
  const std::string a_out = dir + "/dup-a.out", b_out = dir + "/dup-b.out";
  std::remove(a_out.c_str());
  std::remove(b_out.c_str());
  auto member = [&](const std::string& out) {
    return lh::test::Process({LEASEHOLD_MEMBER_BINARY, "--url", server.url(), "--id", "copied-config", "--ttl",
                              "3000", "--retry", "300", "--empty-restart-guard", "off", "--out", out},
                             out + ".log");
  };
  auto a = member(a_out);
  auto leads = [&] { return admin.get("leader:default") == "copied-config"; };
  const auto bound = [](auto done, std::chrono::milliseconds limit) {
    for (const auto end = Clock::now() + limit; Clock::now() < end; std::this_thread::sleep_for(50ms)) {
      if (done()) return true;
    }
    return done();
  };
  ASSERT_TRUE(bound(leads, 10s));
  ASSERT_TRUE(bound([&] { return count_lines(slurp(a_out), "elected default") == 1; }, 5s));
  auto b = member(b_out);

  const std::string code = std::to_string(static_cast<int>(lh::errc::duplicate_instance_id));
  const std::string reported = "error default " + code + " ";
  ASSERT_TRUE(bound([&] {
    return count_lines(slurp(a_out), reported) == 1 && count_lines(slurp(b_out), reported) == 1;
  }, 15s)) << "a:\n" << slurp(a_out) << "\nb:\n" << slurp(b_out);
  std::this_thread::sleep_for(3s);  // three more heartbeats
  EXPECT_EQ(count_lines(slurp(a_out), "elected default"), 1u);
  EXPECT_EQ(count_lines(slurp(a_out), "revoked default"), 0u);
  EXPECT_EQ(count_lines(slurp(b_out), "elected default"), 0u) << "both claimed one lease";
  EXPECT_EQ(count_lines(slurp(a_out), reported), 1u) << "reported once per episode";

  // The leader stops gracefully: its release lets the other take over.
  a.signal(SIGTERM);
  ASSERT_TRUE(a.wait_exit(10s).has_value());
  ASSERT_TRUE(bound([&] { return count_lines(slurp(b_out), "elected default") == 1; }, 10s)) << slurp(b_out);
  b.signal(SIGTERM);
  EXPECT_TRUE(b.wait_exit(10s).has_value());
}

TEST(DuplicateId, WithReclaimOnRestartARestartedProcessTakesItsLeaseBackAtOnce) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  auto options = twin("stateful-0");
  options.ttl = 10s;  // so that "at once" is clearly not "after expiry"
  options.reclaim_on_restart = true;
  fleet.add(options);
  ASSERT_TRUE(fleet.wait_leading(0));
  const auto token = fleet.events(0).elected.back().token;
  fleet.crash(0);
  const auto restart = Clock::now();
  auto& again = fleet.add(options);
  ASSERT_TRUE(fleet.wait_leading(1, "default", 5s)) << "the restarted instance must not wait out its own lease";
  EXPECT_LT(Clock::now() - restart, 5s);
  EXPECT_GT(fleet.events(1).elected.back().token, token) << "a new term";
  EXPECT_FALSE(fleet.events(1).has_error(lh::errc::duplicate_instance_id));
  EXPECT_TRUE(again.health().ready) << again.health().reason;
}

TEST(DuplicateId, WithReclaimOnRestartALiveDuplicateIsDemotedOnceAndReportedButNeverFlaps) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  auto options = twin("stateful-0");
  options.reclaim_on_restart = true;
  fleet.add(options);
  ASSERT_TRUE(fleet.wait_leading(0));
  fleet.add(options);  // trusted to be a restart, but the first is alive
  ASSERT_TRUE(fleet.wait_leading(1, "default", 5s));
  // The first's next renewal finds another incarnation holding the lease.
  ASSERT_TRUE(run_until(fleet.io, [&] {
    return fleet.events(0).has_error(lh::errc::duplicate_instance_id) &&
           fleet.events(1).has_error(lh::errc::duplicate_instance_id);
  }, 10s));
  ASSERT_FALSE(fleet.events(0).revoked.empty());
  EXPECT_EQ(fleet.events(0).revoked.front().reason, lh::RevokeReason::renew_refused);
  // From then on one leader, and it stays the second.
  EXPECT_TRUE(fleet.run_checking_single_leader(3s));
  EXPECT_TRUE(fleet.at(1).is_leader());
  EXPECT_EQ(fleet.events(0).elected.size(), 1u);
  EXPECT_EQ(fleet.events(1).elected.size(), 1u);
}


// Many groups renew in one batched script, where the change stamp spares
// the holder records while nothing changed: Redis reads far fewer records
// than it extends leases (INFO commandstats). A live duplicate that takes
// every group over changes the records, and with them the stamp: the first
// elector's next batch reads them again, steps down in every group, and no
// group ever has two leaders.
TEST(DuplicateId, BatchedRenewalsOnTheChangeStampStillFindADuplicateInEveryGroup) {
  lh::test::RedisServer server;
  auto admin = server.admin();
  Fleet fleet(server);
  auto options = twin("stateful-0");
  options.reclaim_on_restart = true;
  for (int i = 0; i < 20; ++i) options.groups.push_back(fmt::format("g{}", i));
  fleet.add(options);
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.leads_every(0, options.groups); }, 10s));
  lh::test::run_for(fleet.io, 1500ms);  // every group found clean once
  admin.call({"CONFIG", "RESETSTAT"});
  lh::test::run_for(fleet.io, 3500ms);  // three heartbeats
  const auto extended = admin.command_calls("pexpire");
  const auto records_read = admin.command_calls("hmget");
  EXPECT_GE(extended, 40) << "renewals of 20 groups over three heartbeats";
  EXPECT_LT(records_read * 2, extended) << "holder records read: " << records_read << ", leases extended: " << extended;

  fleet.add(options);  // trusted to be a restart, but the first is alive
  ASSERT_TRUE(run_until(fleet.io, [&] {
    for (const auto& g : options.groups) {
      if (!fleet.at(1).is_leader(g) || fleet.at(0).is_leader(g)) return false;
      if (fleet.leaders(g).size() > 1) return false;
    }
    return true;
  }, 15s));
  EXPECT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).has_error(lh::errc::duplicate_instance_id); }, 5s));
  // From then on one leader per group: the second.
  const auto until = Clock::now() + 3s;
  while (Clock::now() < until) {
    lh::test::run_for(fleet.io, 50ms);
    for (const auto& g : options.groups) {
      ASSERT_LE(fleet.leaders(g).size(), 1u) << g;
      ASSERT_FALSE(fleet.at(0).is_leader(g)) << g;
    }
  }
}

}  // namespace
}  // namespace integration_duplicate_id_test
