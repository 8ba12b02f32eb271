// RedisOptions::key_layout: the hash-tagged layout on one endpoint (a
// sharded service such as Azure Managed Redis or ElastiCache Serverless),
// chosen in code or with the URL's key_layout query option; what it refuses,
// and the CROSSSLOT error that tells a user of the plain layout to set it.

#include <leasehold/elector.hpp>
#include <leasehold/error.hpp>
#include <leasehold/redis_options.hpp>

#include <leasehold/impl/options/name_rules.hpp>
#include <leasehold/impl/lease/lease_scripts.hpp>
#include "contains.hpp"
#include "url_error.hpp"

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace unit_key_layout_option_test {
namespace {

namespace lh = leasehold;
using lh::KeyLayout;
using lh::RedisOptions;
using lh::test::url_error;

using leasehold::test::contains;

TEST(KeyLayoutOption, UnsetIsPlainOnAServerAndHashTaggedOnACluster) {
  const auto server = RedisOptions::from_url("redis://h:6379");
  EXPECT_FALSE(server.key_layout);
  EXPECT_EQ(server.effective_key_layout(), KeyLayout::Form::plain);
  const auto cluster = RedisOptions::from_url("redis-cluster://a:7000");
  EXPECT_FALSE(cluster.key_layout);
  EXPECT_EQ(cluster.effective_key_layout(), KeyLayout::Form::hash_tagged);
}

TEST(KeyLayoutOption, TheQueryOptionSetsItOnEveryScheme) {
  for (const std::string url :
       {"redis://h:6379?key_layout=hash_tagged", "rediss://h:6380/0?key_layout=hash_tagged&client_name=x",
        "unix:///run/redis.sock?db=2&key_layout=hash_tagged", "redis-sentinel://s1:26379?key_layout=hash_tagged#m",
        "redis-cluster://a:7000?key_layout=hash_tagged"}) {
    const auto o = RedisOptions::from_url(url);
    ASSERT_TRUE(o.key_layout) << url;
    EXPECT_EQ(*o.key_layout, KeyLayout::Form::hash_tagged) << url;
    EXPECT_EQ(o.effective_key_layout(), KeyLayout::Form::hash_tagged) << url;
  }
  const auto plain = RedisOptions::from_url("redis://h?key_layout=plain");
  ASSERT_TRUE(plain.key_layout);
  EXPECT_EQ(plain.effective_key_layout(), KeyLayout::Form::plain);
}

TEST(KeyLayoutOption, ABadValueIsRefusedNamingTheOptionAndTheUrl) {
  for (const std::string value : {"tagged", "HASH_TAGGED", "hash-tagged", "cluster"}) {
    const auto url = "redis://:s3cret@h:6379?key_layout=" + value;
    const auto error = url_error(url);
    EXPECT_TRUE(contains(error, "invalid Redis URL \"redis://:***@h:6379?key_layout=" + value + "\"")) << error;
    EXPECT_TRUE(contains(error, "query option \"key_layout\" must be plain or hash_tagged, not \"" + value + "\""))
        << error;
    EXPECT_FALSE(contains(error, "s3cret")) << error;
  }
  EXPECT_TRUE(contains(url_error("redis://h?key_layout="), "query option \"key_layout\" has an empty value"));
  EXPECT_TRUE(contains(url_error("redis://h?key_layout=plain&key_layout=hash_tagged"),
                       "query option \"key_layout\" is given more than once"));
}

TEST(KeyLayoutOption, PlainIsRefusedOnACluster) {
  const auto error = url_error("redis-cluster://a:7000?key_layout=plain");
  EXPECT_TRUE(contains(error, "RedisOptions.key_layout plain cannot be used with cluster")) << error;

  auto o = RedisOptions::from_url("redis-cluster://a:7000");
  o.key_layout = KeyLayout::Form::plain;
  try {
    o.validate();
    ADD_FAILURE() << "a cluster with the plain layout was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "RedisOptions.key_layout")) << e.what();
  }
  o.key_layout = KeyLayout::Form::hash_tagged;
  EXPECT_NO_THROW(o.validate());
}

// The hash-tagged layout refuses braces in group names and an empty hash
// tag in the prefix on one endpoint exactly as on a cluster.
TEST(KeyLayoutOption, HashTaggedOnOneServerRefusesBracesInGroupNames) {
  boost::asio::io_context io;
  RedisOptions redis = RedisOptions::from_url("redis://127.0.0.1:1?key_layout=hash_tagged");
  lh::ElectorOptions options;
  options.groups = {"a{b}"};
  try {
    lh::Elector elector(io.get_executor(), redis, options);
    ADD_FAILURE() << "a group name with braces was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "ElectorOptions.groups: invalid group name \"a{b}\"")) << e.what();
    EXPECT_TRUE(contains(e.what(), "key_layout=hash_tagged")) << e.what();
  }
  options.groups.clear();
  options.key_prefix = "app:{}";
  EXPECT_THROW(lh::Elector(io.get_executor(), redis, options), std::invalid_argument);

  options.key_prefix = "leader:";
  lh::Elector elector(io.get_executor(), redis, options);  // never started: no connection
  EXPECT_EQ(elector.key_layout().form(), KeyLayout::Form::hash_tagged);
  EXPECT_EQ(elector.key_layout().lease_key("reports"), "leader:{reports}");
  EXPECT_THROW(lh::detail::validate_group_name("x}", elector.key_layout()), std::invalid_argument);

  // The plain layout takes such names on one server, as before.
  redis.key_layout.reset();
  options.groups = {"a{b}"};
  lh::Elector plain(io.get_executor(), redis, options);
  EXPECT_EQ(plain.key_layout().lease_key("a{b}"), "leader:a{b}");
}

TEST(KeyLayoutOption, CrossSlotRepliesNameTheOption) {
  const std::string reply = "CROSSSLOT Keys in request don't hash to the same slot";
  EXPECT_EQ(lh::classify_server_error(reply), lh::errc::cross_slot);
  const lh::Error error{make_error_code(lh::errc::cross_slot), reply};
  EXPECT_TRUE(contains(error.message(), "key_layout=hash_tagged")) << error.message();
  EXPECT_TRUE(contains(error.message(), reply)) << error.message();
}

// One endpoint with hash-tagged keys publishes what SPUBLISH would: the
// slot's groups share a channel, so the message names the lease key.
TEST(KeyLayoutOption, ReleaseNoticesOfTheHashTaggedLayoutNameTheKey) {
  using lh::detail::Notices;
  using lh::detail::notices_for;
  EXPECT_EQ(notices_for(false, KeyLayout::Form::plain), Notices::published);
  EXPECT_EQ(notices_for(false, KeyLayout::Form::hash_tagged), Notices::published_tagged);
  EXPECT_EQ(notices_for(true, KeyLayout::Form::hash_tagged), Notices::sharded);
  const std::string& tagged = lh::detail::release_script(Notices::published_tagged).body();
  EXPECT_TRUE(contains(tagged, "redis.call('PUBLISH', ARGV[2], KEYS[1] .. '\\n' .. ARGV[1])")) << tagged;
  EXPECT_NE(lh::detail::hand_over_script(Notices::published_tagged).sha1(),
            lh::detail::hand_over_script(Notices::published).sha1());
}

}  // namespace
}  // namespace unit_key_layout_option_test
