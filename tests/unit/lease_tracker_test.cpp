// What `leasehold watch` reports from polls and release notices.

#include "lease_tracker.hpp"

#include <gtest/gtest.h>

namespace leasehold::cli {
namespace {

using Kind = WatchEvent::Kind;
using namespace std::chrono_literals;

LeaseInfo held_by(const std::string& holder, std::int64_t token) {
  LeaseInfo lease;
  lease.group = "reports";
  lease.key = "leader:reports";
  lease.holder = holder;
  lease.ttl_ms = 5000;
  lease.token = token;
  return lease;
}

std::vector<Kind> kinds(const std::vector<WatchEvent>& events) {
  std::vector<Kind> out;
  for (const auto& e : events) out.push_back(e.kind);
  return out;
}

class LeaseTrackerTest : public ::testing::Test {
 protected:
  LeaseTrackerTest() {
    EXPECT_EQ(kinds(tracker.observe({held_by("alpha", 1)}, t)), std::vector<Kind>{Kind::held});
    tracker.mark_baseline();
  }
  LeaseTracker tracker;
  LeaseTracker::Clock::time_point t{};
};

// Redis sends the old holder's notice before the new holder's acquisition,
// but on another connection: the poll that shows the new holder may be read
// first. The notice still makes it a release and an acquisition.
TEST_F(LeaseTrackerTest, ANoticeReadAfterThePollThatShowsTheNewHolderIsAReleaseAndAnAcquisition) {
  EXPECT_TRUE(tracker.observe({held_by("beta", 2)}, t + 200ms).empty());
  EXPECT_TRUE(tracker.holding_back());
  const auto events = tracker.notice("reports", "alpha");
  ASSERT_EQ(kinds(events), (std::vector<Kind>{Kind::released, Kind::acquired}));
  EXPECT_EQ(events[0].previous, "alpha");
  EXPECT_EQ(events[1].holder, "beta");
  EXPECT_EQ(events[1].token, 2);
  EXPECT_FALSE(tracker.holding_back());
  EXPECT_TRUE(tracker.observe({held_by("beta", 2)}, t + 400ms).empty());
}

TEST_F(LeaseTrackerTest, WithoutANoticeWithinTheGraceANewHolderIsATakeover) {
  EXPECT_TRUE(tracker.observe({held_by("beta", 2)}, t + 200ms).empty());
  EXPECT_TRUE(tracker.observe({held_by("beta", 2)}, t + 250ms).empty());  // within the grace
  const auto events = tracker.observe({held_by("beta", 2)}, t + 200ms + LeaseTracker::takeover_grace);
  ASSERT_EQ(kinds(events), std::vector<Kind>{Kind::taken_over});
  EXPECT_EQ(events[0].previous, "alpha");
  EXPECT_EQ(events[0].holder, "beta");
  EXPECT_FALSE(tracker.holding_back());
  // A late notice of the old holder says nothing new.
  EXPECT_TRUE(tracker.notice("reports", "alpha").empty());
}

TEST_F(LeaseTrackerTest, ANewHolderThatIsGoneAgainIsReportedAsATakeoverThenItsEnd) {
  EXPECT_TRUE(tracker.observe({held_by("beta", 2)}, t + 200ms).empty());
  LeaseInfo vacant = held_by("x", 2);
  vacant.holder.reset();
  EXPECT_EQ(kinds(tracker.observe({vacant}, t + 250ms)), (std::vector<Kind>{Kind::taken_over, Kind::deleted}));
}

TEST_F(LeaseTrackerTest, TheOldHolderBackWithinTheGraceIsANewTermNotATakeover) {
  EXPECT_TRUE(tracker.observe({held_by("beta", 2)}, t + 200ms).empty());
  EXPECT_EQ(kinds(tracker.observe({held_by("alpha", 3)}, t + 250ms)), std::vector<Kind>{Kind::new_term});
  EXPECT_FALSE(tracker.holding_back());
}

TEST_F(LeaseTrackerTest, ANoticeWithNoNewHolderIsARelease) {
  EXPECT_EQ(kinds(tracker.notice("reports", "alpha")), std::vector<Kind>{Kind::released});
  EXPECT_EQ(kinds(tracker.observe({held_by("beta", 2)}, t + 200ms)), std::vector<Kind>{Kind::acquired});
}

// The other order: the notice is read first, then the reply of a poll that
// was in flight, read before the release. Its holder is the term the notice
// ended, which does not come back: nothing to report, and the next holder
// is an acquisition, not a takeover from the old one.
TEST_F(LeaseTrackerTest, APollReadBeforeTheReleaseThatANoticeToldOfSaysNothing) {
  EXPECT_EQ(kinds(tracker.notice("reports", "alpha")), std::vector<Kind>{Kind::released});
  EXPECT_TRUE(tracker.observe({held_by("alpha", 1)}, t + 100ms).empty());
  const auto events = tracker.observe({held_by("beta", 2)}, t + 200ms);
  ASSERT_EQ(kinds(events), std::vector<Kind>{Kind::acquired});
  EXPECT_EQ(events[0].holder, "beta");
}

// Only the first poll after the notice can be that old: the same term seen
// again after it is the holder's (a lost counter restarted at the same
// token), reported as an acquisition.
TEST_F(LeaseTrackerTest, TheReleasedTermSeenAfterAnotherPollIsReported) {
  EXPECT_EQ(kinds(tracker.notice("reports", "alpha")), std::vector<Kind>{Kind::released});
  LeaseInfo vacant = held_by("x", 1);
  vacant.holder.reset();
  EXPECT_TRUE(tracker.observe({vacant}, t + 100ms).empty());
  EXPECT_EQ(kinds(tracker.observe({held_by("alpha", 1)}, t + 200ms)), std::vector<Kind>{Kind::acquired});
}

}  // namespace
}  // namespace leasehold::cli
