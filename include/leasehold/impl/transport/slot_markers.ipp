#include <leasehold/impl/transport/slot_markers.hpp>

#include <leasehold/impl/cluster/redirect.hpp>
#include <leasehold/impl/lease/lease_scripts.hpp>
#include <leasehold/impl/protocol/key_slot.hpp>
#include <leasehold/impl/protocol/slot_tags.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

namespace leasehold::detail {

namespace {

// The marker a group of `slot` reads: the marker of a group named after
// the slot's tag. Empty where that lands in another slot (a prefix with
// braces of its own puts every group in the prefix's slot).
std::string marker_of_slot(const KeyLayout& layout, std::uint16_t slot) {
  std::string marker = layout.data_marker_key(cluster::detail::slot_tag(slot));
  if (cluster::detail::key_slot(marker) != slot) marker.clear();
  return marker;
}

// Worth another try soon: the node or the cluster in a passing state, or
// the connection's trouble. Anything else (the script refused, INFO refused
// in scripts, no permission) waits for the node's next connection.
bool passing(error_code ec, const redis::Reply& reply) {
  if (ec == errc::read_only || ec == errc::loading || ec == errc::busy) return true;
  if (ec && ec != errc::server_error && ec != errc::no_permission && ec != errc::no_script &&
      ec != errc::unexpected_reply && ec != errc::out_of_memory) {
    return true;
  }
  if (!reply.is_error()) return false;
  return cluster::detail::read_cluster_error(reply.str).kind != cluster::detail::ClusterError::Kind::other ||
         reply.str.starts_with("MASTERDOWN");
}

}  // namespace

SlotMarkers::SlotMarkers(cluster::detail::ClusterClient& cluster, KeyLayout layout, Report report)
    : cluster_(cluster), layout_(std::move(layout)), report_(std::move(report)),
      marked_by_(cluster::detail::slot_count, 0),
      retry_timer_(cluster.get_executor()) {
  cluster_.on_map_change([self = self_] {
    if (*self != nullptr) (*self)->mark_new_masters();
  });
}

SlotMarkers::~SlotMarkers() {
  *self_ = nullptr;
  retry_timer_.cancel();
}

void SlotMarkers::stop() {
  stopped_ = true;
  retry_timer_.cancel();
}

void SlotMarkers::node_up(const std::string& address) {
  const std::uint32_t node = node_number(address);
  if (std::exchange(nodes_[node - 1].connected_before, true)) {
    std::replace(marked_by_.begin(), marked_by_.end(), node, std::uint32_t{0});
  }
  mark_new_masters();
}

std::uint32_t SlotMarkers::node_number(const std::string& address) {
  const auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const Node& n) { return n.address == address; });
  if (it != nodes_.end()) return static_cast<std::uint32_t>(it - nodes_.begin()) + 1;
  nodes_.push_back({address, false});
  return static_cast<std::uint32_t>(nodes_.size());
}

// Slots whose master the map names and no pass has marked (or is marking)
// on that master, by master.
void SlotMarkers::mark_new_masters() {
  if (stopped_) return;
  std::map<std::uint32_t, std::vector<std::uint16_t>> unmarked;  // by node
  const cluster::detail::ClusterNode* last = nullptr;  // runs of slots share a master
  std::uint32_t node = 0;
  for (std::uint32_t slot = 0; slot < cluster::detail::slot_count; ++slot) {
    const cluster::detail::ClusterNode* master = cluster_.master_of(static_cast<std::uint16_t>(slot));
    if (master == nullptr) continue;
    if (master != last) {
      last = master;
      node = node_number(master->to_string());
    }
    if (marked_by_[slot] == node) continue;
    marked_by_[slot] = node;
    unmarked[node].push_back(static_cast<std::uint16_t>(slot));
  }
  for (auto& [node, slots] : unmarked) mark(node, std::move(slots));
}

// One node's slots, one script at a time: the node's lease commands pass
// between them, and a node that refuses the script is asked once.
struct SlotMarkers::Run {
  std::uint32_t node = 0;
  std::vector<std::uint16_t> slots;
  std::size_t next = 0;  // slots[next..] are not sent yet
  Pass pass;
};

void SlotMarkers::mark(std::uint32_t node, std::vector<std::uint16_t> slots) {
  auto run = std::make_shared<Run>();
  run->node = node;
  run->slots = std::move(slots);
  run->pass.address = nodes_[node - 1].address;
  send_next(std::move(run));
}

void SlotMarkers::send_next(std::shared_ptr<Run> run) {
  if (stopped_) return;
  while (run->next < run->slots.size()) {
    const auto first = run->slots.begin() + static_cast<std::ptrdiff_t>(run->next);
    run->next = std::min(run->slots.size(), run->next + markers_per_script);
    std::vector<std::uint16_t> part(first, run->slots.begin() + static_cast<std::ptrdiff_t>(run->next));
    std::vector<std::string> markers;
    markers.reserve(part.size());
    for (const std::uint16_t slot : part) {
      if (std::string marker = marker_of_slot(layout_, slot); !marker.empty()) markers.push_back(std::move(marker));
    }
    if (markers.empty()) continue;
    run->pass.markers += markers.size();
    const std::uint16_t route = part.front();
    cluster_.async_eval(route, mark_slots_script(), {}, markers,
                        [self = self_, run, part = std::move(part)](error_code ec, redis::Reply reply,
                                                                    redis::Client*) mutable {
                          if (*self != nullptr) (*self)->answered(std::move(run), part, ec, reply);
                        });
    return;
  }
  if (run->pass.unserved == 0) retry_delay_ = first_retry;
  if (report_) report_(run->pass);
}

// Slots the node does not serve yet, or a failure that may pass, leave
// their slots unmarked and are tried again after a backoff (the slot map
// may have moved them meanwhile); a refusal leaves the node's slots to its
// next connection (node_up()).
void SlotMarkers::answered(std::shared_ptr<Run> run, const std::vector<std::uint16_t>& part, error_code ec,
                           const redis::Reply& reply) {
  if (stopped_) return;  // the elector's stop failed it: nothing to say
  Pass& pass = run->pass;
  const auto& e = reply.elements;
  const bool counted = !ec && reply.is_array() && e.size() >= 2 && e[0].is_integer();
  if (counted && e[0].integer >= 0 && e.size() == 3 && e[1].is_integer() && e[2].is_integer()) {
    pass.written += static_cast<std::size_t>(e[0].integer);
    pass.other_type += static_cast<std::size_t>(e[1].integer);
    const auto unserved = static_cast<std::size_t>(e[2].integer);
    pass.unserved += unserved;
    if (unserved != 0) {
      forget(part.begin(), part.end(), run->node);
      retry_later();
    }
    return send_next(std::move(run));
  }
  std::string why = counted && e[1].is_string() ? e[1].str
                    : reply.is_error()          ? reply.str
                    : ec                        ? ec.message()
                                                : "an unexpected reply";
  pass.error = Error{ec ? ec : make_error_code(errc::unexpected_reply),
                     fmt::format("cluster node {}: the slot markers were not written: {}", pass.address, why)};
  pass.refused = counted || !passing(ec, reply);
  if (!pass.refused) {
    forget(part.begin(), part.end(), run->node);
    forget(run->slots.begin() + static_cast<std::ptrdiff_t>(run->next), run->slots.end(), run->node);
    retry_later();
  }
  if (report_) report_(pass);
}

void SlotMarkers::forget(std::vector<std::uint16_t>::const_iterator first,
                         std::vector<std::uint16_t>::const_iterator last, std::uint32_t node) {
  for (; first != last; ++first) {
    if (marked_by_[*first] == node) marked_by_[*first] = 0;
  }
}

void SlotMarkers::retry_later() {
  if (retry_armed_ || stopped_) return;
  retry_armed_ = true;
  retry_timer_.expires_after(retry_delay_);
  retry_delay_ = std::min(retry_delay_ * 2, last_retry);
  retry_timer_.async_wait([self = self_](error_code ec) {
    if (ec || *self == nullptr) return;
    (*self)->retry_armed_ = false;
    (*self)->mark_new_masters();
  });
}

}  // namespace leasehold::detail
