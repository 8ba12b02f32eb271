// Drain before release, in one process: step_down() ends the term at once
// but keeps the lease while the term's guarded work winds down; the standby
// leads only after it (the wind-down within drain_timeout), or, when the
// work outlives drain_timeout, at the bound with the overrun reported.
// (examples/coroutine_worker's test shows the same across two processes.)

#include <leasehold/leasehold.hpp>
#include <leasehold/run_while_leader.hpp>

#include "support/elector_fixture.hpp"
#include "support/redis_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <optional>

namespace integration_drain_test {
namespace {

namespace lh = leasehold;
namespace asio = boost::asio;
using lh::test::Fleet;
using lh::test::run_until;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

lh::ElectorOptions draining(std::string id, std::chrono::milliseconds drain_timeout) {
  auto o = lh::test::fast_options(std::move(id));
  o.ttl = 10s;  // hand-overs go by release here, never by expiry
  o.empty_restart_guard = false;
  o.drain_timeout = drain_timeout;
  o.groups = {"work"};
  return o;
}

// Work that, once cancelled, takes `wind_down` more before it returns.
struct SlowToStop {
  std::chrono::milliseconds wind_down;
  std::optional<Clock::time_point> cancelled_at{};
  std::optional<Clock::time_point> ended_at{};

  asio::awaitable<void> operator()() {
    asio::steady_timer timer(co_await asio::this_coro::executor, 1h);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    cancelled_at = Clock::now();
    co_await asio::this_coro::reset_cancellation_state();
    timer.expires_after(wind_down);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    ended_at = Clock::now();
  }
};

// Runs `work` on the leader of "work" (a) beside a standby (b); returns the
// instant b became leader after a stepped down.
struct Handover {
  lh::test::RedisServer server;
  Fleet fleet{server};
  std::optional<Clock::time_point> standby_elected;

  Handover(std::chrono::milliseconds drain_timeout, SlowToStop& work) {
    auto& a = fleet.add(draining("a", drain_timeout));
    EXPECT_TRUE(fleet.wait_leading(0, "work"));
    lh::run_while_leader(a, "work", [&work] { return work(); }, asio::detached);
    auto& b = fleet.add(draining("b", drain_timeout));
    b.on_elected([this](const lh::ElectedEvent& e) {
      if (e.group == "work") standby_elected = Clock::now();
    });
    lh::test::run_for(fleet.io, 300ms);  // the task runs, b stands by
  }
};

TEST(Drain, TheStandbyLeadsOnlyAfterTheLeadersWorkHasWoundDown) {
  SlowToStop work{400ms};
  Handover h(5s, work);
  std::optional<lh::error_code> stepped;
  h.fleet.at(0).step_down("work", [&](lh::error_code ec) { stepped = ec; });
  ASSERT_TRUE(run_until(h.fleet.io, [&] { return !h.fleet.at(0).is_leader("work"); }, 2s));
  EXPECT_FALSE(work.ended_at.has_value()) << "the term ends first, then the work winds down";
  ASSERT_TRUE(run_until(h.fleet.io, [&] { return h.standby_elected.has_value(); }, 10s));
  ASSERT_TRUE(work.ended_at.has_value());
  EXPECT_GT(*h.standby_elected, *work.ended_at);
  ASSERT_TRUE(run_until(h.fleet.io, [&] { return stepped.has_value(); }, 5s));
  EXPECT_FALSE(*stepped) << stepped->message();
  EXPECT_FALSE(h.fleet.events(0).has_error(lh::errc::drain_timeout));
  EXPECT_EQ(h.fleet.metrics(0).groups.at(1).drain_overruns, 0u);
}

TEST(Drain, WorkThatOutlivesTheBoundIsReportedAndTheLeaseReleasedAnyway) {
  SlowToStop work{3s};
  Handover h(500ms, work);
  h.fleet.at(0).step_down("work", [](lh::error_code) {});
  ASSERT_TRUE(run_until(h.fleet.io, [&] { return h.standby_elected.has_value(); }, 10s));
  EXPECT_FALSE(work.ended_at.has_value()) << "released at the bound, while the work still ran";
  ASSERT_TRUE(work.cancelled_at.has_value());
  EXPECT_GE(*h.standby_elected - *work.cancelled_at, 400ms) << "the lease was kept for the bound";
  const lh::ErrorEvent* overrun = h.fleet.events(0).first_error(lh::errc::drain_timeout);
  ASSERT_NE(overrun, nullptr);
  EXPECT_EQ(overrun->group, "work");
  EXPECT_NE(overrun->error.message().find("500 ms"), std::string::npos) << overrun->error.message();
  EXPECT_EQ(h.fleet.metrics(0).groups.at(1).drain_overruns, 1u);
  ASSERT_TRUE(run_until(h.fleet.io, [&] { return work.ended_at.has_value(); }, 5s));
}

TEST(Drain, WithoutGuardedWorkTheReleaseIsImmediate) {
  lh::test::RedisServer server;
  Fleet fleet{server};
  auto& a = fleet.add(draining("a", 5s));
  ASSERT_TRUE(fleet.wait_leading(0, "work"));
  fleet.add(draining("b", 5s));
  lh::test::run_for(fleet.io, 200ms);
  std::optional<lh::error_code> stepped;
  a.step_down("work", [&](lh::error_code ec) { stepped = ec; });
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.at(1).is_leader("work"); }, 10s));
  ASSERT_TRUE(run_until(fleet.io, [&] { return stepped.has_value(); }, 5s));
  EXPECT_FALSE(*stepped);
  // A drain would have run into its bound (nothing ever ends it) and said so.
  EXPECT_FALSE(fleet.events(0).has_error(lh::errc::drain_timeout));
  EXPECT_EQ(fleet.metrics(0).groups.at(1).drain_overruns, 0u);
}

}  // namespace
}  // namespace integration_drain_test
