#pragma once
// Which master serves each hash slot of a Redis Cluster: a value built from
// the slot ranges a CLUSTER SHARDS or CLUSTER SLOTS reply lists (see
// slot_map_replies.hpp). Pure: no I/O.

#include <leasehold/impl/protocol/key_slot.hpp>

#include <leasehold/error.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace leasehold::cluster::detail {

/// A cluster node as a slot map names it: where to connect, and its id.
struct ClusterNode {
  std::string id;  ///< the node's id (40 hex digits); empty when the reply gave none
  std::string host;
  std::uint16_t port = 0;

  /// "host:port" ("[host]:port" for an IPv6 address).
  std::string to_string() const;
  friend bool operator==(const ClusterNode&, const ClusterNode&) = default;
};

/// Slots first..last (inclusive), served by `master` and copied to `replicas`.
struct SlotRange {
  std::uint16_t first = 0;
  std::uint16_t last = 0;
  ClusterNode master;
  std::vector<ClusterNode> replicas;

  std::size_t size() const noexcept { return static_cast<std::size_t>(last) - first + 1; }
  friend bool operator==(const SlotRange&, const SlotRange&) = default;
};

class SlotMap;

/// A slot map, or why one could not be made (then `map` is empty).
struct SlotMapReading;

/// Which master serves each slot. A value: copy it, compare it, replace it
/// whole when the cluster says it changed. Slots no range covers have no
/// master (a cluster that is not fully covered, or a partial reply).
class SlotMap {
 public:
  /// A map that serves no slot.
  SlotMap() = default;

  /// The map of `ranges`, given in any order. Each range must have
  /// first <= last < slot_count and a master with a host and a port; no slot
  /// may be in two ranges (errc::unexpected_reply naming the range or the
  /// slot otherwise). Adjacent ranges with the same master and replicas are
  /// merged, so that maps of the same assignment compare equal however the
  /// reply split it.
  static SlotMapReading from_ranges(std::vector<SlotRange> ranges);

  /// The master serving `slot`; nullptr when no range covers it (or slot is
  /// not below slot_count). Valid until the map is changed or destroyed.
  const ClusterNode* master_of(std::uint16_t slot) const noexcept;
  /// The range holding `slot`, or nullptr.
  const SlotRange* range_of(std::uint16_t slot) const noexcept;

  /// The ranges, sorted by first slot, merged as described at from_ranges().
  const std::vector<SlotRange>& ranges() const noexcept { return ranges_; }
  /// Every master once, in the order of the first slot each serves.
  std::vector<ClusterNode> masters() const;
  /// How many slots have a master.
  std::size_t covered_slots() const noexcept;
  /// Every slot has a master.
  bool covers_all() const noexcept { return covered_slots() == slot_count; }
  bool empty() const noexcept { return ranges_.empty(); }

  /// "0-5460 127.0.0.1:7000, 5461-10922 127.0.0.1:7001, ..." for logs and
  /// error messages (replicas are left out).
  std::string describe() const;

  friend bool operator==(const SlotMap&, const SlotMap&) = default;

 private:
  std::vector<SlotRange> ranges_;
};

struct SlotMapReading {
  SlotMap map;  ///< empty when error is set
  Error error;  ///< what was wrong, with a detail naming the entry
};

}  // namespace leasehold::cluster::detail
