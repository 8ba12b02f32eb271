// sort_by_slot: the order std::stable_sort gives, for any slots, with the
// scratch reused between calls.

#include <leasehold/impl/protocol/slot_sort.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace unit_slot_sort_test {
namespace {

struct Item {
  std::uint16_t slot = 0;
  int order = 0;  // where it was queued
  bool operator==(const Item&) const = default;
};

TEST(SortBySlot, OrdersBySlotAndKeepsEachSlotsQueueOrder) {
  std::mt19937 rng(7);
  std::vector<Item> scratch;
  for (const std::size_t n : {0u, 1u, 2u, 127u, 128u, 1500u, 5000u}) {
    std::vector<Item> items;
    // Few distinct slots (many ties) for half the sizes, any slot for the rest.
    const std::uint16_t spread = n % 2 == 0 ? 16384 : 40;
    for (std::size_t i = 0; i < n; ++i) {
      items.push_back({static_cast<std::uint16_t>(rng() % spread), static_cast<int>(i)});
    }
    items.push_back({16383, -1});
    items.push_back({0, -2});
    std::vector<Item> expected = items;
    std::stable_sort(expected.begin(), expected.end(), [](const Item& a, const Item& b) { return a.slot < b.slot; });
    leasehold::detail::sort_by_slot(items, scratch);
    EXPECT_EQ(items, expected) << n << " items";
  }
}

}  // namespace
}  // namespace unit_slot_sort_test
