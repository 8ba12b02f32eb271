// --topology sentinel: a master, two replicas and three sentinels
// (test::SentinelTopology); members connect with the Sentinel URL. The
// sentinels hand out the nodes' real addresses, so there is no proxy and no
// proxy fault.

#include "chaos/deployment.hpp"
#include "chaos/fleet.hpp"

#include "support/sentinel_topology.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace leasehold::chaos {

namespace {

using namespace std::chrono_literals;

test::SentinelTopologyOptions topology_options(const Timing& timing) {
  test::SentinelTopologyOptions o;
  o.replicas = 2;
  o.sentinels = 3;
  // 1 s caused double failovers under load: a promoted replica that had not
  // answered for a second was failed over again.
  o.down_after = timing.down_after;
  return o;
}

class Sentinel final : public Deployment {
 public:
  explicit Sentinel(const DeploymentOptions& options) : timing_(options.timing), topology_(topology_options(timing_)) {}

  std::string member_url(std::size_t) override {
    const std::string url = topology_.sentinel_url();  // redis-sentinel://h1:p1,...#name
    const auto hash = url.find('#');
    return url.substr(0, hash) + "/0?" + timeout_query(timing_) + url.substr(hash);
  }

  test::AdminClient admin(std::chrono::milliseconds timeout) override {
    return topology_.node(topology_.current_master().value_or(topology_.master_index())).admin(timeout);
  }

  // Every node and sentinel up, each sentinel agreeing on the master and
  // seeing healthy replicas: otherwise a master fault could find no replica
  // to promote. Sentinels refresh a replica's state every 10 s.
  void settle() override { topology_.wait_until_settled(30s); }

  void inject(Fault& f) override {
    if (hits_instance(f.kind)) return;
    const std::size_t master = topology_.master_index();
    f.target = node_name(master);
    if (inject_common(f)) return;
    switch (f.kind) {
      case FaultKind::master_kill: topology_.kill_master(); break;
      case FaultKind::master_freeze: topology_.pause_node(master); break;
      case FaultKind::master_failover: topology_.manual_failover(); break;
      case FaultKind::replica_kill: {
        const std::size_t replica = (master + 1 + f.pick % (topology_.node_count() - 1)) % topology_.node_count();
        victim_ = replica;
        f.target = node_name(replica);
        topology_.node(replica).kill();
        return;
      }
      case FaultKind::sentinel_kill:
        victim_ = f.pick % topology_.sentinel_count();
        f.target = fmt::format("sentinel {}", victim_);
        topology_.kill_sentinel(victim_);
        return;
      default: break;
    }
    victim_ = master;
  }

  void heal(const Fault& f) override {
    if (hits_instance(f.kind) || heal_common(f)) return;
    switch (f.kind) {
      case FaultKind::master_kill: {
        // Restarted before a promotion it would come back as an empty
        // master, and the replicas would copy that.
        const std::string failed = await_promotion();
        if (topology_.current_master().value_or(victim_) == victim_) data_losses_.push_back(now_ns());
        topology_.restart_node(victim_);
        if (!failed.empty()) throw std::runtime_error(failed);
        break;
      }
      case FaultKind::master_freeze: {
        const std::string failed = await_promotion();
        topology_.resume_node(victim_);
        if (!failed.empty()) throw std::runtime_error(failed);
        break;
      }
      case FaultKind::master_failover: {
        const std::string failed = await_promotion();
        if (!failed.empty()) throw std::runtime_error(failed);
        break;
      }
      case FaultKind::replica_kill: topology_.restart_node(victim_); break;
      case FaultKind::sentinel_kill: topology_.restart_sentinel(victim_); break;
      default: break;
    }
  }

 private:
  std::string node_name(std::size_t i) const { return fmt::format("node {} (port {})", i, topology_.node(i).port()); }

  // Waits (bounded) until a replica replaced the victim; "" or what failed.
  std::string await_promotion() {
    try {
      topology_.wait_for_new_master(victim_, 30s);
      return {};
    } catch (const std::exception& e) {
      const std::string what = e.what();
      fmt::print("{}\n", what);                 // with the log tails
      return what.substr(0, what.find('\n'));  // without
    }
  }

  Timing timing_;
  test::SentinelTopology topology_;
  std::size_t victim_ = 0;  // the node or sentinel the batch's fault hit (at most one per batch)
};

}  // namespace

std::unique_ptr<Deployment> make_sentinel(const DeploymentOptions& options) {
  return std::make_unique<Sentinel>(options);
}

}  // namespace leasehold::chaos
