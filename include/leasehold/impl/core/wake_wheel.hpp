#pragma once
// The elector's timer queue: every group at most once, in a hashed timing
// wheel of one-millisecond buckets. Moving a group's wake (each reply does)
// unlinks it from one bucket's list and links it into another: a few
// writes, where a heap sifted through levels that with 100,000 groups were
// cache misses each (a fifth of the client's CPU; docs/performance.md).
//
// A wake counts from the millisecond it falls in, rounded up: a group is
// never taken before its wake_at, and at most a millisecond after it (the
// elector's timer is armed on whole milliseconds anyway). A wake beyond the
// wheel's span (4,096 ms) shares a bucket with nearer ones and is passed
// over until its turn comes round.

#include <array>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

namespace leasehold::detail {

/// The `wake_id` of an item the wheel has never seen.
inline constexpr std::uint32_t no_wake_id = std::numeric_limits<std::uint32_t>::max();

// T has `wake_at` (a std::chrono::time_point; call set() again after
// changing it) and `wake_id` (std::uint32_t, owned by the wheel, initially
// `no_wake_id`). Items must stay where they are while the wheel lives.
template <typename T>
class WakeWheel {
 public:
  using TimePoint = std::remove_cvref_t<decltype(std::declval<T&>().wake_at)>;

  bool empty() const noexcept { return size_ == 0; }
  bool queued(const T& item) const noexcept {
    return item.wake_id != no_wake_id && links_[item.wake_id].prev != unqueued;
  }

  /// Queues `item` at `item.wake_at`, or moves it there if already queued.
  void set(T& item) {
    if (item.wake_id == no_wake_id) {
      if (links_.size() >= head_flag) throw std::length_error("WakeWheel: too many items");
      item.wake_id = static_cast<std::uint32_t>(links_.size());
      links_.push_back({&item});
    }
    const std::int64_t ms = ceil_ms(item.wake_at);
    Link& link = links_[item.wake_id];
    if (link.prev != unqueued) {
      if (link.ms == ms) return;
      unlink(item.wake_id);
    }
    put(item.wake_id, ms);
  }

  void remove(T& item) {
    if (queued(item)) unlink(item.wake_id);
  }

  /// No item wakes before the returned instant (a whole millisecond), and
  /// nearly always one wakes at it; nullopt when nothing is queued.
  std::optional<TimePoint> earliest() const noexcept {
    if (size_ == 0) return std::nullopt;
    const std::int64_t distance = next_occupied(cursor_, bucket_count - 1).value_or(0);
    return TimePoint(std::chrono::milliseconds(cursor_ + distance));
  }

  /// Unqueues up to `most` items due at `now` (their wake_at's millisecond
  /// has begun) and appends their wake_ids to `out`, earlier milliseconds
  /// first. The items themselves are not read (they are likely not in cache);
  /// item(id) is, for those taken, as their links were just read.
  void take_due(TimePoint now, std::size_t most, std::vector<std::uint32_t>& out) {
    const std::int64_t now_ms = floor_ms(now);
    if (size_ == 0 || now_ms < cursor_) return;
    const std::int64_t span = std::min<std::int64_t>(now_ms - cursor_, bucket_count - 1);
    std::size_t taken = 0;
    for (std::int64_t from = 0; from <= span;) {
      const std::optional<std::int64_t> distance = next_occupied(cursor_ + from, span - from);
      if (!distance) break;
      from += *distance;
      const std::uint32_t bucket = index_of(cursor_ + from);
      for (std::uint32_t id = heads_[bucket]; id != none;) {
        const std::uint32_t next = links_[id].next;
        if (links_[id].ms <= now_ms) {
          if (taken == most) {
            cursor_ += from;  // this bucket still holds due items
            return;
          }
          unlink(id);
          out.push_back(id);
          ++taken;
        }
        id = next;
      }
      ++from;
    }
    cursor_ = now_ms + 1;  // nothing queued is due at now_ms or before
  }

  T& item(std::uint32_t id) const noexcept { return *links_[id].item; }

 private:
  static constexpr std::uint32_t bucket_count = 4096;  // a power of two
  static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  // `prev` of a bucket's first item: head_flag | the bucket's index.
  static constexpr std::uint32_t head_flag = 0x8000'0000u;
  static constexpr std::uint32_t unqueued = none;  // `prev` of an item in no bucket

  // The item's address is kept with its links: the items due are found by
  // walking the links, and then need no second lookup that misses the cache.
  struct Link {
    T* item = nullptr;
    std::uint32_t next = none;
    std::uint32_t prev = unqueued;
    std::int64_t ms = 0;  // the millisecond it wakes in
  };

  static std::int64_t ceil_ms(TimePoint t) noexcept {
    return std::chrono::ceil<std::chrono::milliseconds>(t.time_since_epoch()).count();
  }
  static std::int64_t floor_ms(TimePoint t) noexcept {
    return std::chrono::floor<std::chrono::milliseconds>(t.time_since_epoch()).count();
  }
  static std::uint32_t index_of(std::int64_t ms) noexcept {
    return static_cast<std::uint32_t>(static_cast<std::uint64_t>(ms) & (bucket_count - 1));
  }

  void put(std::uint32_t id, std::int64_t ms) {
    // Every queued item wakes at cursor_ or later; an empty wheel starts anew.
    if (size_ == 0 || ms < cursor_) cursor_ = ms;
    const std::uint32_t bucket = index_of(ms);
    Link& link = links_[id];
    link.ms = ms;
    link.prev = head_flag | bucket;
    link.next = heads_[bucket];
    if (link.next != none) links_[link.next].prev = id;
    heads_[bucket] = id;
    occupied_[bucket / 64] |= std::uint64_t{1} << (bucket % 64);
    ++size_;
  }

  void unlink(std::uint32_t id) {
    Link& link = links_[id];
    if (link.next != none) links_[link.next].prev = link.prev;
    if ((link.prev & head_flag) != 0) {
      const std::uint32_t bucket = link.prev & ~head_flag;
      heads_[bucket] = link.next;
      if (link.next == none) occupied_[bucket / 64] &= ~(std::uint64_t{1} << (bucket % 64));
    } else {
      links_[link.prev].next = link.next;
    }
    link.prev = unqueued;
    link.next = none;
    --size_;
  }

  // How many milliseconds after `from` the first occupied bucket is, looking
  // at most `within` past it; nullopt when none is.
  std::optional<std::int64_t> next_occupied(std::int64_t from, std::int64_t within) const noexcept {
    std::int64_t distance = 0;
    std::uint32_t bucket = index_of(from);
    while (distance <= within) {
      const std::uint64_t word = occupied_[bucket / 64] >> (bucket % 64);
      if (word != 0) {
        distance += std::countr_zero(word);
        return distance <= within ? std::optional<std::int64_t>(distance) : std::nullopt;
      }
      const std::uint32_t skipped = 64 - bucket % 64;  // to the next word
      distance += skipped;
      bucket = (bucket + skipped) & (bucket_count - 1);
    }
    return std::nullopt;
  }

  std::vector<Link> links_;  // by wake_id
  std::array<std::uint32_t, bucket_count> heads_ = make_heads();
  std::array<std::uint64_t, bucket_count / 64> occupied_{};  // a bit per bucket with items
  std::size_t size_ = 0;
  std::int64_t cursor_ = 0;  // no queued item wakes before this millisecond

  static constexpr std::array<std::uint32_t, bucket_count> make_heads() {
    std::array<std::uint32_t, bucket_count> heads{};
    heads.fill(none);
    return heads;
  }
};

}  // namespace leasehold::detail
