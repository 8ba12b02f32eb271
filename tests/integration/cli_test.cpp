// The `leasehold` operations CLI, run as a child process against a real
// redis-server with electors of this test process campaigning on it.

#include "support/cluster_topology.hpp"
#include "support/command.hpp"
#include "support/elector_fixture.hpp"
#include "support/free_port.hpp"
#include "support/io_helpers.hpp"
#include "support/redis_server.hpp"
#include "support/sentinel_topology.hpp"

#include <boost/json/src.hpp>  // header-only Boost.JSON, in this one translation unit

#include <gtest/gtest.h>

#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace integration_cli_test {
namespace {

#ifdef LEASEHOLD_CLI_BINARY

namespace lh = leasehold;
namespace json = boost::json;
using lh::test::CommandResult;
using lh::test::Fleet;
using lh::test::RedisServer;
using namespace std::chrono_literals;

// Runs the CLI with `args`, keeping `fleet`'s electors running meanwhile.
// LEASEHOLD_URL is removed unless `env` sets it.
CommandResult cli(const std::vector<std::string>& args, Fleet* fleet = nullptr,
                  std::vector<std::string> env = {"LEASEHOLD_URL"}) {
  std::vector<std::string> argv{LEASEHOLD_CLI_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::function<void()> pump;
  if (fleet != nullptr) pump = [fleet] { lh::test::step(fleet->io); };
  return lh::test::run_command(argv, env, pump, 60s);
}

// Runs the CLI on a pseudo-terminal (so that it may ask questions), typing
// `input`; returns the exit code (-1 if it had to be killed) and what the
// terminal showed.
std::pair<int, std::string> cli_on_terminal(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> argv{LEASEHOLD_CLI_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> ptrs;
  for (auto& a : argv) ptrs.push_back(a.data());
  ptrs.push_back(nullptr);
  int master = -1;
  int slave = -1;
  if (::openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) return {-1, "openpty failed"};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    ::dup2(slave, 0);
    ::dup2(slave, 1);
    ::dup2(slave, 2);
    ::close_range(3, ~0U, 0);
    ::execv(ptrs[0], ptrs.data());
    ::_exit(127);
  }
  ::close(slave);
  // Typed ahead: the terminal keeps it until the program reads its answer.
  [[maybe_unused]] auto n = ::write(master, input.data(), input.size());
  std::string shown;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[512];
    const auto got = ::read(master, buf, sizeof buf);
    if (got <= 0) break;  // EIO: the program exited and closed the terminal
    shown.append(buf, static_cast<std::size_t>(got));
  }
  ::close(master);
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) == 0) ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, shown};
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// How many notice channels the CLI's connections to `server` subscribe to
// (CLIENT LIST's sub + ssub of the clients named leasehold-cli...). A notice
// published before `watch` subscribed its channel never reaches it, so a
// test that expects "released" steps down only once the watch listens.
long long cli_subscriptions(const RedisServer& server) {
  long long n = 0;
  for (const auto& client : lines(server.admin().call({"CLIENT", "LIST"}).str)) {
    if (!contains(client, " name=leasehold-cli")) continue;
    for (const std::string field : {" sub=", " ssub="}) {
      const auto at = client.find(field);
      if (at != std::string::npos) n += std::stoll(client.substr(at + field.size()));
    }
  }
  return n;
}

// Two electors on "default" and "reports"; returns once both groups have a leader.
// Two electors on one server. A ttl far above any stall of a loaded machine,
// so the leader found at construction stays the leader until a test moves it
// (with fast_options' 1.5 s, a late renewal once handed "default" to the
// standby in the middle of a test); hand-overs go by release notice anyway.
constexpr auto kClusterTtl = std::chrono::milliseconds(10000);

struct Cluster {
  explicit Cluster(const RedisServer& server) : fleet(server) {
    for (const char* id : {"alpha", "beta"}) {
      auto o = lh::test::fast_options(id);
      o.ttl = kClusterTtl;
      o.empty_restart_guard = false;  // a new group would first wait out this ttl
      o.groups = {"reports"};
      fleet.add(o);
    }
    leader = fleet.wait_single_leader("default").value();
    EXPECT_TRUE(fleet.wait_single_leader("reports").has_value());
  }
  std::string leader_id() { return fleet.at(leader).instance_id(); }
  std::string standby_id() { return fleet.at(1 - leader).instance_id(); }

  Fleet fleet;
  std::size_t leader = 0;
};

// ---- help and usage -------------------------------------------------------

TEST(Cli, HelpForEveryCommandExitsZero) {
  auto r = cli({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "Usage: leasehold")) << r.describe();
  EXPECT_TRUE(contains(r.out, "Exit codes:")) << r.describe();
  for (const std::string command : {"status", "watch", "step-down", "evict"}) {
    r = cli({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.describe();
    EXPECT_TRUE(contains(r.out, "Usage: leasehold " + command)) << r.describe();
    r = cli({"help", command});
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_TRUE(contains(r.out, "Usage: leasehold " + command)) << r.describe();
  }
}

TEST(Cli, UsageErrorsExitTwo) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},                                       // no command
           {"frobnicate"},                           // unknown command
           {"status", "--bogus"},                    // unknown option
           {"--json", "status"},                     // a command's option before the command
           {"step-down", "default"},                 // no --as
           {"step-down", "--as", "x"},               // no group
           {"evict", "a", "b", "--force"},           // two groups
           {"status", "bad:token"},                  // reserved group name
           {"watch", "--duration", "soon"},          // bad duration
           {"status", "--prefix", ""},               // empty prefix
       }) {
    const auto r = cli(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.exit_code, 2) << joined << ": " << r.describe();
    EXPECT_FALSE(r.err.empty()) << joined << ": " << r.describe();
  }
}

TEST(Cli, BadUrlExitsTwoWithoutShowingThePassword) {
  auto r = cli({"--url", "redis://ops:hunter2@127.0.0.1:notaport", "status"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "bad Redis URL from --url")) << r.describe();
  EXPECT_FALSE(contains(r.out + r.err, "hunter2")) << r.describe();

  r = cli({"status"}, nullptr, {"LEASEHOLD_URL=http://127.0.0.1"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "LEASEHOLD_URL")) << r.describe();
}

TEST(Cli, UnreachableServerExitsThree) {
  const auto port = std::to_string(lh::test::free_port());
  const auto r = cli({"--url", "redis://:hunter2@127.0.0.1:" + port, "status"});
  EXPECT_EQ(r.exit_code, 3) << r.describe();
  EXPECT_TRUE(contains(r.err, "cannot connect to Redis")) << r.describe();
  EXPECT_TRUE(contains(r.err, "redis://:***@127.0.0.1:" + port)) << r.describe();
  EXPECT_FALSE(contains(r.out + r.err, "hunter2")) << r.describe();
}

// On a cluster the message says, for each seed, why it gave no slot map.
TEST(Cli, OnAClusterEachSeedSaysWhyItGaveNoSlotMap) {
  lh::test::RedisServer refusing;  // answers, but may not read the slot map
  refusing.admin().call({"ACL", "SETUSER", "default", "-cluster"});
  const auto dead = std::to_string(lh::test::free_port());
  const auto r = cli({"--url", "redis-cluster://127.0.0.1:" + dead + ",127.0.0.1:" + std::to_string(refusing.port()),
                      "status"});
  EXPECT_EQ(r.exit_code, 3) << r.describe();
  EXPECT_TRUE(contains(r.err, "no slot map read from any seed node")) << r.describe();
  EXPECT_TRUE(contains(r.err, "127.0.0.1:" + dead)) << r.describe();
  EXPECT_TRUE(contains(r.err, "NOPERM")) << r.describe();
  EXPECT_TRUE(contains(r.err, "127.0.0.1:" + std::to_string(refusing.port()))) << r.describe();
}

TEST(Cli, WrongPasswordExitsThreeWithoutShowingIt) {
  lh::test::RedisServerOptions options;
  options.password = "right-pass";
  RedisServer server(options);
  const auto r = cli({"--url", "redis://:wrong-pass@127.0.0.1:" + std::to_string(server.port()), "status"});
  EXPECT_EQ(r.exit_code, 3) << r.describe();
  EXPECT_TRUE(contains(r.err, "authentication")) << r.describe();
  EXPECT_FALSE(contains(r.out + r.err, "wrong-pass")) << r.describe();
  EXPECT_FALSE(contains(r.out + r.err, "right-pass")) << r.describe();
}

// ---- status ---------------------------------------------------------------

TEST(Cli, StatusTableListsEveryGroupWithItsHolder) {
  RedisServer server;
  Cluster c(server);
  const auto r = cli({"--url", server.url(), "status"}, &c.fleet);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const auto rows = lines(r.out);
  ASSERT_EQ(rows.size(), 3u) << r.out;  // header, default, reports
  EXPECT_TRUE(std::regex_search(rows[0], std::regex("^GROUP +HOLDER +TTL +TOKEN$"))) << rows[0];
  const std::regex row("^(\\S+) +(\\S+) +([0-9]+\\.[0-9]{3}s) +([0-9]+)$");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(rows[1], m, row)) << rows[1];
  EXPECT_EQ(m[1], "default");
  EXPECT_EQ(m[2], c.leader_id());
  EXPECT_GE(std::stoi(m[4]), 1);
  ASSERT_TRUE(std::regex_match(rows[2], m, row)) << rows[2];
  EXPECT_EQ(m[1], "reports");
  // Aligned: every column starts where its header does.
  for (const auto& l : rows) {
    EXPECT_EQ(l.find_first_not_of(' ', rows[0].find("HOLDER")), rows[0].find("HOLDER")) << l;
  }
}

TEST(Cli, StatusJsonParses) {
  RedisServer server;
  Cluster c(server);
  const auto r = cli({"--url", server.url(), "status", "default", "nosuchgroup", "--json"}, &c.fleet);
  EXPECT_EQ(r.exit_code, 1) << r.describe();  // nosuchgroup is not held
  json::value doc;
  ASSERT_NO_THROW(doc = json::parse(r.out)) << r.out;
  EXPECT_EQ(doc.at("prefix").as_string(), "leader:");
  const auto& groups = doc.at("groups").as_array();
  ASSERT_EQ(groups.size(), 2u);
  const auto& held = groups[0].as_object();
  EXPECT_EQ(held.at("group").as_string(), "default");
  EXPECT_EQ(held.at("key").as_string(), "leader:default");
  EXPECT_TRUE(held.at("held").as_bool());
  EXPECT_EQ(held.at("holder").as_string(), c.leader_id());
  EXPECT_GT(held.at("ttl_ms").as_int64(), 0);
  EXPECT_LE(held.at("ttl_ms").as_int64(), kClusterTtl.count());
  EXPECT_GE(held.at("token").as_int64(), 1);
  const auto& free = groups[1].as_object();
  EXPECT_FALSE(free.at("held").as_bool());
  EXPECT_TRUE(free.at("holder").is_null());
  EXPECT_TRUE(free.at("ttl_ms").is_null());
  EXPECT_EQ(free.at("token").as_int64(), 0);
}

TEST(Cli, StatusScanShowsLeaderlessGroupsByTheirTokenAndHonoursThePrefix) {
  RedisServer server;
  auto admin = server.admin();
  admin.set("leader:orphan:token", "7");  // had leaders, has none now
  admin.set("other:x", "y");              // another prefix
  auto r = cli({"--url", server.url(), "status"});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  const auto rows = lines(r.out);
  ASSERT_EQ(rows.size(), 2u) << r.out;
  EXPECT_TRUE(std::regex_match(rows[1], std::regex("^orphan +- +- +7$"))) << rows[1];

  r = cli({"--url", server.url(), "--prefix", "other:", "status", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  const auto doc = json::parse(r.out);
  ASSERT_EQ(doc.at("groups").as_array().size(), 1u);
  EXPECT_EQ(doc.at("groups").as_array()[0].at("holder").as_string(), "y");
  EXPECT_EQ(doc.at("groups").as_array()[0].at("ttl_ms").as_int64(), -1);  // no TTL

  r = cli({"--url", server.url(), "--prefix", "nothing:", "status"});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.out, "no groups")) << r.describe();
}

TEST(Cli, UrlFromTheEnvironmentAndUnixSockets) {
  lh::test::RedisServerOptions options;
  options.unix_socket = true;
  RedisServer server(options);
  server.admin().set("leader:g", "someone");
  auto r = cli({"status", "g"}, nullptr, {"LEASEHOLD_URL=" + server.url()});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "someone")) << r.describe();
  r = cli({"--url", "unix://" + server.unix_path(), "status", "g"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "someone")) << r.describe();
}

TEST(Cli, TlsUrl) {
  lh::test::RedisServerOptions options;
  options.tls = true;
  RedisServer server(options);
  server.admin().set("leader:g", "someone");
  ASSERT_TRUE(server.url().starts_with("rediss://")) << server.url();
  const auto r = cli({"--url", server.url(), "status", "g"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "someone")) << r.describe();
}

// ---- step-down ------------------------------------------------------------

TEST(Cli, StepDownHandsLeadershipToTheStandby) {
  RedisServer server;
  Cluster c(server);
  auto admin = server.admin();

  auto r = cli({"--url", server.url(), "step-down", "default", "--as", "not-the-holder"}, &c.fleet);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.out, "held by " + c.leader_id())) << r.describe();
  EXPECT_EQ(admin.get("leader:default"), c.leader_id());

  r = cli({"--url", server.url(), "step-down", "default", "--as", c.leader_id()}, &c.fleet);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "released leader:default")) << r.describe();
  // The standby heard the release notice: it leads long before any TTL.
  EXPECT_TRUE(lh::test::run_until(c.fleet.io, [&] { return admin.get("leader:default") == c.standby_id(); }, 5s));
  EXPECT_TRUE(lh::test::run_until(c.fleet.io, [&] { return c.fleet.leaders() == std::vector{1 - c.leader}; }, 5s));
}

// ---- evict ----------------------------------------------------------------

TEST(Cli, EvictRefusesWithoutForceAndWithoutConfirmation) {
  RedisServer server;
  auto admin = server.admin();
  admin.set("leader:stuck", "ghost");
  auto r = cli({"--url", server.url(), "evict", "stuck"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "--force")) << r.describe();
  // stdin is /dev/null here: nobody to ask.
  r = cli({"--url", server.url(), "evict", "stuck", "--force"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "--yes")) << r.describe();
  EXPECT_EQ(admin.get("leader:stuck"), "ghost");
}

TEST(Cli, EvictAsksOnATerminal) {
  RedisServer server;
  auto admin = server.admin();
  admin.set("leader:stuck", "ghost");
  auto [code, shown] = cli_on_terminal({"--url", server.url(), "evict", "stuck", "--force"}, "n\n");
  EXPECT_EQ(code, 1) << shown;
  EXPECT_TRUE(contains(shown, "Delete leader:stuck held by ghost")) << shown;
  EXPECT_TRUE(contains(shown, "not evicted")) << shown;
  EXPECT_EQ(admin.get("leader:stuck"), "ghost");

  std::tie(code, shown) = cli_on_terminal({"--url", server.url(), "evict", "stuck", "--force"}, "y\n");
  EXPECT_EQ(code, 0) << shown;
  EXPECT_TRUE(contains(shown, "evicted leader:stuck")) << shown;
  EXPECT_FALSE(admin.get("leader:stuck").has_value());
}

TEST(Cli, EvictRemovesAStaleLeaseSoThatTheGroupIsElected) {
  RedisServer server;
  auto admin = server.admin();
  // A holder that died with a long lease blocks the group for a minute.
  admin.call({"SET", "leader:stuck", "ghost", "PX", "60000"});
  Fleet fleet(server);
  auto o = lh::test::fast_options("alpha");
  o.groups = {"stuck"};
  fleet.add(o);
  lh::test::run_for(fleet.io, 300ms);
  ASSERT_TRUE(fleet.leaders("stuck").empty());

  auto r = cli({"--url", server.url(), "evict", "stuck", "--force", "--yes"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "evicted leader:stuck held by ghost")) << r.describe();
  EXPECT_NE(admin.get("leader:stuck"), "ghost");
  EXPECT_TRUE(fleet.wait_single_leader("stuck", 5s).has_value());

  r = cli({"--url", server.url(), "evict", "nosuchgroup", "--force", "--yes"});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.out, "nothing to evict")) << r.describe();
}

TEST(Cli, EvictRemovesAKeyThatIsNotALease) {
  RedisServer server;
  auto admin = server.admin();
  admin.call({"HSET", "leader:weird", "f", "v"});
  auto r = cli({"--url", server.url(), "status", "weird"});
  EXPECT_EQ(r.exit_code, 3) << r.describe();
  EXPECT_TRUE(contains(r.err, "WRONGTYPE")) << r.describe();
  r = cli({"--url", server.url(), "evict", "weird", "--force", "--yes"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(admin.call({"EXISTS", "leader:weird"}).integer, 0);
}

// ---- watch ----------------------------------------------------------------

TEST(Cli, WatchPrintsAReleaseAndTheTakeoverAndStopsOnSigint) {
  RedisServer server;
  Cluster c(server);
  lh::test::Command watch({LEASEHOLD_CLI_BINARY, "--url", server.url(), "watch", "--interval", "200ms"},
                          {"LEASEHOLD_URL"});
  // Whether some line of the output matches `pattern`.
  auto has = [&](const std::string& pattern) {
    const std::regex re(pattern);
    for (const auto& l : lines(watch.out())) {
      if (std::regex_search(l, re)) return true;
    }
    return false;
  };
  const std::string ts = "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z";
  ASSERT_TRUE(lh::test::run_until(c.fleet.io, [&] { return has("default  held  by " + c.leader_id()); }, 10s))
      << watch.out() << watch.err();
  EXPECT_TRUE(has("^" + ts + "  reports  held  by ")) << watch.out();
  // Both groups' channels: "default" and "reports".
  ASSERT_TRUE(lh::test::run_until(c.fleet.io, [&] { return cli_subscriptions(server) >= 2; }, 10s))
      << server.admin().call({"CLIENT", "LIST"}).str;

  c.fleet.at(c.leader).step_down("default", [](lh::error_code) {});
  ASSERT_TRUE(lh::test::run_until(c.fleet.io, [&] { return has("default  acquired  by " + c.standby_id()); }, 10s))
      << watch.out() << watch.err();
  EXPECT_TRUE(has("^" + ts + "  default  released  by " + c.leader_id() + " \\(release notice\\)")) << watch.out();

  watch.signal(SIGINT);
  const auto r = watch.wait(10s, [&] { lh::test::step(c.fleet.io); });
  EXPECT_EQ(r.exit_code, 0) << r.describe();
}

TEST(Cli, WatchTellsExpiryDeletionAndTakeoverApart) {
  RedisServer server;
  auto admin = server.admin();
  lh::test::Command watch({LEASEHOLD_CLI_BINARY, "--url", server.url(), "watch", "g", "--interval", "50ms"},
                          {"LEASEHOLD_URL"});
  auto shows = [&](const std::string& what) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!contains(watch.out(), what) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(10ms);
    }
    return contains(watch.out(), what);
  };
  ASSERT_TRUE(shows("g  vacant")) << watch.out() << watch.err();
  admin.call({"SET", "leader:g", "short", "PX", "1000"});
  EXPECT_TRUE(shows("g  acquired  by short")) << watch.out();
  EXPECT_TRUE(shows("g  expired  lease of short ran out")) << watch.out();
  admin.call({"SET", "leader:g", "first", "PX", "60000"});
  EXPECT_TRUE(shows("g  acquired  by first")) << watch.out();
  admin.call({"SET", "leader:g", "second", "PX", "60000"});
  EXPECT_TRUE(shows("g  taken-over  by second from first")) << watch.out();
  admin.call({"INCR", "leader:g:token"});
  EXPECT_TRUE(shows("g  new-term  by second (token 1")) << watch.out();
  admin.call({"DEL", "leader:g"});
  EXPECT_TRUE(shows("g  deleted  lease of second removed before its expiry")) << watch.out();
  watch.signal(SIGTERM);
  EXPECT_EQ(watch.wait(10s).exit_code, 0);
}

TEST(Cli, WatchJsonLinesParseAndDurationEndsIt) {
  RedisServer server;
  server.admin().set("leader:g", "someone");
  const auto r = cli({"--url", server.url(), "watch", "g", "--duration", "1s", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  const auto out = lines(r.out);
  ASSERT_EQ(out.size(), 1u) << r.out;
  const auto doc = json::parse(out[0]);
  EXPECT_EQ(doc.at("group").as_string(), "g");
  EXPECT_EQ(doc.at("event").as_string(), "held");
  EXPECT_EQ(doc.at("holder").as_string(), "someone");
  EXPECT_TRUE(doc.at("ttl_ms").is_int64());
}

TEST(Cli, WatchNeedsAReachableServer) {
  const auto r = cli({"--url", "redis://127.0.0.1:" + std::to_string(lh::test::free_port()), "watch"});
  EXPECT_EQ(r.exit_code, 3) << r.describe();
}

// ---- Sentinel URLs ------------------------------------------------------------

TEST(Cli, StatusFindsTheMasterThroughTheSentinels) {
  lh::test::SentinelTopology topology;
  Fleet fleet(lh::RedisOptions::from_url(topology.sentinel_url()));
  auto options = lh::test::fast_options("through-sentinels");
  options.empty_restart_guard = false;
  fleet.add(options);
  ASSERT_TRUE(fleet.wait_leading(0));
  const auto r = cli({"--url", topology.sentinel_url(), "status"}, &fleet);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "through-sentinels")) << r.describe();
}

TEST(Cli, AnUnknownMasterNameExitsThreeNamingIt) {
  lh::test::SentinelTopology topology;
  const auto r = cli({"--url", topology.sentinel_url("nope"), "status"});
  EXPECT_EQ(r.exit_code, 3) << r.describe();
  EXPECT_TRUE(contains(r.err, "no master named \"nope\"")) << r.describe();
}

// ---- Redis Cluster URLs ---------------------------------------------------------

// Electors alpha and beta campaigning on a 3-master cluster for groups
// whose keys land on every master, with a long ttl: a hand-over that comes
// sooner was started by a release notice on the group's shard channel.
struct OnACluster {
  OnACluster() : topology(topology_options()), fleet(lh::RedisOptions::from_url(topology.url())) {
    for (const char* id : {"alpha", "beta"}) {
      auto o = lh::test::fast_options(id);
      o.ttl = kClusterTtl;
      o.empty_restart_guard = false;
      o.groups = groups;
      fleet.add(o);
    }
    for (const auto& g : groups) EXPECT_TRUE(fleet.wait_single_leader(g).has_value()) << g;
  }
  static lh::test::ClusterTopologyOptions topology_options() {
    lh::test::ClusterTopologyOptions o;
    o.replicas_per_master = 0;
    return o;
  }
  std::size_t leader_of(const std::string& group) { return fleet.leaders(group).at(0); }
  std::string holder(const std::string& group) {
    return topology.node(topology.master_of_slot(topology.key_slot("leader:{" + group + "}")))
        .admin()
        .get("leader:{" + group + "}")
        .value_or("");
  }

  const std::vector<std::string> groups{"a", "b", "c", "d", "e", "f"};
  lh::test::ClusterTopology topology;
  Fleet fleet;
};

TEST(Cli, OnAClusterStatusScansEveryMasterAndReadsEachGroupOnItsShard) {
  OnACluster c;
  std::set<std::size_t> shards;
  for (const auto& g : c.groups) shards.insert(c.topology.master_of_slot(c.topology.key_slot("leader:{" + g + "}")));
  ASSERT_GE(shards.size(), 2u) << "the groups should land on more than one master";

  // No operands: SCAN on each master finds every group.
  auto r = cli({"--url", c.topology.url(), "status", "--json"}, &c.fleet);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const auto doc = json::parse(r.out);
  const auto& listed = doc.at("groups").as_array();
  std::vector<std::string> names;
  for (const auto& g : listed) {
    names.emplace_back(g.at("group").as_string());
    const std::string name(g.at("group").as_string());
    EXPECT_EQ(g.at("key").as_string(), "leader:{" + name + "}");
    EXPECT_EQ(g.at("holder").as_string(), c.fleet.at(c.leader_of(name)).instance_id()) << name;
    EXPECT_GE(g.at("token").as_int64(), 1) << name;
  }
  std::vector<std::string> expected = c.groups;
  expected.push_back("default");
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(names, expected);

  // Named groups, one of them never led.
  r = cli({"--url", c.topology.url(), "status", "b", "nobody"}, &c.fleet);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_TRUE(contains(r.out, c.fleet.at(c.leader_of("b")).instance_id())) << r.describe();

  // A brace would change the hash tag: refused before connecting.
  r = cli({"--url", c.topology.url(), "status", "x{y}"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "not allowed on a Redis Cluster")) << r.describe();
}

TEST(Cli, OnAClusterStepDownIsHeardOnTheShardAndWatchReportsIt) {
  OnACluster c;
  // "released ... (release notice)" is only ever printed for a notice heard
  // (here on the group's shard channel); polls say "expired" or "deleted".
  lh::test::Command watch({LEASEHOLD_CLI_BINARY, "--url", c.topology.url(), "watch", "--interval", "1s"},
                          {"LEASEHOLD_URL"});
  auto has = [&](const std::string& text) { return contains(watch.out(), text); };
  ASSERT_TRUE(lh::test::run_until(c.fleet.io, [&] { return has("f  held  by "); }, 15s))
      << watch.out() << watch.err();
  // One channel per slot, on the slot's master.
  std::set<int> slots;
  for (const auto& g : c.groups) slots.insert(c.topology.key_slot("leader:{" + g + "}"));
  auto subscriptions = [&] {
    long long n = 0;
    for (const auto m : c.topology.masters()) n += cli_subscriptions(c.topology.node(m));
    return n;
  };
  ASSERT_TRUE(lh::test::run_until(c.fleet.io, [&] { return subscriptions() >= static_cast<long long>(slots.size()); },
                                  10s))
      << subscriptions() << " of " << slots.size();

  for (const std::string group : {"a", "d"}) {
    const std::string leader = c.fleet.at(c.leader_of(group)).instance_id();
    const std::string standby = c.fleet.at(1 - c.leader_of(group)).instance_id();
    const auto r = cli({"--url", c.topology.url(), "step-down", group, "--as", leader}, &c.fleet);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_TRUE(contains(r.out, "released leader:{" + group + "}")) << r.describe();
    // The standby heard SPUBLISH on the group's shard: it leads well within the 10 s ttl.
    EXPECT_TRUE(lh::test::run_until(c.fleet.io, [&] { return c.holder(group) == standby; }, 5s)) << group;
    EXPECT_TRUE(lh::test::run_until(
        c.fleet.io, [&] { return has(group + "  released  by " + leader + " (release notice)"); }, 10s))
        << watch.out() << watch.err();
    EXPECT_TRUE(lh::test::run_until(c.fleet.io, [&] { return has(group + "  acquired  by " + standby); }, 10s))
        << watch.out() << watch.err();
  }
  watch.signal(SIGINT);
  const auto r = watch.wait(10s, [&] { lh::test::step(c.fleet.io); });
  EXPECT_EQ(r.exit_code, 0) << r.describe();
}

TEST(Cli, OnAClusterEvictDeletesTheLeaseOnItsShard) {
  OnACluster c;
  const std::string old = c.holder("e");
  const auto r = cli({"--url", c.topology.url(), "evict", "e", "--force", "--yes"}, &c.fleet);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "evicted leader:{e} held by " + old)) << r.describe();
  // Its holder finds the lease gone at its next renewal; someone leads again.
  EXPECT_TRUE(lh::test::run_until(c.fleet.io, [&] { return !c.holder("e").empty(); }, 30s));
}

#endif  // LEASEHOLD_CLI_BINARY

}  // namespace
}  // namespace integration_cli_test
