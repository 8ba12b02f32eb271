// KeyLayout: every key and channel of a group, in the plain and the
// hash-tagged (Cluster) form, and the reverse lookups.

#include <leasehold/key_layout.hpp>

#include <leasehold/impl/protocol/key_slot.hpp>
#include <leasehold/impl/protocol/slot_tags.hpp>
#include <leasehold/impl/options/name_rules.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace unit_key_layout_test {
namespace {

using leasehold::KeyLayout;
using leasehold::cluster::detail::key_slot;

TEST(KeyLayout, PlainFormMatchesTheSeedLayout) {
  const KeyLayout l("leader:");
  EXPECT_EQ(l.lease_key("reports"), "leader:reports");
  EXPECT_EQ(l.token_key("reports"), "leader:reports:token");
  EXPECT_EQ(l.release_channel("reports"), "leader:reports:released");
  EXPECT_EQ(l.tick_record_key("reports"), "leader:reports:ticks");
  EXPECT_EQ(l.release_pattern(), "leader:*:released");
}

TEST(KeyLayout, HashTaggedFormPutsEveryKeyOfAGroupInOneSlot) {
  const KeyLayout l("leader:", KeyLayout::Form::hash_tagged);
  EXPECT_EQ(l.lease_key("reports"), "leader:{reports}");
  EXPECT_EQ(l.token_key("reports"), "leader:{reports}:token");
  EXPECT_EQ(l.tick_record_key("reports"), "leader:{reports}:ticks");
  EXPECT_EQ(l.group_of_key("leader:{reports}"), "reports");
  EXPECT_FALSE(l.group_of_key("leader:reports").has_value());
  EXPECT_FALSE(l.group_of_key("leader:{reports}:token").has_value());
}

TEST(KeyLayout, GlobCharactersOfThePrefixMatchOnlyThemselves) {
  EXPECT_EQ(KeyLayout("a*b?[c]\\:").release_pattern(), "a\\*b\\?\\[c\\]\\\\:*:released");
}

// The releaser's id is the whole message on a group's own channel.
std::optional<std::pair<std::string, std::string>> notice(const KeyLayout& l, std::string_view channel,
                                                          std::string_view message) {
  const auto n = l.read_release_notice(channel, message);
  if (!n) return std::nullopt;
  return std::pair{std::string(n->group), std::string(n->releaser)};
}

using Notice = std::pair<std::string, std::string>;

TEST(KeyLayout, FindsTheGroupOfAChannelOrKeyAndNothingElse) {
  const KeyLayout l("svc:");
  EXPECT_EQ(notice(l, "svc:a:released", "w1"), Notice("a", "w1"));
  EXPECT_EQ(notice(l, "svc:a:b:released", "w1"), Notice("a:b", "w1"));
  EXPECT_FALSE(notice(l, "svc::released", "w1").has_value());
  EXPECT_FALSE(notice(l, "other:a:released", "w1").has_value());
  EXPECT_FALSE(notice(l, "svc:a", "w1").has_value());
  EXPECT_EQ(l.group_of_key("svc:a"), "a");
  EXPECT_FALSE(l.group_of_key("svc:a:token").has_value());
  EXPECT_FALSE(l.group_of_key("svc:a:ticks").has_value());
  EXPECT_FALSE(l.group_of_key("svc:").has_value());
}

// Sharded pub/sub has no patterns: the groups of one slot share a channel in
// that slot, and the message names the group's lease key.
TEST(KeyLayout, HashTaggedGroupsShareTheReleaseChannelOfTheirSlot) {
  const KeyLayout l("leader:", KeyLayout::Form::hash_tagged);
  std::set<std::string> channels;
  for (int i = 0; i < 2000; ++i) {
    const std::string group = "g" + std::to_string(i);
    const std::string channel = l.release_channel(group);
    EXPECT_EQ(key_slot(channel), key_slot(l.lease_key(group))) << group;
    EXPECT_TRUE(channel.starts_with("leader:slot:{") && channel.ends_with("}:released")) << channel;
    EXPECT_EQ(channel, l.release_channel(group));
    channels.insert(channel);
  }
  // 2,000 groups over 16,384 slots: a few share a slot, and so a channel.
  EXPECT_LT(channels.size(), 2000U);
  EXPECT_GT(channels.size(), 1800U);
  EXPECT_EQ(notice(l, l.release_channel("reports"), "leader:{reports}\nw-1"), Notice("reports", "w-1"));
  EXPECT_EQ(notice(l, "anything", "leader:{a b}\n"), Notice("a b", ""));
  EXPECT_FALSE(notice(l, l.release_channel("reports"), "w-1").has_value());
  EXPECT_FALSE(notice(l, l.release_channel("reports"), "leader:{reports}:token\nw-1").has_value());
  EXPECT_FALSE(notice(l, l.release_channel("reports"), "other:{reports}\nw-1").has_value());
}

// A prefix with a hash tag of its own decides every key's slot; the channel
// follows the keys wherever the prefix puts them.
TEST(KeyLayout, AReleaseChannelStaysInItsKeysSlotWhateverThePrefix) {
  for (const std::string prefix : {"{svc}:", "a{b", "x}{", "p{q}r{", "}a{"}) {
    const KeyLayout l(prefix, KeyLayout::Form::hash_tagged);
    for (const std::string group : {"a", "reports", "g17"}) {
      EXPECT_EQ(key_slot(l.release_channel(group)), key_slot(l.lease_key(group))) << prefix << " " << group;
    }
  }
}

TEST(KeyLayout, EverySlotHasATagThatHashesToIt) {
  for (std::uint16_t slot = 0; slot < leasehold::cluster::detail::slot_count; ++slot) {
    const std::string_view tag = leasehold::cluster::detail::slot_tag(slot);
    ASSERT_FALSE(tag.empty());
    ASSERT_LE(tag.size(), 4U);
    ASSERT_EQ(key_slot(tag), slot);
  }
}

// An empty hash tag first ("{}") would hash each key whole: refused, naming
// the field; other braces keep a group's keys together and are allowed.
TEST(KeyLayout, AnEmptyHashTagInAClusterPrefixIsRefusedNamingTheField) {
  using leasehold::detail::validate_key_prefix;
  for (const std::string prefix : {"{}", "app:{}", "a{}{b}", "}{}"}) {
    try {
      validate_key_prefix(KeyLayout(prefix, KeyLayout::Form::hash_tagged));
      ADD_FAILURE() << prefix << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("ElectorOptions.key_prefix"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(validate_key_prefix(KeyLayout(prefix)));  // one server: no slots
  }
  for (const std::string prefix : {"leader:", "{svc}:", "a{b", "x}{", "{x}{}"}) {
    EXPECT_NO_THROW(validate_key_prefix(KeyLayout(prefix, KeyLayout::Form::hash_tagged))) << prefix;
  }
}

// The empty-restart guard's data marker: one per server (the bare prefix,
// no group's key), one per slot in the hash-tagged form (in the group's
// slot, no group's key either).
TEST(KeyLayout, TheDataMarkerIsOnePerServerOrPerSlotAndNoGroupsKey) {
  const KeyLayout plain("leader:");
  EXPECT_EQ(plain.data_marker_key("reports"), "leader:");
  EXPECT_EQ(plain.data_marker_key("other"), "leader:");
  EXPECT_FALSE(plain.group_of_key(plain.data_marker_key("reports")).has_value());

  const KeyLayout tagged("leader:", KeyLayout::Form::hash_tagged);
  for (int i = 0; i < 200; ++i) {
    const std::string group = "g" + std::to_string(i);
    const std::string marker = tagged.data_marker_key(group);
    EXPECT_EQ(key_slot(marker), key_slot(tagged.lease_key(group))) << group;
    EXPECT_TRUE(marker.starts_with("leader:slot:{") && marker.ends_with("}")) << marker;
    EXPECT_FALSE(tagged.group_of_key(marker).has_value()) << marker;
  }
  // A prefix whose braces decide the slot: every key is in that slot.
  const KeyLayout braced("{app}:leader:", KeyLayout::Form::hash_tagged);
  EXPECT_EQ(key_slot(braced.data_marker_key("reports")), key_slot(braced.lease_key("reports")));
}
}  // namespace
}  // namespace unit_key_layout_test
