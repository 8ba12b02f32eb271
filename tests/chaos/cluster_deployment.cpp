// --topology cluster: a Redis Cluster of three shards, each a master and a
// replica (test::ClusterTopology); members connect with a redis-cluster://
// URL seeded with every master. The nodes hand out their real addresses, so
// there is no proxy and no proxy fault. Master faults hit one shard's
// master; the common faults (script_flush, client_kill, maxmemory) hit every
// master, since each shard runs its own groups' scripts.

#include "chaos/deployment.hpp"
#include "chaos/fleet.hpp"

#include "support/cluster_topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <stdexcept>

namespace leasehold::chaos {

namespace {

using namespace std::chrono_literals;

test::ClusterTopologyOptions topology_options(const Timing& timing) {
  test::ClusterTopologyOptions o;
  o.masters = 3;
  o.replicas_per_master = 1;
  // As with the sentinels' down-after: a shorter timeout fails over nodes
  // that were merely slow on a loaded machine.
  o.node_timeout = timing.down_after;
  return o;
}

// The member's lease key of a group on a cluster (docs/cluster.md).
std::string lease_key(const std::string& group) { return "leader:{" + group + "}"; }

class Cluster final : public Deployment {
 public:
  Cluster(const DeploymentOptions& options, const std::vector<std::string>& groups)
      : timing_(options.timing), topology_(topology_options(timing_)) {
    for (const auto& g : groups) group_slots_[g] = topology_.key_slot(lease_key(g));
  }

  std::string member_url(std::size_t) override { return topology_.url() + "?" + timeout_query(timing_); }

  // Any master: the runner only asks it for holders, which we answer per
  // shard, and the common faults, which we send to every master.
  test::AdminClient admin(std::chrono::milliseconds timeout) override {
    return topology_.node(topology_.masters().front()).admin(timeout);
  }

  std::vector<std::string> holders(const std::vector<std::string>& groups) override {
    std::vector<std::string> out;
    try {
      std::map<int, std::size_t> owner;  // slot -> master, for the groups' slots
      for (const auto& view : topology_.nodes()) {
        for (const auto& range : view.slots) {
          for (const auto& [group, slot] : group_slots_) {
            if (slot >= range.first && slot <= range.last) owner[slot] = view.index;
          }
        }
      }
      std::map<std::size_t, test::AdminClient> clients;
      for (const auto& g : groups) {
        const std::size_t node = owner.at(group_slot(g));
        if (!topology_.is_live(node)) return {};
        auto it = clients.find(node);
        if (it == clients.end()) it = clients.emplace(node, topology_.node(node).admin(1000ms)).first;
        out.push_back(it->second.get(lease_key(g)).value_or(""));
      }
    } catch (const std::exception&) {
      out.clear();  // a node down, paused or mid-failover: nobody can say
    }
    return out;
  }

  // Every slot served by a master with a linked replica, every node online
  // and the cluster ok everywhere: otherwise a master fault could find no
  // replica to promote.
  void settle() override { topology_.wait_until_settled(30s); }

  void inject(Fault& f) override {
    if (hits_instance(f.kind)) return;
    const auto masters = topology_.masters();
    const std::size_t master = masters.at(f.pick % masters.size());
    victim_ = master;
    f.target = node_name(master);
    switch (f.kind) {
      case FaultKind::script_flush:
      case FaultKind::client_kill:
      case FaultKind::maxmemory:
        f.target = "every master";
        on_nodes(masters, common_command(f.kind, true));
        break;
      case FaultKind::master_kill: topology_.kill(master); break;
      case FaultKind::master_freeze: topology_.pause(master); break;
      case FaultKind::master_failover: {
        const std::size_t replica = replica_of(master);
        f.target = fmt::format("{} to its replica {}", node_name(master), node_name(replica));
        topology_.failover(replica, 30s);
        break;
      }
      case FaultKind::replica_kill:
        victim_ = replica_of(master);
        f.target = node_name(victim_);
        topology_.kill(victim_);
        break;
      case FaultKind::slot_migration: begin_slot_migration(f, masters); break;
      default: break;
    }
  }

  void heal(const Fault& f) override {
    switch (f.kind) {
      case FaultKind::maxmemory: {
        // Every live node: a failover may have made a replica of a master it hit.
        std::vector<std::size_t> live;
        for (std::size_t i = 0; i < topology_.node_count(); ++i) {
          if (topology_.is_live(i)) live.push_back(i);
        }
        on_nodes(live, common_command(f.kind, false));
        break;
      }
      case FaultKind::master_kill: {
        // Restarted before a promotion it would come back as an empty
        // master of its slots (its nodes.conf says so).
        const std::string failed = await_promotion();
        if (!failed.empty()) data_losses_.push_back(now_ns());
        topology_.restart(victim_);
        if (!failed.empty()) throw std::runtime_error(failed);
        break;
      }
      case FaultKind::master_freeze: {
        const std::string failed = await_promotion();
        topology_.resume(victim_);
        if (!failed.empty()) throw std::runtime_error(failed);
        break;
      }
      case FaultKind::replica_kill: topology_.restart(victim_); break;
      case FaultKind::slot_migration: finish_slot_migration(); break;
      default: break;
    }
  }

 private:
  std::string node_name(std::size_t i) const { return fmt::format("node {} (port {})", i, topology_.node(i).port()); }

  int group_slot(const std::string& group) const { return group_slots_.at(group); }

  std::size_t replica_of(std::size_t master) const {
    const auto replicas = topology_.replicas_of(master);
    if (replicas.empty()) throw std::runtime_error(node_name(master) + " has no replica");
    return replicas.front();
  }

  static std::vector<std::string> common_command(FaultKind kind, bool inject) {
    switch (kind) {
      case FaultKind::script_flush: return {"SCRIPT", "FLUSH"};
      case FaultKind::client_kill: return {"CLIENT", "KILL", "TYPE", "normal"};
      default: return {"CONFIG", "SET", "maxmemory", inject ? "1" : "0"};
    }
  }

  // The command on each node, tried three times; throws what failed after
  // trying every node.
  void on_nodes(const std::vector<std::size_t>& nodes, const std::vector<std::string>& command) {
    std::string failed;
    for (const std::size_t i : nodes) {
      std::string last;
      for (int attempt = 0; attempt < 3; ++attempt) {
        try {
          const auto reply = topology_.node(i).admin(1000ms).call(command);
          if (!reply.is_error()) {
            last.clear();
            break;
          }
          last = test::describe_reply(reply);
        } catch (const std::exception& e) {
          last = e.what();
        }
      }
      if (!last.empty()) failed += fmt::format("{}{} on {}: {}", failed.empty() ? "" : "; ", command.front(),
                                               node_name(i), last);
    }
    if (!failed.empty()) throw std::runtime_error(failed);
  }

  // The slot of a group the members run moves to another master: the
  // importing node gets one of its keys at once, the others at the heal.
  void begin_slot_migration(Fault& f, const std::vector<std::size_t>& masters) {
    auto it = group_slots_.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(f.pick % group_slots_.size()));
    const int slot = it->second;
    const std::size_t from = topology_.master_of_slot(slot);
    std::size_t to = masters.at((f.pick / group_slots_.size()) % masters.size());
    if (to == from) to = masters.at((std::find(masters.begin(), masters.end(), from) - masters.begin() + 1) %
                                    static_cast<std::ptrdiff_t>(masters.size()));
    f.target = fmt::format("slot {} (group {}) from {} to {}", slot, it->first, node_name(from), node_name(to));
    topology_.begin_migration(slot, to);
    migrating_ = slot;
    topology_.migrate_keys(slot, 1);
  }

  void finish_slot_migration() {
    if (!migrating_) return;  // the injection failed before it began
    const int slot = *migrating_;
    migrating_.reset();
    topology_.migrate_keys(slot);
    topology_.finish_migration(slot, 30s);
  }

  // Waits (bounded) until a replica took over the victim's slots; "" or what failed.
  std::string await_promotion() {
    try {
      topology_.wait_for_promotion(victim_, 30s);
      return {};
    } catch (const std::exception& e) {
      const std::string what = e.what();
      fmt::print("{}\n", what);                 // with the log tails
      return what.substr(0, what.find('\n'));  // without
    }
  }

  Timing timing_;
  test::ClusterTopology topology_;
  std::map<std::string, int> group_slots_;  // each group's slot (CLUSTER KEYSLOT of its lease key)
  std::size_t victim_ = 0;                  // the node the batch's fault hit (at most one per batch)
  std::optional<int> migrating_;            // the slot a slot_migration is moving
};

}  // namespace

std::unique_ptr<Deployment> make_cluster(const DeploymentOptions& options) {
  return std::make_unique<Cluster>(options, options.groups);
}

}  // namespace leasehold::chaos
