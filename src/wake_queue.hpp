#pragma once
// The elector's timer queue: every group at most once, ordered by when it
// wants to wake. An indexed binary heap, so that moving a group's wake (each
// reply does) updates its one entry instead of adding another (stale
// entries cost memory per group; see docs/performance.md).

#include <cstddef>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

namespace leasehold::detail {

/// The `wake_slot` of an item that is not queued.
inline constexpr std::size_t unqueued = std::numeric_limits<std::size_t>::max();

// T has `wake_at` (ordered; call set() again after changing it) and
// `wake_slot` (std::size_t, owned by the queue, initially `unqueued`).
//
// Each entry keeps a copy of its item's wake_at beside the pointer, so that
// sifting compares entries of the heap's own array instead of reading every
// item it passes: with 100,000 groups the items are spread over tens of MB
// and each read was a cache miss (a quarter of the elector's CPU in the
// cluster scale run). Entries move into a hole instead of being swapped, so
// each level writes one item's wake_slot.
template <typename T>
class WakeQueue {
 public:
  bool empty() const noexcept { return heap_.empty(); }
  T& top() const noexcept { return *heap_.front().item; }

  /// Queues `item` at `item.wake_at`, or moves it there if already queued.
  void set(T& item) {
    if (item.wake_slot == unqueued) {
      heap_.push_back({item.wake_at, &item});
      return place(heap_.size() - 1);
    }
    heap_[item.wake_slot].at = item.wake_at;
    place(item.wake_slot);
  }

  void remove(T& item) {
    const std::size_t slot = item.wake_slot;
    if (slot == unqueued) return;
    item.wake_slot = unqueued;
    const Entry last = heap_.back();
    heap_.pop_back();
    if (last.item == &item) return;
    heap_[slot] = last;
    place(slot);
  }

 private:
  using Key = std::remove_cvref_t<decltype(std::declval<T&>().wake_at)>;
  struct Entry {
    Key at;
    T* item;
  };

  void put(std::size_t slot, const Entry& e) {
    heap_[slot] = e;
    e.item->wake_slot = slot;
  }

  // Moves the entry at `slot` up or down to where it belongs. (Moved up, it
  // is before every entry below its new place, so the second loop stops at
  // once.)
  void place(std::size_t slot) {
    const Entry e = heap_[slot];
    while (slot > 0) {
      const std::size_t parent = (slot - 1) / 2;
      if (!(e.at < heap_[parent].at)) break;
      put(slot, heap_[parent]);
      slot = parent;
    }
    const std::size_t n = heap_.size();
    for (;;) {
      std::size_t child = 2 * slot + 1;
      if (child >= n) break;
      if (child + 1 < n && heap_[child + 1].at < heap_[child].at) ++child;
      if (!(heap_[child].at < e.at)) break;
      put(slot, heap_[child]);
      slot = child;
    }
    put(slot, e);
  }

  std::vector<Entry> heap_;
};

}  // namespace leasehold::detail
