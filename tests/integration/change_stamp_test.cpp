// The change stamp on a real server (lease_scripts.hpp): a batched renewal
// skips the holder record of a group it found clean while the stamp is
// unchanged, and every script that changes a record (a re-claim by another
// incarnation, a bid, a hand-over) replaces the stamp, so that the next
// batch reads the record again and sees the change. A server that refuses
// TIME in scripts keeps no stamp, and every renewal reads every record.

#include <leasehold/impl/lease/lease_scripts.hpp>
#include "support/io_helpers.hpp"
#include "support/redis_server.hpp"

#include <leasehold/key_layout.hpp>
#include <leasehold/redis/client.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace integration_change_stamp_test {
namespace {

namespace lh = leasehold;
using namespace std::chrono_literals;
using lh::redis::Reply;

struct StampServer {
  explicit StampServer(const lh::test::RedisServerOptions& options = {}) : server(options) {}

  Reply eval(const lh::redis::Script& script, std::vector<std::string> keys, std::vector<std::string> args) {
    if (!client.connected()) {
      client.start();
      EXPECT_TRUE(lh::test::run_until(io, [&] { return client.connected(); }, 10s));
    }
    std::optional<Reply> reply;
    client.async_eval(script, std::move(keys), std::move(args), [&](lh::error_code ec, Reply r) {
      EXPECT_FALSE(ec && !r.is_error()) << ec.message();
      reply = std::move(r);
    });
    EXPECT_TRUE(lh::test::run_until(io, [&] { return reply.has_value(); }, 10s));
    return reply.value_or(Reply{});
  }

  std::vector<std::string> group_keys(const std::string& group) const {
    return {layout.lease_key(group), layout.token_key(group), layout.holder_key(group), layout.bid_key(group)};
  }

  // An acquire by `id`/`incarnation` at `priority` through the stamped
  // script (unguarded: these groups are new on purpose).
  // `vouch`: the stamp the caller's last refusal named.
  Reply acquire(const std::string& group, const std::string& id, const std::string& incarnation,
                const std::string& priority = "0", bool take_over = false, const std::string& vouch = "") {
    auto keys = group_keys(group);
    keys.push_back(layout.change_stamp_key());
    return eval(lh::detail::acquire_script(take_over, true), keys, {id, "5000", incarnation, priority, vouch});
  }


  // One stamped batch of `groups` by me/inc-1: the first `trusted` on the
  // word of `stamp`, with their lease keys only. Answers each group's
  // answer, then the stamp now.
  Reply renew(const std::vector<std::string>& groups, const std::string& stamp, std::size_t trusted) {
    std::vector<std::string> keys;
    for (std::size_t i = 0; i < groups.size(); ++i) {
      auto own = group_keys(groups[i]);
      keys.insert(keys.end(), own.begin(), i < trusted ? own.begin() + 1 : own.end());
    }
    keys.push_back(layout.change_stamp_key());
    return eval(lh::detail::renew_stamped_batch_script(), keys,
                {"me", "5000", "inc-1", stamp, std::to_string(trusted)});
  }

  std::optional<std::string> stamp() { return server.admin().get(layout.change_stamp_key()); }

  lh::test::RedisServer server;
  boost::asio::io_context io;
  lh::redis::Client client{io.get_executor(), lh::RedisOptions::from_url(server.url())};
  const lh::KeyLayout layout{"leader:"};
};

bool is_one(const Reply& r) { return r.is_integer() && r.integer == 1; }

// A standby's look: a refusal naming a holder this standby does not
// outrank names the stamp too; sent back, it spares the next look the
// holder record (MGET and PTTL) until a script changes a record.
TEST(ChangeStamp, AStandbysLookSkipsTheHolderRecordWhileTheStampVouchesForIt) {
  StampServer s;
  auto admin = s.server.admin();
  ASSERT_TRUE(is_one(s.acquire("a", "h", "inc-h", "10").elements.at(0)));
  const auto first = s.stamp();
  ASSERT_TRUE(first.has_value());

  auto look = s.acquire("a", "s", "inc-s", "5");
  ASSERT_TRUE(look.is_array() && look.elements.size() == 5) << look.debug_string();
  EXPECT_EQ(look.elements[0].integer, 0);
  EXPECT_EQ(look.elements[1].str, "h");
  EXPECT_EQ(look.elements[4].str, *first) << "the stamp that vouches: s does not outrank h";

  ASSERT_FALSE(admin.call({"CONFIG", "RESETSTAT"}).is_error());
  look = s.acquire("a", "s", "inc-s", "5", false, *first);
  ASSERT_TRUE(look.is_array() && look.elements.size() == 5) << look.debug_string();
  EXPECT_EQ(look.elements[4].str, *first);
  EXPECT_EQ(admin.command_calls("hget"), 0) << "the holder record was not read";
  EXPECT_EQ(admin.command_calls("get"), 0);
  EXPECT_EQ(admin.command_calls("mget"), 1);
  EXPECT_EQ(admin.command_calls("pttl"), 1);

  // A record changed behind the stamp's back (no script of ours does that):
  // the vouched look does not read it, which shows the skip is real...
  admin.call({"HSET", s.layout.holder_key("a"), "priority", "1"});
  look = s.acquire("a", "s", "inc-s", "5", false, *first);
  EXPECT_EQ(look.elements.size(), 5u) << look.debug_string();
  EXPECT_EQ(admin.call({"EXISTS", s.layout.bid_key("a")}).integer, 0);
  // ... and a look without the stamp's word reads it, and bids: the stamp
  // changes, and the refusal vouches for nothing.
  look = s.acquire("a", "s", "inc-s", "5");
  EXPECT_EQ(look.elements.size(), 4u) << look.debug_string();
  EXPECT_EQ(admin.call({"EXISTS", s.layout.bid_key("a")}).integer, 1);
  const auto second = s.stamp();
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(*second, *first);
  // A look on the old stamp's word reads the record again.
  ASSERT_FALSE(admin.call({"CONFIG", "RESETSTAT"}).is_error());
  look = s.acquire("a", "s", "inc-s", "5", false, *first);
  EXPECT_EQ(look.elements.size(), 4u) << look.debug_string();
  EXPECT_EQ(admin.command_calls("hget"), 1);

  // The key of another type is still WRONGTYPE (MGET cannot tell it).
  admin.call({"DEL", s.layout.lease_key("a")});
  admin.call({"HSET", s.layout.lease_key("a"), "f", "v"});
  look = s.acquire("a", "s", "inc-s", "5", false, *second);
  EXPECT_TRUE(look.is_error() && look.str.find("WRONGTYPE") != std::string::npos) << look.debug_string();
}

TEST(ChangeStamp, ATrustedGroupSkipsItsRecordUntilAScriptChangesARecord) {
  StampServer s;
  auto admin = s.server.admin();
  ASSERT_TRUE(is_one(s.acquire("a", "me", "inc-1").elements.at(0)));
  ASSERT_TRUE(is_one(s.acquire("b", "me", "inc-1").elements.at(0)));
  const auto first = s.stamp();
  ASSERT_TRUE(first.has_value()) << "a fresh term writes the stamp";

  // Nothing trusted yet: both records are read, both clean, at the stamp.
  auto reply = s.renew({"a", "b"}, "", 0);
  ASSERT_TRUE(reply.is_array() && reply.elements.size() == 3) << reply.debug_string();
  EXPECT_TRUE(is_one(reply.elements[0]) && is_one(reply.elements[1])) << reply.debug_string();
  EXPECT_EQ(reply.elements[2].str, *first);

  // A record changed behind the stamp's back (no script of ours does that):
  // the trusted group does not read it, which shows the skip is real.
  admin.call({"HSET", s.layout.holder_key("b"), "incarnation", "inc-9"});
  reply = s.renew({"a", "b"}, *first, 2);
  EXPECT_TRUE(is_one(reply.elements.at(0)) && is_one(reply.elements.at(1))) << reply.debug_string();
  // ... and an untrusted one does.
  reply = s.renew({"a", "b"}, *first, 1);
  EXPECT_EQ(reply.elements.at(1).debug_string(),
            Reply::make_array({Reply::make_integer(0), Reply::make_string("inc-9")}).debug_string());
  admin.call({"HSET", s.layout.holder_key("b"), "incarnation", "inc-1"});

  // Another incarnation of my id takes b over (reclaim_on_restart): the
  // stamp changes, and a batch on the old stamp renews neither group (-1:
  // send again with every key), which then reads every record.
  const auto taken = s.acquire("b", "me", "inc-9", "0", true);
  ASSERT_TRUE(is_one(taken.elements.at(0))) << taken.debug_string();
  const auto second = s.stamp();
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(*second, *first);
  const auto pttl_before = admin.call({"PTTL", s.layout.lease_key("a")}).integer;
  reply = s.renew({"a", "b"}, *first, 2);
  EXPECT_EQ(reply.elements.at(0).integer, -1) << reply.debug_string();
  EXPECT_EQ(reply.elements.at(1).integer, -1) << reply.debug_string();
  EXPECT_EQ(reply.elements.at(2).str, *second);
  EXPECT_LE(admin.call({"PTTL", s.layout.lease_key("a")}).integer, pttl_before) << "-1: not renewed";
  reply = s.renew({"a", "b"}, *second, 0);
  EXPECT_TRUE(is_one(reply.elements.at(0)));
  EXPECT_EQ(reply.elements.at(1).debug_string(),
            Reply::make_array({Reply::make_integer(0), Reply::make_string("inc-9")}).debug_string());

  // A standby that outranks me bids on a: the stamp changes again, and the
  // leader that trusted the last stamp hears the bid once it sends again.
  const auto refused = s.acquire("a", "you", "inc-2", "5");
  ASSERT_TRUE(refused.is_array() && refused.elements.at(0).integer == 0) << refused.debug_string();
  const auto third = s.stamp();
  ASSERT_TRUE(third.has_value());
  EXPECT_NE(*third, *second);
  reply = s.renew({"a"}, *second, 1);
  EXPECT_EQ(reply.elements.at(0).integer, -1) << reply.debug_string();
  reply = s.renew({"a"}, *third, 0);
  ASSERT_TRUE(reply.elements.at(0).is_array()) << reply.debug_string();
  EXPECT_EQ(reply.elements.at(0).elements.at(1).str, "you");

  // The hand-over to the bidder changes the holder record: a new stamp.
  const auto handed = s.eval(lh::detail::hand_over_script(lh::detail::Notices::published, true),
                             {s.layout.lease_key("a"), s.layout.holder_key("a"), s.layout.change_stamp_key()},
                             {"me", s.layout.release_channel("a"), "inc-1", "you", "inc-2", "5", "5000"});
  EXPECT_TRUE(is_one(handed)) << handed.debug_string();
  const auto fourth = s.stamp();
  ASSERT_TRUE(fourth.has_value());
  EXPECT_NE(*fourth, *third);
}

// A stamp never comes back: a server that lost its keys (or a replica
// promoted without the last writes) counts again from 1, but the server's
// time tells the new stamps from every one seen before.
TEST(ChangeStamp, AStampIsNeverRepeatedAfterTheServerLosesIt) {
  StampServer s;
  auto admin = s.server.admin();
  std::set<std::string> seen;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(is_one(s.acquire("g" + std::to_string(i), "me", "inc-" + std::to_string(round)).elements.at(0)));
      const auto stamp = s.stamp();
      ASSERT_TRUE(stamp.has_value());
      EXPECT_TRUE(seen.insert(*stamp).second) << "stamp " << *stamp << " seen before";
    }
    admin.call({"FLUSHALL"});
  }
}

// Where TIME is refused in scripts, a writer cannot make a stamp that never
// repeats: it deletes the stamp, the batch answers none, and so no group is
// ever renewed on its word.
TEST(ChangeStamp, AServerThatRefusesTimeKeepsNoStampAndEveryRecordIsRead) {
  lh::test::RedisServerOptions options;
  options.extra_config = {"rename-command TIME \"\""};
  StampServer s(options);
  ASSERT_TRUE(is_one(s.acquire("a", "me", "inc-1").elements.at(0)));
  EXPECT_FALSE(s.stamp().has_value());
  const auto reply = s.renew({"a"}, "", 0);
  ASSERT_TRUE(reply.is_array() && reply.elements.size() == 2) << reply.debug_string();
  EXPECT_TRUE(is_one(reply.elements[0]));
  EXPECT_TRUE(reply.elements[1].is_nil()) << reply.debug_string();
}

}  // namespace
}  // namespace integration_change_stamp_test
