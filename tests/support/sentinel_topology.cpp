#include "support/sentinel_topology.hpp"

#include "support/node_probe.hpp"

#include <stdexcept>
#include <thread>
#include <utility>

namespace leasehold::test {

namespace {

using namespace std::chrono_literals;
using leasehold::redis::Reply;

constexpr auto start_timeout = 15s;
constexpr auto probe_timeout = 1000ms;  // one question to a node or sentinel
const std::string loopback = "127.0.0.1";

void check_options(const SentinelTopologyOptions& options) {
  if (options.replicas < 0 || options.sentinels < 1 || options.quorum < 1 ||
      options.quorum > options.sentinels || options.master_name.empty()) {
    throw std::invalid_argument(
        "SentinelTopology: need replicas >= 0, sentinels >= 1, 1 <= quorum <= sentinels and a "
        "master name");
  }
}

}  // namespace

std::map<std::string, std::string> reply_fields(const Reply& reply) {
  std::map<std::string, std::string> fields;
  for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2) {
    fields[reply.elements[i].str] = reply.elements[i + 1].str;
  }
  return fields;
}

SentinelTopology::SentinelTopology(SentinelTopologyOptions options) : options_(std::move(options)) {
  check_options(options_);
  start_nodes();
  start_sentinels();
}

SentinelTopology::~SentinelTopology() {
  // Sentinels first, so that none reacts to the data nodes going away.
  sentinels_.clear();
  nodes_.clear();
}

std::vector<std::string> SentinelTopology::node_config(std::optional<std::size_t> replica_of) const {
  // A full resync (a node restarted empty) starts at once instead of
  // waiting 5 s for more replicas to share the transfer.
  std::vector<std::string> config{"repl-diskless-sync-delay 0"};
  if (!options_.data_password.empty()) {
    config.push_back("masterauth " + config_quote(options_.data_password));
  }
  if (replica_of) {
    config.push_back("replicaof " + loopback + " " + std::to_string(node(*replica_of).port()));
  }
  return config;
}

std::vector<std::string> SentinelTopology::sentinel_config() const {
  const std::string& name = options_.master_name;
  std::vector<std::string> config{
      "sentinel resolve-hostnames no",
      "sentinel monitor " + name + " " + loopback + " " + std::to_string(node(master_).port()) +
          " " + std::to_string(options_.quorum),
      "sentinel down-after-milliseconds " + name + " " + std::to_string(options_.down_after.count()),
      "sentinel failover-timeout " + name + " " + std::to_string(options_.failover_timeout.count()),
      "sentinel parallel-syncs " + name + " 1"};
  if (!options_.data_password.empty()) {
    config.push_back("sentinel auth-pass " + name + " " + config_quote(options_.data_password));
  }
  // No `sentinel sentinel-pass`: without it a sentinel authenticates to the
  // other sentinels with its own requirepass, which they all share.
  return config;
}

void SentinelTopology::start_nodes() {
  const auto count = static_cast<std::size_t>(options_.replicas) + 1;
  nodes_.reserve(count);
  RedisServerOptions node_options;
  node_options.password = options_.data_password;
  for (std::size_t i = 0; i < count; ++i) {
    node_options.extra_config = node_config(i == master_ ? std::nullopt : std::optional(master_));
    nodes_.emplace_back(node_options);
  }
  // Sentinels learn the replicas from the master's INFO: they must be
  // attached before the sentinels look.
  for (std::size_t i = 0; i < count; ++i) {
    if (i != master_) wait_for_replica_of(i, master_, start_timeout);
  }
}

void SentinelTopology::start_sentinels() {
  const auto count = static_cast<std::size_t>(options_.sentinels);
  sentinels_.reserve(count);
  RedisServerOptions sentinel_options;
  sentinel_options.sentinel = true;
  sentinel_options.password = options_.sentinel_password;
  sentinel_options.extra_config = sentinel_config();
  for (std::size_t j = 0; j < count; ++j) sentinels_.emplace_back(sentinel_options);
  wait_until_settled(start_timeout);
}

AdminClient SentinelTopology::sentinel_admin(std::size_t j, std::chrono::milliseconds timeout) const {
  return sentinels_.at(j).admin(timeout);
}

std::string SentinelTopology::sentinel_url(std::string_view master_name) const {
  std::string url = "redis-sentinel://";
  for (std::size_t j = 0; j < sentinels_.size(); ++j) {
    if (j > 0) url += ",";
    url += loopback + ":" + std::to_string(sentinels_[j].port());
  }
  return url + "#" + std::string(master_name);
}

std::optional<std::size_t> SentinelTopology::reported_master(std::size_t j) const {
  const auto reply = try_call(sentinels_.at(j).admin_options(probe_timeout),
                              {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", options_.master_name});
  if (!reply || !reply->is_array() || reply->elements.size() != 2) return std::nullopt;
  const std::string& port = reply->elements[1].str;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (std::to_string(nodes_[i].port()) == port) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> SentinelTopology::current_master() const {
  std::vector<std::size_t> votes(nodes_.size(), 0);
  for (std::size_t j = 0; j < sentinels_.size(); ++j) {
    if (const auto named = reported_master(j)) ++votes[*named];
  }
  for (std::size_t i = 0; i < votes.size(); ++i) {
    if (votes[i] >= majority()) return i;
  }
  return std::nullopt;
}

bool SentinelTopology::has_master_role(std::size_t i) const {
  const auto reply = try_call(node(i).admin_options(probe_timeout), {"ROLE"});
  return reply && reply->is_array() && !reply->elements.empty() &&
         reply->elements[0].str == "master";
}

bool SentinelTopology::is_replica_of(std::size_t i, std::size_t k) const {
  const auto reply = try_call(node(i).admin_options(probe_timeout), {"INFO", "replication"});
  if (!reply || !reply->is_string()) return false;
  return info_field(reply->str, "role") == "slave" &&
         info_field(reply->str, "master_port") == std::to_string(node(k).port()) &&
         info_field(reply->str, "master_link_status") == "up";
}

bool SentinelTopology::sentinel_sees_everything(std::size_t j) const {
  const std::string& name = options_.master_name;
  try {
    AdminClient client(sentinels_.at(j).admin_options(probe_timeout));
    const auto master = reply_fields(client.call({"SENTINEL", "MASTER", name}));
    if (master.count("flags") == 0 || master.at("flags") != "master" ||
        master.at("port") != std::to_string(node(master_).port())) {
      return false;
    }
    std::size_t healthy_replicas = 0;
    for (const auto& entry : client.call({"SENTINEL", "REPLICAS", name}).elements) {
      const auto replica = reply_fields(entry);
      if (replica.at("flags") == "slave" && replica.at("master-link-status") == "ok" &&
          replica.at("master-port") == master.at("port")) {
        ++healthy_replicas;
      }
    }
    // One this sentinel cannot authenticate to still looks healthy until
    // down-after-milliseconds passes: the flags show no more.
    std::size_t healthy_sentinels = 0;
    for (const auto& entry : client.call({"SENTINEL", "SENTINELS", name}).elements) {
      if (reply_fields(entry).at("flags") == "sentinel") ++healthy_sentinels;
    }
    return healthy_replicas == nodes_.size() - 1 && healthy_sentinels == sentinels_.size() - 1;
  } catch (const std::exception&) {
    return false;  // unreachable, or an answer without the fields (not ready)
  }
}

std::size_t SentinelTopology::wait_for_new_master(std::size_t old_master,
                                                  std::chrono::milliseconds bound) {
  std::optional<std::size_t> promoted;
  const bool found = poll_until(bound, [&] {
    promoted = current_master();
    return promoted && *promoted != old_master && has_master_role(*promoted);
  });
  if (!found) {
    std::string reports;
    for (std::size_t j = 0; j < sentinels_.size(); ++j) {
      const auto named = reported_master(j);
      reports += " sentinel " + std::to_string(j) + ": " +
                 (named ? "node " + std::to_string(*named) : std::string("none")) + ";";
    }
    throw std::runtime_error("SentinelTopology: no new master replacing node " +
                             std::to_string(old_master) + " within " +
                             std::to_string(bound.count()) + " ms (" + reports + ")\n" +
                             log_tails());
  }
  master_ = *promoted;
  return master_;
}

void SentinelTopology::wait_for_replica_of(std::size_t i, std::size_t k,
                                           std::chrono::milliseconds bound) {
  if (!poll_until(bound, [&] { return is_replica_of(i, k); })) {
    throw std::runtime_error("SentinelTopology: node " + std::to_string(i) +
                             " not a linked replica of node " + std::to_string(k) + " within " +
                             std::to_string(bound.count()) + " ms\n" + log_tails());
  }
}

void SentinelTopology::wait_until_settled(std::chrono::milliseconds bound) const {
  std::size_t unsettled = 0;
  const bool settled = poll_until(bound, [&] {
    for (unsettled = 0; unsettled < sentinels_.size(); ++unsettled) {
      if (!sentinel_sees_everything(unsettled)) return false;
    }
    return true;
  });
  if (!settled) {
    throw std::runtime_error("SentinelTopology: sentinel " + std::to_string(unsettled) +
                             " does not see master node " + std::to_string(master_) +
                             ", every replica and every other sentinel within " +
                             std::to_string(bound.count()) + " ms\n" + log_tails());
  }
}

void SentinelTopology::kill_master() { node(master_).kill(); }

void SentinelTopology::pause_node(std::size_t i) { node(i).pause(); }

void SentinelTopology::resume_node(std::size_t i) { node(i).resume(); }

void SentinelTopology::kill_sentinel(std::size_t j) { sentinels_.at(j).kill(); }

void SentinelTopology::restart_sentinel(std::size_t j) { sentinels_.at(j).restart(); }

void SentinelTopology::manual_failover() {
  for (std::size_t j = 0; j < sentinels_.size(); ++j) {
    const auto reply = try_call(sentinels_[j].admin_options(probe_timeout),
                                {"SENTINEL", "FAILOVER", options_.master_name});
    if (!reply) continue;
    if (reply->is_status() && reply->str == "OK") return;
    throw std::runtime_error("SentinelTopology: SENTINEL FAILOVER on sentinel " +
                             std::to_string(j) + " answered " + describe_reply(*reply));
  }
  throw std::runtime_error("SentinelTopology: no sentinel answers SENTINEL FAILOVER\n" + log_tails());
}

void SentinelTopology::make_replica_of(std::size_t i, std::size_t k) {
  const auto reply =
      node(i).admin().call({"REPLICAOF", loopback, std::to_string(node(k).port())});
  if (!reply.is_status() || reply.str != "OK") {
    throw std::runtime_error("SentinelTopology: REPLICAOF on node " + std::to_string(i) +
                             " answered " + describe_reply(reply));
  }
}

void SentinelTopology::restart_node(std::size_t i) {
  const std::size_t master = current_master().value_or(master_);
  node(i).restart(node_config(master == i ? std::nullopt : std::optional(master)));
}

std::string SentinelTopology::log_tails(std::size_t lines) const {
  std::string out;
  for (std::size_t j = 0; j < sentinels_.size(); ++j) {
    out += "--- sentinel " + std::to_string(j) + " (port " + std::to_string(sentinels_[j].port()) +
           ") ---\n" + sentinels_[j].log_tail(lines);
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    out += "--- node " + std::to_string(i) + " (port " + std::to_string(nodes_[i].port()) +
           ") ---\n" + nodes_[i].log_tail(lines);
  }
  return out;
}

}  // namespace leasehold::test
