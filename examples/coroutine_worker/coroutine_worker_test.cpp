// Runs two coroutine_worker instances: the leader processes jobs; SIGTERM
// pauses its job loop and releases the lease, so the other resumes at once.

#include "../example_test_util.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <thread>
#include <sys/wait.h>

using namespace example_test;
using namespace std::chrono_literals;

TEST(CoroutineWorkerExample, JobsMoveToTheStandbyWhenTheLeaderIsSignalled) {
  leasehold::test::RedisServer server;
  leasehold::test::Process a = start(server, "a", {"--url", server.url(), "--id", "worker-a"});
  leasehold::test::Process b = start(server, "b", {"--url", server.url(), "--id", "worker-b"});
  ASSERT_TRUE(wait_for([&] { return events(a, "job").size() + events(b, "job").size() >= 3; }, 10s))
      << dump(a) << dump(b);
  const bool a_leads = !events(a, "job").empty();
  auto& leader = a_leads ? a : b;
  auto& standby = a_leads ? b : a;
  EXPECT_TRUE(events(standby, "job").empty());
  EXPECT_EQ(events(leader, "leading").size(), 1u);

  const auto signalled_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(leader.signal(SIGTERM));
  auto status = leader.wait_exit(5s);
  ASSERT_TRUE(status) << dump(leader);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << leasehold::test::describe_wait_status(*status);
  EXPECT_EQ(events(leader, "paused").size(), 1u) << dump(leader);
  EXPECT_EQ(events(leader, "stopped").size(), 1u);
  ASSERT_TRUE(wait_for([&] { return !events(standby, "job").empty(); }, 5s)) << dump(standby);
  EXPECT_LT(std::chrono::steady_clock::now() - signalled_at, 1500ms) << "the lease was released, not left to expire";
  const auto token_before = std::stoll(field(events(leader, "job").back(), "token"));
  EXPECT_GT(std::stoll(field(events(standby, "job").front(), "token")), token_before);

  ASSERT_TRUE(standby.signal(SIGINT));
  status = standby.wait_exit(5s);
  ASSERT_TRUE(status) << dump(standby);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  EXPECT_FALSE(server.admin().get("leader:worker").has_value());
}

namespace {

struct Pair {
  leasehold::test::Process* leader;
  leasehold::test::Process* standby;
};

// Once one of the two works, which one leads.
Pair leader_first(leasehold::test::Process& a, leasehold::test::Process& b) {
  EXPECT_TRUE(wait_for([&] { return !events(a, "job").empty() || !events(b, "job").empty(); }, 10s))
      << dump(a) << dump(b);
  const bool a_leads = !events(a, "job").empty();
  return a_leads ? Pair{&a, &b} : Pair{&b, &a};
}

// A worker whose job loop takes 300 ms to wind down after cancellation.
std::vector<std::string> winding_args(const leasehold::test::RedisServer& server, const std::string& id) {
  return {"--url", server.url(), "--id", id, "--wind-down-ms", "300"};
}

long long at(const std::string& line) { return std::stoll(field(line, "at")); }

}  // namespace

// Drain before release: SIGUSR1 makes the leader step down; its job loop is
// cancelled and takes 300 ms to wind down, and only then is the lease
// released. The standby's work starts after the leader's ended (steady_clock
// stamps from both processes).
TEST(CoroutineWorkerExample, AHandOverWaitsForTheJobLoopToWindDownBeforeTheStandbyStarts) {
  leasehold::test::RedisServer server;
  leasehold::test::Process a = start(server, "a", winding_args(server, "worker-a"));
  leasehold::test::Process b = start(server, "b", winding_args(server, "worker-b"));
  auto [leader, standby] = leader_first(a, b);
  ASSERT_TRUE(leader->signal(SIGUSR1));
  ASSERT_TRUE(wait_for([&] { return !events(*standby, "working").empty(); }, 10s)) << dump(*leader) << dump(*standby);
  ASSERT_EQ(events(*leader, "paused").size(), 1u) << dump(*leader);
  EXPECT_EQ(events(*leader, "winding_down").size(), 1u);
  const long long leader_ended = at(events(*leader, "paused").front());
  const long long standby_began = at(events(*standby, "working").front());
  EXPECT_GT(standby_began, leader_ended) << "the standby worked while the leader's job loop still wound down";
  EXPECT_GT(std::stoll(field(events(*standby, "working").front(), "token")),
            std::stoll(field(events(*leader, "working").front(), "token")));
  for (auto* p : {leader, standby}) {
    ASSERT_TRUE(p->signal(SIGTERM));
    ASSERT_TRUE(p->wait_exit(10s)) << dump(*p);
  }
}

// A leader killed while its work winds down never released the lease: the
// standby takes over when it expires (within a ttl, 2 s here), not before.
TEST(CoroutineWorkerExample, ALeaderKilledWhileItsWorkWindsDownIsTakenOverAfterItsLeaseExpires) {
  leasehold::test::RedisServer server;
  leasehold::test::Process a = start(server, "a", winding_args(server, "worker-a"));
  leasehold::test::Process b = start(server, "b", winding_args(server, "worker-b"));
  auto [leader, standby] = leader_first(a, b);
  ASSERT_TRUE(leader->signal(SIGUSR1));
  ASSERT_TRUE(wait_for([&] { return !events(*leader, "winding_down").empty(); }, 10s)) << dump(*leader);
  const auto killed_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(leader->signal(SIGKILL));
  ASSERT_TRUE(leader->wait_exit(10s));
  ASSERT_TRUE(wait_for([&] { return !events(*standby, "working").empty(); }, 15s)) << dump(*standby);
  EXPECT_TRUE(events(*leader, "paused").empty()) << "killed before its work ended";
  const long long killed_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(killed_at.time_since_epoch()).count();
  EXPECT_GT(at(events(*standby, "working").front()), killed_ns) << "the lease was not released during the drain";
  ASSERT_TRUE(standby->signal(SIGTERM));
  ASSERT_TRUE(standby->wait_exit(10s)) << dump(*standby);
}

// A rolling deploy with priorities: a worker started with a higher priority
// than the leader's takes the work over by itself (no signal), the leader's
// job loop winding down first; the old worker then stands by and does not
// take it back.
TEST(CoroutineWorkerExample, AWorkerOfHigherPriorityTakesTheWorkOverAfterTheLeadersWindDown) {
  leasehold::test::RedisServer server;
  auto args = [&](const std::string& id, const std::string& priority) {
    auto a = winding_args(server, id);
    a.insert(a.end(), {"--priority", priority});
    return a;
  };
  leasehold::test::Process old_worker = start(server, "old", args("worker-v1", "1"));
  ASSERT_TRUE(wait_for([&] { return !events(old_worker, "job").empty(); }, 10s)) << dump(old_worker);
  leasehold::test::Process new_worker = start(server, "new", args("worker-v2", "2"));
  ASSERT_TRUE(wait_for([&] { return !events(new_worker, "working").empty(); }, 10s))
      << dump(old_worker) << dump(new_worker);
  ASSERT_EQ(events(old_worker, "paused").size(), 1u) << dump(old_worker);
  EXPECT_LE(at(events(old_worker, "paused").front()), at(events(new_worker, "working").front()))
      << "the new worker started before the old one's job loop wound down";
  std::this_thread::sleep_for(2s);  // three heartbeats: no hand-back
  EXPECT_EQ(events(new_worker, "leading").size(), 1u) << dump(new_worker);
  EXPECT_EQ(events(old_worker, "leading").size(), 1u) << dump(old_worker);
}
