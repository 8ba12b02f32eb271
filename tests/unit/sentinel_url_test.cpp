// redis-sentinel:// and rediss-sentinel:// URLs: the sentinel list, the
// master's name after '#', the sentinels' own credentials and TLS, and the
// messages for each mistake.

#include <leasehold/redis_options.hpp>

#include "contains.hpp"
#include "url_error.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace unit_sentinel_url_test {
namespace {

using leasehold::RedisOptions;
using leasehold::SentinelAddress;
using namespace std::chrono_literals;

using leasehold::test::url_error;

using leasehold::test::contains;

bool same(const SentinelAddress& a, const SentinelAddress& b) { return a.host == b.host && a.port == b.port; }

TEST(SentinelUrl, ListsTheSentinelsWithTheDefaultPortAndNamesTheMaster) {
  const auto o = RedisOptions::from_url("redis-sentinel://s1:26380,s2,[::1]:5000/3#mymaster");
  ASSERT_TRUE(o.sentinel);
  EXPECT_EQ(o.sentinel->master_name, "mymaster");
  ASSERT_EQ(o.sentinel->sentinels.size(), 3u);
  EXPECT_TRUE(same(o.sentinel->sentinels[0], {"s1", 26380}));
  EXPECT_TRUE(same(o.sentinel->sentinels[1], {"s2", 26379}));
  EXPECT_TRUE(same(o.sentinel->sentinels[2], {"::1", 5000}));
  EXPECT_EQ(o.database, 3);
  EXPECT_FALSE(o.tls.enabled);
  EXPECT_FALSE(o.sentinel->tls.enabled);
  EXPECT_EQ(o.sentinel->query_timeout, 500ms);
  EXPECT_TRUE(o.sentinel->follow_switch_master);
}

TEST(SentinelUrl, CredentialsBeforeTheAtAreTheDataNodesAndTheQueryHoldsTheSentinels) {
  const auto o =
      RedisOptions::from_url("redis-sentinel://app:data%40pw@h:1?sentinel_user=watcher&sentinel_password=s%26pw#m");
  EXPECT_EQ(o.username, "app");
  EXPECT_EQ(o.password, "data@pw");
  EXPECT_EQ(o.sentinel->username, "watcher");
  EXPECT_EQ(o.sentinel->password, "s&pw");
}

TEST(SentinelUrl, QueryOptionsForTheSentinels) {
  const auto o = RedisOptions::from_url(
      "redis-sentinel://h?sentinel_timeout=250&sentinel_follow=false&connect_timeout=900#m");
  EXPECT_EQ(o.sentinel->query_timeout, 250ms);
  EXPECT_FALSE(o.sentinel->follow_switch_master);
  EXPECT_EQ(o.connect_timeout, 900ms);
}

TEST(SentinelUrl, TlsSchemeCoversBothUnlessTheSentinelOptionsSayOtherwise) {
  const auto both = RedisOptions::from_url("rediss-sentinel://h?ca_file=/ca.pem&server_name=redis#m");
  EXPECT_TRUE(both.tls.enabled);
  EXPECT_TRUE(both.sentinel->tls.enabled);
  EXPECT_EQ(both.sentinel->tls.ca_file, "/ca.pem") << "the sentinels inherit the data nodes' TLS settings";
  EXPECT_EQ(both.sentinel->tls.server_name, "redis");

  const auto own = RedisOptions::from_url(
      "rediss-sentinel://h?ca_file=/ca.pem&sentinel_ca_file=/sentinel-ca.pem&sentinel_verify=false#m");
  EXPECT_EQ(own.tls.ca_file, "/ca.pem");
  EXPECT_EQ(own.sentinel->tls.ca_file, "/sentinel-ca.pem");
  EXPECT_FALSE(own.sentinel->tls.verify_peer);
  EXPECT_TRUE(own.tls.verify_peer);

  const auto plain_sentinels = RedisOptions::from_url("rediss-sentinel://h?sentinel_tls=false#m");
  EXPECT_TRUE(plain_sentinels.tls.enabled);
  EXPECT_FALSE(plain_sentinels.sentinel->tls.enabled);

  const auto tls_sentinels_only = RedisOptions::from_url("redis-sentinel://h?sentinel_tls=true#m");
  EXPECT_FALSE(tls_sentinels_only.tls.enabled);
  EXPECT_TRUE(tls_sentinels_only.sentinel->tls.enabled);
}

TEST(SentinelUrl, MasterNameIsPercentDecoded) {
  EXPECT_EQ(RedisOptions::from_url("redis-sentinel://h#my%2Dmaster").sentinel->master_name, "my-master");
}

TEST(SentinelUrl, RejectsEachMistakeNamingIt) {
  const struct {
    std::string_view url;
    std::string_view message;
  } cases[] = {
      {"redis-sentinel://h", "needs the master's name after '#'"},
      {"redis-sentinel://h#", "needs the master's name after '#'"},
      {"redis-sentinel://#m", "no sentinel address"},
      {"redis-sentinel://a,,b#m", "empty sentinel address in the list (a stray ',')"},
      {"redis-sentinel://a,#m", "empty sentinel address"},
      {"redis-sentinel://a:0#m", "port 0 is out of range"},
      {"redis-sentinel://a:x#m", "port is not a number"},
      {"redis-sentinel://h/x#m", "database \"x\" is not a number"},
      {"redis-sentinel://h?ca_file=/ca#m", "requires a rediss-sentinel:// URL"},
      {"redis://h?sentinel_timeout=5", "configures Sentinel and requires a redis-sentinel:// URL"},
      {"redis-sentinel://h?sentinel_timeout=0#m", "sentinel_timeout must be greater than 0"},
      {"redis-sentinel://h?sentinel_follow=yes#m", "\"sentinel_follow\" must be true or false"},
      {"redis-sentinel://h?sentinel_ca_file=/x#m", "the sentinels are not reached over TLS"},
      {"redis-sentinel://h?sentinel_user=u#m", "\"sentinel_user\" needs a \"sentinel_password\""},
      {"redis-sentinel://h#my%20master", "sentinel.master_name \"my master\" may contain only printable"},
      {"redis-sentinel:h#m", "expected \"//\" after \"redis-sentinel:\""},
      {"redis-sentinels://h#m", "unknown scheme \"redis-sentinels\""},
  };
  for (const auto& c : cases) {
    const auto message = url_error(c.url);
    EXPECT_TRUE(contains(message, c.message)) << c.url << " -> " << message;
  }
}

TEST(SentinelUrl, PasswordsNeverAppearInErrorsOrToString) {
  const auto message = url_error("redis-sentinel://u:S3cret@h:x?sentinel_password=S3cret2&sentinel_follow=no#m");
  EXPECT_FALSE(contains(message, "S3cret")) << message;
  EXPECT_TRUE(contains(message, "sentinel_password=***")) << message;
  const auto port_like = url_error("redis-sentinel://a:1,user:S3cret#m");
  EXPECT_FALSE(contains(port_like, "S3cret")) << port_like;

  const auto o = RedisOptions::from_url("redis-sentinel://u:S3cret@h1,h2:26380/2?sentinel_password=S3cret2#m");
  EXPECT_EQ(o.to_string(), "redis-sentinel://u:***@h1:26379,h2:26380/2#m");
}

TEST(SentinelUrl, ToStringParsesBackToTheSameSentinels) {
  const auto o = RedisOptions::from_url("rediss-sentinel://[::1]:1,b/4#name");
  const auto again = RedisOptions::from_url(o.to_string());
  ASSERT_TRUE(again.sentinel);
  EXPECT_EQ(again.sentinel->master_name, "name");
  ASSERT_EQ(again.sentinel->sentinels.size(), 2u);
  EXPECT_TRUE(same(again.sentinel->sentinels[0], {"::1", 1}));
  EXPECT_EQ(again.database, 4);
  EXPECT_TRUE(again.tls.enabled);
}

TEST(SentinelOptionsValidate, NamesTheBadField) {
  const auto error_of = [](const RedisOptions& o) -> std::string {
    try {
      o.validate();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  RedisOptions o;
  o.sentinel = leasehold::SentinelOptions{};  // not emplace(): g++ 12 -O2 wrongly warns maybe-uninitialized
  EXPECT_EQ(error_of(o), "RedisOptions.sentinel.master_name is empty");
  o.sentinel->master_name = "m";
  EXPECT_EQ(error_of(o), "RedisOptions.sentinel.sentinels is empty (give at least one sentinel)");
  o.sentinel->sentinels = {{"a", 1}, {"", 2}};
  EXPECT_EQ(error_of(o), "RedisOptions.sentinel.sentinels[1].host is empty");
  o.sentinel->sentinels = {{"a", 0}};
  EXPECT_EQ(error_of(o), "RedisOptions.sentinel.sentinels[0].port must be in 1-65535, got 0");
  o.sentinel->sentinels = {{"a", 1}};
  o.sentinel->query_timeout = 0ms;
  EXPECT_EQ(error_of(o), "RedisOptions.sentinel.query_timeout must be > 0, got 0 ms");
  o.sentinel->query_timeout = 100ms;
  o.sentinel->tls.cert_file = "c.pem";
  EXPECT_EQ(error_of(o), "RedisOptions.sentinel.tls.cert_file is set but sentinel.tls.key_file is empty");
  o.sentinel->tls.cert_file.clear();
  o.unix_socket = "/run/redis.sock";
  EXPECT_EQ(error_of(o), "RedisOptions.unix_socket cannot be combined with sentinel");
  o.unix_socket.clear();
  EXPECT_EQ(error_of(o), "");
}

}  // namespace
}  // namespace unit_sentinel_url_test
