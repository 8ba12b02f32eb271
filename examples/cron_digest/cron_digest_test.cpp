// Runs two cron_digest instances against a harness redis-server: the leader
// sends a digest every tick, a SIGUSR1 hands over to the other, SIGTERM stops
// both cleanly; the logs and the Redis list agree, with no tick sent twice,
// and the tick record in Redis never lags the last tick sent.

#include "../example_test_util.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <set>
#include <sys/wait.h>

using namespace example_test;
using namespace std::chrono_literals;

TEST(CronDigestExample, SendsEachTickOnceAcrossAHandOverAndStopsCleanly) {
  leasehold::test::RedisServer server;
  auto run = [&](const std::string& id) {
    return start(server, id, {"--url", server.url(), "--id", id, "--interval-ms", "200", "--ttl-ms", "1000",
                              "--grace-ms", "500"});
  };
  leasehold::test::Process a = run("digest-a");
  leasehold::test::Process b = run("digest-b");
  auto sent = [&] { return events(a, "sent").size() + events(b, "sent").size(); };
  ASSERT_TRUE(wait_for([&] { return sent() >= 5; }, 10s)) << dump(a) << dump(b);

  const bool a_leads = !events(a, "sent").empty();
  auto& leader = a_leads ? a : b;
  auto& standby = a_leads ? b : a;
  ASSERT_TRUE(events(standby, "sent").empty()) << "only the leader sends";
  ASSERT_TRUE(leader.signal(SIGUSR1));
  ASSERT_TRUE(wait_for([&] { return events(standby, "sent").size() >= 3; }, 5s)) << dump(standby);
  EXPECT_EQ(events(leader, "step_down").size(), 1u);

  for (auto* p : {&a, &b}) {
    ASSERT_TRUE(p->signal(SIGTERM));
    auto status = p->wait_exit(5s);
    ASSERT_TRUE(status) << "no exit after SIGTERM\n" << dump(*p);
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << leasehold::test::describe_wait_status(*status);
    EXPECT_EQ(events(*p, "stopped").size(), 1u);
  }

  std::multiset<std::string> logged;
  for (auto* p : {&a, &b}) {
    for (auto& l : events(*p, "sent")) logged.insert(field(l, "tick") + " " + field(l, "instance"));
  }
  std::set<std::string> ticks;
  for (auto& entry : logged) EXPECT_TRUE(ticks.insert(entry.substr(0, entry.find(' '))).second) << "sent twice: " << entry;

  auto admin = server.admin();
  auto list = admin.call({"LRANGE", "digest:sent", "0", "-1"});
  std::multiset<std::string> in_redis;
  for (auto& e : list.elements) in_redis.insert(e.str);
  EXPECT_EQ(in_redis, logged) << "the Redis list and the logs disagree";
  // The record holds the last tick claimed. A stop that lands between a claim
  // and its send leaves a later tick claimed and never sent (at most once), so
  // the record is the last tick sent or a later tick on the grid, before now.
  const long long recorded = std::stoll(admin.call({"HGET", "leader:digest:ticks", "every 200ms"}).str);
  const long long last_sent = std::stoll(*ticks.rbegin());
  const long long now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  EXPECT_GE(recorded, last_sent);
  EXPECT_EQ(recorded % 200, 0) << recorded;
  EXPECT_LE(recorded, now_ms);
  EXPECT_FALSE(admin.get("leader:digest").has_value()) << "the lease was released on stop";
}
