// The reconnect machine on plain calls and a simulated clock: connect
// deadlines, equal-jitter backoff with the randomness injected, the backoff
// reset only after a connection answered past its handshake, what is news for
// the state handler, stop, and the handshake walked step by step with a
// failure injected at each step.

#include <leasehold/impl/redis/reconnect.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace unit_reconnect_test {
namespace {

namespace lh = leasehold;
namespace redis = leasehold::redis;
using redis::Reply;
using redis::detail::Reconnect;
using Kind = Reconnect::Action::Kind;
using namespace std::chrono_literals;

using time_point = std::chrono::steady_clock::time_point;
const time_point t0 = time_point{} + 1h;

lh::RedisOptions backoff_options() {
  lh::RedisOptions options;
  options.connect_timeout = 2000ms;
  options.reconnect_min = 50ms;
  options.reconnect_max = 1000ms;
  return options;
}

// The jitter the machine draws: `pick` of the allowed maximum, and the
// maxima it was asked for.
struct FakeJitter {
  enum { none, all, beyond } pick = none;
  std::vector<std::int64_t> asked;

  Reconnect::Jitter function() {
    return [this](std::int64_t max) {
      asked.push_back(max);
      return pick == none ? 0 : pick == all ? max : max + 1000;
    };
  }
};

// Runs `n` failed attempts from `now`, returning each delay.
std::vector<std::chrono::milliseconds> delays(Reconnect& fsm, int n, time_point now = t0) {
  std::vector<std::chrono::milliseconds> out;
  for (int i = 0; i < n; ++i) {
    const auto wait = fsm.on_failed({lh::make_error_code(lh::errc::connection_lost), "refused"}, now);
    EXPECT_EQ(wait.kind, Kind::wait);
    out.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(wait.at - now));
    EXPECT_EQ(fsm.on_wait_elapsed(wait.at).kind, Kind::connect);
    now = wait.at;
  }
  return out;
}

using ms = std::vector<std::chrono::milliseconds>;

TEST(Reconnect, StartConnectsOnceWithTheConnectDeadline) {
  const auto options = backoff_options();
  Reconnect fsm(options);
  EXPECT_TRUE(fsm.stopped());
  const auto action = fsm.start(t0);
  EXPECT_EQ(action.kind, Kind::connect);
  EXPECT_EQ(action.at, t0 + 2000ms);
  EXPECT_EQ(fsm.state(), Reconnect::State::connecting);
  EXPECT_EQ(fsm.start(t0).kind, Kind::none) << "already running";
}

TEST(Reconnect, BackoffDoublesUpToItsCapWithHalfOfItJittered) {
  const auto options = backoff_options();
  FakeJitter low, high;
  high.pick = FakeJitter::all;
  Reconnect fixed(options, low.function()), random(options, high.function());
  fixed.start(t0);
  random.start(t0);
  EXPECT_EQ(delays(fixed, 7), (ms{25ms, 50ms, 100ms, 200ms, 400ms, 500ms, 500ms}));
  EXPECT_EQ(delays(random, 7), (ms{50ms, 100ms, 200ms, 400ms, 800ms, 1000ms, 1000ms}));
  EXPECT_EQ(low.asked, (std::vector<std::int64_t>{25, 50, 100, 200, 400, 500, 500})) << "jitter up to half";
}

TEST(Reconnect, JitterOutsideItsRangeIsClamped) {
  const auto options = backoff_options();
  FakeJitter beyond;
  beyond.pick = FakeJitter::beyond;
  Reconnect fsm(options, beyond.function());
  fsm.start(t0);
  EXPECT_EQ(delays(fsm, 2), (ms{50ms, 100ms}));
}

TEST(Reconnect, TheDefaultJitterStaysInItsRange) {
  const auto options = backoff_options();
  Reconnect fsm(options);
  fsm.start(t0);
  for (const auto d : delays(fsm, 6)) {
    EXPECT_GE(d, 25ms);
    EXPECT_LE(d, 1000ms);
  }
}

TEST(Reconnect, AConnectTimeoutIsAFailedAttemptNamingTheBound) {
  const auto options = backoff_options();
  FakeJitter jitter;
  Reconnect fsm(options, jitter.function());
  fsm.start(t0);
  const auto wait = fsm.on_connect_timeout(t0 + 2000ms);
  EXPECT_EQ(wait.kind, Kind::wait);
  EXPECT_EQ(wait.at, t0 + 2025ms);
  EXPECT_EQ(wait.error.code, lh::errc::timeout);
  EXPECT_NE(wait.error.detail.find("took longer than 2000 ms"), std::string::npos) << wait.error.detail;
  EXPECT_TRUE(wait.report) << "the first failure in a row is news";
  EXPECT_FALSE(wait.disconnected) << "it never came up";
  EXPECT_EQ(fsm.state(), Reconnect::State::waiting);
}

TEST(Reconnect, OnlyTheFirstFailedAttemptInARowIsNews) {
  const auto options = backoff_options();
  Reconnect fsm(options);
  fsm.start(t0);
  const lh::Error refused{lh::make_error_code(lh::errc::connection_lost), "refused"};
  EXPECT_TRUE(fsm.on_failed(refused, t0).report);
  fsm.on_wait_elapsed(t0);
  const auto second = fsm.on_failed(refused, t0);
  EXPECT_FALSE(second.report);
  EXPECT_EQ(second.error.detail, "refused");
}

TEST(Reconnect, AConnectionThatAnsweredRestartsTheBackoff) {
  const auto options = backoff_options();
  FakeJitter jitter;
  Reconnect fsm(options, jitter.function());
  fsm.start(t0);
  EXPECT_EQ(delays(fsm, 3), (ms{25ms, 50ms, 100ms}));
  ASSERT_TRUE(fsm.on_up());
  EXPECT_EQ(fsm.state(), Reconnect::State::up);
  fsm.on_reply();
  const auto lost = fsm.on_failed({lh::make_error_code(lh::errc::connection_lost), "reset"}, t0);
  EXPECT_EQ(lost.at, t0 + 25ms);
  EXPECT_TRUE(lost.report);
  EXPECT_TRUE(lost.disconnected);
}

TEST(Reconnect, AConnectionThatFailedBeforeAnsweringKeepsTheBackoffGrowing) {
  const auto options = backoff_options();
  FakeJitter jitter;
  Reconnect fsm(options, jitter.function());
  fsm.start(t0);
  EXPECT_EQ(delays(fsm, 2), (ms{25ms, 50ms}));
  for (const auto expected : {100ms, 200ms}) {
    ASSERT_TRUE(fsm.on_up());
    const auto lost = fsm.on_failed({lh::make_error_code(lh::errc::protocol_error), "garbage"}, t0);
    EXPECT_EQ(lost.at, t0 + expected);
    EXPECT_TRUE(lost.report) << "a connection that was up going down is always news";
    EXPECT_TRUE(lost.disconnected);
    fsm.on_wait_elapsed(lost.at);
  }
}

TEST(Reconnect, RepliesBeforeTheConnectionIsUpDoNotCount) {
  const auto options = backoff_options();
  FakeJitter jitter;
  Reconnect fsm(options, jitter.function());
  fsm.start(t0);
  EXPECT_EQ(delays(fsm, 1), (ms{25ms}));
  fsm.on_reply();  // connecting: a handshake reply
  ASSERT_TRUE(fsm.on_up());
  EXPECT_EQ(fsm.on_failed({lh::make_error_code(lh::errc::connection_lost), ""}, t0).at, t0 + 50ms);
  fsm.on_wait_elapsed(t0);
  ASSERT_TRUE(fsm.on_up());
  fsm.on_reply();
  fsm.on_failed({lh::make_error_code(lh::errc::connection_lost), ""}, t0);
  fsm.on_wait_elapsed(t0);
  ASSERT_TRUE(fsm.on_up());
  EXPECT_EQ(fsm.on_failed({lh::make_error_code(lh::errc::connection_lost), ""}, t0).at, t0 + 50ms)
      << "served belongs to one connection only";
}

TEST(Reconnect, TheWaitEndsInANewAttemptWithItsOwnDeadline) {
  const auto options = backoff_options();
  Reconnect fsm(options);
  fsm.start(t0);
  EXPECT_EQ(fsm.on_wait_elapsed(t0).kind, Kind::none) << "not waiting";
  const auto wait = fsm.on_failed({lh::make_error_code(lh::errc::connection_lost), ""}, t0);
  const auto next = fsm.on_wait_elapsed(wait.at);
  EXPECT_EQ(next.kind, Kind::connect);
  EXPECT_EQ(next.at, wait.at + 2000ms);
}

TEST(Reconnect, StopEndsEveryStateAndAllowsAFreshStart) {
  const auto options = backoff_options();
  Reconnect fsm(options);
  const lh::Error lost{lh::make_error_code(lh::errc::connection_lost), ""};

  fsm.start(t0);
  fsm.stop();
  EXPECT_TRUE(fsm.stopped());
  EXPECT_FALSE(fsm.on_up()) << "a handshake that finished after stop";
  EXPECT_EQ(fsm.on_failed(lost, t0).kind, Kind::stop);
  EXPECT_EQ(fsm.on_connect_timeout(t0).kind, Kind::stop);

  fsm.start(t0);
  fsm.on_failed(lost, t0);
  fsm.stop();
  EXPECT_EQ(fsm.on_wait_elapsed(t0).kind, Kind::stop);

  fsm.start(t0);
  ASSERT_TRUE(fsm.on_up());
  fsm.stop();
  EXPECT_EQ(fsm.on_failed(lost, t0).kind, Kind::stop);
  EXPECT_EQ(fsm.start(t0).kind, Kind::connect);
}

// ---- handshake --------------------------------------------------------------

lh::RedisOptions handshake_options() {
  lh::RedisOptions options;
  options.username = "alice";
  options.password = "wonderland";
  options.database = 3;
  options.client_name = "me";
  return options;
}

TEST(ReconnectHandshake, SaysOnlyWhatIsConfigured) {
  lh::RedisOptions options;
  options.client_name.clear();
  Reconnect bare(options);
  EXPECT_TRUE(bare.begin_handshake({}).empty());
  EXPECT_EQ(bare.handshake_remaining(), 0u);

  const auto full = handshake_options();
  const redis::Script script("return 1");
  const std::vector<const redis::Script*> preloaded{&script, &script};
  Reconnect fsm(full);
  const redis::Request request = fsm.begin_handshake(preloaded);
  redis::Request expected;
  expected.push({"AUTH", "alice", "wonderland"})
      .push({"SELECT", "3"})
      .push({"CLIENT", "SETNAME", "me"})
      .push({"SCRIPT", "LOAD", "return 1"})
      .push({"SCRIPT", "LOAD", "return 1"});
  EXPECT_EQ(request.payload(), expected.payload());
  EXPECT_EQ(fsm.handshake_remaining(), 5u);

  options.password = "secret";
  Reconnect password_only(options);
  EXPECT_EQ(password_only.begin_handshake({}).payload(), redis::Request({"AUTH", "secret"}).payload());
}

TEST(ReconnectHandshake, AllStepsAnsweredSucceeds) {
  const auto options = handshake_options();
  Reconnect fsm(options);
  fsm.begin_handshake({});
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(fsm.on_handshake_reply(Reply::make_status("OK")));
  EXPECT_EQ(fsm.handshake_remaining(), 0u);
  const lh::Error extra = fsm.on_handshake_reply(Reply::make_status("OK"));
  EXPECT_EQ(extra.code, lh::errc::protocol_error) << "a reply no step asked for";
}

// An error reply at each step in turn: what it means for the attempt.
TEST(ReconnectHandshake, AFailureAtEachStepIsJudgedByItsStep) {
  const auto options = handshake_options();
  const redis::Script script("return 1");
  const std::vector<const redis::Script*> preloaded{&script};
  struct Case {
    lh::errc code;  // {} : not fatal
    std::string says;
  };
  const std::vector<Case> cases{
      {lh::errc::auth_failed, "user \"alice\": WRONGPASS"},
      {lh::errc::handshake_failed, "SELECT 3: ERR DB index is out of range"},
      {lh::errc::handshake_failed, "CLIENT SETNAME: ERR nope"},
      {lh::errc{}, ""},
  };
  const std::vector<std::string> texts{"WRONGPASS invalid username-password pair", "ERR DB index is out of range",
                                       "ERR nope", "NOPERM no scripts"};
  for (std::size_t failing = 0; failing < cases.size(); ++failing) {
    SCOPED_TRACE("failing step " + std::to_string(failing));
    Reconnect fsm(options);
    fsm.begin_handshake(preloaded);
    lh::Error error;
    for (std::size_t step = 0; step < cases.size() && !error; ++step) {
      error = fsm.on_handshake_reply(step == failing ? Reply::make_error(texts[step]) : Reply::make_status("OK"));
    }
    if (cases[failing].code == lh::errc{}) {
      EXPECT_FALSE(error) << "a failed SCRIPT LOAD is left to EVALSHA's fallback: " << error.message();
      EXPECT_EQ(fsm.handshake_remaining(), 0u);
      continue;
    }
    EXPECT_EQ(error.code, cases[failing].code);
    EXPECT_NE(error.detail.find(cases[failing].says), std::string::npos) << error.detail;
    EXPECT_EQ(error.detail.find("wonderland"), std::string::npos) << "password leaked: " << error.detail;
  }
}

TEST(ReconnectHandshake, TheDefaultUserIsNamedWhenAuthFails) {
  lh::RedisOptions options;
  options.password = "secret";
  Reconnect fsm(options);
  fsm.begin_handshake({});
  const lh::Error error = fsm.on_handshake_reply(Reply::make_error("WRONGPASS bad"));
  EXPECT_EQ(error.code, lh::errc::auth_failed);
  EXPECT_NE(error.detail.find("user \"default\""), std::string::npos) << error.detail;
}

TEST(ReconnectHandshake, ANewHandshakeStartsFromItsFirstStep) {
  const auto options = handshake_options();
  Reconnect fsm(options);
  fsm.begin_handshake({});
  EXPECT_FALSE(fsm.on_handshake_reply(Reply::make_status("OK")));
  fsm.begin_handshake({});
  EXPECT_EQ(fsm.handshake_remaining(), 3u);
  EXPECT_EQ(fsm.on_handshake_reply(Reply::make_error("WRONGPASS")).code, lh::errc::auth_failed);
}

// ---- the primary check (RedisOptions::require_primary) -----------------------

Reply role_reply(const std::string& role) {
  return Reply::make_array({Reply::make_string(role), Reply::make_integer(0), Reply::make_array({})});
}

TEST(ReconnectHandshake, ThePrimaryCheckAsksRoleBeforeTheScripts) {
  lh::RedisOptions options;
  options.client_name.clear();
  const redis::Script script("return 1");
  const std::vector<const redis::Script*> preloaded{&script};
  Reconnect unchecked(options);
  EXPECT_EQ(unchecked.begin_handshake(preloaded).payload(), redis::Request({"SCRIPT", "LOAD", "return 1"}).payload());

  Reconnect fsm(options);
  fsm.check_primary(true);
  redis::Request expected;
  expected.push({"ROLE"}).push({"SCRIPT", "LOAD", "return 1"});
  EXPECT_EQ(fsm.begin_handshake(preloaded).payload(), expected.payload());
  EXPECT_FALSE(fsm.on_handshake_reply(role_reply("master")));
  EXPECT_FALSE(fsm.on_handshake_reply(Reply::make_string("sha")));
  EXPECT_EQ(fsm.handshake_remaining(), 0u);
}

TEST(ReconnectHandshake, ThePrimaryCheckLeavesAReplicaAndTrustsAServerThatRefusesRole) {
  lh::RedisOptions options;
  options.client_name.clear();
  Reconnect fsm(options);
  fsm.check_primary(true);

  fsm.begin_handshake({});
  const lh::Error replica = fsm.on_handshake_reply(role_reply("slave"));
  EXPECT_EQ(replica.code, lh::errc::not_master);
  EXPECT_NE(replica.detail.find("\"slave\""), std::string::npos) << replica.detail;
  EXPECT_NE(replica.detail.find("connecting again"), std::string::npos) << replica.detail;

  // Managed services that block ROLE: the connection is used unchecked.
  for (const char* refusal : {"NOPERM User default has no permissions to run the 'role' command",
                              "ERR unknown command 'ROLE', with args beginning with: "}) {
    fsm.begin_handshake({});
    EXPECT_FALSE(fsm.on_handshake_reply(Reply::make_error(refusal))) << refusal;
  }
  // A server that wants a password is not a refusal of ROLE.
  fsm.begin_handshake({});
  EXPECT_EQ(fsm.on_handshake_reply(Reply::make_error("NOAUTH Authentication required.")).code,
            lh::errc::auth_failed);

  // KeyDB's multi-master replication is refused, saying why.
  fsm.begin_handshake({});
  const lh::Error active = fsm.on_handshake_reply(role_reply("active-replica"));
  EXPECT_EQ(active.code, lh::errc::not_master);
  EXPECT_NE(active.detail.find("more than one master"), std::string::npos) << active.detail;
  EXPECT_EQ(active.detail.find("connecting again"), std::string::npos) << "no hope of a move: " << active.detail;
}

TEST(ReconnectHandshake, UnderSentinelARefusedRoleFailsTheAttempt) {
  lh::RedisOptions options = lh::RedisOptions::from_url("redis-sentinel://127.0.0.1:26379#main");
  options.client_name.clear();
  Reconnect fsm(options);
  fsm.check_primary(true);  // the sentinel's stricter rule wins
  EXPECT_EQ(fsm.begin_handshake({}).payload(), redis::Request({"ROLE"}).payload());
  EXPECT_TRUE(fsm.on_handshake_reply(Reply::make_error("NOPERM no role")));
}

}  // namespace
}  // namespace unit_reconnect_test
