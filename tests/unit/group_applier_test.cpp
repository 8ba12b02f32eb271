// GroupApplier: one machine Output becomes its effects in one order — the
// deadline is published (audited) first, then the term ends or begins, the
// holder change, the finished release, the command, the wake. Driven by a real
// LeaseMachine on a simulated clock, with a listener and a sink that record.

#include <leasehold/impl/core/group_applier.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

namespace unit_group_applier_test {
namespace {

using namespace std::chrono_literals;
namespace d = leasehold::detail;
using d::Command;
using d::TimePoint;

struct Recorder final : d::ElectorListener, d::CommandSink {
  std::vector<std::string> log;
  const d::GroupState* group = nullptr;

  // What is_leader() reads at the moment of each effect.
  std::string flag() const { return group->flag->deadline_ns.load() > 0 ? "[lead]" : "[-]"; }

  void term_began(d::GroupState& g) override { log.push_back("began " + std::to_string(g.machine.token()) + flag()); }
  void term_ended(d::GroupState&, std::int64_t token, leasehold::RevokeReason reason) override {
    log.push_back("ended " + std::to_string(token) + " " + std::string(leasehold::to_string(reason)) + flag());
  }
  void leader_changed(d::GroupState& g) override { log.push_back("holder " + std::string(g.machine.holder())); }
  void released(d::GroupState&, bool failed) override { log.push_back(failed ? "released failed" : "released"); }
  void group_error(d::GroupState&, const leasehold::Error&) override { log.push_back("error"); }
  void audit(const leasehold::LeaseAuditEvent& e) override {
    static constexpr const char* kinds[] = {"audit began", "audit extended", "audit ended"};
    log.push_back(kinds[static_cast<int>(e.kind)] + flag());
  }
  void arm_timer(TimePoint) override {}
  void resume_later() override {}
  void stopped() override {}
  void send(d::GroupState&, Command c, std::uint64_t, TimePoint) override {
    log.push_back(c == Command::acquire ? "send acquire" : c == Command::renew ? "send renew" : "send release");
  }
  void schedule(d::GroupState&, std::optional<TimePoint> wake, bool) override { log.push_back(wake ? "wake" : "no wake"); }
  void machine_stopped(d::GroupState&, TimePoint) override { log.push_back("stopped"); }
};

class GroupApplierTest : public ::testing::Test {
 protected:
  const leasehold::KeyLayout layout{"leader:"};
  const d::LeaseTiming timing{5000ms, 1666ms, 1000ms, 52ms, 1000ms};
  const std::string id = "me";
  const std::string incarnation = "inc-1";
  const std::string ttl_ms = "5000";
  const leasehold::ElectorOptions options{};
  d::LeaseArgv argv{id, ttl_ms, incarnation};
  d::GroupState g{"jobs", d::GroupContext{layout, timing, id, incarnation, ttl_ms, options, argv}, 0};
  Recorder r;
  d::GroupApplier applier{id, incarnation, r, r};
  TimePoint now = TimePoint{} + 1h;

  void apply(const d::Output& out) { applier.apply(g, out, now); }
  void SetUp() override { r.group = &g; }
  void lead(std::int64_t token) {
    apply(g.machine.start(now));
    auto out = g.machine.on_connected(now);
    apply(out);
    r.log.clear();
    apply(g.machine.on_acquire_reply(now, out.seq, d::AcquireReply{true, "me", 5000, token}));
  }
};

TEST_F(GroupApplierTest, AnElectionPublishesTheDeadlineBeforeTheTermBegins) {
  lead(3);
  EXPECT_EQ(r.log, (std::vector<std::string>{"audit began[-]", "began 3[lead]", "holder me", "wake"}));
  EXPECT_TRUE(g.in_term);
  EXPECT_EQ(g.terms_won, 1u);
  EXPECT_EQ(g.last_token, 3);
}

TEST_F(GroupApplierTest, ARevocationWithdrawsTheDeadlineBeforeTheTermEnds) {
  lead(3);
  r.log.clear();
  now += 10ms;
  apply(g.machine.on_disconnected(now));
  ASSERT_GE(r.log.size(), 2u);
  EXPECT_EQ(r.log[0], "audit ended[-]");
  EXPECT_EQ(r.log[1], "ended 3 connection_lost[-]");
  EXPECT_FALSE(g.in_term);
  EXPECT_EQ(g.demotions[static_cast<std::size_t>(leasehold::RevokeReason::connection_lost)], 1u);
}

TEST_F(GroupApplierTest, AStepDownEndsTheTermThenSendsTheReleaseAndReportsItOnce) {
  lead(4);
  r.log.clear();
  now += 10ms;
  auto out = g.machine.step_down(now);
  apply(out);
  EXPECT_EQ(r.log, (std::vector<std::string>{"audit ended[-]", "ended 4 stepped_down[-]", "send release", "wake"}));
  r.log.clear();
  apply(g.machine.on_release_reply(now, out.seq, true));
  EXPECT_EQ(r.log, (std::vector<std::string>{"released", "wake"}));
}

TEST_F(GroupApplierTest, WithdrawEndsAnOpenTermOnceAndAuditsItsEnd) {
  lead(5);
  r.log.clear();
  applier.withdraw(g, leasehold::RevokeReason::stopped, now);
  EXPECT_EQ(r.log, (std::vector<std::string>{"audit ended[-]", "ended 5 stopped[-]"}));
  r.log.clear();
  applier.withdraw(g, leasehold::RevokeReason::stopped, now);
  EXPECT_TRUE(r.log.empty());
}

TEST_F(GroupApplierTest, AClosedFlagStaysClosedWhateverTheMachineSays) {
  g.flag->close();
  lead(6);
  EXPECT_FALSE(g.flag->leading(now));
  EXPECT_EQ(g.flag->deadline_ns.load(), leasehold::detail::LeaderFlag::closed);
}

// Groups elected together renew spread over the heartbeat: every run of 128
// in registration order shares one of 64 phases, in turn; a group's machine
// gets its phase at construction.
TEST(RenewalPhase, RunsOf128GroupsInRegistrationOrderShareEachOfSixtyFourPhases) {
  std::set<std::uint16_t> phases;
  for (std::size_t run = 0; run < 64; ++run) {
    const std::uint16_t first = d::renewal_phase_share(run * 128);
    EXPECT_EQ(d::renewal_phase_share(run * 128 + 127), first) << run;
    phases.insert(first);
  }
  EXPECT_EQ(phases.size(), 64u);
  EXPECT_EQ(d::renewal_phase_share(0), 0);
  EXPECT_EQ(d::renewal_phase_share(64 * 128), 0) << "the 65th run starts the cycle again";
}

TEST_F(GroupApplierTest, AGroupsMachineRenewsInThePhaseOfItsPlaceInTheRegistrationOrder) {
  EXPECT_EQ(g.machine.renewal_phase(), d::Duration::zero()) << "the first group";
  const d::GroupState later{"later", d::GroupContext{layout, timing, id, incarnation, ttl_ms, options, argv}, 3 * 128};
  EXPECT_EQ(later.machine.renewal_phase(), timing.heartbeat_interval / 65536 * (3 << 10));
}

}  // namespace
}  // namespace unit_group_applier_test
