// The Sentinel client spec's rules without I/O: reading a sentinel's answer,
// the order sentinels are asked in, what a round of answers adds up to,
// +switch-master messages, the ROLE check and the handshake that carries it.

#include <leasehold/impl/redis/reconnect.hpp>
#include <leasehold/impl/redis/sentinel_rules.hpp>

#include <gtest/gtest.h>

#include <string>

namespace unit_sentinel_rules_test {
namespace {

namespace lh = leasehold;
using lh::redis::Reply;
using namespace lh::redis::detail;

Reply address(std::string host, std::string port) {
  return Reply::make_array({Reply::make_string(std::move(host)), Reply::make_string(std::move(port))});
}

SentinelAnswer failure(lh::errc code, std::string detail) {
  SentinelAnswer answer;
  answer.error = {make_error_code(code), std::move(detail)};
  return answer;
}

SentinelAnswer null_answer() {
  SentinelAnswer answer;
  answer.kind = SentinelAnswer::Kind::null;
  return answer;
}

TEST(SentinelRules, AMasterReplyIsAnAddressANilOrAnError) {
  const auto named = read_master_reply(address("10.0.0.5", "6380"));
  EXPECT_EQ(named.kind, SentinelAnswer::Kind::address);
  EXPECT_EQ(named.address, (MasterAddress{"10.0.0.5", 6380}));
  EXPECT_EQ(read_master_reply(Reply{}).kind, SentinelAnswer::Kind::null);
  EXPECT_EQ(read_master_reply(Reply::make_array({})).kind, SentinelAnswer::Kind::null) << "RESP3 null array";

  const auto refused = read_master_reply(Reply::make_error("NOPERM this user has no permissions"));
  EXPECT_EQ(refused.kind, SentinelAnswer::Kind::failed);
  EXPECT_EQ(refused.error.code, lh::errc::no_permission);

  for (const Reply& odd : {address("h", "0"), address("h", "65536"), address("h", "x1"), address("", "1"),
                           Reply::make_array({Reply::make_string("h")}), Reply::make_integer(1)}) {
    const auto answer = read_master_reply(odd);
    EXPECT_EQ(answer.kind, SentinelAnswer::Kind::failed) << odd.debug_string();
    EXPECT_EQ(answer.error.code, lh::errc::unexpected_reply);
  }
}

TEST(SentinelRules, TheSentinelThatAnsweredIsAskedFirstNextTime) {
  SentinelRoster roster({{"a", 1}, {"b", 2}, {"c", 3}});
  roster.answered(2);
  EXPECT_EQ(roster.at(0).host, "c");
  EXPECT_EQ(roster.at(1).host, "a");
  EXPECT_EQ(roster.at(2).host, "b");
  roster.answered(0);
  EXPECT_EQ(roster.at(0).host, "c");
  roster.answered(7);  // out of range: nothing moves
  EXPECT_EQ(roster.at(0).host, "c");
  roster.distrust_first();  // c named a replica
  EXPECT_EQ(roster.at(0).host, "a");
  EXPECT_EQ(roster.at(2).host, "c");
}

TEST(SentinelRules, EveryoneAnsweringNilMeansAnUnknownMaster) {
  ResolveRound round("orders");
  round.add({"a", 1}, null_answer());
  round.add({"b", 2}, null_answer());
  const auto error = round.outcome();
  EXPECT_EQ(error.code, lh::errc::master_unknown);
  EXPECT_EQ(error.detail, "no master named \"orders\" at sentinel a:1, b:2 (each answered nil)");
}

TEST(SentinelRules, NilFromSomeAndNoAnswerFromTheRestStillNamesTheUnknownMaster) {
  ResolveRound round("orders");
  round.add({"a", 1}, failure(lh::errc::timeout, "no answer within 500 ms"));
  round.add({"b", 2}, null_answer());
  const auto error = round.outcome();
  EXPECT_EQ(error.code, lh::errc::master_unknown);
  EXPECT_NE(error.detail.find("not reached: a:1: operation timed out: no answer within 500 ms"), std::string::npos)
      << error.detail;
}

TEST(SentinelRules, NoAnswerAtAllMeansNoSentinelReachable) {
  ResolveRound round("orders");
  round.add({"a", 1}, failure(lh::errc::connection_lost, "connect to redis://a:1/0: Connection refused"));
  round.add({"b", 2}, failure(lh::errc::timeout, "no answer within 500 ms"));
  const auto error = round.outcome();
  EXPECT_EQ(error.code, lh::errc::sentinel_unreachable);
  EXPECT_NE(error.detail.find("a:1: connection to Redis lost: connect to redis://a:1/0: Connection refused"),
            std::string::npos)
      << error.detail;
  EXPECT_NE(error.detail.find("b:2: operation timed out"), std::string::npos) << error.detail;

  ResolveRound all_refused("orders");
  all_refused.add({"a", 1}, failure(lh::errc::connection_lost, "refused"));
  EXPECT_EQ(all_refused.outcome().code, lh::errc::sentinel_unreachable);
}

TEST(SentinelRules, AWrongSentinelPasswordEverywhereIsAnAuthenticationFailure) {
  ResolveRound round("orders");
  round.add({"a", 1}, failure(lh::errc::auth_failed, "user \"default\": WRONGPASS invalid username-password pair"));
  round.add({"b", 2}, failure(lh::errc::auth_failed, "user \"default\": WRONGPASS invalid username-password pair"));
  const auto error = round.outcome();
  EXPECT_EQ(error.code, lh::errc::auth_failed);
  EXPECT_NE(error.detail.find("a:1: Redis authentication failed: user \"default\": WRONGPASS"), std::string::npos)
      << error.detail;
}

TEST(SentinelRules, SwitchMasterMessagesAboutOurMasterGiveTheNewAddress) {
  EXPECT_EQ(parse_switch_master("orders 10.0.0.1 6379 10.0.0.2 6380", "orders"), (MasterAddress{"10.0.0.2", 6380}));
  EXPECT_FALSE(parse_switch_master("billing 10.0.0.1 6379 10.0.0.2 6380", "orders")) << "another master";
  EXPECT_FALSE(parse_switch_master("orders 10.0.0.1 6379 10.0.0.2", "orders"));
  EXPECT_FALSE(parse_switch_master("orders 10.0.0.1 6379 10.0.0.2 6380 extra", "orders"));
  EXPECT_FALSE(parse_switch_master("orders 10.0.0.1 6379 10.0.0.2 0", "orders"));
  EXPECT_FALSE(parse_switch_master("orders 10.0.0.1 6379  6380", "orders"));
  EXPECT_FALSE(parse_switch_master("", "orders"));
}

TEST(SentinelRules, RoleMustSayMaster) {
  const auto master = Reply::make_array({Reply::make_string("master"), Reply::make_integer(0), Reply::make_array({})});
  EXPECT_FALSE(check_role(master));
  const auto replica = Reply::make_array({Reply::make_string("slave"), Reply::make_string("10.0.0.1"),
                                          Reply::make_integer(6379), Reply::make_string("connected")});
  const auto error = check_role(replica);
  EXPECT_EQ(error.code, lh::errc::not_master);
  EXPECT_EQ(error.detail, "ROLE says \"slave\"");
  EXPECT_EQ(check_role(Reply::make_error("NOPERM")).code, lh::errc::unexpected_reply);
  EXPECT_EQ(check_role(Reply::make_array({})).code, lh::errc::unexpected_reply);
}

TEST(SentinelRules, NodeOptionsSplitTheSentinelsFromTheDataNodes) {
  auto base = lh::RedisOptions::from_url(
      "redis-sentinel://app:pw@s1:1/3?sentinel_user=w&sentinel_password=spw&sentinel_timeout=200#m");
  const auto sentinel = sentinel_node_options(base, base.sentinel->sentinels[0]);
  EXPECT_FALSE(sentinel.sentinel);
  EXPECT_EQ(sentinel.host, "s1");
  EXPECT_EQ(sentinel.port, 1);
  EXPECT_EQ(sentinel.username, "w");
  EXPECT_EQ(sentinel.password, "spw");
  EXPECT_EQ(sentinel.database, 0) << "sentinels have no databases";
  EXPECT_EQ(sentinel.connect_timeout, std::chrono::milliseconds(200));
}

TEST(SentinelRules, TheHandshakeChecksRoleOnlyBehindSentinels) {
  const auto plain = lh::RedisOptions::from_url("redis://h");
  Reconnect direct(plain);
  EXPECT_EQ(direct.begin_handshake({}).payload().find("ROLE"), std::string::npos);

  const auto options = lh::RedisOptions::from_url("redis-sentinel://s#m");
  Reconnect fsm(options);
  const auto request = fsm.begin_handshake({});
  EXPECT_NE(request.payload().find("ROLE"), std::string::npos);
  ASSERT_EQ(fsm.handshake_remaining(), 2u);  // CLIENT SETNAME, ROLE
  EXPECT_FALSE(fsm.on_handshake_reply(Reply::make_status("OK")));
  const auto error = fsm.on_handshake_reply(Reply::make_array({Reply::make_string("slave")}));
  EXPECT_EQ(error.code, lh::errc::not_master);
}

}  // namespace
}  // namespace unit_sentinel_rules_test
