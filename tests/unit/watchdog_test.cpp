// A live connection's deadlines on a simulated clock: the idle health check,
// an overdue reply (extended while the server keeps answering), a blocked
// write and an unanswered pub/sub PING.

#include <leasehold/impl/redis/watchdog.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace unit_watchdog_test {
namespace {

namespace lh = leasehold;
using leasehold::redis::detail::Watchdog;
using Kind = Watchdog::Verdict::Kind;
using namespace std::chrono_literals;

using time_point = std::chrono::steady_clock::time_point;
const time_point t0 = time_point{} + 1h;

Watchdog make(std::chrono::milliseconds health = 200ms) {
  Watchdog w(1000ms, health);
  w.reset(t0);
  return w;
}

TEST(Watchdog, AnIdleConnectionIsPingedEveryHealthInterval) {
  Watchdog w = make();
  auto v = w.check(t0, std::nullopt);
  EXPECT_EQ(v.kind, Kind::wait);
  EXPECT_EQ(v.wake, t0 + 200ms);
  EXPECT_EQ(w.check(t0 + 200ms, std::nullopt).kind, Kind::send_ping);
  w.on_write_done(t0 + 150ms);  // activity postpones it
  EXPECT_EQ(w.check(t0 + 200ms, std::nullopt).wake, t0 + 350ms);
}

TEST(Watchdog, NoHealthCheckWhenDisabledOrWhileRequestsArePending) {
  Watchdog off = make(0ms);
  EXPECT_EQ(off.check(t0 + 1h, std::nullopt).kind, Kind::wait);
  EXPECT_EQ(off.check(t0 + 1h, std::nullopt).wake, time_point::max());

  Watchdog busy = make();
  const auto v = busy.check(t0 + 500ms, t0 + 900ms);
  EXPECT_EQ(v.kind, Kind::wait);
  EXPECT_EQ(v.wake, t0 + 1000ms) << "the reply is due a timeout after the last read at the earliest";
}

TEST(Watchdog, AnOverdueReplyTimesOutUnlessTheServerKeepsAnswering) {
  Watchdog w = make();
  const time_point deadline = t0 + 1000ms;
  EXPECT_EQ(w.check(t0 + 999ms, deadline).kind, Kind::wait);
  EXPECT_EQ(w.check(t0 + 1000ms, deadline).kind, Kind::reply_timeout);

  w.on_read(t0 + 800ms);  // a burst the server is steadily answering
  const auto v = w.check(t0 + 1000ms, deadline);
  EXPECT_EQ(v.kind, Kind::wait);
  EXPECT_EQ(v.wake, t0 + 1800ms);
  EXPECT_EQ(w.check(t0 + 1800ms, deadline).kind, Kind::reply_timeout);
}

TEST(Watchdog, ABlockedWriteTimesOut) {
  Watchdog w = make(0ms);
  w.on_write_started(t0 + 100ms);
  EXPECT_EQ(w.check(t0 + 500ms, std::nullopt).wake, t0 + 1100ms);
  EXPECT_EQ(w.check(t0 + 1100ms, std::nullopt).kind, Kind::write_timeout);
  w.on_write_done(t0 + 1050ms);
  EXPECT_EQ(w.check(t0 + 1100ms, std::nullopt).kind, Kind::wait);
}

TEST(Watchdog, AnUnansweredPingTimesOutAndAnyReadAnswersIt) {
  Watchdog w = make();
  w.on_ping_sent(t0 + 200ms);
  auto v = w.check(t0 + 300ms, std::nullopt);
  EXPECT_EQ(v.kind, Kind::wait) << "no second PING while one is out";
  EXPECT_EQ(v.wake, t0 + 1200ms);
  EXPECT_EQ(w.check(t0 + 1200ms, std::nullopt).kind, Kind::ping_timeout);
  w.on_read(t0 + 1100ms);
  EXPECT_EQ(w.check(t0 + 1200ms, std::nullopt).kind, Kind::wait);
}

TEST(Watchdog, ANewConnectionForgetsTheOldOnesState) {
  Watchdog w = make();
  w.on_write_started(t0);
  w.on_ping_sent(t0);
  w.reset(t0 + 5s);
  const auto v = w.check(t0 + 5s, std::nullopt);
  EXPECT_EQ(v.kind, Kind::wait);
  EXPECT_EQ(v.wake, t0 + 5s + 200ms);
}

TEST(Watchdog, EachTimeoutNamesTheServerAndTheBound) {
  const Watchdog w = make();
  for (const auto& [kind, says] : {std::pair{Kind::reply_timeout, "no reply from redis://h:1 within 1000 ms"},
                                   std::pair{Kind::write_timeout, "write to redis://h:1 blocked for 1000 ms"},
                                   std::pair{Kind::ping_timeout, "did not answer a health check within 1000 ms"}}) {
    const lh::Error e = w.error(kind, "redis://h:1");
    EXPECT_EQ(e.code, lh::errc::timeout);
    EXPECT_NE(e.detail.find(says), std::string::npos) << e.detail;
  }
  EXPECT_FALSE(w.error(Kind::wait, "redis://h:1"));
}

}  // namespace
}  // namespace unit_watchdog_test
