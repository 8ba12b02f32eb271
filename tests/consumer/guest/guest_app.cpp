// A service for which leasehold is a guest in the build (issue 32):
// it compiles Asio itself (asio_impl.cpp, BOOST_ASIO_SEPARATE_COMPILATION on
// this target) and still uses deprecated Asio names (legacy.cpp, no
// BOOST_ASIO_NO_DEPRECATED). It campaigns for a group on the Redis given by
// URL on its own io_context, checks that it leads and stops cleanly.
//
//   guest_app redis://127.0.0.1:6379

#include "legacy.hpp"

#include <leasehold/leasehold.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>

#if !defined(BOOST_ASIO_SEPARATE_COMPILATION)
#error "the guest service compiles Asio separately: its target defines BOOST_ASIO_SEPARATE_COMPILATION"
#endif

namespace lh = leasehold;
using namespace std::chrono_literals;

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s REDIS_URL\n", argv[0]);
    return 2;
  }
  boost::asio::io_context io;
  lh::ElectorOptions options;
  options.ttl = 2000ms;
  options.instance_id = "consumer-guest";
  options.groups = {"guest"};
  lh::Elector elector(io.get_executor(), lh::RedisOptions::from_url(argv[1]), options);
  elector.start();
  std::int64_t token = 0;
  bool stopped = false;
  elector.acquire("guest", [&](lh::error_code ec, lh::Term term) {
    if (!ec) token = term.token();
    elector.stop([&](lh::error_code) { stopped = true; });
  });
  if (!guest::run_with_work(io, 15s, [&] { return stopped; })) {
    std::fprintf(stderr, "guest: FAILED: stop() did not complete\n");
    return 1;
  }
  if (token <= 0) {
    std::fprintf(stderr, "guest: FAILED: the elector did not acquire a term\n");
    return 1;
  }
  if (elector.is_leader("guest")) {
    std::fprintf(stderr, "guest: FAILED: still leader after stop()\n");
    return 1;
  }
  std::printf("guest: led and stopped cleanly beside its own Asio\n");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "guest: FAILED: %s\n", e.what());
  return 1;
}
