// KeyLayout: every key and channel of a group, in the plain and the
// hash-tagged (Cluster) form, and the reverse lookups.

#include <leasehold/key_layout.hpp>

#include <gtest/gtest.h>

using leasehold::KeyLayout;

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
  EXPECT_EQ(l.release_channel("reports"), "leader:{reports}:released");
  EXPECT_EQ(l.tick_record_key("reports"), "leader:{reports}:ticks");
  EXPECT_EQ(l.group_of_channel("leader:{reports}:released"), "reports");
  EXPECT_EQ(l.group_of_key("leader:{reports}"), "reports");
  EXPECT_FALSE(l.group_of_key("leader:reports").has_value());
  EXPECT_FALSE(l.group_of_key("leader:{reports}:token").has_value());
}

TEST(KeyLayout, GlobCharactersOfThePrefixMatchOnlyThemselves) {
  EXPECT_EQ(KeyLayout("a*b?[c]\\:").release_pattern(), "a\\*b\\?\\[c\\]\\\\:*:released");
}

TEST(KeyLayout, FindsTheGroupOfAChannelOrKeyAndNothingElse) {
  const KeyLayout l("svc:");
  EXPECT_EQ(l.group_of_channel("svc:a:released"), "a");
  EXPECT_EQ(l.group_of_channel("svc:a:b:released"), "a:b");
  EXPECT_FALSE(l.group_of_channel("svc::released").has_value());
  EXPECT_FALSE(l.group_of_channel("other:a:released").has_value());
  EXPECT_FALSE(l.group_of_channel("svc:a").has_value());
  EXPECT_EQ(l.group_of_key("svc:a"), "a");
  EXPECT_FALSE(l.group_of_key("svc:a:token").has_value());
  EXPECT_FALSE(l.group_of_key("svc:a:ticks").has_value());
  EXPECT_FALSE(l.group_of_key("svc:").has_value());
}
