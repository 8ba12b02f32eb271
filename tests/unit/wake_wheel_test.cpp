// The elector's timer wheel against a plain reference: random moves,
// removals and takes over a few hundred items and a span several times the
// wheel's, and the millisecond rounding at its edges.

#include <leasehold/impl/core/wake_wheel.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

namespace unit_wake_wheel_test {
namespace {

using namespace std::chrono_literals;
using TimePoint = std::chrono::steady_clock::time_point;
using leasehold::detail::WakeWheel;

struct Item {
  TimePoint wake_at{};
  std::uint32_t wake_id = leasehold::detail::no_wake_id;
  bool queued = false;  // the reference model
};

const TimePoint t0{std::chrono::seconds(1000)};

std::int64_t ceil_ms(TimePoint t) {
  return std::chrono::ceil<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
std::int64_t floor_ms(TimePoint t) {
  return std::chrono::floor<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// The millisecond the earliest queued item wakes in.
std::optional<std::int64_t> earliest_ms(const std::vector<Item>& items) {
  std::optional<std::int64_t> best;
  for (const auto& i : items) {
    if (i.queued && (!best || ceil_ms(i.wake_at) < *best)) best = ceil_ms(i.wake_at);
  }
  return best;
}

std::vector<std::uint32_t> take(WakeWheel<Item>& wheel, TimePoint now, std::size_t most = 1000) {
  std::vector<std::uint32_t> out;
  wheel.take_due(now, most, out);
  return out;
}

TEST(WakeWheel, TakesExactlyTheDueItemsOnceAndNeverAnEarliestAfterTheTruth) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    std::vector<Item> items(300);
    WakeWheel<Item> wheel;
    TimePoint now = t0;
    std::size_t queued = 0;
    for (int step = 0; step < 5000; ++step) {
      Item& item = items[rng() % items.size()];
      switch (rng() % 4) {
        case 0:  // queue or move: a little in the past up to five spans ahead, at any nanosecond
          item.wake_at = now - 50ms + std::chrono::nanoseconds(rng() % 20'000'000'000ULL);
          if (!item.queued) ++queued;
          item.queued = true;
          wheel.set(item);
          break;
        case 1:
          if (item.queued) --queued;
          item.queued = false;
          wheel.remove(item);
          ASSERT_FALSE(wheel.queued(item));
          break;
        default: {
          // The time moves on, to the armed instant or beyond it, and the due
          // items are taken, sometimes a few per turn.
          const auto armed = wheel.earliest();
          if (armed) {
            ASSERT_LE(armed->time_since_epoch(), std::chrono::milliseconds(*earliest_ms(items)))
                << "seed " << seed << " step " << step;
          }
          if (armed && rng() % 2 == 0) now = std::max(now, *armed);
          now += std::chrono::nanoseconds(rng() % 30'000'000);
          const std::size_t most = rng() % 3 == 0 ? 1 + rng() % 4 : 1000;
          const auto taken = take(wheel, now, most);
          ASSERT_LE(taken.size(), most);
          for (const std::uint32_t id : taken) {
            Item& t = wheel.item(id);
            ASSERT_TRUE(t.queued) << "seed " << seed << " step " << step;
            ASSERT_LE(ceil_ms(t.wake_at), floor_ms(now)) << "taken before its millisecond began";
            ASSERT_FALSE(wheel.queued(t));
            t.queued = false;
            --queued;
          }
          if (taken.size() < most) {
            const auto left = earliest_ms(items);
            ASSERT_TRUE(!left || *left > floor_ms(now)) << "a due item was left, seed " << seed << " step " << step;
          }
        }
      }
      ASSERT_EQ(wheel.empty(), queued == 0);
    }
  }
}

TEST(WakeWheel, ArmingAtEachEarliestReachesTheFarWakeThroughAtMostAFewEmptyExpiries) {
  WakeWheel<Item> wheel;
  Item near{t0 + 10ms}, far{t0 + 10ms + 3 * 4096ms};  // the same bucket, three turns apart
  wheel.set(near);
  wheel.set(far);
  TimePoint now = t0;
  std::vector<std::uint32_t> order;
  int expiries = 0;
  while (!wheel.empty()) {
    ASSERT_LT(++expiries, 10);
    now = std::max(now, *wheel.earliest());
    const auto taken = take(wheel, now);
    order.insert(order.end(), taken.begin(), taken.end());
  }
  EXPECT_EQ(order, (std::vector<std::uint32_t>{near.wake_id, far.wake_id}));
  EXPECT_EQ(now, far.wake_at);
}

TEST(WakeWheel, AWakeIsTakenWhenItsMillisecondBeginsAndNotBefore) {
  WakeWheel<Item> wheel;
  Item inside{t0 + 1500us}, edge{t0 + 3ms};
  wheel.set(inside);
  wheel.set(edge);
  EXPECT_EQ(wheel.earliest(), t0 + 2ms);  // rounded up
  EXPECT_TRUE(take(wheel, t0 + 1900us).empty());
  EXPECT_EQ(take(wheel, t0 + 2ms), (std::vector<std::uint32_t>{inside.wake_id}));
  EXPECT_TRUE(take(wheel, t0 + 2999us).empty());
  EXPECT_EQ(take(wheel, t0 + 3ms), (std::vector<std::uint32_t>{edge.wake_id}));
  EXPECT_TRUE(wheel.empty());
  EXPECT_FALSE(wheel.earliest().has_value());
}

TEST(WakeWheel, AWakeInThePastIsDueAtOnceAfterLaterOnesWereTaken) {
  WakeWheel<Item> wheel;
  Item a{t0 + 100ms}, late{t0 + 5ms};
  wheel.set(a);
  EXPECT_EQ(take(wheel, t0 + 100ms).size(), 1u);
  wheel.set(late);  // set after the time passed it
  EXPECT_EQ(wheel.earliest(), t0 + 5ms);
  EXPECT_EQ(take(wheel, t0 + 100ms), (std::vector<std::uint32_t>{late.wake_id}));
}

TEST(WakeWheel, MovingOrRemovingKeepsOneEntryAndRemovingAnUnqueuedItemChangesNothing) {
  WakeWheel<Item> wheel;
  Item a{t0 + 5ms}, b{t0 + 3ms};
  wheel.set(a);
  wheel.remove(b);  // never queued
  EXPECT_EQ(wheel.earliest(), t0 + 5ms);
  wheel.set(b);
  b.wake_at = t0 + 9ms;  // moved later, then back into a's millisecond
  wheel.set(b);
  b.wake_at = t0 + 4500us;
  wheel.set(b);
  wheel.remove(a);
  wheel.remove(a);
  const auto taken = take(wheel, t0 + 20ms);
  EXPECT_EQ(taken, (std::vector<std::uint32_t>{b.wake_id}));
  EXPECT_TRUE(wheel.empty());
}

}  // namespace
}  // namespace unit_wake_wheel_test
