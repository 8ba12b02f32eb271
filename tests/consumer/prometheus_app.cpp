// A consumer of the leasehold::prometheus component: leads a group on the
// Redis given by URL, collects its metrics as prometheus-cpp families and
// checks that leasehold_is_leader says so, then exits 0.
//
//   prometheus_app redis://127.0.0.1:6379

#include <leasehold/leasehold.hpp>
#include <leasehold/prometheus/elector_collectable.hpp>

#include <prometheus/text_serializer.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>

using namespace std::chrono_literals;

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::fprintf(stderr, "usage: prometheus_app REDIS_URL\n");
    return 2;
  }
  leasehold::ElectorOptions options;
  options.instance_id = "consumer-prometheus";
  options.key_prefix = "consumer:leader:";
  leasehold::Elector elector(leasehold::RedisOptions::from_url(argv[1]), options);
  elector.start();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!elector.is_leader() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);

  const leasehold::prometheus::ElectorCollectable collectable(elector);
  const std::string text = prometheus::TextSerializer().Serialize(collectable.Collect());
  elector.stop_and_wait();
  if (text.find("leasehold_is_leader{group=\"default\",instance=\"consumer-prometheus\"} 1\n") == std::string::npos) {
    std::fprintf(stderr, "prometheus consumer: FAILED: not leader in\n%s", text.c_str());
    return 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "prometheus consumer: FAILED: %s\n", e.what());
  return 1;
}
