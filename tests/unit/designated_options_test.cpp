// The option structs are aggregates that users fill with designated
// initializers. Every field has a default member initializer, so naming only
// a few compiles cleanly under -Wextra (-Wmissing-field-initializers) and
// leaves the rest at their documented defaults. This file is that user: a
// field added without `{}` or `= value` fails the warnings-as-errors build.

#include <leasehold/elector_options.hpp>
#include <leasehold/redis_options.hpp>

#include <gtest/gtest.h>

#include <chrono>

namespace unit_designated_options_test {
namespace {

using namespace std::chrono_literals;

TEST(DesignatedOptions, ElectorOptionsNamingOneFieldKeepsTheOtherDefaults) {
  const leasehold::ElectorOptions options{.key_prefix = "billing:leader:"};
  EXPECT_EQ(options.key_prefix, "billing:leader:");
  EXPECT_EQ(options.ttl, leasehold::ElectorOptions{}.ttl);
  EXPECT_FALSE(options.heartbeat_interval.has_value());
  EXPECT_TRUE(options.instance_id.empty());
  EXPECT_TRUE(options.groups.empty());
  EXPECT_EQ(options.confirm_replicas, 0);
  EXPECT_NO_THROW(options.validate());
}

TEST(DesignatedOptions, RedisTlsAndSentinelOptionsNamingOneFieldKeepTheOtherDefaults) {
  const leasehold::RedisOptions redis{.port = 6380};
  EXPECT_EQ(redis.host, "127.0.0.1");
  EXPECT_EQ(redis.port, 6380);
  EXPECT_TRUE(redis.password.empty());
  EXPECT_FALSE(redis.tls.enabled);
  EXPECT_FALSE(redis.sentinel.has_value());

  const leasehold::TlsOptions tls{.enabled = true};
  EXPECT_TRUE(tls.verify_peer);
  EXPECT_TRUE(tls.ca_file.empty());

  const leasehold::SentinelOptions sentinel{.master_name = "mymaster",
                                            .sentinels = {leasehold::SentinelAddress{.host = "127.0.0.1"}}};
  EXPECT_EQ(sentinel.sentinels.front().port, 26379);
  EXPECT_EQ(sentinel.query_timeout, 500ms);
  EXPECT_TRUE(sentinel.follow_switch_master);
}

}  // namespace
}  // namespace unit_designated_options_test
