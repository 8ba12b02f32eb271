#pragma once
// On a Redis Cluster, the data marker of every slot (KeyLayout::
// data_marker_key) written before any group's first look, by
// mark_slots_script(): once a slot's marker is one ttl old, a group new to
// that slot is elected within a round trip. Without it most new groups
// would wait out the empty-restart guard, since most of the 16,384 slots
// have never held a group.
//
// A slot is marked when the slot map first names its master and again
// when another master serves it; all of a node's slots when its
// connection comes up again (a restarted node has a new identity). A pass
// that failed for a reason that may pass (CLUSTERDOWN, a lost connection)
// is tried again after a backoff. A node that refuses the script (Redis
// before 7.0, INFO refused in scripts) is asked again only when it
// reconnects: its new groups wait out the guard as they would without
// markers.
//
// Threading: the ClusterClient's executor (the elector's strand).

#include <leasehold/impl/cluster/cluster_client.hpp>

#include <leasehold/error.hpp>
#include <leasehold/key_layout.hpp>

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::detail {

class SlotMarkers {
 public:
  /// What one node's pass did (mark_slots_script()'s answers, summed over
  /// its scripts), or why the node stopped it.
  struct Pass {
    std::string address;      ///< the node, "host:port"
    std::size_t markers = 0;  ///< markers the pass sent
    std::size_t written = 0;
    std::size_t other_type = 0;  ///< keys of another type in a marker's place
    std::size_t unserved = 0;    ///< slots the node does not serve (yet): tried again later
    Error error;  ///< set when the node failed or refused the script
    /// The node refused the script (Redis before 7.0, INFO refused in
    /// scripts, no permission): not tried again until it reconnects. A
    /// pass that failed otherwise is tried again after a backoff.
    bool refused = false;
  };
  using Report = std::function<void(const Pass&)>;

  /// Marks slots of `cluster` under `layout`'s prefix; follows its slot map
  /// from now on (ClusterClient::on_map_change). `report` is called after
  /// each node's pass.
  SlotMarkers(cluster::detail::ClusterClient& cluster, KeyLayout layout, Report report);
  ~SlotMarkers();
  SlotMarkers(const SlotMarkers&) = delete;
  SlotMarkers& operator=(const SlotMarkers&) = delete;

  /// Node "host:port" connected: after its first connection, every slot it
  /// serves is marked again.
  void node_up(const std::string& address);
  /// Sends nothing more (the elector stops): a pass in flight ends with
  /// its answer, and no retry is armed.
  void stop();

  /// The most markers one script writes: a pass of a node that serves a
  /// third of the slots is 22 scripts, sent one after another, each of
  /// which holds the node for about a millisecond at most
  /// (docs/cluster.md), so that lease commands pass between them.
  static constexpr std::size_t markers_per_script = 256;
  /// The backoff of a pass that failed for a passing reason (CLUSTERDOWN, a
  /// lost connection), doubled on each failure up to last_retry.
  static constexpr std::chrono::milliseconds first_retry{500};
  static constexpr std::chrono::milliseconds last_retry{30'000};

 private:
  struct Run;
  void mark_new_masters();
  void mark(std::uint32_t node, std::vector<std::uint16_t> slots);
  void send_next(std::shared_ptr<Run> run);
  void answered(std::shared_ptr<Run> run, const std::vector<std::uint16_t>& part, error_code ec,
                const redis::Reply& reply);
  std::uint32_t node_number(const std::string& address);
  void forget(std::vector<std::uint16_t>::const_iterator first, std::vector<std::uint16_t>::const_iterator last,
              std::uint32_t node);
  void retry_later();

  cluster::detail::ClusterClient& cluster_;
  const KeyLayout layout_;
  Report report_;
  struct Node {
    std::string address;  // "host:port"
    bool connected_before = false;
  };
  std::vector<Node> nodes_;               // by number - 1
  std::vector<std::uint32_t> marked_by_;  // per slot: the number of the node marking or marked it (0: none)
  boost::asio::steady_timer retry_timer_;
  std::chrono::milliseconds retry_delay_ = first_retry;
  bool retry_armed_ = false;
  bool stopped_ = false;
  std::shared_ptr<SlotMarkers*> self_ = std::make_shared<SlotMarkers*>(this);
};

}  // namespace leasehold::detail
