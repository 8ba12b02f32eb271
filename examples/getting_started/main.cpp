// getting_started: a complete leasehold program. Run several copies against
// one Redis: exactly one of them leads the group "reports" and prints a report
// every second; when it stops (Ctrl-C or SIGTERM) it releases its lease and
// another copy takes over at once.
//
//   getting_started [redis://127.0.0.1:6379]
//
// On a Redis that has not yet served leasehold for one ttl (5 s), a new
// group waits that long before its first election: the empty-restart guard
// (docs/configuration.md).

#include <leasehold/leasehold.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>

namespace lh = leasehold;
namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

// Runs on every copy; the leader_only guard lets only the leader send.
asio::awaitable<void> report_every_second(lh::Elector& elector) {
  auto send_report = lh::leader_only(elector, "reports", [](int n) {
    std::printf("report %d\n", n);
    std::fflush(stdout);
  });
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (int n = 1;; ++n) {
    send_report(n);  // returns false, sending nothing, unless this copy leads
    timer.expires_after(std::chrono::seconds(1));
    co_await timer.async_wait(asio::use_awaitable);
  }
}

// Says when each term of leadership begins and ends.
asio::awaitable<void> announce_terms(lh::Elector& elector) {
  for (;;) {
    lh::Term term = co_await elector.acquire("reports", asio::use_awaitable);  // waits until leading
    std::printf("leading \"reports\" (fencing token %lld)\n", static_cast<long long>(term.token()));
    const lh::RevokeReason reason = co_await term.async_wait_end(asio::use_awaitable);
    std::printf("no longer leading: %s\n", std::string(lh::to_string(reason)).c_str());
  }
}

asio::awaitable<void> run(lh::Elector& elector, asio::signal_set& signals) {
  // The first to finish cancels the others: a signal ends the work.
  co_await (report_every_second(elector) || announce_terms(elector) ||
            signals.async_wait(asio::use_awaitable));
  co_await elector.stop();  // releases the lease: another copy leads at once
  std::printf("stopped\n");
}

int main(int argc, char** argv) try {
  const char* url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";

  asio::io_context io(1);
  // One key prefix per service, the same on all its copies.
  lh::Elector elector(io.get_executor(), lh::RedisOptions::from_url(url),
                      lh::ElectorOptions{.key_prefix = "getting-started:leader:", .groups = {"reports"}});
  asio::signal_set signals(io, SIGINT, SIGTERM);

  elector.start();
  asio::co_spawn(io, run(elector, signals), [](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);
  });
  io.run();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "getting_started: %s\n", e.what());
  return 1;
}
