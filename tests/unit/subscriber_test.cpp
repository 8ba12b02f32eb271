// The subscriber's bookkeeping on plain calls: which (P)SUBSCRIBE commands
// are sent now and after a reconnect, when every wanted name is confirmed,
// and what each kind of push means.

#include <leasehold/impl/redis/subscriber.hpp>

#include <leasehold/redis/codec.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace unit_subscriber_test {
namespace {

namespace lh = leasehold;
namespace redis = leasehold::redis;
using redis::Reply;
using redis::detail::Subscriber;
using Kind = Subscriber::Event::Kind;

std::string encoded(std::initializer_list<std::string_view> command) { return redis::Request(command).payload(); }

Reply push(std::initializer_list<std::string> strings, std::optional<std::int64_t> count = std::nullopt) {
  std::vector<Reply> elements;
  for (const auto& s : strings) elements.push_back(Reply::make_string(s));
  if (count) elements.push_back(Reply::make_integer(*count));
  return Reply::make_array(std::move(elements));
}

TEST(Subscriber, SubscribesOnlyToNamesNotWantedYet) {
  Subscriber s;
  std::string out;
  EXPECT_EQ(s.subscribe({"a", "b"}, out), 1u);
  EXPECT_EQ(out, encoded({"SUBSCRIBE", "a", "b"}));
  out.clear();
  EXPECT_EQ(s.subscribe({"b", "c"}, out), 1u);
  EXPECT_EQ(out, encoded({"SUBSCRIBE", "c"}));
  out.clear();
  EXPECT_EQ(s.subscribe({"a"}, out), 0u);
  EXPECT_EQ(s.psubscribe({"news.*", "news.*"}, out), 1u);
  EXPECT_EQ(out, encoded({"PSUBSCRIBE", "news.*"}));
  out.clear();
  EXPECT_EQ(s.psubscribe({"news.*"}, out), 0u);
  EXPECT_TRUE(out.empty());
}

TEST(Subscriber, UnsubscribesOnlyFromWantedChannels) {
  Subscriber s;
  std::string out;
  s.subscribe({"a", "b"}, out);
  out.clear();
  EXPECT_EQ(s.unsubscribe({"b", "never"}, out), 1u);
  EXPECT_EQ(out, encoded({"UNSUBSCRIBE", "b"}));
  out.clear();
  EXPECT_EQ(s.unsubscribe({"b"}, out), 0u);
  EXPECT_EQ(s.resubscribe(out), 1u);
  EXPECT_EQ(out, encoded({"SUBSCRIBE", "a"})) << "b is no longer wanted after a reconnect";
}

TEST(Subscriber, ResubscribesToEverythingOnANewConnection) {
  Subscriber s;
  std::string out;
  EXPECT_EQ(s.resubscribe(out), 0u);
  EXPECT_TRUE(out.empty());
  s.subscribe({"b", "a"}, out);
  s.psubscribe({"p.*"}, out);
  out.clear();
  EXPECT_EQ(s.resubscribe(out), 2u);
  EXPECT_EQ(out, encoded({"SUBSCRIBE", "a", "b"}) + encoded({"PSUBSCRIBE", "p.*"}));
}

TEST(Subscriber, ConfirmedOnceTheServerCountsEveryWantedName) {
  Subscriber s;
  std::string out;
  EXPECT_TRUE(s.confirmed()) << "nothing wanted";
  s.subscribe({"a", "b"}, out);
  s.psubscribe({"p.*"}, out);
  EXPECT_FALSE(s.confirmed());

  // An event views into its reply: keep the reply alive while reading it.
  const auto first = push({"subscribe", "a"}, 1);
  auto e = s.on_push(first);
  EXPECT_EQ(e.kind, Kind::subscribed);
  EXPECT_EQ(e.channel, "a");
  EXPECT_EQ(s.on_push(push({"subscribe", "b"}, 2)).kind, Kind::subscribed);
  EXPECT_FALSE(s.confirmed());
  const auto third = push({"psubscribe", "p.*"}, 3);
  e = s.on_push(third);
  EXPECT_EQ(e.kind, Kind::subscribed);
  EXPECT_EQ(e.channel, "p.*");
  EXPECT_TRUE(s.confirmed());

  s.on_disconnect();
  EXPECT_FALSE(s.confirmed());
  s.on_push(push({"subscribe", "a"}, 3));
  EXPECT_TRUE(s.confirmed());
  s.resubscribe(out);
  EXPECT_FALSE(s.confirmed()) << "a new connection confirms again";
}

TEST(Subscriber, ConfirmationsOfNamesNoLongerWantedAreNotReported) {
  Subscriber s;
  std::string out;
  s.subscribe({"a"}, out);
  s.unsubscribe({"a"}, out);
  EXPECT_EQ(s.on_push(push({"subscribe", "a"}, 1)).kind, Kind::none);
  EXPECT_FALSE(s.confirmed()) << "the server counts one, nothing is wanted";
  EXPECT_EQ(s.on_push(push({"unsubscribe", "a"}, 0)).kind, Kind::none);
  EXPECT_TRUE(s.confirmed());
  EXPECT_EQ(s.on_push(push({"punsubscribe", "p.*"}, 0)).kind, Kind::none);
}

TEST(Subscriber, MessagesCarryTheChannelTheyWerePublishedOn) {
  Subscriber s;
  auto plain = push({"message", "news", "hello"});
  auto e = s.on_push(plain);
  EXPECT_EQ(e.kind, Kind::message);
  EXPECT_EQ(e.channel, "news");
  EXPECT_EQ(e.payload, "hello");

  auto pattern = push({"pmessage", "news.*", "news.sport", "goal"});
  e = s.on_push(pattern);
  EXPECT_EQ(e.kind, Kind::message);
  EXPECT_EQ(e.channel, "news.sport") << "not the pattern";
  EXPECT_EQ(e.payload, "goal");

  EXPECT_EQ(s.on_push(push({"message", "news"})).kind, Kind::none) << "malformed: ignored";
  EXPECT_EQ(s.on_push(push({"pong", ""})).kind, Kind::none);
}

TEST(Subscriber, AnErrorReplyIsReportedAndKeepsTheConnection) {
  Subscriber s;
  const auto e = s.on_push(Reply::make_error("NOPERM this user has no permissions to access the 'a' channel"));
  EXPECT_EQ(e.kind, Kind::error_reply);
  EXPECT_EQ(e.error.code, lh::errc::no_permission);
  EXPECT_NE(e.error.detail.find("'a' channel"), std::string::npos);
}

TEST(Subscriber, AnythingElseIsAProtocolError) {
  Subscriber s;
  for (const Reply& r : {Reply::make_status("OK"), Reply::make_array({}), Reply::make_array({Reply::make_integer(1)})}) {
    const auto e = s.on_push(r);
    EXPECT_EQ(e.kind, Kind::protocol_error) << r.debug_string();
    EXPECT_EQ(e.error.code, lh::errc::protocol_error);
    EXPECT_NE(e.error.detail.find("unexpected pub/sub reply"), std::string::npos);
  }
}

// Sharded pub/sub (Redis Cluster): one SSUBSCRIBE per channel, since one
// command may name channels of a single slot only.
TEST(Subscriber, ShardChannelsAreSubscribedOneCommandEachAndAgainOnANewConnection) {
  Subscriber s;
  std::string out;
  EXPECT_EQ(s.ssubscribe({"a:{x}", "b:{y}", "a:{x}"}, out), 2u);
  EXPECT_EQ(out, encoded({"SSUBSCRIBE", "a:{x}"}) + encoded({"SSUBSCRIBE", "b:{y}"}));
  out.clear();
  EXPECT_EQ(s.ssubscribe({"a:{x}"}, out), 0u);
  s.subscribe({"plain"}, out);
  out.clear();
  EXPECT_EQ(s.resubscribe(out), 3u);
  EXPECT_EQ(out, encoded({"SUBSCRIBE", "plain"}) + encoded({"SSUBSCRIBE", "a:{x}"}) + encoded({"SSUBSCRIBE", "b:{y}"}));
  out.clear();
  EXPECT_EQ(s.sunsubscribe({"b:{y}", "never"}, out), 1u);
  EXPECT_EQ(out, encoded({"SUNSUBSCRIBE", "b:{y}"}));
}

TEST(Subscriber, ShardChannelsAreCountedApartFromChannels) {
  Subscriber s;
  std::string out;
  s.subscribe({"plain"}, out);
  s.ssubscribe({"a:{x}", "b:{y}"}, out);
  EXPECT_EQ(s.on_push(push({"subscribe", "plain"}, 1)).kind, Kind::subscribed);
  EXPECT_FALSE(s.confirmed());
  // An event's views point into its reply: keep the reply.
  const Reply confirmation = push({"ssubscribe", "a:{x}"}, 1);
  const auto first = s.on_push(confirmation);
  EXPECT_EQ(first.kind, Kind::subscribed);
  EXPECT_EQ(first.channel, "a:{x}");
  EXPECT_FALSE(s.confirmed()) << "the server counts shard channels on their own: 1 of 2";
  s.on_push(push({"ssubscribe", "b:{y}"}, 2));
  EXPECT_TRUE(s.confirmed());
  const Reply published = push({"smessage", "a:{x}", "releaser"});
  const auto message = s.on_push(published);
  EXPECT_EQ(message.kind, Kind::message);
  EXPECT_EQ(message.channel, "a:{x}");
  EXPECT_EQ(message.payload, "releaser");
}

TEST(Subscriber, AShardChannelTheServerEndsIsReportedDroppedAndNoLongerWanted) {
  Subscriber s;
  std::string out;
  s.ssubscribe({"a:{x}", "b:{y}"}, out);
  s.on_push(push({"ssubscribe", "a:{x}"}, 1));
  s.on_push(push({"ssubscribe", "b:{y}"}, 2));
  // Our own SUNSUBSCRIBE's confirmation says nothing.
  out.clear();
  s.sunsubscribe({"b:{y}"}, out);
  EXPECT_EQ(s.on_push(push({"sunsubscribe", "b:{y}"}, 1)).kind, Kind::none);
  EXPECT_TRUE(s.confirmed());
  // One we still wanted: the slot moved to another node.
  const Reply ended = push({"sunsubscribe", "a:{x}"}, 0);
  const auto dropped = s.on_push(ended);
  EXPECT_EQ(dropped.kind, Kind::dropped);
  EXPECT_EQ(dropped.channel, "a:{x}");
  EXPECT_TRUE(s.confirmed());
  out.clear();
  EXPECT_EQ(s.resubscribe(out), 0u) << "a dropped channel is not asked for again on this connection";
}

}  // namespace
}  // namespace unit_subscriber_test
