#include <leasehold/impl/cluster/slot_map_replies.hpp>

#include <fmt/format.h>

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace leasehold::cluster::detail {

namespace {

using redis::Reply;

// A reply of the wrong shape; `command` and the entry are named in the detail.
SlotMapReading unexpected(std::string_view command, std::string_view what) {
  return {SlotMap{}, Error{make_error_code(errc::unexpected_reply), fmt::format("{}: {}", command, what)}};
}

// An error reply (cluster support disabled, an unknown subcommand, NOPERM...).
SlotMapReading server_error(std::string_view command, const Reply& reply) {
  return {SlotMap{}, Error{make_error_code(classify_server_error(reply.str)),
                           fmt::format("{} answered {}", command, reply.str)}};
}

// The map of `ranges`; an error there is said to come from `command`'s reply.
SlotMapReading build(std::string_view command, std::vector<SlotRange> ranges) {
  auto reading = SlotMap::from_ranges(std::move(ranges));
  if (reading.error) reading.error.detail = fmt::format("{}: {}", command, reading.error.detail);
  return reading;
}

bool is_text(const Reply& reply) { return reply.is_string() || reply.is_status(); }

// The value under `name` in a flat map (key, value, key, value ...); nullptr
// when absent. The caller has checked that the array has an even size.
const Reply* field(const Reply& map, std::string_view name) {
  for (std::size_t i = 0; i + 1 < map.elements.size(); i += 2) {
    if (is_text(map.elements[i]) && map.elements[i].str == name) return &map.elements[i + 1];
  }
  return nullptr;
}

bool is_flat_map(const Reply& reply) { return reply.is_array() && reply.elements.size() % 2 == 0; }

std::optional<std::uint16_t> slot_number(const Reply& reply) {
  if (!reply.is_integer() || reply.integer < 0 || reply.integer >= slot_count) return std::nullopt;
  return static_cast<std::uint16_t>(reply.integer);
}

std::optional<std::uint16_t> port_number(const Reply* reply) {
  if (reply == nullptr || !reply->is_integer() || reply->integer <= 0 || reply->integer > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(reply->integer);
}

// A usable host name or address: not empty, not "?" (unknown).
bool known_host(const Reply* reply) {
  return reply != nullptr && is_text(*reply) && !reply->str.empty() && reply->str != "?";
}

std::string text_or_empty(const Reply* reply) {
  return reply != nullptr && is_text(*reply) ? reply->str : std::string();
}

// --- CLUSTER SHARDS ---------------------------------------------------------

struct ShardNode {
  ClusterNode node;
  bool master = false;
};

// One entry of a shard's "nodes"; `where` names it for errors.
std::optional<ShardNode> read_shard_node(const Reply& entry, const EndpointContext& context, std::string& error,
                                         const std::string& where) {
  if (!is_flat_map(entry)) {
    error = fmt::format("{} is not a field/value array: {}", where, entry.debug_string());
    return std::nullopt;
  }
  ShardNode out;
  out.node.id = text_or_empty(field(entry, "id"));
  const Reply* role = field(entry, "role");
  if (role == nullptr || !is_text(*role)) {
    error = fmt::format("{} ({}) has no role", where, out.node.id);
    return std::nullopt;
  }
  out.master = role->str == "master";
  if (const Reply* endpoint = field(entry, "endpoint"); known_host(endpoint)) {
    out.node.host = endpoint->str;
  } else if (const Reply* ip = field(entry, "ip"); known_host(ip)) {
    out.node.host = ip->str;
  } else {
    error = fmt::format("{} ({}) has neither a known endpoint nor an ip", where, out.node.id);
    return std::nullopt;
  }
  const char* port_field = context.tls ? "tls-port" : "port";
  const auto port = port_number(field(entry, port_field));
  if (!port) {
    error = fmt::format("{} ({}) has no valid \"{}\"", where, out.node.id, port_field);
    return std::nullopt;
  }
  out.node.port = *port;
  return out;
}

// --- CLUSTER SLOTS ------------------------------------------------------------

std::optional<ClusterNode> read_slots_node(const Reply& entry, const EndpointContext& context,
                                           std::string& error, const std::string& where) {
  if (!entry.is_array() || entry.elements.size() < 2) {
    error = fmt::format("{} is not [endpoint, port, ...]: {}", where, entry.debug_string());
    return std::nullopt;
  }
  ClusterNode node;
  if (entry.elements.size() > 2) node.id = text_or_empty(&entry.elements[2]);
  const Reply& endpoint = entry.elements[0];
  if (endpoint.is_nil()) {
    if (context.answering_host.empty()) {
      error = fmt::format("{} ({}) has a null endpoint (the node that answered), which is not known here",
                          where, node.id);
      return std::nullopt;
    }
    node.host = context.answering_host;
  } else if (known_host(&endpoint)) {
    node.host = endpoint.str;
  } else {
    const Reply* ip = nullptr;
    if (entry.elements.size() > 3 && is_flat_map(entry.elements[3])) ip = field(entry.elements[3], "ip");
    if (!is_text(endpoint) || !known_host(ip)) {
      error =
          fmt::format("{} ({}) has an unknown endpoint {} and no ip", where, node.id, endpoint.debug_string());
      return std::nullopt;
    }
    node.host = ip->str;
  }
  const auto port = port_number(&entry.elements[1]);
  if (!port) {
    error = fmt::format("{} ({}) has no valid port: {}", where, node.id, entry.elements[1].debug_string());
    return std::nullopt;
  }
  node.port = *port;
  return node;
}

}  // namespace

SlotMapReading read_cluster_shards(const Reply& reply, const EndpointContext& context) {
  constexpr std::string_view command = "CLUSTER SHARDS";
  if (reply.is_error()) return server_error(command, reply);
  if (!reply.is_array()) {
    return unexpected(command, fmt::format("expected an array of shards, got {}", reply.debug_string()));
  }

  std::vector<SlotRange> ranges;
  for (std::size_t i = 0; i < reply.elements.size(); ++i) {
    const Reply& shard = reply.elements[i];
    const std::string where = fmt::format("shard {}", i);
    if (!is_flat_map(shard)) {
      return unexpected(command, fmt::format("{} is not a field/value array: {}", where, shard.debug_string()));
    }
    const Reply* slots = field(shard, "slots");
    const Reply* nodes = field(shard, "nodes");
    if (slots == nullptr || !slots->is_array() || slots->elements.size() % 2 != 0) {
      return unexpected(command, fmt::format("{} has no \"slots\" array of first/last pairs", where));
    }
    if (nodes == nullptr || !nodes->is_array()) {
      return unexpected(command, fmt::format("{} has no \"nodes\" array", where));
    }
    if (slots->elements.empty()) continue;  // serves nothing: nothing to route to

    std::optional<ClusterNode> master;
    std::vector<ClusterNode> replicas;
    for (std::size_t n = 0; n < nodes->elements.size(); ++n) {
      std::string error;
      auto node = read_shard_node(nodes->elements[n], context, error, fmt::format("{} node {}", where, n));
      if (!node) return unexpected(command, error);
      if (!node->master) {
        replicas.push_back(std::move(node->node));
      } else if (master) {
        return unexpected(command, fmt::format("{} lists two masters: {} and {}", where, master->to_string(),
                                               node->node.to_string()));
      } else {
        master = std::move(node->node);
      }
    }
    if (!master) return unexpected(command, fmt::format("{} serves slots but lists no master", where));

    for (std::size_t s = 0; s < slots->elements.size(); s += 2) {
      const auto first = slot_number(slots->elements[s]);
      const auto last = slot_number(slots->elements[s + 1]);
      if (!first || !last) {
        return unexpected(command,
                          fmt::format("{} has a slot range that is not two slot numbers in 0-{}: {}, {}", where,
                                      slot_count - 1, slots->elements[s].debug_string(),
                                      slots->elements[s + 1].debug_string()));
      }
      ranges.push_back({*first, *last, *master, replicas});
    }
  }
  return build(command, std::move(ranges));
}

SlotMapReading read_cluster_slots(const Reply& reply, const EndpointContext& context) {
  constexpr std::string_view command = "CLUSTER SLOTS";
  if (reply.is_error()) return server_error(command, reply);
  if (!reply.is_array()) {
    return unexpected(command, fmt::format("expected an array of slot ranges, got {}", reply.debug_string()));
  }

  std::vector<SlotRange> ranges;
  for (std::size_t i = 0; i < reply.elements.size(); ++i) {
    const Reply& entry = reply.elements[i];
    const std::string where = fmt::format("entry {}", i);
    if (!entry.is_array() || entry.elements.size() < 3) {
      return unexpected(command,
                        fmt::format("{} is not [first, last, master, ...]: {}", where, entry.debug_string()));
    }
    const auto first = slot_number(entry.elements[0]);
    const auto last = slot_number(entry.elements[1]);
    if (!first || !last) {
      return unexpected(command, fmt::format("{} does not start with two slot numbers in 0-{}: {}", where,
                                             slot_count - 1, entry.debug_string()));
    }
    SlotRange range{*first, *last, {}, {}};
    for (std::size_t n = 2; n < entry.elements.size(); ++n) {
      std::string error;
      const std::string node_where =
          fmt::format("{} {}", where, n == 2 ? std::string("master") : fmt::format("replica {}", n - 3));
      auto node = read_slots_node(entry.elements[n], context, error, node_where);
      if (!node) return unexpected(command, error);
      if (n == 2) {
        range.master = std::move(*node);
      } else {
        range.replicas.push_back(std::move(*node));
      }
    }
    ranges.push_back(std::move(range));
  }
  return build(command, std::move(ranges));
}

}  // namespace leasehold::cluster::detail
