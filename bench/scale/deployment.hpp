#pragma once
// The Redis a scale run campaigns on: one private redis-server, or a Redis
// Cluster of N masters (R replicas each) on loopback started by the test
// harness. Every node is sampled on its own (INFO cpu and commandstats), so
// that a cluster run can report each shard's CPU and command rates; the
// lease keys are counted on each master, to show how the groups spread.

#include <leasehold/redis_options.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::test {
class AdminClient;
class ClusterTopology;
class RedisServer;
}  // namespace leasehold::test

namespace leasehold::bench {

struct DeploymentOptions {
  bool cluster = false;
  int masters = 3;   ///< cluster only
  int replicas = 0;  ///< per master, cluster only
};

/// What one node says about itself at one instant.
struct NodeSample {
  double cpu_s = 0;  ///< used_cpu_user + used_cpu_sys of the server process
  std::map<std::string, std::uint64_t> commands;  ///< INFO commandstats calls
};

class Deployment {
 public:
  /// Starts the server or the cluster (waits until it is settled); throws
  /// std::runtime_error when it cannot.
  explicit Deployment(const DeploymentOptions& options);
  ~Deployment();
  Deployment(const Deployment&) = delete;
  Deployment& operator=(const Deployment&) = delete;

  /// Library options: the server, or a redis-cluster:// URL seeded with
  /// every master.
  RedisOptions options() const;
  bool cluster() const noexcept { return cluster_ != nullptr; }

  /// Every node: the masters first (one per shard), then the replicas.
  std::size_t node_count() const noexcept { return nodes_.size(); }
  bool is_master(std::size_t node) const { return nodes_.at(node).master; }
  /// "127.0.0.1:40123, 5461 slots" or "127.0.0.1:40129, replica of :40123".
  const std::string& describe(std::size_t node) const { return nodes_.at(node).label; }
  /// INFO cpu and commandstats of every node, in node order.
  std::vector<NodeSample> sample();
  /// Keys whose name matches `pattern` (SCAN MATCH) on each node, in node
  /// order (replicas: 0, not scanned).
  std::vector<std::uint64_t> count_keys(const std::string& pattern);

 private:
  struct Node {
    std::unique_ptr<test::AdminClient> admin;
    bool master = true;
    std::string label;
  };

  std::unique_ptr<test::RedisServer> server_;
  std::unique_ptr<test::ClusterTopology> cluster_;
  std::vector<Node> nodes_;
};

/// Sum of b - a over the nodes (masters only when `masters_only`).
NodeSample total_delta(const Deployment& d, const std::vector<NodeSample>& a, const std::vector<NodeSample>& b,
                       bool masters_only);

}  // namespace leasehold::bench
