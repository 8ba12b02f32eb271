// Moving a fleet between topologies (docs/migration.md), staged with a
// fenced store: a fleet elects several times on its old keys and each leader
// writes to a store that refuses tokens below the highest it has seen; the
// old fleet stops; `leasehold migrate-tokens` (the CLI, run as a process)
// copies the counters; the new fleet's first leaders must write with tokens
// the store accepts, and a second run must never lower a counter. Once from
// one server to a Redis Cluster, once from the plain to the hash-tagged
// layout on one server; then the command's refusals and error exits.

#include "support/cluster_topology.hpp"
#include "support/command.hpp"
#include "support/elector_fixture.hpp"
#include "support/free_port.hpp"
#include "support/io_helpers.hpp"
#include "support/redis_server.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace integration_migration_test {
namespace {

#ifdef LEASEHOLD_CLI_BINARY

namespace lh = leasehold;
using lh::test::CommandResult;
using lh::test::Fleet;
using lh::test::RedisServer;
using namespace std::chrono_literals;

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// Runs the CLI (LEASEHOLD_URL removed), keeping `fleet` running meanwhile.
CommandResult cli(const std::vector<std::string>& args, Fleet* fleet = nullptr) {
  std::vector<std::string> argv{LEASEHOLD_CLI_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::function<void()> pump;
  if (fleet != nullptr) pump = [fleet] { lh::test::step(fleet->io); };
  return lh::test::run_command(argv, {"LEASEHOLD_URL"}, pump, 60s);
}

// What the fencing token protects: a store that refuses a write whose token
// is below the highest it has accepted (per group).
class FencedStore {
 public:
  bool write(const std::string& group, std::int64_t token) {
    std::int64_t& highest = highest_[group];
    if (token < highest) return false;
    highest = token;
    return true;
  }
  std::int64_t highest(const std::string& group) const { return highest_.at(group); }

 private:
  std::map<std::string, std::int64_t> highest_;
};

// The token of the term elector i leads `group` in now (its last elected event).
std::int64_t token_of(Fleet& fleet, std::size_t i, const std::string& group) {
  const auto& elected = fleet.events(i).elected;
  for (auto it = elected.rbegin(); it != elected.rend(); ++it) {
    if (it->group == group) return it->token;
  }
  return 0;
}

// The elector that leads `group` in a term after `after` (its elected event
// delivered), within `bound`.
std::optional<std::size_t> wait_term_after(Fleet& fleet, const std::string& group, std::int64_t after,
                                           std::chrono::milliseconds bound) {
  std::optional<std::size_t> found;
  lh::test::run_until(fleet.io, [&] {
    for (std::size_t i = 0; i < fleet.size(); ++i) {
      if (fleet.leading_with_event(i, group) && token_of(fleet, i, group) > after) found = i;
    }
    return found.has_value();
  }, bound);
  return found;
}

// `terms` terms of `group`, each leader writing once, each term ended by a
// step-down (the other elector takes over). Returns the last token.
std::int64_t run_terms(Fleet& fleet, FencedStore& store, const std::string& group, int terms) {
  std::int64_t last = 0;
  for (int t = 0; t < terms; ++t) {
    const auto leader = wait_term_after(fleet, group, last, 10s);
    if (!leader) {
      ADD_FAILURE() << "no term of " << group << " after token " << last;
      return last;
    }
    last = token_of(fleet, *leader, group);
    EXPECT_TRUE(store.write(group, last)) << group << " token " << last;
    if (t + 1 < terms) fleet.at(*leader).step_down(group, [](lh::error_code) {});
  }
  return last;
}

// A member may win one more term while the others stop (the first to stop
// releases its leases, and a member still running takes them): the old
// server's counters are set back to the last tokens the test saw, so that
// what the migration copies does not depend on how the stop interleaved.
// Nothing runs on the old server by then, and the store saw no later token.
void settle_counters(RedisServer& server, const std::map<std::string, std::int64_t>& last) {
  auto admin = server.admin();
  for (const auto& [group, token] : last) admin.set("leader:" + group + ":token", std::to_string(token));
}

// Two electors. The new fleets keep the empty-restart guard on (its
// default), so that one whose counters were not copied would wait a ttl
// before its first election; the old fleets start on a fresh server.
enum class Guard { off, on };
void add_pair(Fleet& fleet, std::chrono::milliseconds ttl, const std::vector<std::string>& groups, Guard guard) {
  for (const char* id : {"one", "two"}) {
    auto o = lh::test::fast_options(id);
    o.ttl = ttl;
    o.groups = groups;
    o.empty_restart_guard = guard == Guard::on;
    fleet.add(o);
  }
}

constexpr auto old_ttl = 3s;

std::string url_with(const std::string& url, std::string_view query) {
  return url + (contains(url, "?") ? "&" : "?") + std::string(query);
}

const std::vector<std::string> groups{"default", "reports", "billing"};

// The new fleet's ttl: long, so that a first election that had to wait out
// the empty-restart guard (counters not copied) would miss the bound below.
constexpr auto new_ttl = 10s;
constexpr auto first_election_bound = 5s;

TEST(Migration, FromOneServerToAClusterTheStoreAcceptsTheNewLeaders) {
  RedisServer old_server;
  FencedStore store;
  std::map<std::string, std::int64_t> last;
  {
    Fleet old_fleet(old_server);
    add_pair(old_fleet, old_ttl, {"reports", "billing"}, Guard::off);
    last["default"] = run_terms(old_fleet, store, "default", 3);
    last["reports"] = run_terms(old_fleet, store, "reports", 2);
    last["billing"] = run_terms(old_fleet, store, "billing", 1);
    // Step 1: the old fleet stops (its leases are released).
    old_fleet.stop_all();
  }
  ASSERT_EQ(last["default"], 3);
  ASSERT_EQ(last["reports"], 2);
  settle_counters(old_server, last);
  // A once-per-tick record moves along with the counter.
  old_server.admin().call({"HSET", "leader:reports:ticks", "every 1000ms", "1700000000000"});

  lh::test::ClusterTopologyOptions three_masters;
  three_masters.replicas_per_master = 0;
  lh::test::ClusterTopology cluster(three_masters);
  const auto cluster_get = [&](const std::string& key) {
    return cluster.node(cluster.master_of_slot(cluster.key_slot(key))).admin().get(key);
  };
  std::set<std::size_t> masters;
  for (const auto& g : groups) masters.insert(cluster.master_of_slot(cluster.key_slot("leader:{" + g + "}")));
  EXPECT_GE(masters.size(), 2u) << "the groups should live on several masters";

  // A dry run says what it would do and writes nothing.
  auto r = cli({"migrate-tokens", "--from", old_server.url(), "--to", cluster.url(), "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "default: would copy token 3 to leader:{default}:token (it had none)")) << r.describe();
  EXPECT_TRUE(contains(r.out, "3 group(s): 3 to copy, 0 to keep, 0 missing (dry run: nothing written)"))
      << r.describe();
  for (const auto& g : groups) EXPECT_FALSE(cluster_get("leader:{" + g + "}:token").has_value()) << g;

  // Step 2: copy every group found by SCAN on the old server.
  r = cli({"migrate-tokens", "--from", old_server.url(), "--to", cluster.url()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "default: copied token 3 to leader:{default}:token (it had none)")) << r.describe();
  EXPECT_TRUE(contains(r.out, "reports: copied token 2 to leader:{reports}:token (it had none); once-per-tick "
                              "record: 1 schedule(s) raised, 0 kept"))
      << r.describe();
  EXPECT_TRUE(contains(r.out, "3 group(s): 3 copied, 0 kept, 0 missing")) << r.describe();
  EXPECT_EQ(cluster_get("leader:{default}:token"), "3");
  EXPECT_EQ(cluster_get("leader:{reports}:token"), "2");
  EXPECT_EQ(cluster.node(cluster.master_of_slot(cluster.key_slot("leader:{reports}")))
                .admin()
                .call({"HGET", "leader:{reports}:ticks", "every 1000ms"})
                .str,
            "1700000000000");

  // Step 3: the new fleet on the cluster. Its first leaders are elected at
  // once (the counters exist: no empty-restart guard) with tokens above
  // every one the store has seen, so the store takes their writes.
  Fleet new_fleet(lh::RedisOptions::from_url(cluster.url()));
  add_pair(new_fleet, new_ttl, {"reports", "billing"}, Guard::on);
  for (const auto& g : groups) {
    const auto leader = wait_term_after(new_fleet, g, 0, first_election_bound);
    ASSERT_TRUE(leader.has_value()) << g;
    const std::int64_t token = token_of(new_fleet, *leader, g);
    EXPECT_EQ(token, last[g] + 1) << g;
    EXPECT_GT(token, store.highest(g)) << g;
    EXPECT_TRUE(store.write(g, token)) << g << " token " << token;
  }
  // One more term on the cluster: its counter is now 5, above the source's 3.
  const auto leader = new_fleet.leaders("default").front();
  new_fleet.at(leader).step_down("default", [](lh::error_code) {});
  ASSERT_TRUE(wait_term_after(new_fleet, "default", 4, 5s).has_value());
  EXPECT_EQ(cluster_get("leader:{default}:token"), "5");

  // A second run (while the new fleet runs) lowers nothing.
  r = cli({"migrate-tokens", "--from", old_server.url(), "--to", cluster.url()}, &new_fleet);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "default: kept 5 at leader:{default}:token: already >= 3, never lowered")) << r.describe();
  EXPECT_TRUE(contains(r.out, "reports: kept 3 at leader:{reports}:token: already >= 2, never lowered; "
                              "once-per-tick record: 0 schedule(s) raised, 1 kept"))
      << r.describe();
  EXPECT_TRUE(contains(r.out, "3 group(s): 0 copied, 3 kept, 0 missing")) << r.describe();
  EXPECT_EQ(cluster_get("leader:{default}:token"), "5");
  EXPECT_EQ(cluster_get("leader:{reports}:token"), "3");
  for (std::size_t i = 0; i < new_fleet.size(); ++i) {
    for (const auto& e : new_fleet.events(i).errors) ADD_FAILURE() << e.group << ": " << e.error.message();
  }
}

TEST(Migration, FromThePlainToTheHashTaggedLayoutOnOneServer) {
  RedisServer server;
  FencedStore store;
  std::int64_t last = 0;
  std::int64_t reports_last = 0;
  {
    Fleet old_fleet(server);
    add_pair(old_fleet, old_ttl, {"reports"}, Guard::off);
    last = run_terms(old_fleet, store, "default", 4);
    reports_last = run_terms(old_fleet, store, "reports", 2);
    old_fleet.stop_all();
  }
  ASSERT_EQ(last, 4);
  ASSERT_EQ(reports_last, 2);
  settle_counters(server, {{"default", last}, {"reports", reports_last}});
  const std::string tagged = url_with(server.url(), "key_layout=hash_tagged");

  // Named groups; one has never been elected on the source.
  auto r = cli({"migrate-tokens", "--from", server.url(), "--to", tagged, "default", "reports", "ghost"});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.out, "default: copied token 4 to leader:{default}:token (it had none)")) << r.describe();
  EXPECT_TRUE(contains(r.out, "reports: copied token 2 to leader:{reports}:token (it had none)")) << r.describe();
  EXPECT_TRUE(contains(r.out, "ghost: missing: no fencing counter at leader:ghost:token on --from; nothing to copy"))
      << r.describe();
  EXPECT_TRUE(contains(r.out, "3 group(s): 2 copied, 0 kept, 1 missing")) << r.describe();
  auto admin = server.admin();
  EXPECT_EQ(admin.get("leader:{default}:token"), "4");
  EXPECT_FALSE(admin.get("leader:{ghost}:token").has_value());

  Fleet new_fleet(lh::RedisOptions::from_url(tagged));
  add_pair(new_fleet, new_ttl, {"reports"}, Guard::on);
  const auto leader = wait_term_after(new_fleet, "default", 0, first_election_bound);
  ASSERT_TRUE(leader.has_value());
  const std::int64_t token = token_of(new_fleet, *leader, "default");
  EXPECT_EQ(token, 5);
  EXPECT_TRUE(store.write("default", token));
  ASSERT_TRUE(wait_term_after(new_fleet, "reports", 0, first_election_bound).has_value());

  // Again, by SCAN: on one server the hash-tagged keys the first run wrote
  // (leader:{default}...) are not taken for plain groups named "{default}".
  r = cli({"migrate-tokens", "--from", server.url(), "--to", tagged}, &new_fleet);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "default: kept 5 at leader:{default}:token: already >= 4, never lowered"))
      << r.describe();
  EXPECT_TRUE(contains(r.out, "2 group(s): 0 copied, 2 kept, 0 missing")) << r.describe();
  EXPECT_EQ(admin.get("leader:{default}:token"), "5");

  // A counter far above the source's stays where it is.
  admin.set("leader:{reports}:token", "100");
  r = cli({"migrate-tokens", "--from", server.url(), "--to", tagged, "reports"}, &new_fleet);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "reports: kept 100 at leader:{reports}:token: already >= 2")) << r.describe();
  EXPECT_EQ(admin.get("leader:{reports}:token"), "100");
}

TEST(Migration, RefusesBadCommandLinesWithExitTwo) {
  RedisServer server;
  const std::string tagged = url_with(server.url(), "key_layout=hash_tagged");
  const struct {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"migrate-tokens", "--to", tagged}, "migrate-tokens needs --from URL"},
      {{"migrate-tokens", "--from", server.url()}, "migrate-tokens needs --from URL"},
      {{"migrate-tokens", "--from", server.url(), "--to", server.url()}, "--from and --to name the same keys"},
      {{"--url", server.url(), "migrate-tokens", "--from", server.url(), "--to", tagged}, "--url is not used"},
      {{"migrate-tokens", "--from", server.url(), "--to", url_with(server.url(), "key_layout=tagged")},
       "bad Redis URL from --to: invalid Redis URL"},
      {{"migrate-tokens", "--from", server.url(), "--to", tagged, "a{b}"}, "key_layout=hash_tagged"},
  };
  for (const auto& c : cases) {
    const auto r = cli(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_TRUE(contains(r.err, c.message)) << c.message << "\n" << r.describe();
  }
  const auto help = cli({"help", "migrate-tokens"});
  EXPECT_EQ(help.exit_code, 0) << help.describe();
  EXPECT_TRUE(contains(help.out, "Usage: leasehold migrate-tokens")) << help.describe();
  EXPECT_TRUE(contains(help.out, "--dry-run")) << help.describe();
}

TEST(Migration, ConnectionAndPermissionErrorsExitThreeNamingTheSide) {
  // An unreachable target: named as --to, password masked.
  RedisServer source;
  source.admin().set("leader:default:token", "7");
  const auto port = std::to_string(lh::test::free_port());
  auto r = cli({"migrate-tokens", "--from", source.url(), "--to", "redis://:hunter2@127.0.0.1:" + port});
  EXPECT_EQ(r.exit_code, 3) << r.describe();
  EXPECT_TRUE(contains(r.err, "--to: cannot connect to Redis")) << r.describe();
  EXPECT_TRUE(contains(r.err, "redis://:***@127.0.0.1:" + port)) << r.describe();
  EXPECT_FALSE(contains(r.out + r.err, "hunter2")) << r.describe();

  // A target user that may read but not run scripts: NOPERM, named.
  lh::test::RedisServerOptions restricted;
  restricted.acl_users = {"reader on >reader-pass ~* &* +@all -@scripting"};
  RedisServer target(restricted);
  const std::string reader = "redis://reader:reader-pass@127.0.0.1:" + std::to_string(target.port());
  r = cli({"migrate-tokens", "--from", source.url(), "--to", reader});
  EXPECT_EQ(r.exit_code, 3) << r.describe();
  EXPECT_TRUE(contains(r.err, "--to: writing leader:default:token: Redis answered: NOPERM")) << r.describe();
  EXPECT_FALSE(contains(r.out + r.err, "reader-pass")) << r.describe();
  // The dry run only reads: it works with that user.
  r = cli({"migrate-tokens", "--from", source.url(), "--to", reader, "--dry-run"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "default: would copy token 7 to leader:default:token (it had none)")) << r.describe();

  // A target counter that is not a number is an error, not overwritten.
  target.admin().set("leader:default:token", "garbage");
  r = cli({"migrate-tokens", "--from", source.url(), "--to", target.url()});
  EXPECT_EQ(r.exit_code, 3) << r.describe();
  EXPECT_TRUE(contains(r.err, "leader:default:token holds \"garbage\", not a fencing counter")) << r.describe();
  EXPECT_EQ(target.admin().get("leader:default:token"), "garbage");
}

#endif  // LEASEHOLD_CLI_BINARY

}  // namespace
}  // namespace integration_migration_test
