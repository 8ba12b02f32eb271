#pragma once
// The elector's timer queue: every group at most once, ordered by when it
// wants to wake. An indexed heap, so that moving a group's wake (each
// reply does) updates its one entry instead of adding another (stale
// entries cost memory per group; see docs/performance.md).

#include "prefetch.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

namespace leasehold::detail {

/// The `wake_id` of an item the queue has never seen.
inline constexpr std::uint32_t no_wake_id = std::numeric_limits<std::uint32_t>::max();

// T has `wake_at` (ordered; call set() again after changing it) and
// `wake_id` (std::uint32_t, owned by the queue, initially `no_wake_id`).
// Items must stay where they are while the queue lives.
//
// The heap and each item's place in it live in the queue's own compact
// arrays: sifting neither reads nor writes the items, which with 100,000
// groups are spread over tens of MB (a cache miss each; a tenth of the
// elector's CPU in the cluster scale run when the place was in the item).
template <typename T>
class WakeQueue {
 public:
  bool empty() const noexcept { return heap_.empty(); }
  T& top() const noexcept { return *items_[heap_.front().id]; }
  /// top().wake_at, without touching the item.
  auto top_at() const noexcept { return heap_.front().at; }
  bool queued(const T& item) const noexcept { return item.wake_id != no_wake_id && slots_[item.wake_id] != unqueued; }

  /// Queues `item` at `item.wake_at`, or moves it there if already queued.
  void set(T& item) {
    if (item.wake_id == no_wake_id) {
      item.wake_id = static_cast<std::uint32_t>(items_.size());
      items_.push_back(&item);
      slots_.push_back(unqueued);
    }
    const std::uint32_t slot = slots_[item.wake_id];
    if (slot == unqueued) {
      const std::size_t end = heap_.size();
      heap_.push_back({item.wake_at, item.wake_id});
      return place(end);
    }
    heap_[slot].at = item.wake_at;
    place(slot);
  }

  void remove(T& item) {
    if (queued(item)) remove_at(slots_[item.wake_id]);
  }

  /// Removes the top item and returns its wake_id, without reading the item
  /// (item() finds it; it is likely not in cache yet).
  std::uint32_t pop() {
    const std::uint32_t id = heap_.front().id;
    remove_at(0);
    return id;
  }
  T& item(std::uint32_t id) const noexcept { return *items_[id]; }
  /// Starts loading item(id)'s address.
  void prefetch_item(std::uint32_t id) const noexcept { detail::prefetch(&items_[id], sizeof(T*)); }

 private:
  using Key = std::remove_cvref_t<decltype(std::declval<T&>().wake_at)>;
  static constexpr std::uint32_t unqueued = std::numeric_limits<std::uint32_t>::max();
  struct Entry {
    Key at;
    std::uint32_t id;
  };

// GCC 12 loses track of heap_'s size after a push_back into an empty
// vector and warns that put() writes into a region of size 0.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
  void remove_at(std::size_t slot) {
    slots_[heap_[slot].id] = unqueued;
    const std::size_t last = heap_.size() - 1;
    if (slot != last) heap_[slot] = heap_[last];
    heap_.pop_back();
    if (slot != last) place(slot);
  }

  void put(std::size_t slot, const Entry& e) {
    heap_[slot] = e;
    slots_[e.id] = static_cast<std::uint32_t>(slot);
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  // Moves the entry at `slot` up or down to where it belongs (into a hole:
  // each level writes one place). Moved up, it is before every entry below
  // its new place, so the second loop stops at once. Four children a node:
  // half the levels of a binary heap, and siblings share a cache line or two
  // (the bottom levels of 100,000 entries are not in cache).
  void place(std::size_t slot) {
    constexpr std::size_t arity = 4;
    const Entry e = heap_[slot];
    while (slot > 0) {
      const std::size_t parent = (slot - 1) / arity;
      if (!(e.at < heap_[parent].at)) break;
      put(slot, heap_[parent]);
      slot = parent;
    }
    const std::size_t n = heap_.size();
    for (;;) {
      const std::size_t first = arity * slot + 1;
      if (first >= n) break;
      const std::size_t end = std::min(first + arity, n);
      std::size_t child = first;
      for (std::size_t c = first + 1; c < end; ++c) {
        if (heap_[c].at < heap_[child].at) child = c;
      }
      if (!(heap_[child].at < e.at)) break;
      put(slot, heap_[child]);
      slot = child;
    }
    put(slot, e);
  }

  std::vector<Entry> heap_;
  std::vector<T*> items_;             // by wake_id
  std::vector<std::uint32_t> slots_;  // by wake_id: the item's place in heap_, or unqueued
};

}  // namespace leasehold::detail
