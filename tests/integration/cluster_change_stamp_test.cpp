// The change stamp on a real Redis Cluster: one per slot, replaced by every
// script that changes a holder record of the slot. A leader's node batches
// renew a group found clean at its slot's stamp with PEXPIRE alone, and
// still hear every change: a bid of a higher priority, and another
// incarnation of its own id taking its groups back.

#include <leasehold/leasehold.hpp>

#include "support/cluster_topology.hpp"
#include "support/elector_fixture.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace integration_cluster_change_stamp_test {
namespace {

namespace lh = leasehold;
using lh::test::ClusterTopology;
using lh::test::ClusterTopologyOptions;
using lh::test::Fleet;
using lh::test::run_until;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

ClusterTopologyOptions without_replicas() {
  ClusterTopologyOptions o;
  o.replicas_per_master = 0;
  return o;
}

lh::RedisOptions cluster_options(const ClusterTopology& topology) {
  lh::RedisOptions o = lh::RedisOptions::from_url(topology.url() + "?refresh_interval=1000");
  o.reconnect_max = 200ms;
  return o;
}

// ttl 10 s, heartbeat 1 s: a hand-over that came by expiry would take ten
// heartbeats. Twenty groups: spread over every master.
lh::ElectorOptions member(std::string id, int priority = 0) {
  auto o = lh::test::fast_options(std::move(id));
  o.ttl = 10s;
  o.heartbeat_interval = 1s;
  o.empty_restart_guard = false;
  o.priority = priority;
  o.key_prefix = "cs:";
  for (int i = 0; i < 20; ++i) o.groups.push_back(fmt::format("g{}", i));
  return o;
}

// `command`'s calls on every master together.
long long calls_on_masters(ClusterTopology& topology, std::string_view command) {
  long long calls = 0;
  for (const std::size_t m : topology.masters()) calls += topology.node(m).admin().command_calls(command);
  return calls;
}

// Once its groups were found clean, a leader reads fewer holder records
// than it extends leases: the slots' stamps vouch for the rest.
void expect_renewals_on_the_stamps_word(Fleet& fleet, ClusterTopology& topology) {
  lh::test::run_for(fleet.io, 2500ms);  // every group found clean once
  const long long extended_before = calls_on_masters(topology, "pexpire");
  const long long read_before = calls_on_masters(topology, "hmget");
  lh::test::run_for(fleet.io, 3500ms);  // three heartbeats
  const long long extended = calls_on_masters(topology, "pexpire") - extended_before;
  const long long read = calls_on_masters(topology, "hmget") - read_before;
  EXPECT_GE(extended, 40) << "renewals of 21 groups over three heartbeats";
  EXPECT_LT(read * 2, extended) << "holder records read: " << read << ", leases extended: " << extended;
}

TEST(ClusterChangeStamp, ALeaderRenewingOnItsSlotsStampsHearsEveryBid) {
  ClusterTopology topology(without_replicas());
  Fleet fleet(cluster_options(topology));
  const auto low = member("low", 0);
  fleet.add(low);
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.leads_every(0, low.groups); }, 20s));
  expect_renewals_on_the_stamps_word(fleet, topology);

  fleet.add(member("high", 5));
  bool overlap = false;
  const bool moved = run_until(fleet.io, [&] {
    for (const auto& g : low.groups) overlap = overlap || fleet.leaders(g).size() > 1;
    return fleet.leads_every(1, low.groups);
  }, 8s);
  EXPECT_TRUE(moved) << "every group handed over within eight heartbeats, not by expiry (ten)";
  EXPECT_FALSE(overlap);
}

// The second process of one id takes every group back at once
// (reclaim_on_restart), which changes the holder records and so the slots'
// stamps: the first finds out at its next renewal and never leads again.
TEST(ClusterChangeStamp, ADuplicateThatTakesTheGroupsBackIsFoundInEveryGroup) {
  ClusterTopology topology(without_replicas());
  Fleet fleet(cluster_options(topology));
  auto options = member("stateful-0");
  options.reclaim_on_restart = true;
  fleet.add(options);
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.leads_every(0, options.groups); }, 20s));
  expect_renewals_on_the_stamps_word(fleet, topology);

  fleet.add(options);  // trusted to be a restart, but the first is alive
  ASSERT_TRUE(run_until(fleet.io, [&] {
    for (const auto& g : options.groups) {
      if (!fleet.at(1).is_leader(g) || fleet.at(0).is_leader(g)) return false;
    }
    return true;
  }, 20s));
  EXPECT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).has_error(lh::errc::duplicate_instance_id); }, 5s));
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
}  // namespace integration_cluster_change_stamp_test
