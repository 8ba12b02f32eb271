#pragma once
// Reading a slot map from the two replies that describe one: CLUSTER SHARDS
// (Redis 7.0+) and CLUSTER SLOTS (older servers, and the fallback). Pure: no
// I/O. A malformed reply is an error naming the entry, never a crash.

#include <leasehold/impl/cluster/slot_map.hpp>

#include <leasehold/redis/reply.hpp>

#include <string>

namespace leasehold::cluster::detail {

/// How to read the addresses a reply gives.
struct EndpointContext {
  /// The host of the node that answered: where a null endpoint in CLUSTER
  /// SLOTS points (cluster-preferred-endpoint-type unknown-endpoint). Empty:
  /// a null endpoint is an error.
  std::string answering_host;
  /// Take each node's `tls-port` from CLUSTER SHARDS instead of its `port`
  /// (CLUSTER SLOTS already names the port of the asking connection's kind).
  bool tls = false;
};

/// CLUSTER SHARDS: an array of shards, each a flat map with "slots" (a flat
/// array of first, last, first, last ... integers) and "nodes" (each a flat
/// map: id, port, tls-port, ip, endpoint, hostname, role, replication-offset,
/// health). A node's address is its endpoint, or its ip when the endpoint is
/// empty or "?" (unknown). Shards without slots (a failed master replaced by
/// its replica, an empty master) are left out; a shard with slots needs
/// exactly one node whose role is "master". Unknown fields are ignored.
/// An error reply gives its classified code (see classify_server_error)
/// with the server's text; any other shape errc::unexpected_reply.
SlotMapReading read_cluster_shards(const redis::Reply& reply, const EndpointContext& context = {});

/// CLUSTER SLOTS: an array of [first, last, master, replica...], each node
/// [endpoint, port, id?, metadata?] where metadata is a flat map that may
/// hold "ip" and "hostname" (Redis 7). The endpoint is a host; null means the
/// node that answered (context.answering_host); "?" or empty means unknown,
/// and the metadata's ip is used instead when there is one. Errors as for
/// read_cluster_shards().
SlotMapReading read_cluster_slots(const redis::Reply& reply, const EndpointContext& context = {});

}  // namespace leasehold::cluster::detail
