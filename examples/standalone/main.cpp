// standalone: leasehold in a program with no Asio of its own. The Elector's
// standalone mode owns its I/O and callback threads; the program only calls
// start(), is_leader(), a leader_only guard, and stop_and_wait().
//
// Every 250 ms the main loop calls a guarded "send report"; only the leader of
// the group "reports" sends it. Output, one line per event:
//   ready instance=..            role instance=.. leader=0|1
//   report instance=.. round=..  stopped instance=..
// Runs until SIGINT or SIGTERM (or --seconds), then stops gracefully: the
// lease is released, so a standby takes over at once.
//
//   standalone --url redis://127.0.0.1:6379 [--id NAME] [--seconds N]

#include <leasehold/leader_only.hpp>
#include <leasehold/leasehold.hpp>

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <string_view>
#include <thread>

namespace lh = leasehold;

namespace {

volatile std::sig_atomic_t stop_requested = 0;
extern "C" void request_stop(int) { stop_requested = 1; }

void say(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) try {
  std::string url;
  lh::ElectorOptions options;
  options.ttl = std::chrono::milliseconds(2000);
  options.retry_interval = std::chrono::milliseconds(500);
  double seconds = 0;  // 0: until a signal
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--url") url = argv[i + 1];
    else if (flag == "--id") options.instance_id = argv[i + 1];
    else if (flag == "--seconds") seconds = std::stod(argv[i + 1]);
  }
  if (url.empty()) throw std::invalid_argument("--url is required");

  lh::Elector elector(lh::RedisOptions::from_url(url), options);  // standalone mode
  const std::string id = elector.instance_id();
  auto send_report = lh::leader_only(elector, "reports", [&](int round) {
    say(fmt::format("report instance={} round={}", id, round));
  });

  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
  elector.start();
  say(fmt::format("ready instance={}", id));

  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  bool was_leader = false;
  for (int round = 1; stop_requested == 0; ++round) {
    if (seconds > 0 && std::chrono::steady_clock::now() >= end) break;
    send_report(round);  // false (and nothing sent) unless this instance leads "reports"
    if (const bool leader = elector.is_leader("reports"); leader != was_leader) {
      was_leader = leader;
      say(fmt::format("role instance={} leader={}", id, leader ? 1 : 0));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }

  elector.stop_and_wait();  // blocks (bounded) until the lease is released
  say(fmt::format("stopped instance={}", id));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "standalone: %s\n", e.what());
  return 2;
}
