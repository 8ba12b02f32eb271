// Runs two coroutine_worker instances: the leader processes jobs; SIGTERM
// pauses its job loop and releases the lease, so the other resumes at once.

#include "../example_test_util.hpp"

#include <gtest/gtest.h>

#include <csignal>
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
