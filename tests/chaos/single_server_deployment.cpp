// --topology single: one redis-server, each member slot behind its own
// FaultProxy, so that a fault can cut or slow one member's line.

#include "chaos/deployment.hpp"
#include "chaos/fleet.hpp"

#include "support/fault_proxy.hpp"
#include "support/redis_server.hpp"

#include <fmt/format.h>

#include <memory>
#include <vector>

namespace leasehold::chaos {

namespace {

class SingleServer final : public Deployment {
 public:
  explicit SingleServer(const DeploymentOptions& options) : timing_(options.timing) {
    for (std::size_t i = 0; i < options.instances; ++i) {
      proxies_.push_back(std::make_unique<test::FaultProxy>(server_.port()));
    }
  }

  std::string member_url(std::size_t slot) override {
    return fmt::format("redis://127.0.0.1:{}/0?{}", proxies_.at(slot)->port(), timeout_query(timing_));
  }

  test::AdminClient admin(std::chrono::milliseconds timeout) override { return server_.admin(timeout); }

  void reset_line(std::size_t slot) override { proxies_.at(slot)->set_latency(std::chrono::milliseconds(0)); }

  void inject(Fault& f) override {
    if (!hits_instance(f.kind)) f.target = "redis";
    if (inject_common(f)) return;
    switch (f.kind) {
      case FaultKind::blackhole: proxies_.at(f.slot)->blackhole(); break;
      case FaultKind::delay: proxies_.at(f.slot)->set_latency(f.latency); break;
      case FaultKind::redis_pause: server_.pause(); break;
      case FaultKind::redis_restart:
      case FaultKind::redis_fast_restart:
        data_losses_.push_back(now_ns());  // it comes back empty
        server_.kill();
        break;
      default: break;
    }
  }

  void heal(const Fault& f) override {
    if (heal_common(f)) return;
    switch (f.kind) {
      case FaultKind::blackhole: proxies_.at(f.slot)->forward(); break;
      case FaultKind::delay: proxies_.at(f.slot)->set_latency(std::chrono::milliseconds(0)); break;
      case FaultKind::redis_pause: server_.resume(); break;
      case FaultKind::redis_restart:
      case FaultKind::redis_fast_restart: server_.restart(); break;
      default: break;
    }
  }

 private:
  Timing timing_;
  test::RedisServer server_;
  std::vector<std::unique_ptr<test::FaultProxy>> proxies_;
};

}  // namespace

std::unique_ptr<Deployment> make_single_server(const DeploymentOptions& options) {
  return std::make_unique<SingleServer>(options);
}

}  // namespace leasehold::chaos
