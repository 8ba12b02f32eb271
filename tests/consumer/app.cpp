// A leasehold consumer: campaigns for a group on the Redis given by URL,
// checks that it leads and that it stops cleanly, then exits 0. Any failure
// exits non-zero with a message. Built three ways by run.sh (CMake package,
// add_subdirectory, pkg-config), so it only uses the public headers.
//
//   app redis://127.0.0.1:6379

#include <leasehold/leasehold.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>

namespace lh = leasehold;
using namespace std::chrono_literals;

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "consumer: FAILED: %s\n", what);
  return 1;
}

template <typename Predicate>
bool wait_for(Predicate done, std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!done() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  return done();
}

lh::ElectorOptions options(const char* id) {
  lh::ElectorOptions o;
  o.ttl = 2000ms;
  o.instance_id = id;
  o.groups = {"consumer"};
  return o;
}

// Standalone mode: what a service without Asio of its own does.
int standalone(const lh::RedisOptions& redis) {
  lh::Elector elector(redis, options("consumer-standalone"));
  elector.start();
  if (!wait_for([&] { return elector.is_leader("consumer"); }, 10s)) return fail("standalone elector did not lead");
  int runs = 0;
  auto guarded = lh::leader_only(elector, "consumer", [&] { ++runs; });
  if (!guarded() || runs != 1) return fail("leader_only did not run on the leader");
  elector.stop_and_wait();  // releases the lease and waits
  if (elector.is_leader("consumer")) return fail("still leader after stop()");
  return 0;
}

// Executor mode on the caller's io_context, with completion handlers.
int on_executor(const lh::RedisOptions& redis) {
  boost::asio::io_context io;
  lh::Elector elector(io.get_executor(), redis, options("consumer-executor"));
  elector.start();
  std::int64_t token = 0;
  lh::LeaderInfo seen;
  bool stopped = false;
  elector.acquire("consumer", [&](lh::error_code ec, lh::Term term) {
    if (ec) return;
    token = term.token();
    elector.leader_of("consumer", [&](lh::error_code, lh::LeaderInfo info) {
      seen = info;
      elector.stop([&](lh::error_code) { stopped = true; });
    });
  });
  io.run_for(15s);
  if (token <= 0) return fail("executor-mode elector did not acquire a term");
  if (seen.holder != "consumer-executor") return fail("Redis does not name this instance as the holder");
  if (!stopped) return fail("stop() did not complete");
  if (elector.is_leader("consumer")) return fail("still leader after stop()");
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s REDIS_URL\n", argv[0]);
    return 2;
  }
  const auto redis = lh::RedisOptions::from_url(argv[1]);
  if (int rc = standalone(redis)) return rc;
  if (int rc = on_executor(redis)) return rc;
  std::printf("consumer: led and stopped cleanly\n");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "consumer: FAILED: %s\n", e.what());
  return 1;
}
