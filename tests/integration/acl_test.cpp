// The least-privilege ACL rule of docs/operations.md, read from the document
// itself, applied verbatim to fresh servers: an elector running as that user
// does everything it needs, and a missing permission is a clear NOPERM. The
// rules of docs/sentinel.md and docs/cluster.md are applied the same way to
// a Sentinel deployment and to a cluster.

#include <leasehold/leasehold.hpp>

#include "support/cluster_topology.hpp"
#include "support/elector_fixture.hpp"
#include "support/log_capture.hpp"
#include "support/redis_server.hpp"
#include "support/sentinel_topology.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace integration_acl_test {
namespace {

namespace lh = leasehold;
using lh::test::Fleet;
using lh::test::fast_options;
using lh::test::run_until;
using namespace std::chrono_literals;

// The document states the user name and password placeholder of its rule.
constexpr const char* user = "leasehold";
constexpr const char* placeholder_password = "change-me";

std::string read_doc(const std::string& name) {
  // Not __FILE__: ccache's base_dir makes it relative to the build directory.
  const auto path = std::filesystem::path(LEASEHOLD_SOURCE_DIR) / "docs" / name;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The one line of docs/<doc> that starts (after any indentation) with
/// "ACL SETUSER <user_name> ". scripts/check-docs.sh compares the rules of
/// operations.md, sentinel.md and cluster.md by the same lines.
std::string documented_rule(const std::string& doc = "operations.md", const std::string& user_name = user) {
  std::istringstream text(read_doc(doc));
  const std::string start = "ACL SETUSER " + user_name + " ";
  std::string line, found;
  int count = 0;
  while (std::getline(text, line)) {
    line.erase(0, line.find_first_not_of(' '));
    if (line.rfind(start, 0) == 0) {
      found = line;
      ++count;
    }
  }
  if (count != 1) throw std::runtime_error("docs/" + doc + " must hold exactly one " + start + "line");
  return found;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

/// Applies a rule verbatim with ACL SETUSER through `admin`.
void apply_rule(lh::test::AdminClient admin, const std::string& rule) {
  const auto reply = admin.call(words(rule));
  ASSERT_TRUE(reply.is_status() && reply.str == "OK") << rule << ": " << lh::test::describe_reply(reply);
}

/// Applies the documented rule verbatim with ACL SETUSER on `server`.
void apply_documented_rule(const lh::test::RedisServer& server) { apply_rule(server.admin(), documented_rule()); }

lh::RedisOptions as_leasehold_user(const lh::test::RedisServer& server) {
  auto redis = server.options();
  redis.username = user;
  redis.password = placeholder_password;
  return redis;
}

TEST(Acl, DocumentedRuleIsMinimalAndNamesEveryCommandLeaseholdSends) {
  const auto rule = words(documented_rule());
  ASSERT_GE(rule.size(), 4u);
  EXPECT_EQ(rule[2], user);
  EXPECT_EQ(rule[3], "reset") << "the rule starts from nothing, so it grants only what it lists";
  for (const char* needed : {"~leader:*", "&leader:*:released", "+ping", "+select", "+client|setname",
                             "+script|load", "+evalsha", "+eval", "+psubscribe", "+get", "+mget", "+pttl",
                             "+set", "+pexpire", "+incr", "+exists", "+del", "+publish", "+role", "+info", "+time"}) {
    EXPECT_NE(std::find(rule.begin(), rule.end(), needed), rule.end()) << needed;
  }
  for (const auto& w : rule) {
    EXPECT_FALSE(w.starts_with("+@")) << "no command categories: " << w;
    EXPECT_NE(w, "~*") << "no access to every key";
    EXPECT_NE(w, "&*") << "no access to every channel";
  }
}

TEST(Acl, ElectorRunsAsTheDocumentedUserLeadsHandsOverAndReleases) {
  lh::test::RedisServer server;
  apply_documented_rule(server);
  auto redis = as_leasehold_user(server);
  redis.database = 3;  // exercises SELECT as well
  Fleet fleet(redis);
  auto options = fast_options();
  options.groups = {"reports"};
  // Long enough that only a release notice explains a fast handover.
  options.ttl = 3000ms;
  options.retry_interval = 3000ms;
  fleet.add(options);
  fleet.add(options);
  auto first = fleet.wait_single_leader();
  ASSERT_TRUE(first) << fleet.errors();
  ASSERT_TRUE(fleet.wait_single_leader("reports")) << fleet.errors();
  lh::test::run_for(fleet.io, 1200ms);  // renewals run too
  ASSERT_TRUE(fleet.run_checking_single_leader(100ms));

  // leader_of (GET, PTTL) works as this user.
  std::optional<lh::LeaderInfo> info;
  fleet.at(0).leader_of("default", [&](lh::error_code ec, lh::LeaderInfo i) {
    EXPECT_FALSE(ec) << ec.message();
    info = i;
  });
  ASSERT_TRUE(run_until(fleet.io, [&] { return info.has_value(); }));
  EXPECT_EQ(info->holder, fleet.at(*first).instance_id());

  // Step-down hands over through the release notice (PUBLISH, SUBSCRIBE).
  const auto before = std::chrono::steady_clock::now();
  fleet.at(*first).step_down("default", [](lh::error_code ec) { EXPECT_FALSE(ec) << ec.message(); });
  const std::size_t other = 1 - *first;
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.at(other).is_leader(); }, 3s));
  EXPECT_LT(std::chrono::steady_clock::now() - before, 800ms) << "faster than a ttl or a poll";

  // Stop releases every lease (DEL inside the release script).
  fleet.stop_all();
  auto admin = server.admin();
  admin.call({"SELECT", "3"});
  EXPECT_EQ(admin.call({"EXISTS", "leader:default", "leader:reports"}).integer, 0);
  EXPECT_EQ(admin.call({"EXISTS", "leader:default:token", "leader:reports:token"}).integer, 2)
      << "fencing counters never expire";
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    for (const auto& e : fleet.events(i).errors) ADD_FAILURE() << e.group << ": " << e.error.message();
  }
}

// The rule that 0.2 documented grants no MGET: the scripts then read each
// key with GET. A leader of several groups (batched renewals on the change
// stamp) and a standby (looks) run as that user without an error, and a
// step-down still hands over.
TEST(Acl, TheRuleOfEarlierReleasesWithoutMgetStillLeadsRenewsAndHandsOver) {
  lh::test::RedisServer server;
  std::string rule = documented_rule();
  const auto at = rule.find(" +mget");
  ASSERT_NE(at, std::string::npos);
  rule.erase(at, std::string(" +mget").size());
  apply_rule(server.admin(), rule);
  Fleet fleet(as_leasehold_user(server));
  auto options = fast_options();
  options.groups = {"a", "b", "c"};
  options.ttl = 3000ms;
  options.retry_interval = 3000ms;
  fleet.add(options);
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.leads_every(0, options.groups); }, 5s)) << fleet.errors();
  fleet.add(options);
  lh::test::run_for(fleet.io, 1500ms);  // renewals of all three, and the standby's looks
  ASSERT_TRUE(fleet.leads_every(0, options.groups)) << fleet.errors();
  fleet.at(0).step_down("a", [](lh::error_code ec) { EXPECT_FALSE(ec) << ec.message(); });
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.at(1).is_leader("a"); }, 2s)) << "the release notice";
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    for (const auto& e : fleet.events(i).errors) ADD_FAILURE() << e.group << ": " << e.error.message();
  }
  EXPECT_EQ(server.admin().command_calls("mget"), 0) << "every MGET refused";
}

TEST(Acl, DocumentedRuleWorksInAnAclFileLineToo) {
  // The same rule as a `user` line of redis.conf (what the document says).
  const std::string rule = documented_rule();
  lh::test::RedisServerOptions server_options;
  server_options.acl_users = {rule.substr(std::string("ACL SETUSER ").size())};
  lh::test::RedisServer server(server_options);
  Fleet fleet(as_leasehold_user(server));
  auto& e = fleet.add();
  ASSERT_TRUE(run_until(fleet.io, [&] { return e.is_leader(); }));
  EXPECT_TRUE(fleet.events(0).errors.empty());
}

TEST(Acl, MissingCommandPermissionIsANoPermissionErrorEventNamingTheGroup) {
  lh::test::RedisServer server;
  apply_documented_rule(server);
  // SET refused: the acquire script fails inside Redis.
  server.admin().call({"ACL", "SETUSER", user, "-set"});
  Fleet fleet(as_leasehold_user(server));
  auto& e = fleet.add();
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).has_error(lh::errc::no_permission); }, 5s));
  const lh::ErrorEvent* it = fleet.events(0).first_error(lh::errc::no_permission);
  EXPECT_EQ(it->group, "default");
  EXPECT_NE(it->error.message().find("NOPERM"), std::string::npos) << it->error.message();
  lh::test::run_for(fleet.io, 300ms);
  EXPECT_FALSE(e.is_leader());
  EXPECT_GE(e.health().failing_groups, 1u);
  EXPECT_FALSE(e.health().ready);
}

TEST(Acl, MissingKeyPatternIsANoPermissionErrorEvent) {
  lh::test::RedisServer server;
  apply_documented_rule(server);
  Fleet fleet(as_leasehold_user(server));
  auto options = fast_options();
  options.key_prefix = "jobs:";  // outside the rule's ~leader:*
  auto& e = fleet.add(options);
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).has_error(lh::errc::no_permission); }, 5s));
  lh::test::run_for(fleet.io, 300ms);
  EXPECT_FALSE(e.is_leader());
}

TEST(Acl, MissingChannelPermissionIsANoPermissionErrorEventAndFailoverFallsBackToPolling) {
  lh::test::RedisServer server;
  apply_documented_rule(server);
  server.admin().call({"ACL", "SETUSER", user, "resetchannels"});
  Fleet fleet(as_leasehold_user(server));
  auto& e = fleet.add();
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).has_error(lh::errc::no_permission); }, 5s));
  const lh::ErrorEvent* it = fleet.events(0).first_error(lh::errc::no_permission);
  EXPECT_TRUE(it->group.empty()) << "the subscription concerns the connection";
  EXPECT_NE(it->error.message().find("channels"), std::string::npos) << it->error.message();
  EXPECT_TRUE(run_until(fleet.io, [&] { return e.is_leader(); })) << "the lease itself still works";
}

// Leads, hands over through a release notice (faster than a ttl or a poll)
// and reports no error: what each topology's documented rule must allow.
void expect_leads_and_hands_over(Fleet& fleet, lh::ElectorOptions options) {
  options.groups = {"reports"};
  options.ttl = 2000ms;
  options.retry_interval = 2000ms;
  fleet.add(options);
  fleet.add(options);
  auto first = fleet.wait_single_leader("reports");
  ASSERT_TRUE(first) << fleet.errors();
  lh::test::run_for(fleet.io, 1000ms);  // renewals run too
  const auto before = std::chrono::steady_clock::now();
  fleet.at(*first).step_down("reports", [](lh::error_code ec) { EXPECT_FALSE(ec) << ec.message(); });
  const std::size_t other = 1 - *first;
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.at(other).is_leader("reports"); }, 3s)) << fleet.errors();
  EXPECT_LT(std::chrono::steady_clock::now() - before, 800ms) << "faster than a ttl or a poll";
  fleet.stop_all();
  EXPECT_EQ(fleet.errors(), "");
}

TEST(Acl, SentinelDocumentedRulesOnDataNodesAndSentinelsWorkInConfirmMode) {
  lh::test::SentinelTopology topology;
  // ACLs are not replicated: every data node gets the rule, as sentinel.md says.
  for (std::size_t i = 0; i < topology.node_count(); ++i) {
    apply_rule(topology.node(i).admin(), documented_rule("sentinel.md"));
  }
  for (std::size_t j = 0; j < topology.sentinel_count(); ++j) {
    apply_rule(topology.sentinel_admin(j), documented_rule("sentinel.md", "leasehold-watch"));
  }
  const std::string url = topology.sentinel_url();  // redis-sentinel://hosts#master
  const auto hosts = url.find("://") + 3;
  const auto hash = url.find('#');
  auto redis = lh::RedisOptions::from_url(url.substr(0, hosts) + user + ":" + placeholder_password + "@" +
                                          url.substr(hosts, hash - hosts) + "?sentinel_user=leasehold-watch" +
                                          "&sentinel_password=" + placeholder_password + url.substr(hash));
  Fleet fleet(redis);
  auto options = fast_options();
  options.confirm_replicas = 1;  // WAIT: the rule's +wait
  expect_leads_and_hands_over(fleet, options);
}

TEST(Acl, ClusterDocumentedRuleOnEveryNodeWorksWithShardedNotices) {
  lh::test::ClusterTopologyOptions topology_options;
  topology_options.replicas_per_master = 0;
  lh::test::ClusterTopology topology(topology_options);
  for (std::size_t i = 0; i < topology.node_count(); ++i) {
    apply_rule(topology.node(i).admin(), documented_rule("cluster.md"));
  }
  auto redis = lh::RedisOptions::from_url(topology.url());
  redis.username = user;
  redis.password = placeholder_password;
  Fleet fleet(redis);
  expect_leads_and_hands_over(fleet, fast_options());
}

// Without +info and +time the guard cannot read its data marker: every new
// group waits one ttl, as before the marker, and the elector says why once.
TEST(Acl, WithoutInfoEveryNewGroupWaitsTheGuardAndTheElectorSaysSoOnce) {
  lh::test::RedisServer server;
  apply_documented_rule(server);
  ASSERT_EQ(server.admin().call({"ACL", "SETUSER", user, "-info", "-time"}).str, "OK");
  lh::test::LogCapture log(lh::LogLevel::info);
  Fleet fleet(as_leasehold_user(server));
  auto options = fast_options("first");
  options.groups = {"reports"};
  fleet.add(options);
  ASSERT_TRUE(fleet.wait_leading(0, "default")) << fleet.errors();
  ASSERT_TRUE(fleet.wait_leading(0, "reports")) << fleet.errors();

  // Long after the first groups: a marker would be a ttl old by now.
  options.instance_id = "second";
  options.groups = {"late"};
  fleet.add(options);
  auto admin = server.admin();
  ASSERT_TRUE(run_until(fleet.io, [&] { return admin.get("leader:late").has_value(); }));
  EXPECT_EQ(admin.get("leader:late"), "") << "held by the guard";
  ASSERT_TRUE(fleet.wait_leading(1, "late")) << fleet.errors();
  EXPECT_EQ(fleet.errors(), "");
  EXPECT_EQ(log.count({"cannot tell a new group", "elector first", "INFO: "}), 1U) << log.dump();
  EXPECT_EQ(log.count({"cannot tell a new group", "elector second"}), 1U) << log.dump();
}
}  // namespace
}  // namespace integration_acl_test
