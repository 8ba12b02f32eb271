#include "scale/deployment.hpp"

#include "common/redis_info.hpp"
#include "support/admin_client.hpp"
#include "support/cluster_topology.hpp"
#include "support/redis_server.hpp"

#include <fmt/format.h>

#include <chrono>

namespace leasehold::bench {

namespace {

using namespace std::chrono_literals;

// INFO and a SCAN page of a busy node can take a while on a loaded machine.
constexpr auto admin_timeout = 5000ms;

int slot_count(const test::ClusterTopology::NodeView& v) {
  int n = 0;
  for (const auto& r : v.slots) n += r.last - r.first + 1;
  return n;
}

}  // namespace

Deployment::Deployment(const DeploymentOptions& options) {
  if (!options.cluster) {
    server_ = std::make_unique<test::RedisServer>();
    nodes_.push_back({std::make_unique<test::AdminClient>(server_->admin(admin_timeout)), true,
                      fmt::format("127.0.0.1:{}", server_->port())});
    return;
  }
  test::ClusterTopologyOptions topology;
  topology.masters = options.masters;
  topology.replicas_per_master = options.replicas;
  cluster_ = std::make_unique<test::ClusterTopology>(topology);
  const auto view = cluster_->nodes();
  const auto port = [&](std::size_t i) { return cluster_->node(i).port(); };
  for (const bool masters : {true, false}) {
    for (const auto& v : view) {
      if (v.master != masters) continue;
      const std::string label =
          v.master ? fmt::format("127.0.0.1:{}, {} slots", port(v.index), slot_count(v))
                   : fmt::format("127.0.0.1:{}, replica of :{}", port(v.index), v.replica_of ? port(*v.replica_of) : 0);
      nodes_.push_back(
          {std::make_unique<test::AdminClient>(cluster_->node(v.index).admin(admin_timeout)), v.master, label});
    }
  }
}

Deployment::~Deployment() = default;

RedisOptions Deployment::options() const {
  if (server_) return server_->options();
  std::string url = "redis-cluster://";
  for (const auto& v : cluster_->nodes()) {
    if (!v.master) continue;
    if (url.back() != '/') url += ',';
    url += fmt::format("127.0.0.1:{}", cluster_->node(v.index).port());
  }
  return RedisOptions::from_url(url);
}

std::vector<NodeSample> Deployment::sample() {
  std::vector<NodeSample> out;
  for (auto& n : nodes_) {
    NodeSample s;
    const auto cpu = parse_info(n.admin->call({"INFO", "cpu"}).str);
    s.cpu_s = info_number(cpu, "used_cpu_user") + info_number(cpu, "used_cpu_sys");
    s.commands = parse_commandstats(n.admin->call({"INFO", "commandstats"}).str);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::uint64_t> Deployment::count_keys(const std::string& pattern) {
  std::vector<std::uint64_t> out;
  for (auto& n : nodes_) {
    std::uint64_t count = 0;
    std::string cursor = "0";
    // SCAN instead of KEYS: a few milliseconds per page, not one long stall.
    do {
      if (!n.master) break;
      const auto reply = n.admin->call({"SCAN", cursor, "MATCH", pattern, "COUNT", "10000"});
      if (!reply.is_array() || reply.elements.size() != 2) {
        throw std::runtime_error(fmt::format("SCAN on {}: {}", n.label, test::describe_reply(reply)));
      }
      cursor = reply.elements[0].str;
      count += reply.elements[1].elements.size();
    } while (cursor != "0");
    out.push_back(count);
  }
  return out;
}

NodeSample total_delta(const Deployment& d, const std::vector<NodeSample>& a, const std::vector<NodeSample>& b,
                       bool masters_only) {
  NodeSample total;
  for (std::size_t i = 0; i < d.node_count(); ++i) {
    if (masters_only && !d.is_master(i)) continue;
    total.cpu_s += b[i].cpu_s - a[i].cpu_s;
    for (const auto& [name, n] : diff(a[i].commands, b[i].commands)) total.commands[name] += n;
  }
  return total;
}

}  // namespace leasehold::bench
