// WakeScheduler: when the one timer must be (re-)armed, stale expiries, and
// the per-turn budget that spreads a burst of due groups over turns.

#include <leasehold/impl/core/wake_scheduler.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <vector>

namespace unit_wake_scheduler_test {
namespace {

using namespace std::chrono_literals;
using TimePoint = std::chrono::steady_clock::time_point;

struct Item {
  int id = 0;
  TimePoint wake_at{};
  std::uint32_t wake_id = leasehold::detail::no_wake_id;
};

const TimePoint t0{std::chrono::seconds(1000)};

TEST(WakeScheduler, ArmsForTheEarliestWakeAndOnlyReArmsForAnEarlierOne) {
  leasehold::detail::WakeScheduler<Item> s(16);
  Item a{1}, b{2}, c{3};
  EXPECT_FALSE(s.arm().has_value());  // nothing queued
  EXPECT_TRUE(s.set(a, t0 + 100ms));  // nothing armed: arm() has an instant
  EXPECT_EQ(s.arm(), t0 + 100ms);
  EXPECT_FALSE(s.set(b, t0 + 200ms));  // after the armed wake: no need to ask
  EXPECT_FALSE(s.arm().has_value());  // armed earlier already
  EXPECT_TRUE(s.set(c, t0 + 50ms));
  EXPECT_EQ(s.arm(), t0 + 50ms);
  EXPECT_FALSE(s.set(c, std::nullopt));  // removed: the armed timer fires and finds nothing
  EXPECT_FALSE(s.arm().has_value());
  EXPECT_FALSE(s.expired(t0 + 100ms));  // the first arming was replaced
  EXPECT_TRUE(s.expired(t0 + 50ms));
}

TEST(WakeScheduler, FiresDueItemsInOrderAndLeavesTheRest) {
  leasehold::detail::WakeScheduler<Item> s(16);
  std::vector<Item> items(5);
  for (int i = 0; i < 5; ++i) {
    items[i].id = i;
    s.set(items[i], t0 + std::chrono::milliseconds(10 * (5 - i)));
  }
  std::vector<int> fired;
  s.fire(t0 + 30ms, [&](Item& i) { fired.push_back(i.id); });
  EXPECT_EQ(fired, (std::vector<int>{4, 3, 2}));
  EXPECT_EQ(s.arm(), t0 + 40ms);
}

// Wakes count in whole milliseconds, rounded up, except an exact one: armed
// for its instant, taken at it, and moved back to the grid when set again.
TEST(WakeScheduler, AnExactWakeIsArmedAndTakenAtItsInstantInsteadOfTheNextMillisecond) {
  leasehold::detail::WakeScheduler<Item> s(16);
  Item grid{1}, exact{2};
  s.set(grid, t0 + 10ms + 300us);
  EXPECT_EQ(s.arm(), t0 + 11ms);
  EXPECT_TRUE(s.set(exact, t0 + 10ms + 400us, true));
  EXPECT_EQ(s.arm(), t0 + 10ms + 400us);
  EXPECT_FALSE(s.empty());

  std::vector<int> fired;
  s.fire(t0 + 10ms + 350us, [&](Item& i) { fired.push_back(i.id); });
  EXPECT_TRUE(fired.empty()) << "neither is due yet";
  s.fire(t0 + 10ms + 400us, [&](Item& i) { fired.push_back(i.id); });
  EXPECT_EQ(fired, (std::vector<int>{2})) << "the exact one at its instant, the other in the next millisecond";
  s.fire(t0 + 11ms, [&](Item& i) { fired.push_back(i.id); });
  EXPECT_EQ(fired, (std::vector<int>{2, 1}));
  EXPECT_TRUE(s.empty());

  EXPECT_TRUE(s.expired(t0 + 10ms + 400us));
  s.set(exact, t0 + 20ms + 100us, true);
  s.set(exact, t0 + 20ms + 100us);  // set again without `exact`: on the grid
  EXPECT_EQ(s.arm(), t0 + 21ms);
  s.set(exact, std::nullopt);
  EXPECT_TRUE(s.empty());
}

TEST(WakeScheduler, APerTurnBudgetLeavesDueItemsForTheNextTurnArmedInThePast) {
  leasehold::detail::WakeScheduler<Item> s(3);
  std::vector<Item> items(7);
  for (auto& i : items) s.set(i, t0);
  int fired = 0;
  s.fire(t0 + 1ms, [&](Item&) { ++fired; });
  EXPECT_EQ(fired, 3);
  EXPECT_EQ(s.arm(), t0);  // still due: the timer fires again at once
  s.fire(t0 + 1ms, [&](Item&) { ++fired; });
  s.fire(t0 + 1ms, [&](Item&) { ++fired; });
  EXPECT_EQ(fired, 7);
  EXPECT_TRUE(s.empty());
}

TEST(WakeScheduler, AnItemThatAsksToBeWokenAtOnceWaitsForTheNextTurn) {
  leasehold::detail::WakeScheduler<Item> s(1000);
  Item a{1};
  s.set(a, t0);
  int fired = 0;
  const auto wake_again_at_once = [&](Item& i) {
    ++fired;
    s.set(i, t0);
  };
  s.fire(t0, wake_again_at_once);
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(s.arm(), t0);  // the timer fires again at once: the next turn
  s.fire(t0, wake_again_at_once);
  EXPECT_EQ(fired, 2);
}

TEST(WakeScheduler, AnItemTakenIsWokenEvenIfAnEarlierWakeMovedItLater) {
  leasehold::detail::WakeScheduler<Item> s(16);
  Item a{1}, b{2};
  s.set(a, t0);
  s.set(b, t0 + 1ms);
  std::vector<int> fired;
  s.fire(t0 + 1ms, [&](Item& i) {
    fired.push_back(i.id);
    if (i.id == 1) s.set(b, t0 + 50ms);  // as a renewal pulls its slot's groups along
  });
  EXPECT_EQ(fired, (std::vector<int>{1, 2}));  // b was taken before a's wake moved it
  EXPECT_EQ(s.arm(), t0 + 50ms);
}

TEST(WakeScheduler, RemovingTheOnlyItemLeavesNothingToArm) {
  leasehold::detail::WakeScheduler<Item> s(4);
  Item a{1};
  s.set(a, t0);
  s.set(a, std::nullopt);
  EXPECT_TRUE(s.empty());
  EXPECT_FALSE(s.arm().has_value());
}

}  // namespace
}  // namespace unit_wake_scheduler_test
