// Concurrency at the public API, written to be run under ThreadSanitizer
// (scripts/tsan.sh): is_leader from many threads while the elector renews and
// groups are being registered, standalone mode's own threads, executor mode
// on a multi-threaded io_context, and stop() or destruction from a thread
// other than the one that reads or created the elector.

#include <leasehold/leasehold.hpp>

#include "support/elector_fixture.hpp"
#include "support/redis_server.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace integration_threading_test {
namespace {

namespace lh = leasehold;
using lh::test::fast_options;
using namespace std::chrono_literals;

// Polls `done` from this thread (the elector runs elsewhere) until it holds
// or `bound` passes.
template <typename Predicate>
bool wait_for(Predicate done, std::chrono::milliseconds bound = 10s) {
  const auto end = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// Threads that call `read` in a loop until stopped; counts true answers.
class Readers {
 public:
  template <typename Read>
  Readers(int n, Read read) {
    for (int i = 0; i < n; ++i) {
      threads_.emplace_back([this, read, i] {
        while (!done_.load(std::memory_order_relaxed)) {
          if (read(i)) trues_.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
  }
  ~Readers() { join(); }
  void join() {
    done_ = true;
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  long trues() const { return trues_.load(); }

 private:
  std::atomic<bool> done_{false};
  std::atomic<long> trues_{0};
  std::vector<std::thread> threads_;
};

// A short lease, so that renewals run often while the readers read.
lh::ElectorOptions busy_options(std::string id = {}) {
  auto o = fast_options(std::move(id));
  o.ttl = 300ms;
  o.retry_interval = 50ms;
  return o;
}

// An io_context run by several threads, joined on destruction.
struct ThreadPool {
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work = boost::asio::make_work_guard(io);
  std::vector<std::thread> threads;

  explicit ThreadPool(int n) {
    for (int i = 0; i < n; ++i) threads.emplace_back([this] { io.run(); });
  }
  ~ThreadPool() {
    work.reset();
    io.stop();
    for (auto& t : threads) t.join();
  }
};

TEST(Threading, GroupsRegisteredFromManyThreadsWhileOthersReadThemByName) {
  // Registration grows the lock-free name table while readers look names up.
  lh::test::RedisServer server;
  lh::Elector e(server.options(), busy_options());
  e.start();
  constexpr int writers = 3;
  constexpr int per_writer = 30;
  auto name = [](int w, int i) { return "w" + std::to_string(w) + "-g" + std::to_string(i); };

  Readers readers(3, [&](int r) {
    bool any = e.is_leader("default");
    for (int i = 0; i < per_writer; i += 7) any = e.is_leader(name(r % writers, i)) || any;
    return e.is_leader("never-registered") || any;
  });
  std::vector<std::thread> registering;
  std::mutex handles_mutex;
  std::vector<lh::Group> handles;
  for (int w = 0; w < writers; ++w) {
    registering.emplace_back([&, w] {
      for (int i = 0; i < per_writer; ++i) {
        auto g = e.group(name(w, i));
        // The same name from two threads is one group.
        auto again = e.group(name(w, i));
        EXPECT_EQ(g.name(), again.name());
        std::lock_guard lock(handles_mutex);
        handles.push_back(std::move(g));
      }
    });
  }
  for (auto& t : registering) t.join();
  ASSERT_TRUE(wait_for([&] {
    for (const auto& g : handles) {
      if (!g.is_leader()) return false;
    }
    return e.is_leader("default");
  }, 20s)) << "every registered group is led";
  readers.join();
  EXPECT_GT(readers.trues(), 0);
  EXPECT_FALSE(e.is_leader("never-registered"));
  e.stop_and_wait();
  for (const auto& g : handles) EXPECT_FALSE(g.is_leader());
}

TEST(Threading, StandaloneStopFromAnotherThreadWhileReadersSpin) {
  lh::test::RedisServer server;
  lh::Elector e(server.options(), busy_options());
  auto handle = e.group("jobs");
  std::atomic<int> elected{0};
  std::atomic<int> revoked{0};
  e.on_elected([&](const lh::ElectedEvent&) { ++elected; });
  e.on_revoked([&](const lh::RevokedEvent&) { ++revoked; });
  e.start();
  ASSERT_TRUE(wait_for([&] { return e.is_leader() && handle.is_leader(); }));

  Readers readers(4, [&](int r) { return r % 2 == 0 ? e.is_leader("default") : handle.is_leader(); });
  std::this_thread::sleep_for(400ms);  // more than one ttl: renewals happen meanwhile
  std::thread stopper([&] { e.stop_and_wait(); });
  stopper.join();
  EXPECT_FALSE(e.is_leader());
  EXPECT_FALSE(handle.is_leader());
  readers.join();
  EXPECT_GT(readers.trues(), 0);
  EXPECT_FALSE(server.admin().get("leader:default").has_value()) << "stop() released the lease";
  ASSERT_TRUE(wait_for([&] { return revoked.load() == elected.load(); }));
}

TEST(Threading, StandaloneDestroyedOnAnotherThreadWhileHandlesAreRead) {
  lh::test::RedisServer server;
  auto e = std::make_unique<lh::Elector>(server.options(), busy_options());
  e->start();
  auto handle = e->group("default");
  ASSERT_TRUE(wait_for([&] { return handle.is_leader(); }));

  // Group handles outlive the elector; they read the same flag throughout.
  Readers readers(3, [&](int) { return handle.is_leader(); });
  std::this_thread::sleep_for(200ms);
  std::thread destroyer([&] { e.reset(); });
  destroyer.join();
  EXPECT_FALSE(handle.is_leader());
  std::this_thread::sleep_for(50ms);
  readers.join();
  EXPECT_FALSE(handle.is_leader());
  EXPECT_FALSE(server.admin().get("leader:default").has_value()) << "the destructor stopped gracefully";
}

// Executor mode on a pool: the destructor closes every group's flag from
// this thread while a pool thread may be publishing a renewal on the strand.
// Once the destructor returned, no handle may ever read true again.
TEST(Threading, HandlesOfAnElectorDestroyedUnderLoadNeverReadTrueAgain) {
  lh::test::RedisServer server;
  ThreadPool pool(2);
  auto options = busy_options();
  options.ttl = 200ms;  // renewals every ~67 ms on each of the groups
  for (int i = 0; i < 20; ++i) options.groups.push_back("g" + std::to_string(i));
  for (int cycle = 0; cycle < 5; ++cycle) {
    options.instance_id = "cycle-" + std::to_string(cycle);
    auto e = std::make_unique<lh::Elector>(pool.io.get_executor(), server.options(), options);
    std::vector<lh::Group> handles;
    for (const auto& g : options.groups) handles.push_back(e->group(g));
    e->start();
    ASSERT_TRUE(wait_for([&] {
      for (const auto& h : handles) {
        if (!h.is_leader()) return false;
      }
      return true;
    }, 10s)) << "cycle " << cycle;
    std::atomic<bool> destroyed{false};
    std::atomic<int> true_after{0};
    Readers readers(3, [&](int r) {
      const bool gone = destroyed.load(std::memory_order_acquire);
      const bool leading = handles[static_cast<std::size_t>(r) % handles.size()].is_leader();
      if (gone && leading) true_after.fetch_add(1);
      return leading;
    });
    std::this_thread::sleep_for(100ms);
    e.reset();
    destroyed.store(true, std::memory_order_release);
    std::this_thread::sleep_for(100ms);
    readers.join();
    EXPECT_EQ(true_after.load(), 0) << "cycle " << cycle;
    for (const auto& h : handles) EXPECT_FALSE(h.is_leader()) << "cycle " << cycle << " group " << h.name();
    // Leases left by the destructor (it does not release) expire; the next
    // cycle uses another id and groups of its own key prefix.
    options.key_prefix = "cycle" + std::to_string(cycle + 1) + ":";
  }
}

TEST(Threading, ExecutorModeOnAMultiThreadedIoContext) {
  // Everything the elector does is serialized on its strand, whichever pool
  // thread runs it; the API is called from yet other threads.
  lh::test::RedisServer server;
  ThreadPool pool(3);
  auto options = busy_options();
  options.groups = {"a", "b"};
  lh::Elector first(pool.io.get_executor(), server.options(), options);
  lh::Elector second(pool.io.get_executor(), server.options(), options);
  std::atomic<int> events{0};
  for (auto* e : {&first, &second}) {
    e->on_elected([&](const lh::ElectedEvent&) { ++events; });
    e->on_revoked([&](const lh::RevokedEvent&) { ++events; });
    e->on_leader_changed([&](const lh::LeaderChangedEvent&) { ++events; });
  }
  std::thread([&] { first.start(); }).join();
  std::thread([&] { second.start(); }).join();

  auto single_leader = [&](const char* g) { return first.is_leader(g) != second.is_leader(g); };
  ASSERT_TRUE(wait_for([&] { return single_leader("default") && single_leader("a") && single_leader("b"); }));
  Readers readers(3, [&](int r) {
    const char* g = r == 0 ? "default" : r == 1 ? "a" : "b";
    return first.is_leader(g) || second.is_leader(g);
  });

  // Hand every group over a few times, each step_down from its own thread.
  for (int round = 0; round < 3; ++round) {
    std::vector<std::future<void>> steps;
    for (const char* g : {"default", "a", "b"}) {
      lh::Elector& leader = first.is_leader(g) ? first : second;
      steps.push_back(std::async(std::launch::async, [&leader, g] {
        leader.step_down(g, boost::asio::use_future).get();
      }));
    }
    for (auto& s : steps) s.get();
    ASSERT_TRUE(wait_for([&] { return single_leader("default") && single_leader("a") && single_leader("b"); }));
  }
  // acquire() from a foreign thread completes through a future.
  auto term = (first.is_leader("a") ? first : second).acquire("a", boost::asio::use_future).get();
  EXPECT_TRUE(term.active());

  readers.join();
  EXPECT_GT(readers.trues(), 0);
  std::thread([&] { first.stop_and_wait(); }).join();  // from a non-pool thread
  second.stop_and_wait();
  EXPECT_FALSE(term.active());
  EXPECT_GT(events.load(), 0);
}

TEST(Threading, TermActiveAndCallbacksReplacedWhileTheTermEnds) {
  lh::test::RedisServer server;
  ThreadPool pool(2);
  lh::Elector e(pool.io.get_executor(), server.options(), busy_options());
  e.start();
  auto term = e.acquire("default", boost::asio::use_future).get();
  ASSERT_TRUE(term.active());

  std::atomic<bool> ended_seen{false};
  Readers readers(2, [&](int) {
    const bool active = term.active();
    if (!active) ended_seen = true;
    return active;
  });
  // Callbacks replaced from other threads while events are being emitted.
  std::vector<std::thread> setters;
  std::atomic<int> calls{0};
  for (int i = 0; i < 3; ++i) {
    setters.emplace_back([&] {
      for (int k = 0; k < 20; ++k) {
        e.on_elected([&](const lh::ElectedEvent&) { ++calls; });
        e.on_revoked([&](const lh::RevokedEvent&) { ++calls; });
        std::this_thread::sleep_for(1ms);
      }
    });
  }
  e.step_down("default", boost::asio::use_future).get();
  for (auto& t : setters) t.join();
  ASSERT_TRUE(wait_for([&] { return ended_seen.load(); }));
  readers.join();
  EXPECT_FALSE(term.active());
  auto reason = term.async_wait_end(boost::asio::use_future).get();
  EXPECT_EQ(reason, lh::RevokeReason::stepped_down);
  e.stop_and_wait();
}

}  // namespace
}  // namespace integration_threading_test
