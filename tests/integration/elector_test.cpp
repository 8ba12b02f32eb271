// The elector against real redis-server processes: one test per row of the
// failure table in DESIGN.md, plus the public contract around them.

#include <leasehold/leasehold.hpp>

#include "support/elector_fixture.hpp"
#include "support/fault_proxy.hpp"
#include "support/node_probe.hpp"
#include "support/redis_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <thread>

namespace integration_elector_test {
namespace {

namespace lh = leasehold;
using lh::test::Fleet;
using lh::test::fast_options;
using lh::test::run_until;
using namespace std::chrono_literals;

std::string key(const std::string& group = "default") { return "leader:" + group; }

TEST(Elector, ExactlyOneLeaderAndGracefulStepDownHandsOverAtOnce) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  for (int i = 0; i < 3; ++i) fleet.add();
  auto first = fleet.wait_single_leader();
  ASSERT_TRUE(first);
  ASSERT_TRUE(fleet.run_checking_single_leader(500ms));
  auto admin = server.admin();
  EXPECT_EQ(admin.get(key()), fleet.at(*first).instance_id());

  bool stepped = false;
  fleet.at(*first).step_down("default", [&](lh::error_code ec) {
    EXPECT_FALSE(ec) << ec.message();
    stepped = true;
  });
  // Far sooner than ttl (1.5 s) or a poll: the release notice wakes a standby.
  ASSERT_TRUE(run_until(fleet.io, [&] {
    auto l = fleet.leaders();
    return stepped && l.size() == 1 && l[0] != *first;
  }, 1200ms)) << "no standby took over within 1.2 s of the step-down";
  const auto second = fleet.leaders().front();
  EXPECT_EQ(admin.get(key()), fleet.at(second).instance_id());
  // Events are posted: is_leader() can be true before the callback ran.
  ASSERT_TRUE(run_until(fleet.io, [&] { return !fleet.events(second).elected.empty(); }));
  EXPECT_GT(fleet.events(second).elected.back().token, fleet.events(*first).elected.back().token)
      << "fencing tokens strictly increase across terms";
  ASSERT_TRUE(run_until(fleet.io, [&] { return !fleet.events(*first).revoked.empty(); }));
  EXPECT_EQ(fleet.events(*first).revoked.back().reason, lh::RevokeReason::stepped_down);
  // The hold-off keeps the old leader from winning the group straight back.
  ASSERT_TRUE(fleet.run_checking_single_leader(200ms));
  EXPECT_FALSE(fleet.at(*first).is_leader());
}

TEST(Elector, ReleaseNoticesUseOnePatternPerPrefixWithItsGlobCharactersEscaped) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  auto options = fast_options();
  options.key_prefix = "app[1]*:";
  options.ttl = 20s;             // neither expiry nor polling can explain
  options.empty_restart_guard = false;  // a new group would first wait out this ttl
  options.retry_interval = 10s;  // a hand-over within the bound below
  fleet.add(options);
  fleet.add(options);
  const auto first = fleet.wait_single_leader();
  ASSERT_TRUE(first);
  auto admin = server.admin();
  ASSERT_TRUE(run_until(fleet.io, [&] {
    const auto n = admin.call({"PUBSUB", "NUMPAT"});
    return n.is_integer() && n.integer == 1;  // unique patterns: both electors share it
  })) << "one pattern per prefix, not a channel per group";
  EXPECT_EQ(admin.call({"PUBSUB", "NUMSUB", "app[1]*:default:released"}).elements.at(1).integer, 0);

  // An unescaped pattern would match this sibling prefix's channel (PUBLISH
  // would count two receivers); a notice naming the leader would demote it.
  const std::string leader_id = fleet.at(*first).instance_id();
  EXPECT_EQ(admin.call({"PUBLISH", "app1x:default:released", leader_id}).integer, 0);
  ASSERT_TRUE(fleet.run_checking_single_leader(500ms));
  EXPECT_TRUE(fleet.at(*first).is_leader());
  EXPECT_TRUE(fleet.events(*first).revoked.empty());

  // Its own prefix's notice, through the escaped pattern, hands over at once.
  bool stepped = false;
  fleet.at(*first).step_down("default", [&](lh::error_code ec) { stepped = !ec; });
  ASSERT_TRUE(run_until(fleet.io, [&] {
    const auto l = fleet.leaders();
    return stepped && l.size() == 1 && l[0] != *first;
  }, 5s)) << "the release notice did not reach the standby";
  EXPECT_EQ(admin.get("app[1]*:default"), fleet.at(fleet.leaders().front()).instance_id());
}

// A step-down whose release never gets an answer still ends the term here,
// but its caller learns that the lease may still stand (until it expires).
TEST(Elector, StepDownWhoseReleaseFailsReportsTheFailure) {
  lh::test::RedisServer server;
  lh::test::FaultProxy proxy(server.port());
  auto redis = proxy.options_for(server.options());
  redis.command_timeout = 300ms;
  Fleet fleet(redis);
  auto options = fast_options("stepping");
  options.ttl = 10000ms;
  options.empty_restart_guard = false;  // a new group would first wait out this ttl
  auto& e = fleet.add(options);
  ASSERT_TRUE(fleet.wait_single_leader());
  proxy.blackhole();  // the release goes nowhere, and no answer comes back
  std::optional<lh::error_code> result;
  e.step_down("default", [&](lh::error_code ec) { result = ec; });
  ASSERT_TRUE(run_until(fleet.io, [&] { return result.has_value(); }, 10s));
  EXPECT_EQ(*result, lh::errc::timeout) << result->message();
  EXPECT_FALSE(e.is_leader());
  EXPECT_EQ(server.admin().get(key()), "stepping") << "the release never reached Redis";
  proxy.forward();
}

TEST(Elector, KilledLeadersLeaseExpiresAndAStandbyTakesOver) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  fleet.add();
  fleet.add();
  auto leader = fleet.wait_single_leader();
  ASSERT_TRUE(leader);
  const std::string dead_id = fleet.at(*leader).instance_id();
  fleet.crash(*leader);  // no release: the key stays until its TTL runs out
  auto admin = server.admin();
  EXPECT_EQ(admin.get(key()), dead_id);
  const std::size_t standby = 1 - *leader;
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.at(standby).is_leader(); }, 5s));
  EXPECT_EQ(admin.get(key()), fleet.at(standby).instance_id());
}

TEST(Elector, StalledThreadWakesWithIsLeaderFalseAndNeverTwoConfirmedLeaders) {
  lh::test::RedisServer server;
  auto options = fast_options("stalled");
  lh::Elector stalled(server.options(), options);  // standalone: its own I/O thread
  stalled.start();
  const auto start = std::chrono::steady_clock::now();
  while (!stalled.is_leader() && std::chrono::steady_clock::now() - start < 10s) std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(stalled.is_leader());

  Fleet fleet(server);
  fleet.add(fast_options("standby"));
  lh::test::run_for(fleet.io, 200ms);

  // Block the elector's thread for twice the ttl.
  std::atomic<bool> released{false};
  boost::asio::post(stalled.get_executor(), [&] {
    while (!released.load()) std::this_thread::sleep_for(1ms);
  });
  bool overlap = false;
  const auto stall_start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - stall_start < 3s) {
    lh::test::step(fleet.io);
    if (stalled.is_leader() && fleet.at(0).is_leader()) overlap = true;
  }
  EXPECT_FALSE(stalled.is_leader()) << "the deadline passed during the stall";
  EXPECT_TRUE(fleet.at(0).is_leader()) << "the standby takes the expired lease";
  released = true;
  // Waking up must not bring back a false claim.
  const auto wake = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - wake < 1s) {
    lh::test::step(fleet.io);
    if (stalled.is_leader() && fleet.at(0).is_leader()) overlap = true;
  }
  EXPECT_FALSE(overlap) << "two instances claimed the same group at the same instant";
  EXPECT_FALSE(stalled.is_leader());
}

TEST(Elector, RenewalTimeoutDemotesAndReclaimsWithANewTokenAfterResume) {
  lh::test::RedisServer server;
  auto redis = server.options();
  redis.command_timeout = 300ms;
  Fleet fleet(redis);
  auto options = fast_options();
  options.ttl = 4000ms;
  options.retry_interval = 200ms;
  auto& e = fleet.add(options);
  ASSERT_TRUE(fleet.wait_single_leader());
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).elected.size() == 1; }));
  const auto token = fleet.events(0).elected.back().token;

  server.pause();
  ASSERT_TRUE(run_until(fleet.io, [&] { return !e.is_leader(); }, 5s));
  ASSERT_TRUE(run_until(fleet.io, [&] { return !fleet.events(0).revoked.empty(); }));
  const auto reason = fleet.events(0).revoked.back().reason;
  EXPECT_TRUE(reason == lh::RevokeReason::timeout) << lh::to_string(reason);
  std::this_thread::sleep_for(300ms);
  server.resume();
  ASSERT_TRUE(run_until(fleet.io, [&] { return e.is_leader() && fleet.events(0).elected.size() == 2; }, 5s));
  // The re-claim starts a new term: its token is greater than every earlier one.
  EXPECT_GT(fleet.events(0).elected.back().token, token) << "a re-claim is a new term with a new token";
  EXPECT_EQ(server.admin().get(key() + ":token"), std::to_string(fleet.events(0).elected.back().token));
}

TEST(Elector, RedisDownMeansNobodyLeadsAndLeadershipReturnsAfterRestart) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  fleet.add();
  fleet.add();
  ASSERT_TRUE(fleet.wait_single_leader());
  server.kill();
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.leaders().empty(); }, 5s));
  lh::test::run_for(fleet.io, 500ms);
  EXPECT_TRUE(fleet.leaders().empty()) << "nobody leads while Redis is down";
  server.restart();  // empty: a new election
  auto leader = fleet.wait_single_leader("default", 15s);
  ASSERT_TRUE(leader);
  EXPECT_TRUE(fleet.run_checking_single_leader(1s));
  EXPECT_EQ(server.admin().get(key()), fleet.at(*leader).instance_id());
}

TEST(Elector, KeyHeldByAForeignIdIsNeverTouched) {
  lh::test::RedisServer server;
  auto admin = server.admin();
  admin.call({"SET", key(), "someone-else"});  // no TTL: held for good
  Fleet fleet(server);
  fleet.add();
  lh::test::run_for(fleet.io, 2s);
  EXPECT_TRUE(fleet.leaders().empty());
  EXPECT_EQ(admin.get(key()), "someone-else");
  EXPECT_EQ(admin.pttl(key()), -1) << "the foreign key's TTL must not be changed";
  ASSERT_FALSE(fleet.events(0).leader_changed.empty());
  EXPECT_EQ(fleet.events(0).leader_changed.back().holder, "someone-else");

  // Once the foreign holder lets go (here: a short TTL), the elector leads.
  admin.call({"PEXPIRE", key(), "300"});
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.at(0).is_leader(); }, 5s));
}

TEST(Elector, KeyDeletedOrOverwrittenByHandDemotesTheHolderOnItsNextRenewal) {
  lh::test::RedisServer server;
  auto admin = server.admin();
  Fleet fleet(server);
  auto& e = fleet.add();
  ASSERT_TRUE(fleet.wait_single_leader());
  const auto first_token = fleet.events(0).elected.back().token;

  admin.call({"SET", key(), "intruder", "PX", "600000"});
  ASSERT_TRUE(run_until(fleet.io, [&] { return !fleet.events(0).revoked.empty(); }, 5s));
  EXPECT_EQ(fleet.events(0).revoked.back().reason, lh::RevokeReason::renew_refused);
  lh::test::run_for(fleet.io, 700ms);
  EXPECT_FALSE(e.is_leader());
  EXPECT_EQ(admin.get(key()), "intruder") << "the intruder's key is foreign now: never touched";

  admin.call({"DEL", key()});
  ASSERT_TRUE(fleet.wait_leading(0, "default", 5s));
  EXPECT_GT(fleet.events(0).elected.back().token, first_token);

  admin.call({"DEL", key()});
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).revoked.size() == 2; }, 5s));
  EXPECT_EQ(fleet.events(0).revoked.back().reason, lh::RevokeReason::renew_refused);
}

TEST(Elector, UnderOomAnOwnLeaseIsReclaimedWhileAFreshAcquireFailsLoudly) {
  lh::test::RedisServer server;
  auto admin = server.admin();
  Fleet fleet(server);
  auto& e = fleet.add();
  ASSERT_TRUE(fleet.wait_single_leader());
  const auto token = fleet.events(0).elected.back().token;

  admin.call({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  admin.call({"CONFIG", "SET", "maxmemory", "1"});
  // Demote the leader by cutting its connection; it must re-claim under OOM.
  admin.call({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).revoked.size() == 1; }, 5s));
  ASSERT_TRUE(fleet.wait_leading(0, "default", 5s));
  // A new term; INCR of the existing counter is allowed under OOM here (the
  // script tolerates a refusal and keeps the old token then).
  EXPECT_GE(fleet.events(0).elected.back().token, token);

  // A new group has no lease to re-claim: its SET is refused, loudly.
  lh::Group fresh = e.group("fresh");
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).has_error(lh::errc::out_of_memory); }, 5s));
  lh::test::run_for(fleet.io, 500ms);
  EXPECT_FALSE(fresh.is_leader());
  for (const auto& err : fleet.events(0).errors) {
    if (err.error.code == lh::errc::out_of_memory) {
      EXPECT_EQ(err.group, "fresh");
      EXPECT_NE(err.error.detail.find("OOM"), std::string::npos) << err.error.detail;
    }
  }
  admin.call({"CONFIG", "SET", "maxmemory", "0"});
  ASSERT_TRUE(run_until(fleet.io, [&] { return fresh.is_leader(); }, 5s));
}

TEST(Elector, ScriptFlushIsInvisible) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  auto& e = fleet.add();
  ASSERT_TRUE(fleet.wait_single_leader());
  server.admin().call({"SCRIPT", "FLUSH"});
  lh::test::run_for(fleet.io, 1500ms);  // three heartbeats
  EXPECT_TRUE(e.is_leader());
  EXPECT_TRUE(fleet.events(0).revoked.empty());
  EXPECT_TRUE(fleet.events(0).errors.empty());
}

TEST(Elector, WrongTypeKeyGivesAnErrorEventAndNoLeadershipUntilItIsGone) {
  lh::test::RedisServer server;
  auto admin = server.admin();
  admin.call({"HSET", key(), "field", "value"});
  Fleet fleet(server);
  auto& e = fleet.add();
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).has_error(lh::errc::wrong_type); }, 5s));
  lh::test::run_for(fleet.io, 500ms);
  EXPECT_FALSE(e.is_leader());
  EXPECT_EQ(admin.call({"TYPE", key()}).str, "hash") << "the foreign value is never touched";
  admin.call({"DEL", key()});
  ASSERT_TRUE(run_until(fleet.io, [&] { return e.is_leader(); }, 5s));
}

TEST(Elector, MissingAclPermissionGivesNoPermissionAndNoLeadership) {
  lh::test::RedisServerOptions server_options;
  // May run scripts, but only on keys outside leasehold's prefix.
  server_options.acl_users = {"limited on >pw ~other:* &* +@all"};
  lh::test::RedisServer server(server_options);
  auto redis = server.options();
  redis.username = "limited";
  redis.password = "pw";
  Fleet fleet(redis);
  auto& e = fleet.add();
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).has_error(lh::errc::no_permission); }, 5s));
  lh::test::run_for(fleet.io, 500ms);
  EXPECT_FALSE(e.is_leader());
}

TEST(Elector, StopReleasesEveryLeaseAndIsIdempotent) {
  lh::test::RedisServer server;
  auto options = fast_options();
  options.groups = {"reports", "cleanup"};
  Fleet fleet(server);
  auto& e = fleet.add(options);
  ASSERT_TRUE(run_until(fleet.io, [&] {
    return e.is_leader("default") && e.is_leader("reports") && e.is_leader("cleanup");
  }));
  int stops = 0;
  e.stop([&](lh::error_code ec) { EXPECT_FALSE(ec); ++stops; });
  e.stop([&](lh::error_code ec) { EXPECT_FALSE(ec); ++stops; });
  ASSERT_TRUE(run_until(fleet.io, [&] { return stops == 2; }));
  auto admin = server.admin();
  for (const char* g : {"default", "reports", "cleanup"}) {
    EXPECT_FALSE(admin.get(key(g)).has_value()) << g << " still has a key after stop()";
    EXPECT_FALSE(e.is_leader(g));
  }
  std::optional<lh::error_code> late;
  e.acquire("default", [&](lh::error_code ec, lh::Term) { late = ec; });
  ASSERT_TRUE(run_until(fleet.io, [&] { return late.has_value(); }));
  EXPECT_EQ(*late, lh::errc::stopped);
}

TEST(Elector, AcquireReturnsATermWhoseEndIsObservable) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  auto& e = fleet.add();
  std::optional<lh::Term> term;
  std::optional<lh::RevokeReason> ended;
  boost::asio::co_spawn(fleet.io, [&]() -> boost::asio::awaitable<void> {
    term = co_await e.acquire("jobs", boost::asio::use_awaitable);
    auto [ec, reason] = co_await term->async_wait_end(boost::asio::as_tuple(boost::asio::use_awaitable));
    EXPECT_FALSE(ec);
    ended = reason;
  }, boost::asio::detached);
  ASSERT_TRUE(run_until(fleet.io, [&] { return term.has_value(); }));
  EXPECT_EQ(term->group(), "jobs");
  EXPECT_GT(term->token(), 0);
  EXPECT_TRUE(term->active());
  EXPECT_TRUE(e.is_leader("jobs"));

  bool stepped = false;
  e.step_down("jobs", [&](lh::error_code) { stepped = true; });
  ASSERT_TRUE(run_until(fleet.io, [&] { return stepped && ended.has_value(); }));
  EXPECT_EQ(*ended, lh::RevokeReason::stepped_down);
  EXPECT_FALSE(term->active());
}

TEST(Elector, AcquireCanBeCancelled) {
  lh::test::RedisServer server;
  server.admin().call({"SET", key("busy"), "someone-else"});
  Fleet fleet(server);
  auto& e = fleet.add();
  boost::asio::cancellation_signal signal;
  std::optional<lh::error_code> result;
  e.acquire("busy", boost::asio::bind_cancellation_slot(signal.slot(), [&](lh::error_code ec, lh::Term) {
              result = ec;
            }));
  lh::test::run_for(fleet.io, 300ms);
  EXPECT_FALSE(result.has_value());
  signal.emit(boost::asio::cancellation_type::terminal);
  ASSERT_TRUE(run_until(fleet.io, [&] { return result.has_value(); }));
  EXPECT_EQ(*result, boost::asio::error::operation_aborted);
}

TEST(Elector, AcquireCancelledBeforeTheElectorRanStillCompletes) {
  // The cancel is emitted right after the call, before the elector's strand
  // has seen the request: it must not be lost.
  lh::test::RedisServer server;
  server.admin().call({"SET", key("busy"), "someone-else"});
  Fleet fleet(server);
  auto& e = fleet.add();
  boost::asio::cancellation_signal signal;
  std::optional<lh::error_code> result;
  e.acquire("busy", boost::asio::bind_cancellation_slot(signal.slot(), [&](lh::error_code ec, lh::Term) {
              result = ec;
            }));
  signal.emit(boost::asio::cancellation_type::terminal);
  ASSERT_TRUE(run_until(fleet.io, [&] { return result.has_value(); }, 5s));
  EXPECT_EQ(*result, boost::asio::error::operation_aborted);
}

TEST(Elector, LeaderOfReportsWhatRedisSees) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  auto& e = fleet.add();
  ASSERT_TRUE(fleet.wait_single_leader());
  std::optional<lh::LeaderInfo> info;
  e.leader_of("default", [&](lh::error_code ec, lh::LeaderInfo i) {
    EXPECT_FALSE(ec);
    info = i;
  });
  ASSERT_TRUE(run_until(fleet.io, [&] { return info.has_value(); }));
  EXPECT_EQ(info->holder, e.instance_id());
  EXPECT_GT(info->remaining.count(), 0);
  EXPECT_LE(info->remaining, e.options().ttl);
  EXPECT_EQ(info->token, fleet.events(0).elected.back().token);

  // A server error keeps the server's text for the caller.
  server.admin().call({"HSET", "leader:odd:token", "field", "value"});  // GET on a hash: WRONGTYPE
  std::optional<lh::error_code> failed;
  info.reset();
  e.leader_of("odd", [&](lh::error_code ec, lh::LeaderInfo i) {
    failed = ec;
    info = std::move(i);
  });
  ASSERT_TRUE(run_until(fleet.io, [&] { return failed.has_value(); }));
  EXPECT_EQ(*failed, lh::errc::wrong_type) << failed->message();
  EXPECT_NE(info->server_error.find("WRONGTYPE"), std::string::npos) << info->server_error;
}

TEST(Elector, ElectedAndRevokedAlternateAcrossManyHandovers) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  fleet.add();
  fleet.add();
  std::int64_t last_token = 0;
  for (int round = 0; round < 5; ++round) {
    auto leader = fleet.wait_single_leader();
    ASSERT_TRUE(leader);
    const auto token = fleet.events(*leader).elected.back().token;
    EXPECT_GT(token, last_token);
    last_token = token;
    bool done = false;
    fleet.at(*leader).step_down("default", [&](lh::error_code) { done = true; });
    ASSERT_TRUE(run_until(fleet.io, [&] { return done && !fleet.at(*leader).is_leader(); }));
  }
  fleet.stop_all();
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    const auto& seq = fleet.events(i).sequence;
    for (std::size_t k = 0; k < seq.size(); ++k) {
      EXPECT_EQ(seq[k], k % 2 == 0 ? "elected default" : "revoked default") << "elector " << i << " event " << k;
    }
  }
}

TEST(Elector, IsLeaderIsSafeFromManyThreadsWhileRenewing) {
  lh::test::RedisServer server;
  auto options = fast_options();
  options.ttl = 300ms;
  lh::Elector e(server.options(), options);
  e.start();
  auto handle = e.group("default");
  std::atomic<bool> done{false};
  std::atomic<long> trues{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      while (!done) {
        if (e.is_leader("default")) ++trues;
        if (handle.is_leader()) ++trues;
      }
    });
  }
  std::this_thread::sleep_for(1500ms);
  done = true;
  for (auto& r : readers) r.join();
  EXPECT_GT(trues.load(), 0);
  e.stop_and_wait();
  EXPECT_FALSE(e.is_leader());
  EXPECT_FALSE(server.admin().get(key()).has_value());
}

TEST(Elector, AnOperatorsReleaseInTheHoldersNameDemotesItAtOnce) {
  // What `leasehold step-down GROUP --as ID` does: the holder's own release
  // script, run by someone else. With a 10 s ttl the next renewal is 3.3 s
  // away; the release notice must demote the holder long before that.
  lh::test::RedisServer server;
  Fleet fleet(server);
  auto options = fast_options();
  options.ttl = 10s;
  options.empty_restart_guard = false;  // a new group would first wait out this ttl
  fleet.add(options);
  fleet.add(options);
  auto leader = fleet.wait_single_leader();
  ASSERT_TRUE(leader);
  const std::size_t standby = 1 - *leader;
  lh::test::run_for(fleet.io, 300ms);  // the standby's subscription is confirmed

  const std::string release =
      "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) "
      "redis.call('PUBLISH', ARGV[2], ARGV[1]) return 1 end return 0";
  auto admin = server.admin();
  ASSERT_EQ(admin.call({"EVAL", release, "1", key(), fleet.at(*leader).instance_id(), key() + ":released"}).integer, 1);
  EXPECT_TRUE(fleet.run_checking_single_leader(1500ms)) << "old holder and standby claimed at once";
  EXPECT_FALSE(fleet.at(*leader).is_leader());
  EXPECT_TRUE(fleet.wait_leading(standby, "default", 2s));
  ASSERT_TRUE(run_until(fleet.io, [&] { return !fleet.events(*leader).revoked.empty(); }));
  EXPECT_EQ(fleet.events(*leader).revoked.back().reason, lh::RevokeReason::released_elsewhere);
}

TEST(Elector, CoAwaitStopWithoutATokenReleasesTheLease) {
  // The contract's spelling: `co_await elector.stop();` inside a coroutine.
  lh::test::RedisServer server;
  Fleet fleet(server);
  auto& e = fleet.add();
  ASSERT_TRUE(fleet.wait_single_leader());
  bool stopped = false;
  boost::asio::co_spawn(fleet.io, [&]() -> boost::asio::awaitable<void> {
    co_await e.stop();
    stopped = true;
  }, boost::asio::detached);
  ASSERT_TRUE(run_until(fleet.io, [&] { return stopped; }));
  EXPECT_FALSE(e.is_leader());
  EXPECT_FALSE(server.admin().get(key()).has_value());
}

// More groups due at once than one pass takes (1024): the elector sends them
// in paced passes, and every group must still be elected and renewed, none
// demoted, none renewed twice per heartbeat. Renewals due in one turn leave
// as scripts of up to 64 groups: the server runs far fewer scripts than
// there are renewals.
TEST(Elector, ThousandsOfGroupsDueAtOnceAreAllRenewedInPacedPassesAndBatches) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  auto options = fast_options();
  options.ttl = 3s;  // heartbeat 1 s
  constexpr int count = 3000;
  for (int i = 0; i < count; ++i) options.groups.push_back("bulk-" + std::to_string(i));
  auto& elector = fleet.add(options);
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).elected.size() == count + 1; }, 30s))
      << fleet.events(0).elected.size() << " of " << count + 1 << " elected";
  const auto metrics_now = [&] {
    std::optional<lh::Metrics> metrics;
    elector.async_metrics([&](lh::Metrics m) { metrics = std::move(m); });
    EXPECT_TRUE(run_until(fleet.io, [&] { return metrics.has_value(); }, 5s));
    return metrics.value_or(lh::Metrics{});
  };
  const auto renewed = [](const lh::Metrics& m) {
    std::uint64_t ok = 0;
    for (const auto& g : m.groups) ok += g.renewals_ok;
    return ok;
  };
  auto admin = server.admin();
  const std::uint64_t renewals_before = renewed(metrics_now());
  const std::uint64_t scripts_before = lh::test::script_calls(admin);
  const auto started = std::chrono::steady_clock::now();
  lh::test::run_for(fleet.io, 2500ms);  // two heartbeats
  const auto elapsed = std::chrono::steady_clock::now() - started;
  const std::uint64_t scripts = lh::test::script_calls(admin) - scripts_before;

  const lh::Metrics metrics = metrics_now();
  ASSERT_EQ(metrics.groups.size(), static_cast<std::size_t>(count + 1));
  // Generous: a renewal per heartbeat and one more for a slow start.
  const auto most = static_cast<std::uint64_t>(elapsed / options.effective_heartbeat()) + 2;
  for (const auto& g : metrics.groups) {
    EXPECT_TRUE(g.leader) << g.group;
    EXPECT_GE(g.renewals_ok, 1u) << g.group;
    EXPECT_LE(g.renewals_ok, most) << g.group;
    EXPECT_EQ(g.renewals_failed, 0u) << g.group;
  }
  const std::uint64_t renewals = renewed(metrics) - renewals_before;
  EXPECT_GE(renewals, static_cast<std::uint64_t>(count)) << "two heartbeats";
  EXPECT_LT(scripts * 4, renewals) << scripts << " scripts for " << renewals << " renewals";
  EXPECT_TRUE(fleet.events(0).revoked.empty());
  EXPECT_EQ(server.admin().get("leader:bulk-2999"), elector.instance_id());
}

// With the server frozen, a thousand renewals wait for replies and the rest
// are held back by the in-flight limit. Holding a command back must not hold
// back the lease's own deadline: every group is demoted when its renewals
// stop being confirmed, long before the command timeout gives up on the
// connection, and after the server thaws the stale held-back commands are
// dropped and every group is elected again.
TEST(Elector, HeldBackCommandsDoNotDelayTheDemotionOfAFrozenServersGroups) {
  lh::test::RedisServer server;
  auto redis = server.options();
  redis.command_timeout = 60s;  // the deadline, not the timeout, must demote
  Fleet fleet(redis);
  auto options = fast_options();
  options.ttl = 2s;
  options.retry_interval = 500ms;
  constexpr int count = 3000;
  for (int i = 0; i < count; ++i) options.groups.push_back("frozen-" + std::to_string(i));
  auto& elector = fleet.add(options);
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).elected.size() == count + 1; }, 30s))
      << fleet.events(0).elected.size() << " of " << count + 1 << " elected";

  server.pause();
  // Bounded by 20 s, far below the command timeout (60 s), and by reason:
  // had a held-back renewal held back its deadline too, the demotions would
  // wait for the timeout and name it.
  const bool all_demoted = run_until(fleet.io, [&] { return fleet.events(0).revoked.size() == count + 1; }, 20s);
  server.resume();
  ASSERT_TRUE(all_demoted) << fleet.events(0).revoked.size() << " of " << count + 1 << " demoted";
  for (const auto& r : fleet.events(0).revoked) {
    EXPECT_EQ(r.reason, lh::RevokeReason::deadline_passed) << r.group << ": " << lh::to_string(r.reason);
  }
  EXPECT_FALSE(elector.is_leader("frozen-0"));

  // Thawed: the answers to the frozen renewals come late and are ignored,
  // the held-back renewals are stale and dropped, and the groups campaign
  // again (their keys still name this instance, or expired meanwhile).
  ASSERT_TRUE(run_until(fleet.io, [&] { return fleet.events(0).elected.size() == 2 * (count + 1); }, 60s))
      << fleet.events(0).elected.size() - (count + 1) << " of " << count + 1 << " elected again";
  EXPECT_EQ(fleet.events(0).revoked.size(), static_cast<std::size_t>(count + 1));
  EXPECT_TRUE(elector.is_leader("frozen-2999"));
  EXPECT_EQ(server.admin().get("leader:frozen-2999"), elector.instance_id());
}

}  // namespace
}  // namespace integration_elector_test
