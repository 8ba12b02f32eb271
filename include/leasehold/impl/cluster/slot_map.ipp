#include <leasehold/impl/cluster/slot_map.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace leasehold::cluster::detail {

namespace {

SlotMapReading failure(std::string detail) {
  return {SlotMap{}, Error{make_error_code(errc::unexpected_reply), std::move(detail)}};
}

std::string describe_range(const SlotRange& range) {
  return fmt::format("{}-{} {}", range.first, range.last, range.master.to_string());
}

bool same_nodes(const SlotRange& a, const SlotRange& b) {
  return a.master == b.master && a.replicas == b.replicas;
}

}  // namespace

std::string ClusterNode::to_string() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

SlotMapReading SlotMap::from_ranges(std::vector<SlotRange> ranges) {
  for (const SlotRange& range : ranges) {
    if (range.first > range.last || range.last >= slot_count) {
      return failure(
          fmt::format("slot range {}-{} is not within 0-{}", range.first, range.last, slot_count - 1));
    }
    if (range.master.host.empty() || range.master.port == 0) {
      return failure(fmt::format("slots {}-{} have a master without a host or port ({})", range.first,
                                 range.last, range.master.to_string()));
    }
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const SlotRange& a, const SlotRange& b) { return a.first < b.first; });

  SlotMapReading reading;
  std::vector<SlotRange>& merged = reading.map.ranges_;
  for (SlotRange& range : ranges) {
    if (!merged.empty()) {
      SlotRange& previous = merged.back();
      if (range.first <= previous.last) {
        return failure(fmt::format("slot {} is in two ranges: {} and {}", range.first, describe_range(previous),
                                   describe_range(range)));
      }
      if (range.first == previous.last + 1 && same_nodes(previous, range)) {
        previous.last = range.last;
        continue;
      }
    }
    merged.push_back(std::move(range));
  }
  return reading;
}

const SlotRange* SlotMap::range_of(std::uint16_t slot) const noexcept {
  // The last range that starts at or before `slot`.
  const auto after = std::upper_bound(ranges_.begin(), ranges_.end(), slot,
                                      [](std::uint16_t s, const SlotRange& range) { return s < range.first; });
  if (after == ranges_.begin()) return nullptr;
  const SlotRange& candidate = *std::prev(after);
  return slot <= candidate.last ? &candidate : nullptr;
}

const ClusterNode* SlotMap::master_of(std::uint16_t slot) const noexcept {
  const SlotRange* range = range_of(slot);
  return range != nullptr ? &range->master : nullptr;
}

std::vector<ClusterNode> SlotMap::masters() const {
  std::vector<ClusterNode> masters;
  for (const SlotRange& range : ranges_) {
    if (std::find(masters.begin(), masters.end(), range.master) == masters.end()) {
      masters.push_back(range.master);
    }
  }
  return masters;
}

std::size_t SlotMap::covered_slots() const noexcept {
  std::size_t covered = 0;
  for (const SlotRange& range : ranges_) covered += range.size();
  return covered;
}

std::string SlotMap::describe() const {
  if (ranges_.empty()) return "no slots";
  std::string out;
  for (const SlotRange& range : ranges_) {
    if (!out.empty()) out += ", ";
    out += describe_range(range);
  }
  return out;
}

}  // namespace leasehold::cluster::detail
