#pragma once
// The elector's timer queue: every group at most once, ordered by when it
// wants to wake. An indexed binary heap, so that moving a group's wake (each
// reply does) updates its one entry instead of adding another (stale
// entries cost memory per group; see docs/performance.md).

#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

namespace leasehold::detail {

/// The `wake_slot` of an item that is not queued.
inline constexpr std::size_t unqueued = std::numeric_limits<std::size_t>::max();

// T has `wake_at` (ordered) and `wake_slot` (std::size_t, owned by the queue,
// initially `unqueued`).
template <typename T>
class WakeQueue {
 public:
  bool empty() const noexcept { return heap_.empty(); }
  T& top() const noexcept { return *heap_.front(); }

  /// Queues `item` at `item.wake_at`, or moves it there if already queued.
  void set(T& item) {
    if (item.wake_slot == unqueued) {
      item.wake_slot = heap_.size();
      heap_.push_back(&item);
    }
    sift_down(sift_up(item.wake_slot));
  }

  void remove(T& item) {
    const std::size_t slot = item.wake_slot;
    if (slot == unqueued) return;
    item.wake_slot = unqueued;
    T* last = heap_.back();
    heap_.pop_back();
    if (last == &item) return;
    heap_[slot] = last;
    last->wake_slot = slot;
    sift_down(sift_up(slot));
  }

 private:
  bool before(std::size_t a, std::size_t b) const { return heap_[a]->wake_at < heap_[b]->wake_at; }

  void swap_slots(std::size_t a, std::size_t b) {
    std::swap(heap_[a], heap_[b]);
    heap_[a]->wake_slot = a;
    heap_[b]->wake_slot = b;
  }

  std::size_t sift_up(std::size_t slot) {
    while (slot > 0) {
      const std::size_t parent = (slot - 1) / 2;
      if (!before(slot, parent)) break;
      swap_slots(slot, parent);
      slot = parent;
    }
    return slot;
  }

  void sift_down(std::size_t slot) {
    for (;;) {
      std::size_t first = slot;
      for (std::size_t child : {2 * slot + 1, 2 * slot + 2}) {
        if (child < heap_.size() && before(child, first)) first = child;
      }
      if (first == slot) return;
      swap_slots(slot, first);
      slot = first;
    }
  }

  std::vector<T*> heap_;
};

}  // namespace leasehold::detail
