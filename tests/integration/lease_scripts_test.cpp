// The release and hand-over scripts of a Redis Cluster (SPUBLISH notices) on
// a server that lacks SPUBLISH (Redis before 7.0, emulated by renaming the
// command away): the lease is still released or handed over, and the script
// says so; only the notice is missing, and standbys then poll.

#include "lease_scripts.hpp"
#include "support/io_helpers.hpp"
#include "support/redis_server.hpp"

#include <leasehold/redis/client.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace {

namespace lh = leasehold;
using namespace std::chrono_literals;

struct WithoutShardedPubSub {
  static lh::test::RedisServerOptions options() {
    lh::test::RedisServerOptions o;
    o.extra_config = {"rename-command SPUBLISH \"\""};
    return o;
  }
  lh::redis::Reply eval(const lh::redis::Script& script, std::vector<std::string> keys,
                        std::vector<std::string> args) {
    if (!client.connected()) {
      client.start();
      EXPECT_TRUE(lh::test::run_until(io, [&] { return client.connected(); }, 10s));
    }
    std::optional<lh::redis::Reply> reply;
    client.async_eval(script, std::move(keys), std::move(args),
                      [&](lh::error_code ec, lh::redis::Reply r) {
                        EXPECT_FALSE(ec && !r.is_error()) << ec.message();
                        reply = std::move(r);
                      });
    EXPECT_TRUE(lh::test::run_until(io, [&] { return reply.has_value(); }, 10s));
    return reply.value_or(lh::redis::Reply{});
  }

  lh::test::RedisServer server{options()};
  boost::asio::io_context io;
  lh::redis::Client client{io.get_executor(), lh::RedisOptions::from_url(server.url())};
};

TEST(ShardedNoticeScripts, ReleaseWithoutSpublishStillReleases) {
  WithoutShardedPubSub s;
  auto admin = s.server.admin();
  ASSERT_EQ(admin.call({"SPUBLISH", "c", "m"}).is_error(), true) << "SPUBLISH should be unknown here";
  admin.set("leader:{g}", "me");
  const auto reply = s.eval(lh::detail::release_script(lh::detail::Notices::sharded),
                            {"leader:{g}", "leader:{g}:holder"}, {"me", "leader:{g}:released", ""});
  EXPECT_TRUE(reply.is_integer() && reply.integer == 1) << reply.debug_string();
  EXPECT_FALSE(admin.get("leader:{g}").has_value());
}

TEST(ShardedNoticeScripts, HandOverWithoutSpublishStillSeatsTheBidder) {
  WithoutShardedPubSub s;
  auto admin = s.server.admin();
  admin.set("leader:{g}", "me");
  const auto reply = s.eval(lh::detail::hand_over_script(lh::detail::Notices::sharded),
                            {"leader:{g}", "leader:{g}:holder"},
                            {"me", "leader:{g}:released", "", "you", "inc-2", "0", "5000"});
  EXPECT_TRUE(reply.is_integer() && reply.integer == 1) << reply.debug_string();
  EXPECT_EQ(admin.get("leader:{g}"), std::optional<std::string>("you"));
}

}  // namespace
