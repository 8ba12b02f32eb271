// Runs two fenced_postgres instances against a harness redis-server and a
// private PostgreSQL cluster. The leader is frozen (SIGSTOP) between its
// leadership check and a write, past its lease; the standby takes over and
// writes with a higher token; the old leader resumes and sends its write with
// the old token: the database rejects it, and the ledger never holds a row
// with a token below one already written.

#include "../example_test_util.hpp"
#include "support/postgres_server.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>
#include <signal.h>
#include <sys/wait.h>

using namespace example_test;
using namespace std::chrono_literals;

namespace {

// The state letter of /proc/<pid>/stat: 'T' once the process is stopped.
char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : '?';
}

std::int64_t number(const std::string& line, const std::string& key) { return std::stoll(field(line, key)); }

bool pg_missing() { return leasehold::test::PostgresServer::find_bin_dir().empty(); }
constexpr const char* pg_missing_message =
    "PostgreSQL server binaries not found (no /usr/lib/postgresql/<version>/bin with initdb, postgres and psql; "
    "install the Debian package postgresql, or set LEASEHOLD_POSTGRES_BIN)";

}  // namespace

// The harness itself: a working server, never run as root, gone after stop().
TEST(PostgresServerHarness, AnswersQueriesAndLeavesNoProcessBehind) {
  if (pg_missing()) GTEST_SKIP() << pg_missing_message;
  leasehold::test::PostgresServer pg;
  EXPECT_EQ(pg.query("SELECT 40 + 2"), std::vector<std::string>{"42"});
  const pid_t pid = pg.pid();
  ASSERT_GT(pid, 0);
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string uid_line;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Uid:", 0) == 0) uid_line = line;
  }
  std::istringstream uids(uid_line.substr(4));
  uid_t real = 0;
  uids >> real;
  EXPECT_NE(real, 0u) << "postgres runs as root";
  pg.stop();
  EXPECT_EQ(pg.pid(), -1);
  EXPECT_NE(::kill(pid, 0), 0) << "the postmaster outlived stop()";
}

TEST(FencedPostgresExample, TheDatabaseRejectsTheWriteOfAFrozenLeaderThatLostItsLease) {
  if (pg_missing()) GTEST_SKIP() << pg_missing_message;
  leasehold::test::PostgresServer pg;
  leasehold::test::RedisServer redis;
  auto run = [&](const std::string& id) {
    return start(redis, id, {"--url", redis.url(), "--pg", pg.conninfo(), "--id", id});
  };
  leasehold::test::Process a = run("fenced-a");
  leasehold::test::Process b = run("fenced-b");
  auto wrote = [](const leasehold::test::Process& p) { return events(p, "wrote"); };
  ASSERT_TRUE(wait_for([&] { return wrote(a).size() + wrote(b).size() >= 3; }, 30s)) << dump(a) << dump(b);
  const bool a_leads = !wrote(a).empty();
  auto& leader = a_leads ? a : b;
  auto& standby = a_leads ? b : a;
  ASSERT_TRUE(wrote(standby).empty()) << "only the leader writes\n" << dump(standby);

  // Freeze the leader between its leadership check and its next write.
  ASSERT_TRUE(leader.signal(SIGUSR1));
  ASSERT_TRUE(wait_for([&] { return !events(leader, "stall").empty(); }, 20s)) << dump(leader);
  const std::string stall = events(leader, "stall").front();
  const std::int64_t stale_token = number(stall, "token");
  const std::string stale_seq = field(stall, "seq");
  ASSERT_TRUE(wait_for([&] { return process_state(leader.pid()) == 'T'; }, 10s)) << "not stopped";

  // Its lease expires; the standby takes over with a higher token and writes.
  std::int64_t new_token = 0;
  ASSERT_TRUE(wait_for([&] {
    for (const auto& l : wrote(standby)) new_token = number(l, "token");
    return new_token != 0;
  }, 30s)) << dump(standby);
  EXPECT_GT(new_token, stale_token);

  // Resumed, the old leader sends the write it had prepared: rejected.
  leader.cont();
  ASSERT_TRUE(wait_for([&] { return !events(leader, "rejected").empty(); }, 20s)) << dump(leader);
  const std::string rejected = events(leader, "rejected").front();
  EXPECT_EQ(field(rejected, "seq"), stale_seq) << rejected;
  EXPECT_EQ(number(rejected, "token"), stale_token) << rejected;
  EXPECT_GE(number(rejected, "fence"), new_token) << rejected;
  EXPECT_NE(rejected.find("(stale token " + std::to_string(stale_token) + " < "), std::string::npos) << rejected;
  // The old leader noticed its term ended (and campaigns again as a standby).
  ASSERT_TRUE(wait_for([&] { return !events(leader, "term_ended").empty(); }, 20s)) << dump(leader);

  for (auto* p : {&a, &b}) {
    ASSERT_TRUE(p->signal(SIGTERM));
    const auto status = p->wait_exit(10s);
    ASSERT_TRUE(status) << "no exit after SIGTERM\n" << dump(*p);
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << leasehold::test::describe_wait_status(*status);
  }

  // The table: tokens never decrease in row order; the stale write is absent;
  // every "wrote" line is a row and every row was reported.
  const auto rows = pg.query("SELECT token || ' ' || instance || ' ' || seq FROM ledger ORDER BY id");
  std::vector<std::string> reported;
  for (auto* p : {&a, &b}) {
    for (const auto& l : wrote(*p)) reported.push_back(field(l, "token") + " " + field(l, "instance") + " " + field(l, "seq"));
  }
  std::sort(reported.begin(), reported.end());
  auto stored = rows;
  std::sort(stored.begin(), stored.end());
  EXPECT_EQ(stored, reported) << "the ledger and the logs disagree";
  std::int64_t highest = 0;
  for (const auto& row : rows) {
    const std::int64_t token = std::stoll(row.substr(0, row.find(' ')));
    EXPECT_GE(token, highest) << "a lower token was written after a higher one: " << row;
    highest = std::max(highest, token);
    EXPECT_NE(row, std::to_string(stale_token) + " " + (a_leads ? "fenced-a" : "fenced-b") + " " + stale_seq);
  }
  EXPECT_EQ(pg.query("SELECT token FROM fence WHERE resource = 'ledger'"),
            std::vector<std::string>{std::to_string(highest)});
}
