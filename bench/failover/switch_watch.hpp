#pragma once
// The benchmark's own subscription to `+switch-master` on every sentinel of a
// topology, so that a failover's announcement has an instant on the shared
// clock independent of the members. A sentinel publishes when it adopts the
// new configuration: the one that led the failover first, the others when
// they hear of it (up to a hello period later), so the earliest of them is
// the announcement.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace leasehold::bench {

struct SwitchNotice {
  std::size_t sentinel = 0;
  std::int64_t at = 0;   ///< steady_clock ns when it was read
  std::string payload;   ///< "<name> <old ip> <old port> <new ip> <new port>"
};

class SwitchWatch {
 public:
  /// Subscribes on every port (127.0.0.1); returns once all confirmed.
  explicit SwitchWatch(const std::vector<std::uint16_t>& sentinel_ports);
  ~SwitchWatch();
  SwitchWatch(const SwitchWatch&) = delete;
  SwitchWatch& operator=(const SwitchWatch&) = delete;

  /// Every notice read after `after_ns`, earliest first.
  std::vector<SwitchNotice> after(std::int64_t after_ns) const;

 private:
  void listen(std::size_t sentinel, std::uint16_t port);
  void stop();

  mutable std::mutex mutex_;
  std::vector<SwitchNotice> notices_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> subscribed_{0};
  std::vector<std::thread> threads_;
};

}  // namespace leasehold::bench
