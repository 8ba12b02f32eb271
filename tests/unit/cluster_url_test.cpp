// redis-cluster:// and rediss-cluster:// URLs: the seed list, the cluster
// options in the query, the refusals (a database, a fragment, options of
// another scheme) and what validate() and to_string() make of cluster options.

#include <leasehold/redis/client.hpp>
#include <leasehold/redis_options.hpp>

#include "contains.hpp"
#include "url_error.hpp"

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace unit_cluster_url_test {
namespace {

using leasehold::ClusterNodeAddress;
using leasehold::ClusterOptions;
using leasehold::RedisOptions;
using namespace std::chrono_literals;

using leasehold::test::url_error;

using leasehold::test::contains;

bool same(const ClusterNodeAddress& a, const ClusterNodeAddress& b) { return a.host == b.host && a.port == b.port; }

std::string validate_error(const RedisOptions& o) {
  try {
    o.validate();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ClusterUrl, ListsTheSeedsWithTheDefaultPortAndTheDefaults) {
  const auto o = RedisOptions::from_url("redis-cluster://n1:7000,n2,[::1]:7002,10.0.0.4:7003");
  ASSERT_TRUE(o.cluster);
  EXPECT_FALSE(o.sentinel);
  ASSERT_EQ(o.cluster->seeds.size(), 4u);
  EXPECT_TRUE(same(o.cluster->seeds[0], {"n1", 7000}));
  EXPECT_TRUE(same(o.cluster->seeds[1], {"n2", 6379}));
  EXPECT_TRUE(same(o.cluster->seeds[2], {"::1", 7002}));
  EXPECT_TRUE(same(o.cluster->seeds[3], {"10.0.0.4", 7003}));
  EXPECT_EQ(o.database, 0);
  EXPECT_FALSE(o.tls.enabled);
  const ClusterOptions defaults;
  EXPECT_EQ(o.cluster->max_redirects, defaults.max_redirects);
  EXPECT_EQ(o.cluster->refresh_interval, defaults.refresh_interval);
  EXPECT_EQ(o.cluster->retry_backoff_min, defaults.retry_backoff_min);
  EXPECT_EQ(o.cluster->retry_backoff_max, defaults.retry_backoff_max);
  EXPECT_EQ(o.cluster->retry_timeout, defaults.retry_timeout);
}

TEST(ClusterUrl, OneSeedIsEnough) {
  const auto o = RedisOptions::from_url("redis-cluster://127.0.0.1:7000");
  ASSERT_EQ(o.cluster->seeds.size(), 1u);
  EXPECT_TRUE(same(o.cluster->seeds[0], {"127.0.0.1", 7000}));
}

TEST(ClusterUrl, CredentialsApplyToEveryNode) {
  const auto o = RedisOptions::from_url("redis-cluster://app:p%40ss:w@n1:7000,n2:7001");
  EXPECT_EQ(o.username, "app");
  EXPECT_EQ(o.password, "p@ss:w");
  const auto password_only = RedisOptions::from_url("redis-cluster://:secret@n1:7000");
  EXPECT_TRUE(password_only.username.empty());
  EXPECT_EQ(password_only.password, "secret");
}

TEST(ClusterUrl, QueryOptionsForTheCluster) {
  const auto o = RedisOptions::from_url(
      "redis-cluster://n1:7000?max_redirects=3&refresh_interval=5000&retry_backoff_min=5"
      "&retry_backoff_max=400&retry_timeout=1500&command_timeout=800&client_name=orders"
      "&cross_slot_renewals=false");
  EXPECT_EQ(o.cluster->max_redirects, 3);
  EXPECT_FALSE(o.cluster->cross_slot_renewals);
  EXPECT_TRUE(RedisOptions::from_url("redis-cluster://n1:7000").cluster->cross_slot_renewals);
  EXPECT_EQ(o.cluster->refresh_interval, 5000ms);
  EXPECT_EQ(o.cluster->retry_backoff_min, 5ms);
  EXPECT_EQ(o.cluster->retry_backoff_max, 400ms);
  EXPECT_EQ(o.cluster->retry_timeout, 1500ms);
  EXPECT_EQ(o.command_timeout, 800ms);
  EXPECT_EQ(o.client_name, "orders");
}

TEST(ClusterUrl, ZeroDisablesThePeriodicRefreshAndTheRetries) {
  const auto o = RedisOptions::from_url("redis-cluster://n1:7000?refresh_interval=0&retry_timeout=0");
  EXPECT_EQ(o.cluster->refresh_interval, 0ms);
  EXPECT_EQ(o.cluster->retry_timeout, 0ms);
}

TEST(ClusterUrl, TlsSchemeTurnsOnTlsForEveryNode) {
  const auto o = RedisOptions::from_url("rediss-cluster://n1:7000,n2:7001?ca_file=/ca.pem&verify=false");
  ASSERT_TRUE(o.cluster);
  EXPECT_TRUE(o.tls.enabled);
  EXPECT_EQ(o.tls.ca_file, "/ca.pem");
  EXPECT_FALSE(o.tls.verify_peer);
  EXPECT_EQ(RedisOptions::from_url("REDISS-CLUSTER://n1").cluster->seeds.size(), 1u) << "schemes are case-insensitive";
}

TEST(ClusterUrl, DatabaseZeroOrNoPathIsAccepted) {
  for (const auto* url : {"redis-cluster://n1:7000", "redis-cluster://n1:7000/", "redis-cluster://n1:7000/0",
                          "redis-cluster://n1:7000/?max_redirects=2"}) {
    const auto o = RedisOptions::from_url(url);
    ASSERT_TRUE(o.cluster) << url;
    EXPECT_EQ(o.database, 0) << url;
  }
}

TEST(ClusterUrl, RejectsEachMistakeNamingIt) {
  const struct {
    std::string_view url;
    std::string_view message;
  } cases[] = {
      {"redis-cluster://n1:7000/1", "database 1: Redis Cluster has only database 0 (drop \"/1\" from the URL)"},
      {"redis-cluster://n1:7000/15?max_redirects=2", "Redis Cluster has only database 0"},
      {"redis-cluster://n1:7000/-1", "database -1: Redis Cluster has only database 0"},
      {"redis-cluster://n1:7000/x", "unexpected path \"/x\" (a redis-cluster:// URL names no database"},
      {"redis-cluster://n1:7000/0/1", "unexpected path \"/0/1\""},
      {"redis-cluster://", "no seed node address"},
      {"redis-cluster:///0", "no seed node address"},
      {"redis-cluster://a:7000,,b:7001", "empty seed node address in the list (a stray ',')"},
      {"redis-cluster://a:7000,", "empty seed node address"},
      {"redis-cluster://,a:7000", "empty seed node address"},
      {"redis-cluster://a:0", "port 0 is out of range (1-65535)"},
      {"redis-cluster://a:7000,b:65536", "port 65536 is out of range (1-65535)"},
      {"redis-cluster://a:", "port is empty after ':'"},
      {"redis-cluster://a:x", "port is not a number"},
      {"redis-cluster://:7000", "host is empty"},
      {"redis-cluster://a:7000,::1:7001", "an IPv6 address must be enclosed in brackets"},
      {"redis-cluster://[::1", "missing ']' after the IPv6 address"},
      {"redis-cluster://a b:7000", "contains a space"},
      {"redis-cluster://a:7000#m", "unexpected '#' after the path"},
      {"redis-cluster://a:7000?ca_file=/ca", "configures TLS and requires a rediss-cluster:// URL"},
      {"redis-cluster://a:7000?sentinel_timeout=5", "configures Sentinel and requires a redis-sentinel:// URL"},
      {"redis-cluster://a:7000?db=1", "query option \"db\" is only for unix:// URLs"},
      {"redis://h?max_redirects=3", "configures Redis Cluster and requires a redis-cluster:// URL"},
      {"redis-sentinel://h?retry_timeout=3#m", "configures Redis Cluster and requires a redis-cluster:// URL"},
      {"redis-cluster://a?max_redirects=0", "max_redirects must be at least 1"},
      {"redis-cluster://a?max_redirects=x", "max_redirects \"x\" is not a whole number"},
      {"redis-cluster://a?max_redirects=99999999999", "max_redirects 99999999999 is out of range"},
      {"redis-cluster://a?refresh_interval=-1", "refresh_interval \"-1\" is not a whole number of milliseconds"},
      {"redis-cluster://a?retry_backoff_min=0", "retry_backoff_min must be greater than 0"},
      {"redis-cluster://a?retry_backoff_max=0", "retry_backoff_max must be greater than 0"},
      {"redis-cluster://a?retry_timeout=86400001", "retry_timeout 86400001 is too large"},
      {"redis-cluster://a?retry_backoff_min=300",
       "RedisOptions.cluster.retry_backoff_max (200 ms) must be >= cluster.retry_backoff_min (300 ms)"},
      {"redis-cluster://a?max_redirects=2&max_redirects=3", "query option \"max_redirects\" is given more than once"},
      {"redis-cluster://a?cluster=yes", "unknown query option \"cluster\""},
      {"redis://h?cross_slot_renewals=false", "configures Redis Cluster and requires a redis-cluster:// URL"},
      {"redis-cluster:a:7000", "expected \"//\" after \"redis-cluster:\""},
      {"rediss-cluster:a:7000", "expected \"//\" after \"rediss-cluster:\""},
      {"redis-clusters://a:7000", "unknown scheme \"redis-clusters\""},
      {"redis_cluster://a:7000", "missing scheme (expected redis://, rediss://, unix://, redis-sentinel:// or "
                                 "redis-cluster://)"},
  };
  for (const auto& c : cases) {
    const auto message = url_error(c.url);
    EXPECT_TRUE(contains(message, c.message)) << c.url << " -> " << message;
  }
}

TEST(ClusterUrl, UnknownOptionListsTheClusterOnes) {
  const auto message = url_error("redis-cluster://a?redirects=3");
  EXPECT_TRUE(contains(message, "max_redirects, refresh_interval, retry_backoff_min, retry_backoff_max, retry_timeout"))
      << message;
  EXPECT_FALSE(contains(message, "sentinel_")) << message;
  EXPECT_FALSE(contains(message, "ca_file")) << message;
}

TEST(ClusterUrl, PasswordsNeverAppearInErrorsOrToString) {
  const auto message = url_error("redis-cluster://u:S3cret@a:7000/1");
  EXPECT_FALSE(contains(message, "S3cret")) << message;
  EXPECT_TRUE(contains(message, "redis-cluster://u:***@a:7000/1")) << message;
  // Without '@' a password reads as the port of a seed: it is hidden too.
  const auto port_like = url_error("redis-cluster://a:7000,user:S3cret");
  EXPECT_FALSE(contains(port_like, "S3cret")) << port_like;
  const auto bare = url_error("redis-cluster://S3cret@a:7000");
  EXPECT_FALSE(contains(bare, "S3cret")) << bare;

  const auto o = RedisOptions::from_url("redis-cluster://u:S3cret@n1:7000,n2?max_redirects=2");
  EXPECT_EQ(o.to_string(), "redis-cluster://u:***@n1:7000,n2:6379");
}

TEST(ClusterUrl, ToStringNamesNoDatabaseAndParsesBackToTheSameSeeds) {
  const auto o = RedisOptions::from_url("rediss-cluster://[fe80::1%25eth0]:7000,b:7001/0");
  EXPECT_EQ(o.to_string(), "rediss-cluster://[fe80::1%25eth0]:7000,b:7001");
  const auto again = RedisOptions::from_url(o.to_string());
  ASSERT_TRUE(again.cluster);
  ASSERT_EQ(again.cluster->seeds.size(), 2u);
  EXPECT_TRUE(same(again.cluster->seeds[0], {"fe80::1%eth0", 7000}));
  EXPECT_TRUE(same(again.cluster->seeds[1], {"b", 7001}));
  EXPECT_TRUE(again.tls.enabled);
}

TEST(ClusterOptionsValidate, NamesTheBadField) {
  RedisOptions o;
  o.cluster.emplace();
  EXPECT_EQ(validate_error(o), "RedisOptions.cluster.seeds is empty (give at least one seed node)");
  o.cluster->seeds = {{"a", 7000}, {"", 7001}};
  EXPECT_EQ(validate_error(o), "RedisOptions.cluster.seeds[1].host is empty");
  o.cluster->seeds = {{"a", 0}};
  EXPECT_EQ(validate_error(o), "RedisOptions.cluster.seeds[0].port must be in 1-65535, got 0");
  o.cluster->seeds = {{"a", 7000}};
  o.cluster->max_redirects = 0;
  EXPECT_EQ(validate_error(o), "RedisOptions.cluster.max_redirects must be >= 1, got 0");
  o.cluster->max_redirects = 5;
  o.cluster->refresh_interval = -1ms;
  EXPECT_EQ(validate_error(o), "RedisOptions.cluster.refresh_interval must be >= 0 (0 disables it), got -1 ms");
  o.cluster->refresh_interval = 0ms;
  o.cluster->retry_backoff_min = 0ms;
  EXPECT_EQ(validate_error(o), "RedisOptions.cluster.retry_backoff_min must be > 0, got 0 ms");
  o.cluster->retry_backoff_min = 50ms;
  o.cluster->retry_backoff_max = 20ms;
  EXPECT_EQ(validate_error(o),
            "RedisOptions.cluster.retry_backoff_max (20 ms) must be >= cluster.retry_backoff_min (50 ms)");
  o.cluster->retry_backoff_max = 50ms;
  o.cluster->retry_timeout = -1ms;
  EXPECT_EQ(validate_error(o), "RedisOptions.cluster.retry_timeout must be >= 0, got -1 ms");
  o.cluster->retry_timeout = 0ms;
  EXPECT_EQ(validate_error(o), "");
}

TEST(ClusterOptionsValidate, RefusesWhatACLusterCannotBe) {
  RedisOptions o;
  o.cluster = ClusterOptions{.seeds = {{.host = "a", .port = 7000}}};
  o.database = 2;
  EXPECT_EQ(validate_error(o), "RedisOptions.database must be 0 with cluster (Redis Cluster has only database 0), got 2");
  o.database = 0;
  o.unix_socket = "/run/redis.sock";
  EXPECT_EQ(validate_error(o), "RedisOptions.unix_socket cannot be combined with cluster");
  o.unix_socket.clear();
  o.sentinel = leasehold::SentinelOptions{.master_name = "m", .sentinels = {{.host = "s"}}};
  EXPECT_EQ(validate_error(o), "RedisOptions.sentinel and cluster cannot both be set");
  o.sentinel.reset();
  EXPECT_EQ(validate_error(o), "");
  // host and port are not used with cluster: an empty host is no error.
  o.host.clear();
  EXPECT_EQ(validate_error(o), "");
}

TEST(ClusterOptionsValidate, DesignatedInitializersKeepTheDefaults) {
  const ClusterOptions cluster{.seeds = {ClusterNodeAddress{.host = "127.0.0.1"}}};
  EXPECT_EQ(cluster.seeds.front().port, 6379);
  EXPECT_EQ(cluster.max_redirects, 5);
  EXPECT_EQ(cluster.refresh_interval, 10000ms);
  EXPECT_EQ(cluster.retry_backoff_min, 10ms);
  EXPECT_EQ(cluster.retry_backoff_max, 200ms);
  EXPECT_EQ(cluster.retry_timeout, 1000ms);
  const RedisOptions redis{.cluster = cluster};
  EXPECT_NO_THROW(redis.validate());
  EXPECT_EQ(redis.to_string(), "redis-cluster://127.0.0.1:6379");
}

// A Client is one connection to one server: given a cluster it must refuse
// rather than connect to host:port as if it were the cluster.
TEST(ClusterOptionsValidate, AOneServerClientRefusesACluster) {
  boost::asio::io_context io;
  const auto options = RedisOptions::from_url("redis-cluster://:S3cret@n1:7000");
  try {
    leasehold::redis::Client client(io.get_executor(), options);
    FAIL() << "expected the client to refuse a cluster";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_TRUE(contains(message, "talks to one server")) << message;
    EXPECT_TRUE(contains(message, "redis-cluster://:***@n1:7000")) << message;
    EXPECT_FALSE(contains(message, "S3cret")) << message;
  }
}

}  // namespace
}  // namespace unit_cluster_url_test
