#include "failover/switch_watch.hpp"

#include "failover/fleet.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace leasehold::bench {

namespace {

using namespace std::chrono_literals;

}  // namespace

SwitchWatch::SwitchWatch(const std::vector<std::uint16_t>& sentinel_ports) {
  for (std::size_t j = 0; j < sentinel_ports.size(); ++j) {
    threads_.emplace_back([this, j, port = sentinel_ports[j]] { listen(j, port); });
  }
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (subscribed_.load() < static_cast<int>(sentinel_ports.size())) {
    if (std::chrono::steady_clock::now() > deadline) {
      stop();
      throw std::runtime_error("SwitchWatch: cannot subscribe to +switch-master on every sentinel");
    }
    std::this_thread::sleep_for(10ms);
  }
}

SwitchWatch::~SwitchWatch() { stop(); }

void SwitchWatch::stop() {
  stopping_ = true;
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

// One connection per sentinel, polled every 100 ms so that the thread
// notices stop(). A sentinel that goes away ends its thread.
void SwitchWatch::listen(std::size_t sentinel, std::uint16_t port) {
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, timeval{2, 0});
  if (c == nullptr || c->err != 0) {
    if (c != nullptr) redisFree(c);
    return;
  }
  if (auto* r = static_cast<redisReply*>(redisCommand(c, "SUBSCRIBE +switch-master"))) {
    freeReplyObject(r);
    ++subscribed_;
  }
  while (!stopping_) {
    pollfd p{c->fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const std::int64_t at = now_ns();
    if (redisBufferRead(c) != REDIS_OK) break;
    void* raw = nullptr;
    while (redisGetReplyFromReader(c, &raw) == REDIS_OK && raw != nullptr) {
      auto* r = static_cast<redisReply*>(raw);
      if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 && r->element[2]->type == REDIS_REPLY_STRING) {
        std::lock_guard lock(mutex_);
        notices_.push_back({sentinel, at, std::string(r->element[2]->str, r->element[2]->len)});
      }
      freeReplyObject(r);
      raw = nullptr;
    }
  }
  redisFree(c);
}

std::vector<SwitchNotice> SwitchWatch::after(std::int64_t after_ns) const {
  std::lock_guard lock(mutex_);
  std::vector<SwitchNotice> out;
  for (const auto& n : notices_) {
    if (n.at > after_ns) out.push_back(n);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.at < b.at; });
  return out;
}

}  // namespace leasehold::bench
