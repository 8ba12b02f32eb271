// Redis Cluster's error replies as a client reads them (MOVED, ASK, TRYAGAIN,
// CLUSTERDOWN in every endpoint form Redis writes) and the per-command
// budget: where each reply sends the command next, with ASKING or a map
// refresh or a backoff, and when the command gives up.

#include <leasehold/impl/cluster/redirect.hpp>

#include "contains.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <string_view>

namespace unit_cluster_redirect_test {
namespace {

namespace lh = leasehold;
using namespace lh::cluster::detail;
using namespace std::chrono_literals;
using Kind = ClusterError::Kind;
using Host = RedirectTarget::Host;
using Action = RedirectStep::Action;
using Clock = RedirectBudget::Clock;

const Clock::time_point t0{std::chrono::seconds(1000)};

RedirectTarget named(std::string host, std::uint16_t port) { return {Host::named, std::move(host), port}; }

ClusterNode node(std::string host, std::uint16_t port) { return {{}, std::move(host), port}; }

using leasehold::test::contains;

// The texts Redis 7.0 sends (clusterRedirectClient), as Reply::str holds them.
constexpr std::string_view try_again_text = "TRYAGAIN Multiple keys request during rehashing of slot";
constexpr std::string_view down_text = "CLUSTERDOWN The cluster is down";

// --- Reading the replies -------------------------------------------------------------

TEST(ClusterErrorReading, MovedWithAnIpv4Address) {
  const auto e = read_cluster_error("MOVED 12182 127.0.0.1:7002");
  EXPECT_EQ(e.kind, Kind::moved);
  EXPECT_EQ(e.slot, 12182);
  EXPECT_EQ(e.target, named("127.0.0.1", 7002));
}

TEST(ClusterErrorReading, AskWithAHostName) {
  const auto e = read_cluster_error("ASK 0 redis-0.redis.svc.cluster.local:6379");
  EXPECT_EQ(e.kind, Kind::ask);
  EXPECT_EQ(e.slot, 0);
  EXPECT_EQ(e.target, named("redis-0.redis.svc.cluster.local", 6379));
}

TEST(ClusterErrorReading, Ipv6AddressesAsRedisWritesThemWithoutBrackets) {
  const auto e = read_cluster_error("MOVED 16383 ::1:7000");
  EXPECT_EQ(e.kind, Kind::moved);
  EXPECT_EQ(e.slot, 16383);
  EXPECT_EQ(e.target, named("::1", 7000));
  EXPECT_EQ(e.target.to_string(), "[::1]:7000");
  EXPECT_EQ(read_cluster_error("ASK 5 2001:db8::7:6380").target, named("2001:db8::7", 6380));
  EXPECT_EQ(read_cluster_error("MOVED 5 fe80::1%eth0:7000").target, named("fe80::1%eth0", 7000));
}

TEST(ClusterErrorReading, Ipv6AddressesInBracketsToo) {
  const auto e = read_cluster_error("MOVED 3999 [::1]:7000");
  EXPECT_EQ(e.kind, Kind::moved);
  EXPECT_EQ(e.target, named("::1", 7000));
}

TEST(ClusterErrorReading, EmptyEndpointMeansTheNodeThatAnswered) {
  const auto e = read_cluster_error("MOVED 3999 :6380");
  EXPECT_EQ(e.kind, Kind::moved);
  EXPECT_EQ(e.target.kind, Host::same_node);
  EXPECT_EQ(e.target.port, 6380);
  EXPECT_EQ(e.target.to_string(), ":6380");
  EXPECT_EQ(e.target.resolve("10.0.0.5"), node("10.0.0.5", 6380));
  EXPECT_EQ(e.target.resolve(""), std::nullopt);
}

TEST(ClusterErrorReading, QuestionMarkEndpointIsUnknown) {
  const auto e = read_cluster_error("ASK 42 ?:7001");
  EXPECT_EQ(e.kind, Kind::ask);
  EXPECT_EQ(e.target.kind, Host::unknown);
  EXPECT_EQ(e.target.port, 7001);
  EXPECT_EQ(e.target.to_string(), "?:7001");
  EXPECT_EQ(e.target.resolve("10.0.0.5"), std::nullopt);
}

TEST(ClusterErrorReading, TryAgainAndEveryClusterDownForm) {
  EXPECT_EQ(read_cluster_error(try_again_text).kind, Kind::try_again);
  EXPECT_EQ(read_cluster_error("TRYAGAIN Slot is being trimmed").kind, Kind::try_again);
  EXPECT_EQ(read_cluster_error("TRYAGAIN").kind, Kind::try_again);
  EXPECT_EQ(read_cluster_error(down_text).kind, Kind::cluster_down);
  EXPECT_EQ(read_cluster_error("CLUSTERDOWN Hash slot not served").kind, Kind::cluster_down);
  EXPECT_EQ(read_cluster_error("CLUSTERDOWN The cluster is down and only accepts read commands").kind,
            Kind::cluster_down);
}

TEST(ClusterErrorReading, OtherErrorsAreNotTheClusters) {
  for (const std::string_view text :
       {"ERR unknown command 'FOO'", "CROSSSLOT Keys in request don't hash to the same slot",
        "NOSCRIPT No matching script. Please use EVAL.", "READONLY You can't write against a read only replica.",
        "LOADING Redis is loading the dataset in memory", "ERR MOVED 1 127.0.0.1:7000", "moved 1 127.0.0.1:7000",
        "MOVEDX 1 127.0.0.1:7000", "ASKING", "TRYAGAINX", "CLUSTERDOWNX", ""}) {
    EXPECT_EQ(read_cluster_error(text).kind, Kind::other) << text;
  }
}

TEST(ClusterErrorReading, MalformedRedirectionsAreMalformedNotOther) {
  for (const std::string_view text :
       {"MOVED", "MOVED ", "MOVED 12182", "MOVED 12182 ", "MOVED x 127.0.0.1:7000", "MOVED -1 127.0.0.1:7000",
        "MOVED 16384 127.0.0.1:7000", "MOVED 99999999999 127.0.0.1:7000", "MOVED 1 127.0.0.1",
        "MOVED 1 127.0.0.1:", "MOVED 1 127.0.0.1:0", "MOVED 1 127.0.0.1:65536", "MOVED 1 127.0.0.1:70x",
        "MOVED  1 127.0.0.1:7000", "MOVED 1  127.0.0.1:7000", "MOVED 1 127.0.0.1:7000 extra", "MOVED 1 [::1:7000",
        "MOVED 1 ::1]:7000", "MOVED 1 []:7000", "MOVED 1 [a]b]:7000", "ASK 1", "ASK 1 :"}) {
    EXPECT_EQ(read_cluster_error(text).kind, Kind::malformed) << text;
  }
}

TEST(ClusterErrorReading, KindNames) {
  EXPECT_EQ(to_string(Kind::moved), "moved");
  EXPECT_EQ(to_string(Kind::ask), "ask");
  EXPECT_EQ(to_string(Kind::try_again), "try_again");
  EXPECT_EQ(to_string(Kind::cluster_down), "cluster_down");
  EXPECT_EQ(to_string(Kind::malformed), "malformed");
  EXPECT_EQ(to_string(Kind::other), "other");
}

// --- The budget -----------------------------------------------------------------------

TEST(RedirectBudget, LimitsComeFromClusterOptions) {
  const lh::ClusterOptions options{.max_redirects = 3,
                                   .retry_backoff_min = 7ms,
                                   .retry_backoff_max = 70ms,
                                   .retry_timeout = 700ms};
  const auto limits = RedirectLimits::from(options);
  EXPECT_EQ(limits.max_redirects, 3);
  EXPECT_EQ(limits.backoff_min, 7ms);
  EXPECT_EQ(limits.backoff_max, 70ms);
  EXPECT_EQ(limits.retry_timeout, 700ms);
  const auto defaults = RedirectLimits::from(lh::ClusterOptions{});
  EXPECT_EQ(defaults.max_redirects, RedirectLimits{}.max_redirects);
  EXPECT_EQ(defaults.retry_timeout, RedirectLimits{}.retry_timeout);
}

TEST(RedirectBudget, OtherErrorsAreDelivered) {
  RedirectBudget budget({}, t0);
  const auto step = budget.on_error("NOSCRIPT No matching script. Please use EVAL.", "10.0.0.1", t0);
  EXPECT_EQ(step.action, Action::deliver);
  EXPECT_EQ(step.cause, Kind::other);
  EXPECT_FALSE(step.error);
  EXPECT_EQ(budget.redirects(), 0);
  EXPECT_EQ(budget.retries(), 0);
}

TEST(RedirectBudget, MovedRefreshesTheMapAndResendsToTheNamedNodeAtOnce) {
  RedirectBudget budget({}, t0);
  const auto step = budget.on_error("MOVED 12182 10.0.0.3:7002", "10.0.0.1", t0);
  EXPECT_EQ(step.action, Action::resend);
  EXPECT_EQ(step.cause, Kind::moved);
  EXPECT_EQ(step.slot, 12182);
  EXPECT_TRUE(step.refresh_map);
  EXPECT_FALSE(step.asking);
  EXPECT_EQ(step.node, node("10.0.0.3", 7002));
  EXPECT_EQ(step.delay, 0ms);
  EXPECT_EQ(budget.redirects(), 1);
}

TEST(RedirectBudget, MovedWithAnEmptyEndpointGoesToTheAnsweringHost) {
  RedirectBudget budget({}, t0);
  EXPECT_EQ(budget.on_error("MOVED 1 :7005", "10.0.0.1", t0).node, node("10.0.0.1", 7005));
}

TEST(RedirectBudget, MovedToAnUnknownEndpointResendsWhereTheRefreshedMapSays) {
  RedirectBudget budget({}, t0);
  const auto step = budget.on_error("MOVED 1 ?:7005", "10.0.0.1", t0);
  EXPECT_EQ(step.action, Action::resend);
  EXPECT_TRUE(step.refresh_map);
  EXPECT_EQ(step.node, std::nullopt);
}

TEST(RedirectBudget, AskSendsAskingToTheNamedNodeOnceWithoutAMapChange) {
  RedirectBudget budget({}, t0);
  const auto step = budget.on_error("ASK 12182 10.0.0.4:7003", "10.0.0.1", t0);
  EXPECT_EQ(step.action, Action::resend);
  EXPECT_EQ(step.cause, Kind::ask);
  EXPECT_EQ(step.slot, 12182);
  EXPECT_TRUE(step.asking);
  EXPECT_FALSE(step.refresh_map);
  EXPECT_EQ(step.node, node("10.0.0.4", 7003));
  EXPECT_EQ(step.delay, 0ms);
  EXPECT_EQ(budget.redirects(), 1);

  // The importing node, asked without ASKING or after the migration was
  // rolled back, sends the command back: a MOVED like any other.
  const auto back = budget.on_error("MOVED 12182 10.0.0.1:7000", "10.0.0.4", t0);
  EXPECT_TRUE(back.refresh_map);
  EXPECT_FALSE(back.asking);
  EXPECT_EQ(back.node, node("10.0.0.1", 7000));
  EXPECT_EQ(budget.redirects(), 2);
}

TEST(RedirectBudget, AskToAnUnknownEndpointRefreshesInstead) {
  RedirectBudget budget({}, t0);
  const auto step = budget.on_error("ASK 7 ?:7003", "10.0.0.1", t0);
  EXPECT_EQ(step.action, Action::resend);
  EXPECT_FALSE(step.asking);
  EXPECT_TRUE(step.refresh_map);
  EXPECT_EQ(step.node, std::nullopt);
}

TEST(RedirectBudget, GivesUpAfterMaxRedirects) {
  RedirectBudget budget(RedirectLimits{.max_redirects = 2}, t0);
  EXPECT_EQ(budget.on_error("MOVED 1 a:1", "x", t0).action, Action::resend);
  EXPECT_EQ(budget.on_error("ASK 1 b:2", "a", t0).action, Action::resend);
  const auto step = budget.on_error("MOVED 1 a:1", "b", t0);
  EXPECT_EQ(step.action, Action::give_up);
  EXPECT_EQ(step.cause, Kind::moved);
  EXPECT_EQ(step.error.code, lh::errc::server_error);
  EXPECT_TRUE(contains(step.error.detail, "after 2 redirections (max_redirects): MOVED 1 a:1")) << step.error.detail;
  EXPECT_EQ(budget.redirects(), 2);
}

TEST(RedirectBudget, OneRedirectAllowedMeansTheSecondGivesUp) {
  RedirectBudget budget(RedirectLimits{.max_redirects = 1}, t0);
  EXPECT_EQ(budget.on_error("ASK 1 b:2", "a", t0).action, Action::resend);
  EXPECT_EQ(budget.on_error("ASK 1 b:2", "a", t0).action, Action::give_up);
}

TEST(RedirectBudget, MalformedRedirectionGivesUpAtOnce) {
  RedirectBudget budget({}, t0);
  const auto step = budget.on_error("MOVED 99999 a:1", "x", t0);
  EXPECT_EQ(step.action, Action::give_up);
  EXPECT_EQ(step.cause, Kind::malformed);
  EXPECT_EQ(step.error.code, lh::errc::unexpected_reply);
  EXPECT_EQ(step.error.detail, "unreadable cluster redirection: MOVED 99999 a:1");
  EXPECT_EQ(budget.redirects(), 0);
}

TEST(RedirectBudget, TryAgainBacksOffDoublingUpToTheCap) {
  RedirectBudget budget(RedirectLimits{.backoff_min = 10ms, .backoff_max = 50ms, .retry_timeout = 10s}, t0);
  const std::chrono::milliseconds expected[] = {10ms, 20ms, 40ms, 50ms, 50ms};
  auto now = t0;
  for (const auto delay : expected) {
    const auto step = budget.on_error(try_again_text, "10.0.0.1", now);
    EXPECT_EQ(step.action, Action::resend);
    EXPECT_EQ(step.cause, Kind::try_again);
    EXPECT_EQ(step.delay, delay);
    EXPECT_FALSE(step.refresh_map);
    EXPECT_FALSE(step.asking);
    EXPECT_EQ(step.node, std::nullopt) << "the first send went where the map says; so does the retry";
    now += step.delay;
  }
  EXPECT_EQ(budget.retries(), 5);
  EXPECT_EQ(budget.redirects(), 0) << "retries are not redirections";
}

TEST(RedirectBudget, TryAgainAfterAskRetriesTheImportingNodeWithAskingAgain) {
  RedirectBudget budget({}, t0);
  budget.on_error("ASK 12182 10.0.0.4:7003", "10.0.0.1", t0);
  for (int i = 0; i < 3; ++i) {
    const auto step = budget.on_error(try_again_text, "10.0.0.4", t0 + std::chrono::milliseconds(i));
    EXPECT_EQ(step.action, Action::resend);
    EXPECT_TRUE(step.asking);
    EXPECT_EQ(step.node, node("10.0.0.4", 7003));
  }
  EXPECT_EQ(budget.redirects(), 1) << "one ASK, however often the importing node says TRYAGAIN";
}

TEST(RedirectBudget, TryAgainAfterMovedRetriesTheNewNode) {
  RedirectBudget budget({}, t0);
  budget.on_error("MOVED 12182 10.0.0.3:7002", "10.0.0.1", t0);
  const auto step = budget.on_error(try_again_text, "10.0.0.3", t0);
  EXPECT_EQ(step.node, node("10.0.0.3", 7002));
  EXPECT_FALSE(step.asking);
  EXPECT_FALSE(step.refresh_map);
}

TEST(RedirectBudget, ClusterDownBacksOffRefreshesAndRoutesByTheMap) {
  RedirectBudget budget(RedirectLimits{.backoff_min = 20ms, .backoff_max = 100ms}, t0);
  budget.on_error("ASK 1 10.0.0.4:7003", "10.0.0.1", t0);
  const auto step = budget.on_error("CLUSTERDOWN Hash slot not served", "10.0.0.4", t0);
  EXPECT_EQ(step.action, Action::resend);
  EXPECT_EQ(step.cause, Kind::cluster_down);
  EXPECT_EQ(step.delay, 20ms);
  EXPECT_TRUE(step.refresh_map);
  EXPECT_FALSE(step.asking);
  EXPECT_EQ(step.node, std::nullopt);
  // A TRYAGAIN after it goes where the map says too, and the backoff keeps growing.
  const auto again = budget.on_error(try_again_text, "10.0.0.2", t0 + 20ms);
  EXPECT_EQ(again.node, std::nullopt);
  EXPECT_FALSE(again.asking);
  EXPECT_EQ(again.delay, 40ms);
}

TEST(RedirectBudget, RetriesStopAtTheDeadlineCountedFromTheFirstSend) {
  RedirectBudget budget(RedirectLimits{.backoff_min = 100ms, .backoff_max = 400ms, .retry_timeout = 250ms}, t0);
  EXPECT_EQ(budget.retry_deadline(), t0 + 250ms);
  // The first reply came 30 ms after the send: 100 ms fits.
  const auto first = budget.on_error(down_text, "a", t0 + 30ms);
  EXPECT_EQ(first.delay, 100ms);
  // 200 ms would end past the deadline: cut to end there.
  const auto second = budget.on_error(down_text, "a", t0 + 140ms);
  EXPECT_EQ(second.action, Action::resend);
  EXPECT_EQ(second.delay, 110ms);
  // At the deadline: give up with the last reply.
  const auto last = budget.on_error(down_text, "a", t0 + 250ms);
  EXPECT_EQ(last.action, Action::give_up);
  EXPECT_EQ(last.cause, Kind::cluster_down);
  EXPECT_EQ(last.error.code, lh::errc::server_error);
  EXPECT_EQ(last.error.detail,
            "still CLUSTERDOWN after 2 retries within 250 ms (retry_timeout): CLUSTERDOWN The cluster is down");
  EXPECT_EQ(budget.retries(), 2);
}

TEST(RedirectBudget, RetryUntilExtendsTheDeadlineButNeverShortensIt) {
  RedirectBudget budget(RedirectLimits{.backoff_min = 100ms, .backoff_max = 400ms, .retry_timeout = 250ms}, t0);
  budget.retry_until(t0 + 100ms);  // earlier than retry_timeout: no change
  EXPECT_EQ(budget.retry_deadline(), t0 + 250ms);
  budget.retry_until(t0 + 2s);  // a lease that lasts longer
  EXPECT_EQ(budget.retry_deadline(), t0 + 2s);
  // Past retry_timeout it still retries, at the capped backoff...
  const auto later = budget.on_error(try_again_text, "a", t0 + 1s);
  EXPECT_EQ(later.action, Action::resend);
  EXPECT_EQ(later.delay, 100ms);
  // ... until the extended deadline, and says which bound ended it.
  const auto last = budget.on_error(try_again_text, "a", t0 + 2s);
  EXPECT_EQ(last.action, Action::give_up);
  EXPECT_TRUE(contains(last.error.detail, "after 1 retries within 2000 ms (retry_until)")) << last.error.detail;
}

TEST(RedirectBudget, ZeroRetryTimeoutGivesUpAtTheFirstTryAgain) {
  RedirectBudget budget(RedirectLimits{.retry_timeout = 0ms}, t0);
  const auto step = budget.on_error(try_again_text, "a", t0);
  EXPECT_EQ(step.action, Action::give_up);
  EXPECT_EQ(step.cause, Kind::try_again);
  EXPECT_TRUE(contains(step.error.detail, "still TRYAGAIN after 0 retries")) << step.error.detail;
  // Redirections do not depend on the deadline.
  EXPECT_EQ(budget.on_error("MOVED 1 a:1", "b", t0 + 1s).action, Action::resend);
}

TEST(RedirectBudget, RedirectionsAndRetriesMixWithinBothBounds) {
  RedirectBudget budget(RedirectLimits{.max_redirects = 2, .backoff_min = 10ms, .retry_timeout = 1s}, t0);
  // A migration: ASK, the importing node says TRYAGAIN twice, then the slot
  // is final and the old master's MOVED points at the new one.
  EXPECT_EQ(budget.on_error("ASK 9 n2:7001", "n1", t0).action, Action::resend);
  EXPECT_EQ(budget.on_error(try_again_text, "n2", t0 + 1ms).delay, 10ms);
  EXPECT_EQ(budget.on_error(try_again_text, "n2", t0 + 12ms).delay, 20ms);
  const auto moved = budget.on_error("MOVED 9 n2:7001", "n1", t0 + 33ms);
  EXPECT_EQ(moved.action, Action::resend);
  EXPECT_FALSE(moved.asking);
  EXPECT_EQ(budget.redirects(), 2);
  EXPECT_EQ(budget.retries(), 2);
  EXPECT_EQ(budget.on_error("MOVED 9 n1:7000", "n2", t0 + 34ms).action, Action::give_up);
}

}  // namespace
}  // namespace unit_cluster_redirect_test
