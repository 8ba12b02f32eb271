// coroutine_worker: leader-scoped work written as coroutines.
//
// The worker waits for its first term with `co_await elector.acquire(...)`,
// then hands its job loop to run_while_leader, which starts it at every term
// and cancels it the moment the term ends (another instance may lead next).
// SIGINT or SIGTERM cancel everything and stop the elector, which releases
// the lease so that a standby takes over at once. Output, one line per event:
//   ready instance=..                  leading instance=.. token=..
//   job instance=.. token=.. n=..      paused instance=.. token=..
//   stopped instance=..
//
//   coroutine_worker --url redis://127.0.0.1:6379 [--id NAME]

#include <leasehold/leasehold.hpp>
#include <leasehold/run_while_leader.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

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

// The leader's work: one job every 200 ms, each stamped with the term's
// fencing token so that a downstream store could reject a stale leader.
asio::awaitable<void> process_jobs(std::string id, lh::Term term) {
  asio::steady_timer pace(co_await asio::this_coro::executor);
  try {
    for (int n = 1;; ++n) {
      pace.expires_after(200ms);
      co_await pace.async_wait(asio::use_awaitable);  // throws once the term ends
      say(fmt::format("job instance={} token={} n={}", id, term.token(), n));
    }
  } catch (const boost::system::system_error&) {
    say(fmt::format("paused instance={} token={}", id, term.token()));
    throw;
  }
}

asio::awaitable<void> work(lh::Elector& elector) {
  const std::string id = elector.instance_id();
  // Suspends until this instance leads "worker".
  lh::Term first = co_await elector.acquire("worker", asio::use_awaitable);
  say(fmt::format("leading instance={} token={}", id, first.token()));
  // From now on the job loop runs in every term, this one included.
  auto jobs = [id](lh::Term term) { return process_jobs(id, std::move(term)); };
  co_await lh::run_while_leader(elector, "worker", jobs, asio::use_awaitable);
}

asio::awaitable<void> until_signalled(asio::signal_set& signals) {
  co_await signals.async_wait(asio::use_awaitable);
}

asio::awaitable<void> run(lh::Elector& elector, asio::signal_set& signals) {
  // Whichever ends first cancels the other: a signal cancels the work.
  co_await (work(elector) || until_signalled(signals));
  co_await elector.stop(asio::use_awaitable);  // releases the lease: a standby leads at once
  say(fmt::format("stopped instance={}", elector.instance_id()));
}

}  // namespace

int main(int argc, char** argv) try {
  std::string url;
  lh::ElectorOptions options;
  options.ttl = 2000ms;
  options.retry_interval = 500ms;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--url") url = argv[i + 1];
    else if (flag == "--id") options.instance_id = argv[i + 1];
  }
  if (url.empty()) throw std::invalid_argument("--url is required");

  asio::io_context io(1);
  lh::Elector elector(io.get_executor(), lh::RedisOptions::from_url(url), options);
  asio::signal_set signals(io, SIGINT, SIGTERM);
  elector.start();
  say(fmt::format("ready instance={}", elector.instance_id()));
  asio::co_spawn(io, run(elector, signals), [](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);
  });
  io.run();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "coroutine_worker: %s\n", e.what());
  return 2;
}
