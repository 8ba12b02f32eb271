#pragma once
// The Redis a chaos run's members use, and the faults injected into it:
// one redis-server behind a FaultProxy per member (--topology single), or a
// Sentinel deployment of a master, two replicas and three sentinels
// (--topology sentinel), or a Redis Cluster of three shards, each a master
// and a replica (--topology cluster), on loopback through the test harness. Instance
// faults (kill, freeze, step_down) are the fleet's, not the deployment's.

#include "chaos/checker.hpp"
#include "chaos/fault.hpp"

#include "support/admin_client.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::chaos {

enum class Topology { single, sentinel, cluster };

std::string_view to_string(Topology topology) noexcept;
/// The faults injected unless --faults says otherwise.
std::vector<FaultKind> default_faults(Topology topology);
/// Why `kind` cannot be injected in `topology` ("" when it can).
std::string unsupported(Topology topology, FaultKind kind);

class Deployment {
 public:
  virtual ~Deployment() = default;

  /// The URL the members of `slot` connect with.
  virtual std::string member_url(std::size_t slot) = 0;
  /// A fresh admin connection to the (current) master; throws if unreachable.
  virtual test::AdminClient admin(std::chrono::milliseconds timeout) = 0;
  /// The current holder's id of each group's lease ("" when free); empty
  /// when Redis cannot say. By default GET leader:<group> on admin().
  virtual std::vector<std::string> holders(const std::vector<std::string>& groups);
  /// Before a batch: waits (bounded) until the previous faults' effects are
  /// over, so that each batch starts from a whole deployment. Throws if not.
  virtual void settle() {}
  /// A respawned member starts on a clean line.
  virtual void reset_line(std::size_t /*slot*/) {}

  /// Redis-side faults: inject sets fault.target; both throw what went wrong
  /// (the run goes on: every heal restores what it can first).
  virtual void inject(Fault& fault) = 0;
  virtual void heal(const Fault& fault) = 0;

  /// Instants when Redis lost its data legitimately (restarted empty, no
  /// replica to keep it): fencing tokens may start over after each.
  const std::vector<Nanos>& data_losses() const noexcept { return data_losses_; }

 protected:
  /// A command on the master, tried three times; throws after the last.
  void call(std::vector<std::string> command);
  /// script_flush, client_kill and maxmemory; false for any other kind.
  bool inject_common(const Fault& fault);
  bool heal_common(const Fault& fault);

  std::vector<Nanos> data_losses_;
};

/// Client timeouts go into every member URL.
struct DeploymentOptions {
  Topology topology = Topology::single;
  std::size_t instances = 5;
  Timing timing;
  std::vector<std::string> groups;  ///< every group the members run (a cluster places them)
};

std::unique_ptr<Deployment> make_deployment(const DeploymentOptions& options);
/// The three kinds (single_server_deployment.cpp, sentinel_deployment.cpp,
/// cluster_deployment.cpp).
std::unique_ptr<Deployment> make_single_server(const DeploymentOptions& options);
std::unique_ptr<Deployment> make_sentinel(const DeploymentOptions& options);
std::unique_ptr<Deployment> make_cluster(const DeploymentOptions& options);

/// The client timeouts of `timing` as URL query options ("connect_timeout=..&command_timeout=..").
std::string timeout_query(const Timing& timing);

}  // namespace leasehold::chaos
