// Runs two standalone instances: only the leader sends reports; SIGTERM stops
// it gracefully (exit 0), releasing the lease so that the other leads at once.

#include "../example_test_util.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <sys/wait.h>

using namespace example_test;
using namespace std::chrono_literals;

TEST(StandaloneExample, OnlyTheLeaderReportsAndStopReleasesTheLease) {
  leasehold::test::RedisServer server;
  leasehold::test::Process a = start(server, "a", {"--url", server.url(), "--id", "standalone-a"});
  leasehold::test::Process b = start(server, "b", {"--url", server.url(), "--id", "standalone-b"});
  ASSERT_TRUE(wait_for([&] { return events(a, "report").size() + events(b, "report").size() >= 3; }, 10s))
      << dump(a) << dump(b);
  const bool a_leads = !events(a, "report").empty();
  auto& leader = a_leads ? a : b;
  auto& standby = a_leads ? b : a;
  EXPECT_TRUE(events(standby, "report").empty());

  const auto stopped_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(leader.signal(SIGTERM));
  auto status = leader.wait_exit(5s);
  ASSERT_TRUE(status) << dump(leader);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << leasehold::test::describe_wait_status(*status);
  EXPECT_EQ(events(leader, "stopped").size(), 1u);
  // Released, not expired: the standby leads well within the 2 s ttl.
  ASSERT_TRUE(wait_for([&] { return !events(standby, "report").empty(); }, 5s)) << dump(standby);
  EXPECT_LT(std::chrono::steady_clock::now() - stopped_at, 1500ms);

  ASSERT_TRUE(standby.signal(SIGINT));
  status = standby.wait_exit(5s);
  ASSERT_TRUE(status) << dump(standby);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  EXPECT_FALSE(server.admin().get("leader:reports").has_value());
}
