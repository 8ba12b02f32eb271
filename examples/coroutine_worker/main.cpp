// coroutine_worker: leader-scoped work written as coroutines.
//
// The worker waits for its first term with `co_await elector.acquire(...)`,
// then hands its job loop to run_while_leader, which starts it at every term
// and cancels it the moment the term ends (another instance may lead next).
// SIGINT or SIGTERM cancel everything and stop the elector, which releases
// the lease so that a standby takes over at once. SIGUSR1 hands the work
// over instead: step_down() cancels the job loop, waits for it to wind down
// (ElectorOptions::drain_timeout), and only then releases the lease, so the
// standby's jobs never run beside this one's. Output, one line per event
// (at= is steady_clock nanoseconds, comparable between processes):
//   ready instance=..                  leading instance=.. token=..
//   working instance=.. token=.. at=.. job instance=.. token=.. n=..
//   winding_down instance=.. token=..  paused instance=.. token=.. at=..
//   stopped instance=..
//
//   coroutine_worker --url redis://127.0.0.1:6379 [--id NAME] [--wind-down-ms N] [--priority N]
//
// --wind-down-ms: how long the job loop takes to finish after cancellation
// (flushing a batch, say); default 0.
// --priority: ElectorOptions::priority (default 0). A worker started with a
// higher priority than the leader's takes the work over at the leader's next
// renewal, after its job loop wound down: a rolling deploy.

#include <leasehold/leasehold.hpp>
#include <leasehold/run_while_leader.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>

namespace lh = leasehold;
namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using namespace std::chrono_literals;

namespace {

void say(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

long long steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The leader's work: one job every 200 ms, each stamped with the term's
// fencing token so that a downstream store could reject a stale leader.
asio::awaitable<void> process_jobs(std::string id, lh::Term term, std::chrono::milliseconds wind_down) {
  say(fmt::format("working instance={} token={} at={}", id, term.token(), steady_ns()));
  asio::steady_timer pace(co_await asio::this_coro::executor);
  try {
    for (int n = 1;; ++n) {
      pace.expires_after(200ms);
      co_await pace.async_wait(asio::use_awaitable);  // throws once the term ends
      say(fmt::format("job instance={} token={} n={}", id, term.token(), n));
    }
  } catch (const boost::system::system_error&) {
    // Cancelled: the term is over. Wound down below (no co_await in a handler).
  }
  if (wind_down.count() > 0) {
    say(fmt::format("winding_down instance={} token={}", id, term.token()));
    co_await asio::this_coro::reset_cancellation_state();  // this wait must not be cut short
    pace.expires_after(wind_down);
    co_await pace.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  say(fmt::format("paused instance={} token={} at={}", id, term.token(), steady_ns()));
}

asio::awaitable<void> work(lh::Elector& elector, std::chrono::milliseconds wind_down) {
  const std::string id = elector.instance_id();
  // Suspends until this instance leads "worker".
  lh::Term first = co_await elector.acquire("worker", asio::use_awaitable);
  say(fmt::format("leading instance={} token={}", id, first.token()));
  // From now on the job loop runs in every term, this one included.
  auto jobs = [id, wind_down](lh::Term term) { return process_jobs(id, std::move(term), wind_down); };
  co_await lh::run_while_leader(elector, "worker", jobs, asio::use_awaitable);
}

asio::awaitable<void> until_signalled(asio::signal_set& signals) {
  co_await signals.async_wait(asio::use_awaitable);
}

// SIGUSR1: hand the work over. The release waits for the job loop to wind down.
asio::awaitable<void> hand_over_on_request(lh::Elector& elector, asio::signal_set& requests) {
  for (;;) {
    co_await requests.async_wait(asio::use_awaitable);
    co_await elector.step_down("worker", asio::as_tuple(asio::use_awaitable));
  }
}

asio::awaitable<void> run(lh::Elector& elector, asio::signal_set& signals, asio::signal_set& requests,
                          std::chrono::milliseconds wind_down) {
  // Whichever ends first cancels the others: a signal cancels the work.
  co_await (work(elector, wind_down) || until_signalled(signals) || hand_over_on_request(elector, requests));
  co_await elector.stop(asio::use_awaitable);  // releases the lease: a standby leads at once
  say(fmt::format("stopped instance={}", elector.instance_id()));
}

}  // namespace

int main(int argc, char** argv) try {
  std::string url;
  std::chrono::milliseconds wind_down{0};
  lh::ElectorOptions options;
  options.ttl = 2000ms;
  options.retry_interval = 500ms;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--url") url = argv[i + 1];
    else if (flag == "--id") options.instance_id = argv[i + 1];
    else if (flag == "--wind-down-ms") wind_down = std::chrono::milliseconds(std::stoi(argv[i + 1]));
    else if (flag == "--priority") options.priority = std::stoi(argv[i + 1]);
  }
  if (url.empty()) throw std::invalid_argument("--url is required");

  asio::io_context io(1);
  lh::Elector elector(io.get_executor(), lh::RedisOptions::from_url(url), options);
  asio::signal_set signals(io, SIGINT, SIGTERM);
  asio::signal_set requests(io, SIGUSR1);
  elector.start();
  say(fmt::format("ready instance={}", elector.instance_id()));
  asio::co_spawn(io, run(elector, signals, requests, wind_down), [](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);
  });
  io.run();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "coroutine_worker: %s\n", e.what());
  return 2;
}
