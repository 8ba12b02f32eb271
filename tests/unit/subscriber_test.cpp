// The subscriber's bookkeeping on plain calls: which (P)SUBSCRIBE commands
// are sent now and after a reconnect, when every wanted name is confirmed,
// and what each kind of push means.

#include "redis/subscriber.hpp"

#include <leasehold/redis/codec.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lh = leasehold;
namespace redis = leasehold::redis;
using redis::Reply;
using redis::detail::Subscriber;
using Kind = Subscriber::Event::Kind;

namespace {

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

}  // namespace
