// cron_digest: the story of the concept document. Every instance of a fleet
// runs the same schedule ("send the digest every second"); only the leader of
// the group "digest" sends it, and with once-per-tick on, no tick is ever sent
// twice, even when timers fire late around a hand-over.
//
// "Sending" appends "<tick ms> <instance>" to a Redis list (RPUSH, through
// the elector's own connection), so the result can be checked from outside.
//
// Output: one machine-readable line per event on stdout, `event key=value...`,
// each with t=<wall-clock ms>:
//   ready instance=.. group=.. schedule=.. ttl_ms=.. once_per_tick=.. misfire=.. grace_ms=.. list=.. t=..
//   elected instance=.. token=.. t=..        revoked instance=.. token=.. reason=.. t=..
//   sent instance=.. tick=<ms> missed=0|1 late_ms=.. t=..
//   step_down instance=.. t=..               (SIGUSR1: hand leadership to a standby)
//   error instance=.. detail=".." t=..       stopped instance=.. t=..
// SIGTERM or SIGINT stop gracefully (the lease is released).
//
//   cron_digest --url redis://127.0.0.1:6379 --id instance-1 [--interval-ms 1000 | --cron "*/5 * * * *"]
//               [--ttl-ms 2000] [--misfire skip|run_once] [--grace-ms 1500] [--once-per-tick 1|0]
//               [--prefix leader:] [--list digest:sent]

#include <leasehold/leasehold.hpp>
#include <leasehold/scheduler.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

namespace lh = leasehold;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

long long wall_ms(std::chrono::system_clock::time_point t = std::chrono::system_clock::now()) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// One write(2) per line: lines of several processes never interleave, and a
// SIGKILL loses nothing already printed.
void say(const std::string& line) {
  const std::string l = fmt::format("{} t={}\n", line, wall_ms());
  if (::write(STDOUT_FILENO, l.data(), l.size()) < 0) std::perror("cron_digest: write");
}

struct Options {
  std::string url;
  std::string id;
  std::string group = "digest";
  std::chrono::milliseconds interval = 1000ms;
  std::string cron;  // when set, used instead of the interval
  std::chrono::milliseconds ttl = 2000ms;
  bool once_per_tick = true;
  lh::Misfire misfire = lh::Misfire::run_once;
  std::chrono::milliseconds grace = 1500ms;
  std::string prefix = "leader:";
  std::string list = "digest:sent";
};

Options parse(int argc, char** argv) {
  Options o;
  auto ms = [](std::string_view v) { return std::chrono::milliseconds(std::stoll(std::string(v))); };
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const std::string_view value = argv[i + 1];
    if (flag == "--url") o.url = value;
    else if (flag == "--id") o.id = value;
    else if (flag == "--group") o.group = value;
    else if (flag == "--interval-ms") o.interval = ms(value);
    else if (flag == "--cron") o.cron = value;
    else if (flag == "--ttl-ms") o.ttl = ms(value);
    else if (flag == "--once-per-tick") o.once_per_tick = value != "0";
    else if (flag == "--misfire") o.misfire = value == "run_once" ? lh::Misfire::run_once : lh::Misfire::skip;
    else if (flag == "--grace-ms") o.grace = ms(value);
    else if (flag == "--prefix") o.prefix = value;
    else if (flag == "--list") o.list = value;
    else throw std::invalid_argument(fmt::format("unknown flag {}", flag));
  }
  if (argc % 2 == 0) throw std::invalid_argument(fmt::format("{} needs a value", argv[argc - 1]));
  if (o.url.empty()) throw std::invalid_argument("--url is required");
  if (!o.once_per_tick) o.misfire = lh::Misfire::skip;  // the misfire policy needs the tick record
  return o;
}

// The digest "delivery": append to a Redis list, on the elector's connection.
const lh::redis::Script& send_script() {
  static const lh::redis::Script script("return redis.call('RPUSH', KEYS[1], ARGV[1])");
  return script;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  asio::io_context io(1);
  lh::ElectorOptions options;
  options.instance_id = o.id;
  options.ttl = o.ttl;
  options.key_prefix = o.prefix;
  options.retry_interval = std::min(o.ttl / 2, std::chrono::milliseconds(1000));
  lh::Elector elector(io.get_executor(), lh::RedisOptions::from_url(o.url), options);
  const std::string& id = elector.instance_id();

  elector.on_elected([&](const lh::ElectedEvent& e) {
    if (e.group == o.group) say(fmt::format("elected instance={} token={}", id, e.token));
  });
  elector.on_revoked([&](const lh::RevokedEvent& e) {
    if (e.group == o.group) say(fmt::format("revoked instance={} token={} reason={}", id, e.token, lh::to_string(e.reason)));
  });
  elector.on_error([&](const lh::ErrorEvent& e) {
    say(fmt::format("error instance={} detail=\"{}\"", id, e.error.message()));
  });

  auto send_digest = [&](const lh::Tick& tick) {
    const long long tick_ms = wall_ms(tick.scheduled);
    const long long late_ms = wall_ms() - tick_ms;
    elector.async_eval(send_script(), {o.list}, {fmt::format("{} {}", tick_ms, id)},
                       [&, tick_ms, late_ms, missed = tick.missed](lh::error_code ec, const lh::redis::Reply&) {
                         if (ec) {
                           say(fmt::format("error instance={} detail=\"sending tick {} failed: {}\"", id, tick_ms,
                                           ec.message()));
                           return;
                         }
                         say(fmt::format("sent instance={} tick={} missed={} late_ms={}", id, tick_ms,
                                         missed ? 1 : 0, late_ms));
                       });
  };
  lh::ScheduleOptions schedule_options{.once_per_tick = o.once_per_tick, .misfire = o.misfire, .misfire_grace = o.grace};
  lh::Schedule schedule = o.cron.empty()
                              ? lh::every(elector, o.group, o.interval, send_digest, schedule_options)
                              : lh::cron(elector, o.group, o.cron, send_digest, schedule_options);

  bool stopping = false;
  asio::signal_set stop_signals(io, SIGTERM, SIGINT);
  stop_signals.async_wait([&](lh::error_code ec, int) {
    if (ec) return;
    stopping = true;
    schedule.cancel();
    elector.stop([&](lh::error_code) {
      say(fmt::format("stopped instance={}", id));
      io.stop();
    });
  });
  asio::signal_set step_down_signal(io, SIGUSR1);
  std::function<void()> wait_step_down = [&] {
    step_down_signal.async_wait([&](lh::error_code ec, int) {
      if (ec || stopping) return;
      say(fmt::format("step_down instance={}", id));
      elector.step_down(o.group, [](lh::error_code) {});
      wait_step_down();
    });
  };
  wait_step_down();

  elector.start();
  say(fmt::format("ready instance={} group={} schedule=\"{}\" ttl_ms={} once_per_tick={} misfire={} grace_ms={} list={}",
                  id, o.group, o.cron.empty() ? fmt::format("every {}ms", o.interval.count()) : o.cron,
                  o.ttl.count(), o.once_per_tick ? 1 : 0, o.misfire == lh::Misfire::run_once ? "run_once" : "skip",
                  o.grace.count(), o.list));
  io.run();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "cron_digest: %s\n", e.what());
  return 2;
}
