// Bad input at the elector's edges: invalid options and group names at the
// API, and every kind of bad or hostile answer from Redis. For each Redis
// fault: a clear error event (code and text), no leadership while the cause
// lasts (is_leader sampled throughout), leadership again once it is gone, and
// no crash or leak (ASan in CI). WRONGTYPE on the lease key, NOPERM and OOM
// are in elector_test.cpp.

#include <leasehold/leasehold.hpp>

#include "support/elector_fixture.hpp"
#include "support/redis_server.hpp"
#include "support/scripted_server.hpp"

#include <leasehold/impl/lease/lease_scripts.hpp>

#include <boost/asio/io_context.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

namespace integration_bad_input_test {
namespace {

namespace lh = leasehold;
using lh::test::Fleet;
using lh::test::ScriptedAction;
using lh::test::ScriptedCommand;
using lh::test::ScriptedServer;
using lh::test::fast_options;
using lh::test::run_until;
using namespace std::chrono_literals;
using namespace std::string_literals;

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

std::string invalid_argument_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected std::invalid_argument";
  return {};
}

// Runs the fleet for `duration`; false if `e` claimed `group` at any sample.
bool never_leads(Fleet& fleet, const lh::Elector& e, std::chrono::milliseconds duration,
                 std::string_view group = "default") {
  bool led = false;
  const auto end = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < end) {
    lh::test::step(fleet.io);
    led = led || e.is_leader(group);
  }
  return !led;
}

// The first error event with `code`, if any.
std::string describe(const lh::test::RecordedEvents& events) {
  std::string out;
  for (const auto& e : events.errors) out += "[" + e.group + "] " + e.error.message() + "\n";
  if (out.empty()) out = "(no error events)\n";
  for (const auto& r : events.revoked) out += "revoked [" + r.group + "]: " + std::string(lh::to_string(r.reason)) + "\n";
  return out;
}

std::string bulk(std::string_view s) { return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n"; }
std::string integer(long long v) { return ":" + std::to_string(v) + "\r\n"; }

// ===========================================================================
// Invalid input at the API

TEST(BadInput, InvalidOptionsThrowAtConstructionNamingTheField) {
  boost::asio::io_context io;
  const lh::RedisOptions redis;  // never contacted: construction fails first
  auto bad = [](auto edit) {
    auto o = fast_options();
    edit(o);
    return o;
  };
  const std::pair<lh::ElectorOptions, std::string> cases[] = {
      {bad([](auto& o) { o.ttl = 10ms; }), "ElectorOptions.ttl"},
      {bad([](auto& o) { o.heartbeat_interval = o.ttl; }), "ElectorOptions.heartbeat_interval"},
      {bad([](auto& o) { o.retry_interval = 0ms; }), "ElectorOptions.retry_interval"},
      {bad([](auto& o) { o.drift_margin = -1ms; }), "ElectorOptions.drift_margin"},
      {bad([](auto& o) { o.clock_skew = -1ms; }), "ElectorOptions.clock_skew"},
      {bad([](auto& o) { o.clock_skew = o.ttl / 2; }), "ElectorOptions.clock_skew"},
      {bad([](auto& o) { o.key_prefix = ""; }), "ElectorOptions.key_prefix"},
      {bad([](auto& o) { o.key_prefix = "lead\ner:"; }), "ElectorOptions.key_prefix"},
      {bad([](auto& o) { o.instance_id = "id\r\n"; }), "ElectorOptions.instance_id"},
      {bad([](auto& o) { o.instance_id = std::string(300, 'x'); }), "ElectorOptions.instance_id"},
      {bad([](auto& o) { o.groups = {"ok", ""}; }), "ElectorOptions.groups"},
      {bad([](auto& o) { o.groups = {"x:token"}; }), "ElectorOptions.groups"},
  };
  for (const auto& [options, field] : cases) {
    auto message = invalid_argument_of([&] { lh::Elector e(io.get_executor(), redis, options); });
    EXPECT_TRUE(contains(message, field)) << "executor mode: " << message;
    // Standalone mode must throw before it starts any thread.
    message = invalid_argument_of([&] { lh::Elector e(redis, options); });
    EXPECT_TRUE(contains(message, field)) << "standalone mode: " << message;
  }
}

TEST(BadInput, BadGroupNamesAreRejectedByGroupAcquireStepDownAndLeaderOf) {
  lh::test::RedisServer server;
  Fleet fleet(server);
  auto& e = fleet.add(fast_options("me"));
  const std::string bad_names[] = {""s, std::string(201, 'g'), "a\nb"s, "nul\0"s, "\x7f"s, "jobs:token"s, "jobs:holder"s};

  for (const auto& name : bad_names) {
    const auto message = invalid_argument_of([&] { e.group(name); });
    EXPECT_TRUE(contains(message, "invalid group name")) << message;

    std::optional<lh::error_code> acquired, stepped, info;
    e.acquire(name, [&](lh::error_code ec, lh::Term t) {
      EXPECT_FALSE(t);
      acquired = ec;
    });
    e.step_down(name, [&](lh::error_code ec) { stepped = ec; });
    e.leader_of(name, [&](lh::error_code ec, lh::LeaderInfo) { info = ec; });
    ASSERT_TRUE(run_until(fleet.io, [&] { return acquired && stepped && info; }));
    EXPECT_EQ(*acquired, lh::errc::invalid_argument);
    EXPECT_EQ(*stepped, lh::errc::invalid_argument);
    EXPECT_EQ(*info, lh::errc::invalid_argument);
    EXPECT_FALSE(e.is_leader(name)) << "a rejected name is never registered";
  }
  // Nothing reached Redis under a bad key, and the good group still works.
  ASSERT_TRUE(run_until(fleet.io, [&] { return e.is_leader(); }));
  auto admin = server.admin();
  const auto keys = admin.call({"KEYS", "*"});
  ASSERT_TRUE(keys.is_array());
  for (const auto& k : keys.elements) {
    EXPECT_TRUE(k.str == "leader:default" || k.str == "leader:default:token" || k.str == "leader:default:holder" ||
                k.str == "leader:" || k.str == "leader::holder")  // the server's data marker and change stamp
        << "unexpected key " << k.str;
  }
}

// ===========================================================================
// A fake Redis that runs the lease scripts by their shape and answers them
// with a chosen fault while one is set.

enum class Fault {
  none,
  loading,            // -LOADING to every script call
  busy,               // -BUSY to every script call
  noscript_always,    // -NOSCRIPT to EVALSHA and to the EVAL fallback too
  other_error,        // an error class leasehold does not know
  integer_reply,      // :7 where an array (or a 0/1 renewal) is expected
  nil_reply,          // $-1
  short_array,        // three elements instead of four
  string_flag,        // {"1", id, pttl, token}: right size, wrong element type
  foreign_acquired,   // {1, "intruder", ...}: "acquired" for someone else
  invalid_resp,       // bytes that are not RESP
  close_mid_reply,    // half a reply, then FIN
};

std::string_view name_of(Fault f) {
  switch (f) {
    case Fault::none: return "none";
    case Fault::loading: return "loading";
    case Fault::busy: return "busy";
    case Fault::noscript_always: return "noscript_always";
    case Fault::other_error: return "other_error";
    case Fault::integer_reply: return "integer_reply";
    case Fault::nil_reply: return "nil_reply";
    case Fault::short_array: return "short_array";
    case Fault::string_flag: return "string_flag";
    case Fault::foreign_acquired: return "foreign_acquired";
    case Fault::invalid_resp: return "invalid_resp";
    case Fault::close_mid_reply: return "close_mid_reply";
  }
  return "?";
}

class FakeLeaseServer {
 public:
  std::atomic<Fault> fault{Fault::none};
  std::atomic<bool> renew_fault_only{false};  // fault renewals, answer acquires well
  std::atomic<bool> batch_one_answer{false};  // a batched renewal gets one answer, whatever its groups

  lh::RedisOptions options() const { return server_.options_for(); }

 private:
  using Clock = std::chrono::steady_clock;

  // Runs on the server thread only.
  ScriptedAction handle(const ScriptedCommand& c) {
    const std::string name = c.name();
    if (name != "EVALSHA" && name != "EVAL") return ScriptedServer::redis_like(c);
    // EVAL[SHA] <script> <numkeys> keys... args...
    const auto& a = c.args;
    if (a.size() < 5) return ScriptedAction::reply("-ERR fake: bad script call\r\n");
    const auto is = [&](const lh::redis::Script& script) { return a[1] == script.sha1() || a[1] == script.body(); };
    const bool acquire = is(lh::detail::acquire_script()) || is(lh::detail::guarded_acquire_script()) ||
                         is(lh::detail::acquire_script(false, true)) ||
                         is(lh::detail::guarded_acquire_script(false, true));
    const bool renew = is(lh::detail::renew_script());
    const bool stamped = is(lh::detail::renew_stamped_batch_script());
    const bool renew_batch = stamped || is(lh::detail::renew_batch_script());
    const std::size_t argv = 3 + std::stoul(a[2]);  // the first ARGV
    if (a.size() < argv + 2) return ScriptedAction::reply("-ERR fake: bad script call\r\n");
    const Fault f = fault.load();
    if (f != Fault::none && (!renew_fault_only || renew || renew_batch)) return faulty(f, name);
    if (acquire) return run_acquire(a[argv], std::stoll(a[argv + 1]));
    if (renew) return run_renew(a[argv], std::stoll(a[argv + 1]));
    if (renew_batch) {
      // A stamped batch's last key is the change stamp; this server has none.
      return run_renew_batch(std::stoul(a[2]) / lh::detail::renew_batch_keys_per_group, a[argv],
                             std::stoll(a[argv + 1]), stamped);
    }
    return run_release(a[argv]);
  }

  static ScriptedAction faulty(Fault f, const std::string& verb) {
    switch (f) {
      case Fault::loading: return ScriptedAction::reply("-LOADING Redis is loading the dataset in memory\r\n");
      case Fault::busy:
        return ScriptedAction::reply(
            "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n");
      case Fault::noscript_always:
        return ScriptedAction::reply("-NOSCRIPT No matching script (" + verb + "). Please use EVAL.\r\n");
      case Fault::other_error: return ScriptedAction::reply("-WEIRD something nobody expected\r\n");
      case Fault::integer_reply: return ScriptedAction::reply(integer(7));
      case Fault::nil_reply: return ScriptedAction::reply("$-1\r\n");
      case Fault::short_array: return ScriptedAction::reply("*3\r\n" + integer(1) + bulk("me") + integer(1500));
      case Fault::string_flag:
        return ScriptedAction::reply("*4\r\n" + bulk("1") + bulk("me") + integer(1500) + integer(1));
      case Fault::foreign_acquired:
        return ScriptedAction::reply("*4\r\n" + integer(1) + bulk("intruder") + integer(1500) + integer(9));
      case Fault::invalid_resp: return ScriptedAction::reply("?this is not RESP\r\n");
      case Fault::close_mid_reply: return ScriptedAction::close_after("*4\r\n:1\r\n$2\r\nm");
      case Fault::none: break;
    }
    return ScriptedAction::reply("-ERR fake: no fault\r\n");
  }

  bool held(Clock::time_point now) const { return !holder_.empty() && now < expiry_; }

  ScriptedAction run_acquire(const std::string& id, long long ttl) {
    const auto now = Clock::now();
    if (held(now) && holder_ != id) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(expiry_ - now).count();
      return ScriptedAction::reply("*4\r\n" + integer(0) + bulk(holder_) + integer(left) + integer(0));
    }
    if (!held(now)) ++token_;
    holder_ = id;
    expiry_ = now + std::chrono::milliseconds(ttl);
    return ScriptedAction::reply("*4\r\n" + integer(1) + bulk(id) + integer(ttl) + integer(token_));
  }

  ScriptedAction run_renew(const std::string& id, long long ttl) {
    const auto now = Clock::now();
    if (!held(now) || holder_ != id) return ScriptedAction::reply(integer(0));
    expiry_ = now + std::chrono::milliseconds(ttl);
    return ScriptedAction::reply(integer(1));
  }

  // Every group of the fake is the one lease: each gets its answer.
  ScriptedAction run_renew_batch(std::size_t groups, const std::string& id, long long ttl, bool stamped) {
    if (batch_one_answer) return ScriptedAction::reply("*1\r\n" + integer(1));
    const auto now = Clock::now();
    const bool ours = held(now) && holder_ == id;
    if (ours) expiry_ = now + std::chrono::milliseconds(ttl);
    std::string out = "*" + std::to_string(groups + (stamped ? 1 : 0)) + "\r\n";
    for (std::size_t i = 0; i < groups; ++i) out += integer(ours ? 1 : 0);
    if (stamped) out += "$-1\r\n";
    return ScriptedAction::reply(out);
  }

  ScriptedAction run_release(const std::string& id) {
    if (!held(Clock::now()) || holder_ != id) return ScriptedAction::reply(integer(0));
    holder_.clear();
    return ScriptedAction::reply(integer(1));
  }

  std::string holder_;
  Clock::time_point expiry_{};
  long long token_ = 0;
  // Last, so that the handler never runs on a half-built object.
  ScriptedServer server_{[this](const ScriptedCommand& c) { return handle(c); }};
};

struct FaultCase {
  Fault fault;
  lh::errc code;
  bool connection_level;  // reported once for the connection (group ""), not per group
  std::string text;       // expected in the error detail
};

void PrintTo(const FaultCase& c, std::ostream* os) { *os << name_of(c.fault); }

class ScriptReplyFault : public ::testing::TestWithParam<FaultCase> {};

TEST_P(ScriptReplyFault, ErrorEventNoLeadershipWhileItLastsAndRecoveryAfter) {
  const FaultCase& c = GetParam();
  FakeLeaseServer fake;
  fake.fault = c.fault;
  Fleet fleet(fake.options());
  auto& e = fleet.add(fast_options("me"));
  const auto& events = fleet.events(0);
  const std::string expected_group = c.connection_level ? "" : "default";

  // From a cold start: never leads while every script reply is bad.
  EXPECT_TRUE(never_leads(fleet, e, 1200ms));
  const lh::ErrorEvent* error = events.first_error(c.code);
  ASSERT_NE(error, nullptr) << "expected " << make_error_code(c.code).message() << "; got " << describe(events);
  EXPECT_EQ(error->group, expected_group);
  EXPECT_TRUE(contains(error->error.detail, c.text)) << error->error.message();
  EXPECT_TRUE(contains(error->error.message(), make_error_code(c.code).message())) << error->error.message();

  fake.fault = Fault::none;
  ASSERT_TRUE(run_until(fleet.io, [&] { return e.is_leader(); }, 5s)) << "no recovery after the fault cleared";

  // While leading: the next renewal meets the fault, demotes, and nothing
  // claims the group again until it clears.
  const auto revoked_before = events.revoked.size();
  fake.fault = c.fault;
  ASSERT_TRUE(run_until(fleet.io, [&] { return !e.is_leader(); }, 3s));
  EXPECT_TRUE(never_leads(fleet, e, 1000ms));
  ASSERT_TRUE(run_until(fleet.io, [&] { return events.revoked.size() > revoked_before; }));
  EXPECT_NE(events.revoked.back().reason, lh::RevokeReason::deadline_passed)
      << "a bad reply demotes at once, not at the deadline";
  fake.fault = Fault::none;
  ASSERT_TRUE(run_until(fleet.io, [&] { return e.is_leader(); }, 5s));
}

INSTANTIATE_TEST_SUITE_P(
    BadInput, ScriptReplyFault,
    ::testing::Values(FaultCase{Fault::loading, lh::errc::loading, false, "LOADING"},
                      FaultCase{Fault::busy, lh::errc::busy, false, "BUSY"},
                      FaultCase{Fault::noscript_always, lh::errc::no_script, false, "NOSCRIPT"},
                      FaultCase{Fault::other_error, lh::errc::server_error, false, "WEIRD"},
                      FaultCase{Fault::integer_reply, lh::errc::unexpected_reply, false, "(integer) 7"},
                      FaultCase{Fault::nil_reply, lh::errc::unexpected_reply, false, "(nil)"},
                      FaultCase{Fault::short_array, lh::errc::unexpected_reply, false, "[(integer) 1"},
                      FaultCase{Fault::string_flag, lh::errc::unexpected_reply, false, "\"1\""},
                      FaultCase{Fault::foreign_acquired, lh::errc::unexpected_reply, false, "intruder"},
                      FaultCase{Fault::invalid_resp, lh::errc::protocol_error, true, "invalid RESP"},
                      FaultCase{Fault::close_mid_reply, lh::errc::connection_lost, true, "closed"}),
    [](const auto& info) { return std::string(name_of(info.param.fault)); });

TEST(BadInput, MalformedRenewReplyDemotesWithAnErrorEventEveryTime) {
  // Acquires succeed, renewals come back as arrays: each term ends at its
  // first renewal, never later than that reply.
  FakeLeaseServer fake;
  Fleet fleet(fake.options());
  auto& e = fleet.add(fast_options("me"));
  ASSERT_TRUE(run_until(fleet.io, [&] { return e.is_leader(); }));
  fake.renew_fault_only = true;
  fake.fault = Fault::short_array;
  const auto& events = fleet.events(0);
  ASSERT_TRUE(run_until(fleet.io, [&] { return events.revoked.size() >= 2; }, 5s));
  for (const auto& r : events.revoked) EXPECT_EQ(r.reason, lh::RevokeReason::renew_failed);
  const lh::ErrorEvent* error = events.first_error(lh::errc::unexpected_reply);
  ASSERT_NE(error, nullptr) << describe(events);
  EXPECT_EQ(error->group, "default");
  fake.fault = Fault::none;
  // Events are posted: counting starts once the elected event of a term is
  // delivered, so every revocation before it has been delivered too.
  ASSERT_TRUE(fleet.wait_leading(0));
  const auto revoked = events.revoked.size();
  lh::test::run_for(fleet.io, 1200ms);  // a few heartbeats
  // At most the renewal already answered before the fault was lifted fails
  // again. (A busy test machine may still miss a deadline: not this test's
  // concern, so only renewal failures count, and leading again suffices.)
  std::size_t failed_after = 0;
  for (std::size_t i = revoked; i < events.revoked.size(); ++i) {
    if (events.revoked[i].reason == lh::RevokeReason::renew_failed) ++failed_after;
  }
  EXPECT_LE(failed_after, 1u) << describe(events);
  EXPECT_TRUE(run_until(fleet.io, [&] { return e.is_leader(); }, 5s)) << describe(events);
}

// ===========================================================================
// Real servers in a bad state

// Two groups renew in one script; an answer that is not one per group says
// nothing of either: both demote with an error event naming each, and lead
// again once the answers are right.
TEST(BadInput, ABatchedRenewalWithoutAnAnswerPerGroupDemotesEachOfItsGroups) {
  FakeLeaseServer fake;
  Fleet fleet(fake.options());
  auto options = fast_options("me");
  options.groups = {"second"};
  auto& e = fleet.add(options);
  ASSERT_TRUE(run_until(fleet.io, [&] { return e.is_leader() && e.is_leader("second"); }));
  const auto& events = fleet.events(0);
  fake.batch_one_answer = true;
  ASSERT_TRUE(run_until(fleet.io, [&] { return events.revoked.size() >= 2; }, 5s)) << describe(events);
  std::set<std::string> demoted, reported;
  for (const auto& r : events.revoked) {
    EXPECT_EQ(r.reason, lh::RevokeReason::renew_failed);
    demoted.insert(r.group);
  }
  for (const auto& err : events.errors) {
    if (err.error.code == lh::errc::unexpected_reply) reported.insert(err.group);
  }
  EXPECT_EQ(demoted, (std::set<std::string>{"default", "second"}));
  EXPECT_EQ(reported, (std::set<std::string>{"default", "second"}));
  fake.batch_one_answer = false;
  EXPECT_TRUE(run_until(fleet.io, [&] { return e.is_leader() && e.is_leader("second"); }, 5s));
}

// A replica is refused at connect (ROLE), with one connection error naming
// it, until it is promoted.
TEST(BadInput, AReplicaIsRefusedAtConnectUntilPromoted) {
  lh::test::RedisServer primary;
  lh::test::RedisServerOptions replica_options;
  replica_options.extra_config = {"replicaof 127.0.0.1 " + std::to_string(primary.port())};
  lh::test::RedisServer replica(replica_options);
  Fleet fleet(replica);
  auto& e = fleet.add(fast_options("me"));
  const auto& events = fleet.events(0);

  ASSERT_TRUE(run_until(fleet.io, [&] { return events.first_error(lh::errc::not_master) != nullptr; }, 5s))
      << describe(events);
  EXPECT_TRUE(never_leads(fleet, e, 1000ms));
  const auto* error = events.first_error(lh::errc::not_master);
  EXPECT_EQ(error->group, "") << "a connection error";
  EXPECT_TRUE(contains(error->error.detail, "ROLE says \"slave\"")) << error->error.message();
  EXPECT_TRUE(contains(error->error.detail, replica.host() + ":" + std::to_string(replica.port())))
      << error->error.message();
  EXPECT_FALSE(primary.admin().get("leader:default").has_value());

  replica.admin().call({"REPLICAOF", "NO", "ONE"});
  ASSERT_TRUE(run_until(fleet.io, [&] { return e.is_leader(); }, 5s));
  EXPECT_EQ(replica.admin().get("leader:default"), "me");
}

// Without the ROLE check (require_primary = false) the replica's READONLY
// is a group error, and the connection is made again each time.
TEST(BadInput, ReadOnlyReplicaGivesReadOnlyUntilPromoted) {
  lh::test::RedisServer primary;
  lh::test::RedisServerOptions replica_options;
  replica_options.extra_config = {"replicaof 127.0.0.1 " + std::to_string(primary.port())};
  lh::test::RedisServer replica(replica_options);
  auto redis = replica.options();
  redis.require_primary = false;
  Fleet fleet(redis);
  auto& e = fleet.add(fast_options("me"));
  const auto& events = fleet.events(0);

  // The group's error; the connection's own (it is left) may come first.
  const auto group_error = [&]() -> const lh::ErrorEvent* {
    for (const auto& ev : events.errors) {
      if (ev.error.code == lh::errc::read_only && ev.group == "default") return &ev;
    }
    return nullptr;
  };
  ASSERT_TRUE(run_until(fleet.io, [&] { return group_error() != nullptr; }, 5s)) << describe(events);
  EXPECT_TRUE(never_leads(fleet, e, 1000ms));
  EXPECT_TRUE(contains(group_error()->error.detail, "READONLY")) << group_error()->error.message();
  EXPECT_FALSE(primary.admin().get("leader:default").has_value());

  replica.admin().call({"REPLICAOF", "NO", "ONE"});
  ASSERT_TRUE(run_until(fleet.io, [&] { return e.is_leader(); }, 5s));
  EXPECT_EQ(replica.admin().get("leader:default"), "me");
}

TEST(BadInput, LongRunningScriptGivesBusyAndNoLeadershipUntilItIsKilled) {
  lh::test::RedisServer server;
  server.admin().call({"CONFIG", "SET", "busy-reply-threshold", "50"});
  Fleet fleet(server);
  auto options = fast_options("me");
  options.ttl = 3000ms;  // longer than a command timeout, so the demotion is BUSY's doing
  auto& e = fleet.add(options);
  const auto& events = fleet.events(0);
  ASSERT_TRUE(run_until(fleet.io, [&] { return e.is_leader(); }));

  // A read-only script that spins until SCRIPT KILL.
  auto spinning = std::async(std::launch::async, [&server] {
    auto admin = server.admin(30s);
    return admin.call({"EVAL", "while true do end", "0"});
  });
  ASSERT_TRUE(run_until(fleet.io, [&] { return !e.is_leader(); }, 5s));
  EXPECT_TRUE(never_leads(fleet, e, 1500ms));
  // The connection's own health check can meet BUSY too (an event without a
  // group); the group's renewal must report it as well.
  const lh::ErrorEvent* error = nullptr;
  ASSERT_TRUE(run_until(fleet.io, [&] {
    for (const auto& ev : events.errors) {
      if (ev.error.code == lh::errc::busy && ev.group == "default") error = &ev;
    }
    return error != nullptr;
  }, 5s)) << describe(events);
  EXPECT_TRUE(contains(error->error.detail, "BUSY")) << error->error.message();
  ASSERT_FALSE(events.revoked.empty());
  EXPECT_EQ(events.revoked.back().reason, lh::RevokeReason::renew_failed);

  server.admin().call({"SCRIPT", "KILL"});
  const auto killed = spinning.get();
  EXPECT_TRUE(killed.is_error()) << lh::test::describe_reply(killed);
  ASSERT_TRUE(run_until(fleet.io, [&] { return e.is_leader(); }, 5s));
}

TEST(BadInput, WrongTypeFencingCounterGivesAnErrorEventAndNoLeadershipUntilFixed) {
  lh::test::RedisServer server;
  auto admin = server.admin();
  admin.call({"HSET", "leader:default:token", "f", "v"});
  Fleet fleet(server);
  auto& e = fleet.add(fast_options("me"));
  const auto& events = fleet.events(0);
  ASSERT_TRUE(run_until(fleet.io, [&] { return events.first_error(lh::errc::wrong_type) != nullptr; }, 5s))
      << describe(events);
  EXPECT_TRUE(never_leads(fleet, e, 1000ms));
  EXPECT_EQ(admin.call({"TYPE", "leader:default:token"}).str, "hash") << "a foreign value is never replaced";

  admin.call({"DEL", "leader:default:token"});
  ASSERT_TRUE(fleet.wait_leading(0, "default", 5s));  // with its elected event delivered
  EXPECT_EQ(events.elected.back().token, 1) << "the counter starts afresh, once, after the hand repair";
}

TEST(BadInput, MultiMegabyteForeignHolderIsReportedAndNeverTouched) {
  lh::test::RedisServer server;
  auto admin = server.admin(10s);
  std::string huge(4 << 20, 'h');
  for (std::size_t i = 0; i < huge.size(); i += 4096) huge[i] = static_cast<char>('a' + (i / 4096) % 26);
  admin.set("leader:default", huge);
  Fleet fleet(server);
  auto& e = fleet.add(fast_options("me"));
  const auto& events = fleet.events(0);

  ASSERT_TRUE(run_until(fleet.io, [&] { return !events.leader_changed.empty(); }, 5s)) << describe(events);
  EXPECT_EQ(events.leader_changed.back().holder.size(), huge.size());
  EXPECT_TRUE(events.leader_changed.back().holder == huge) << "the holder id arrives intact";
  EXPECT_TRUE(never_leads(fleet, e, 1000ms));
  EXPECT_TRUE(admin.get("leader:default") == huge);
  EXPECT_EQ(admin.pttl("leader:default"), -1);

  admin.call({"DEL", "leader:default"});
  ASSERT_TRUE(run_until(fleet.io, [&] { return e.is_leader(); }, 5s));
}

TEST(BadInput, BinaryHolderIdsAreComparedByteForByte) {
  lh::test::RedisServer server;
  auto admin = server.admin();
  Fleet fleet(server);
  // RESP-looking bytes, NUL and 0xff; and our own id with a NUL appended,
  // which must not count as ours.
  for (const std::string& holder : {"\0\xff\r\n$-1\r\n*4\r\n:1\r\n"s, "me\0"s, "\xff\xfe"s}) {
    admin.set("leader:default", holder);
    auto& e = fleet.add(fast_options("me"));
    const auto& events = fleet.events(fleet.size() - 1);
    ASSERT_TRUE(run_until(fleet.io, [&] { return !events.leader_changed.empty(); }, 5s));
    EXPECT_TRUE(events.leader_changed.back().holder == holder) << "holder of " << holder.size() << " bytes";
    EXPECT_TRUE(never_leads(fleet, e, 700ms));
    EXPECT_TRUE(admin.get("leader:default") == holder);
    admin.call({"DEL", "leader:default"});
    ASSERT_TRUE(run_until(fleet.io, [&] { return e.is_leader(); }, 5s));
    fleet.stop_all();
  }
}

}  // namespace
}  // namespace integration_bad_input_test
