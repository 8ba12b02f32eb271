// The elector's timer queue against a plain reference: random moves,
// removals and pops over a few hundred items, always the earliest on top.

#include <wake_queue.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace {

struct Item {
  std::int64_t wake_at = 0;
  std::uint32_t wake_id = leasehold::detail::no_wake_id;
  bool queued = false;  // the reference model
};

std::int64_t earliest(const std::vector<Item>& items) {
  std::int64_t best = INT64_MAX;
  for (const auto& i : items) {
    if (i.queued) best = std::min(best, i.wake_at);
  }
  return best;
}

}  // namespace

TEST(WakeQueue, KeepsEveryItemOnceWithTheEarliestOnTop) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    std::vector<Item> items(300);
    leasehold::detail::WakeQueue<Item> queue;
    std::size_t queued = 0;
    for (int step = 0; step < 5000; ++step) {
      Item& item = items[rng() % items.size()];
      switch (rng() % 3) {
        case 0:  // queue or move, earlier or later
          item.wake_at = static_cast<std::int64_t>(rng() % 1000);
          if (!item.queued) ++queued;
          item.queued = true;
          queue.set(item);
          break;
        case 1:
          if (item.queued) --queued;
          item.queued = false;
          queue.remove(item);
          break;
        default:
          if (queue.empty()) break;
          const std::int64_t top_at = queue.top_at();
          Item& top = step % 2 == 0 ? queue.item(queue.pop()) : queue.top();  // pop(), or remove() of the top
          ASSERT_TRUE(top.queued);
          ASSERT_EQ(top.wake_at, earliest(items)) << "seed " << seed << " step " << step;
          ASSERT_EQ(top_at, top.wake_at);
          top.queued = false;
          --queued;
          if (step % 2 != 0) queue.remove(top);
          ASSERT_FALSE(queue.queued(top));
      }
      ASSERT_EQ(queue.empty(), queued == 0);
      if (!queue.empty()) {
        ASSERT_EQ(queue.top().wake_at, earliest(items));
      }
    }
  }
}

TEST(WakeQueue, RemovingAnItemThatIsNotQueuedChangesNothing) {
  Item a{5}, b{3};
  leasehold::detail::WakeQueue<Item> queue;
  queue.set(a);
  queue.remove(b);
  ASSERT_FALSE(queue.empty());
  EXPECT_EQ(&queue.top(), &a);
  queue.set(b);
  EXPECT_EQ(&queue.top(), &b);
  b.wake_at = 9;  // moved later: a comes first again
  queue.set(b);
  EXPECT_EQ(&queue.top(), &a);
  queue.remove(a);
  queue.remove(a);
  EXPECT_EQ(&queue.top(), &b);
  queue.remove(b);
  EXPECT_TRUE(queue.empty());
}
