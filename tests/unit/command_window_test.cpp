// CommandWindow: the in-flight limit, the held-back FIFOs (urgent first), stale dropping,
// commands of different weights, and the invariant that something is in
// flight while anything is held back.

#include <leasehold/impl/core/command_window.hpp>

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

namespace unit_command_window_test {
namespace {

using Window = leasehold::detail::CommandWindow<int>;

struct Recorder {
  std::vector<int> sent;
  std::set<int> stale;
  void settle(Window& w, std::size_t weight = 1) {
    w.settle(weight, [this](int i) { return stale.count(i) == 0; }, [this](int i) { sent.push_back(i); });
  }
};

TEST(CommandWindow, SendsAtOnceUpToTheLimitAndHoldsBackTheRest) {
  Window w(4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(w.admit(i)) << i;
  EXPECT_FALSE(w.admit(4));
  EXPECT_FALSE(w.admit(5));
  EXPECT_EQ(w.in_flight(), 4u);
  EXPECT_EQ(w.held_back(), 2u);
}

TEST(CommandWindow, ReleasesHeldBackOnlyOnceHalfTheWindowIsFreeAsOneBatchInOrder) {
  Window w(4);
  Recorder r;
  for (int i = 0; i < 10; ++i) w.admit(i);
  r.settle(w);  // 3 in flight: above half
  EXPECT_TRUE(r.sent.empty());
  r.settle(w);  // 2 in flight: half, so the window refills to 4
  EXPECT_EQ(r.sent, (std::vector<int>{4, 5}));
  EXPECT_EQ(w.in_flight(), 4u);
  EXPECT_EQ(w.held_back(), 4u);
}

TEST(CommandWindow, ANewCommandQueuesBehindHeldBackOnesEvenWhenTheWindowHasRoom) {
  Window w(2);
  Recorder r;
  w.admit(0);
  w.admit(1);
  w.admit(2);  // held back
  r.settle(w);  // 1 in flight = half: 2 leaves
  EXPECT_EQ(r.sent, (std::vector<int>{2}));
  w.admit(3);
  w.admit(4);  // window full again: held
  r.settle(w);
  r.settle(w);
  EXPECT_EQ(r.sent, (std::vector<int>{2, 3, 4}));
}

TEST(CommandWindow, AnUrgentCommandOvertakesHeldBackOrdinaryOnesButNoUrgentOne) {
  Window w(4);
  Recorder r;
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(w.admit(i));
  EXPECT_FALSE(w.admit(4));
  EXPECT_FALSE(w.admit(5));
  r.settle(w);
  r.settle(w);  // half free: 4 and 5 leave
  EXPECT_EQ(r.sent, (std::vector<int>{4, 5}));
  EXPECT_FALSE(w.admit(6));  // the window is full
  r.settle(w);               // 3 in flight: room for one, but above half
  EXPECT_TRUE(w.admit(7, 1, true)) << "room, and no urgent one waits: it leaves past 6";
  EXPECT_FALSE(w.admit(8, 1, true)) << "no room";
  EXPECT_FALSE(w.admit(9));
  EXPECT_EQ(w.held_back(), 3u);
  r.settle(w);
  r.settle(w);  // half free: the urgent one first, then the others in order
  EXPECT_EQ(r.sent, (std::vector<int>{4, 5, 8, 6}));
  r.settle(w);
  r.settle(w);
  EXPECT_EQ(r.sent, (std::vector<int>{4, 5, 8, 6, 9}));
  EXPECT_EQ(w.held_back(), 0u);
}

TEST(CommandWindow, DropsStaleHeldBackCommandsWithoutCountingThem) {
  Window w(2);
  Recorder r;
  for (int i = 0; i < 6; ++i) w.admit(i);
  r.stale = {2, 3, 5};
  r.settle(w);  // 2 and 3 are dropped, 4 fills the window, 5 waits
  EXPECT_EQ(r.sent, (std::vector<int>{4}));
  EXPECT_EQ(w.in_flight(), 2u);
  EXPECT_EQ(w.held_back(), 1u);
  r.settle(w);  // 5 is dropped: nothing left, one in flight
  EXPECT_EQ(r.sent, (std::vector<int>{4}));
  EXPECT_EQ(w.in_flight(), 1u);
  EXPECT_EQ(w.held_back(), 0u);
}

TEST(CommandWindow, ALimitOfOneStillSendsEverythingInOrder) {
  Window w(1);
  Recorder r;
  for (int i = 0; i < 5; ++i) w.admit(i);
  for (int i = 0; i < 5; ++i) r.settle(w);
  EXPECT_EQ(r.sent, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(w.in_flight(), 0u);
}

// The elector's renewals weigh a quarter of an acquire: the limit is on the
// weight in flight, the held-back ones leave while their weight fits, and
// one heavier than the whole window still leaves alone.
TEST(CommandWindow, CountsWeightsAndLetsACommandHeavierThanTheWindowLeaveAlone) {
  Window w(8);
  Recorder r;
  EXPECT_TRUE(w.admit(0, 4));
  EXPECT_TRUE(w.admit(1, 1));
  EXPECT_TRUE(w.admit(2, 1));
  EXPECT_FALSE(w.admit(3, 4));  // 6 + 4 > 8
  EXPECT_FALSE(w.admit(4, 1));  // behind 3, though it would fit
  EXPECT_EQ(w.in_flight(), 6u);
  r.settle(w, 4);  // 2 in flight: 3 (4) and 4 (1) fit
  EXPECT_EQ(r.sent, (std::vector<int>{3, 4}));
  EXPECT_EQ(w.in_flight(), 7u);

  Window narrow(2);
  Recorder n;
  EXPECT_TRUE(narrow.admit(10, 4));  // nothing in flight: it leaves
  EXPECT_FALSE(narrow.admit(11, 4));
  n.settle(narrow, 4);  // empty again: the next heavy one leaves, alone
  EXPECT_EQ(n.sent, (std::vector<int>{11}));
  EXPECT_EQ(narrow.in_flight(), 4u);
  EXPECT_EQ(narrow.held_back(), 0u);
}

// Random admits (of weights 1 and 4), settles and staleness: every admitted
// command is sent once or dropped as stale, in admission order, never more
// than the limit's weight in flight (but for one heavier command alone), and
// never anything held back while nothing is in flight.
TEST(CommandWindow, RandomScheduleKeepsOrderLimitAndProgress) {
  const auto weight_of = [](int id) -> std::size_t { return id % 3 == 0 ? 4 : 1; };
  const auto urgent = [](int id) { return id % 4 == 1; };
  for (unsigned seed = 1; seed <= 50; ++seed) {
    std::mt19937 rng(seed);
    const std::size_t limit = 1 + rng() % 8;
    Window w(limit);
    Recorder r;
    int next = 0;
    std::size_t answered = 0;  // r.sent[answered...] are in flight, oldest first
    for (int step = 0; step < 2000; ++step) {
      if (rng() % 2 == 0 || w.in_flight() == 0) {
        const int id = next++;
        if (rng() % 5 == 0) r.stale.insert(id);
        if (w.admit(id, weight_of(id), urgent(id))) r.sent.push_back(id);
      } else {
        r.settle(w, weight_of(r.sent[answered++]));
      }
      std::size_t weight = 0;
      for (std::size_t i = answered; i < r.sent.size(); ++i) weight += weight_of(r.sent[i]);
      ASSERT_EQ(w.in_flight(), weight) << "seed " << seed;
      ASSERT_TRUE(weight <= limit || r.sent.size() - answered == 1) << "seed " << seed << " step " << step;
      if (w.held_back() > 0) {
        ASSERT_GT(w.in_flight(), 0u) << "seed " << seed << " step " << step;
      }
    }
    // In order within each kind.
    for (const bool kind : {false, true}) {
      int last = -1;
      for (const int id : r.sent) {
        if (urgent(id) != kind) continue;
        ASSERT_LT(last, id) << "seed " << seed;
        last = id;
      }
    }
    while (w.in_flight() > 0) r.settle(w, weight_of(r.sent[answered++]));
    EXPECT_EQ(w.held_back(), 0u);
    // Every command either left or was stale while held back.
    std::set<int> left(r.sent.begin(), r.sent.end());
    for (int id = 0; id < next; ++id) {
      EXPECT_TRUE(left.count(id) == 1 || r.stale.count(id) == 1) << "seed " << seed << " lost " << id;
    }
  }
}

}  // namespace
}  // namespace unit_command_window_test
