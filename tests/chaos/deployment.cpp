#include "chaos/deployment.hpp"
#include "chaos/fleet.hpp"

#include "support/admin_client.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace leasehold::chaos {

std::string_view to_string(Topology topology) noexcept {
  switch (topology) {
    case Topology::single: return "single";
    case Topology::sentinel: return "sentinel";
    case Topology::cluster: return "cluster";
  }
  return "?";
}

std::vector<FaultKind> default_faults(Topology topology) {
  switch (topology) {
    case Topology::single: return {std::begin(kDefaultFaultKinds), std::end(kDefaultFaultKinds)};
    case Topology::sentinel: return {std::begin(kSentinelFaultKinds), std::end(kSentinelFaultKinds)};
    case Topology::cluster: return {std::begin(kClusterFaultKinds), std::end(kClusterFaultKinds)};
  }
  return {};
}

std::string unsupported(Topology topology, FaultKind kind) {
  const auto list = default_faults(topology);
  if (std::find(list.begin(), list.end(), kind) != list.end()) return {};
  const std::string_view name = to_string(kind);
  if (kind == FaultKind::blackhole || kind == FaultKind::delay) {
    return fmt::format("fault {} does not apply with --topology {}: the {} hand out the nodes' real "
                       "addresses, so no proxy stands between a member and Redis",
                       name, to_string(topology), topology == Topology::cluster ? "cluster nodes" : "sentinels");
  }
  if (kind == FaultKind::slot_migration) return fmt::format("fault {} needs --topology cluster", name);
  if (kind == FaultKind::sentinel_kill) return fmt::format("fault {} needs --topology sentinel", name);
  if (topology != Topology::single) {
    return fmt::format("fault {} does not apply with --topology {}: use master_freeze or master_kill, "
                       "which hit {}", name, to_string(topology),
                       topology == Topology::cluster ? "one shard's master" : "the current master");
  }
  return fmt::format("fault {} needs --topology sentinel or cluster", name);
}

std::unique_ptr<Deployment> make_deployment(const DeploymentOptions& options) {
  switch (options.topology) {
    case Topology::single: return make_single_server(options);
    case Topology::sentinel: return make_sentinel(options);
    case Topology::cluster: return make_cluster(options);
  }
  return nullptr;
}

std::vector<std::string> Deployment::holders(const std::vector<std::string>& groups) {
  try {
    auto client = admin(std::chrono::milliseconds(1000));
    return chaos::holders(client, groups);
  } catch (const std::exception&) {
    return {};
  }
}

std::string timeout_query(const Timing& timing) {
  return fmt::format("connect_timeout={}&command_timeout={}", timing.connect_timeout.count(),
                     timing.command_timeout.count());
}

void Deployment::call(std::vector<std::string> command) {
  std::string last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    try {
      auto client = admin(std::chrono::milliseconds(1000));
      const auto reply = client.call(command);
      if (!reply.is_error()) return;
      last = test::describe_reply(reply);
    } catch (const std::exception& e) {
      last = e.what();
    }
    fmt::print("  {} failed: {}\n", command.front(), last);
  }
  throw std::runtime_error(fmt::format("could not run {} {}: {}", command.front(),
                                       command.size() > 1 ? command[1] : "", last));
}

bool Deployment::inject_common(const Fault& f) {
  switch (f.kind) {
    case FaultKind::script_flush: call({"SCRIPT", "FLUSH"}); return true;
    case FaultKind::client_kill: call({"CLIENT", "KILL", "TYPE", "normal"}); return true;
    case FaultKind::maxmemory: call({"CONFIG", "SET", "maxmemory", "1"}); return true;
    default: return false;
  }
}

bool Deployment::heal_common(const Fault& f) {
  if (f.kind != FaultKind::maxmemory) return f.kind == FaultKind::script_flush || f.kind == FaultKind::client_kill;
  call({"CONFIG", "SET", "maxmemory", "0"});
  return true;
}

}  // namespace leasehold::chaos
