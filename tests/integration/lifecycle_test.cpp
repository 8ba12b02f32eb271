// Electors created, started, stopped and destroyed over and over, in both
// modes and at awkward moments (while leading, with an acquire or a step-down
// pending, without a stop), so that LeakSanitizer (the ASan build in CI) sees
// any leak, and each cycle checks that the implementation is really freed
// (a shared_ptr cycle would keep it alive without ASan noticing).

#include <leasehold/leasehold.hpp>

#include "support/elector_access.hpp"

#include "support/io_helpers.hpp"
#include "support/redis_server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <csignal>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace integration_lifecycle_test {
namespace {

namespace lh = leasehold;
using lh::test::run_until;
using namespace std::chrono_literals;

lh::ElectorOptions cycle_options(int i) {
  lh::ElectorOptions o;
  o.ttl = 1000ms;
  o.retry_interval = 100ms;
  o.stop_timeout = 1000ms;
  o.instance_id = "cycle-" + std::to_string(i);
  o.groups = {"a", "b"};
  return o;
}

bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds bound = 5s) {
  const auto end = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// Commands time out well before a lease could lapse (keeps the elector's
// configuration warning out of the log).
lh::RedisOptions redis_of(const lh::test::RedisServer& server) {
  auto r = server.options();
  r.command_timeout = 300ms;
  return r;
}

TEST(Lifecycle, StandaloneElectorsComeAndGoWithoutLeaking) {
  lh::test::RedisServer server;
  for (int i = 0; i < 12; ++i) {
    std::weak_ptr<const void> impl;
    lh::Group handle;
    {
      lh::Elector e(redis_of(server), cycle_options(i));
      impl = lh::detail::ElectorAccess::lifetime(e);
      handle = e.group("c");
      e.on_elected([](const lh::ElectedEvent&) {});
      e.on_error([](const lh::ErrorEvent&) {});
      // Cycle 0 mod 4: never started. 1: started, destroyed at once.
      // 2: leads, then stop() and destroy. 3: leads, an acquire of a group
      // held elsewhere still pending, destroyed without stop().
      if (i % 4 != 0) e.start();
      if (i % 4 >= 2) {
        ASSERT_TRUE(wait_for([&] { return e.is_leader() && handle.is_leader(); })) << "cycle " << i;
      }
      if (i % 4 == 2) e.stop_and_wait();
      if (i % 4 == 3) {
        server.admin().set("leader:held", "someone-else");
        e.acquire("held", [](lh::error_code, lh::Term) {});
        e.step_down("a", [](lh::error_code) {});
      }
    }
    EXPECT_TRUE(impl.expired()) << "cycle " << i << ": the implementation outlived its standalone Elector";
    EXPECT_FALSE(handle.is_leader());
  }
  // Graceful ends released their leases; none is left but the foreign one.
  auto admin = server.admin();
  for (const char* g : {"default", "a", "b", "c"}) {
    EXPECT_FALSE(admin.get(std::string("leader:") + g).has_value()) << g;
  }
}

TEST(Lifecycle, ExecutorModeElectorsComeAndGoWithoutLeaking) {
  lh::test::RedisServer server;
  boost::asio::io_context io;
  for (int i = 0; i < 12; ++i) {
    std::weak_ptr<const void> impl;
    std::optional<lh::error_code> acquired;
    {
      lh::Elector e(io.get_executor(), redis_of(server), cycle_options(i));
      impl = lh::detail::ElectorAccess::lifetime(e);
      e.on_revoked([](const lh::RevokedEvent&) {});
      if (i % 4 != 0) e.start();
      if (i % 4 >= 2) {
        ASSERT_TRUE(run_until(io, [&] { return e.is_leader("b"); })) << "cycle " << i;
      }
      if (i % 4 == 2) {
        bool stopped = false;
        e.stop([&](lh::error_code) { stopped = true; });
        ASSERT_TRUE(run_until(io, [&] { return stopped; }));
      }
      if (i % 4 == 3) {
        server.admin().set("leader:held", "someone-else");
        e.acquire("held", [&](lh::error_code ec, lh::Term) { acquired = ec; });
        lh::test::run_for(io, 50ms);
      }
      // Destroyed here, running or not: the destructor drops the connections.
    }
    // Whatever the destructor left queued completes, then nothing holds it.
    ASSERT_TRUE(run_until(io, [&] { return impl.expired(); }, 5s))
        << "cycle " << i << ": the implementation outlived its Elector (a reference cycle?)";
    if (i % 4 == 3) {
      ASSERT_TRUE(acquired.has_value()) << "a pending acquire completes when its elector goes away";
      EXPECT_EQ(*acquired, lh::errc::stopped);
    }
  }
  lh::test::run_for(io, 50ms);
}

// The most common place to stop a service: its SIGTERM handler, on the one
// thread that runs the elector's io_context. A discarded stop() there must
// not block that thread (it would wait for itself and release nothing): the
// lease is released, a standby leads within a round trip instead of a ttl,
// and io.run() returns by itself once the elector's work is done.
TEST(Lifecycle, StopFromASignalHandlerOnTheOnlyThreadReleasesEveryLease) {
  lh::test::RedisServer server;
  lh::ElectorOptions long_ttl;
  long_ttl.ttl = 20s;  // a standby that had to wait for expiry would wait 20 s
  long_ttl.empty_restart_guard = false;  // ... and a new group as long
  long_ttl.stop_timeout = 30s;  // a stop that blocked its own thread would hold it 31 s
  long_ttl.retry_interval = 100ms;
  long_ttl.groups = {"reports"};
  long_ttl.instance_id = "service";
  boost::asio::io_context io(1);
  lh::Elector service(io.get_executor(), server.options(), long_ttl);
  service.start();
  ASSERT_TRUE(run_until(io, [&] { return service.is_leader("default") && service.is_leader("reports"); }, 10s));

  long_ttl.instance_id = "standby";
  lh::Elector standby(server.options(), long_ttl);
  standby.start();

  boost::asio::signal_set signals(io, SIGTERM);
  bool handled = false;
  signals.async_wait([&](lh::error_code ec, int) {
    if (ec) return;
    handled = true;
    service.stop();  // discarded: must return at once
  });
  std::raise(SIGTERM);
  const auto start = std::chrono::steady_clock::now();
  io.run_for(15s);  // returns as soon as the elector's work is done
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(handled);
  EXPECT_TRUE(io.stopped()) << "io.run() still had work after the stop";
  EXPECT_LT(took, 10s) << "the signal handler blocked the thread that runs the elector";
  EXPECT_FALSE(service.is_leader("default"));
  ASSERT_TRUE(wait_for([&] { return standby.is_leader("default") && standby.is_leader("reports"); }, 5s))
      << "the standby waited for the lease to expire: the stop released nothing";
  standby.stop_and_wait();
}

}  // namespace
}  // namespace integration_lifecycle_test
