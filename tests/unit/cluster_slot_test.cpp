// Redis Cluster key slots: CRC-16/XMODEM and the hash-tag rule of the Redis
// Cluster specification. The integration test HarnessCluster.KeySlotAgreesWithClusterKeyslot
// checks the same function against a real server's CLUSTER KEYSLOT.

#include <leasehold/impl/protocol/key_slot.hpp>

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace unit_cluster_slot_test {
namespace {

using namespace leasehold::cluster::detail;
using namespace std::string_view_literals;

TEST(ClusterSlot, Crc16IsXmodem) {
  // The check value the specification gives for its CRC16.
  EXPECT_EQ(crc16_xmodem("123456789"), 0x31C3);
  EXPECT_EQ(crc16_xmodem(""), 0);
  // One byte: the polynomial division of the byte alone.
  EXPECT_EQ(crc16_xmodem("\x01"sv), 0x1021);
  EXPECT_EQ(crc16_xmodem("A"), 0x58E5);
  // Bytes are unsigned: 0x80 and above are not sign-extended.
  EXPECT_EQ(crc16_xmodem("\x80"sv), 0x9188);
  EXPECT_EQ(crc16_xmodem("\xff"sv), 0x1EF0);
}

TEST(ClusterSlot, KeySlotIsTheCrcModuloTheSlotCount) {
  // 0x31C3 = 12739 is below 16384: the slot is the CRC itself.
  EXPECT_EQ(key_slot("123456789"), 0x31C3);
  EXPECT_EQ(key_slot("123456789"), 12739);
  EXPECT_EQ(key_slot(""), 0);
  // Values CLUSTER KEYSLOT gave on Redis 7.0.15.
  EXPECT_EQ(key_slot("foo"), 12182);
  EXPECT_EQ(key_slot("somekey"), 11058);
  EXPECT_EQ(key_slot("{user1}.following"), 8106);
  // CRC 0x9188 ("\x80") is above 16383: only its low 14 bits count.
  EXPECT_EQ(key_slot("\x80"sv), 0x9188 % 16384);
  EXPECT_EQ(key_slot("\x80"sv), 0x1188);
}

TEST(ClusterSlot, KeysWithANulByteHashEveryByte) {
  const std::string with_nul("a\0b", 3);
  EXPECT_EQ(key_slot(with_nul), crc16_xmodem(with_nul) % slot_count);
  EXPECT_NE(key_slot(with_nul), key_slot("a"));
}

TEST(ClusterSlot, HashTagIsBetweenTheFirstOpenBraceAndTheNextCloseBrace) {
  EXPECT_EQ(hash_tag("{user1}.following"), "user1");
  EXPECT_EQ(hash_tag("a{b}c{d}"), "b") << "only the first tag counts";
  EXPECT_EQ(hash_tag("a}b{c}"), "c") << "a } before the first { does not close anything";
  EXPECT_EQ(hash_tag("{{a}}"), "{a") << "the first { opens; the first } after it closes";
  EXPECT_EQ(hash_tag("x{ }y"), " ");
  EXPECT_EQ(hash_tag("lease:{group}:token"), "group");
}

TEST(ClusterSlot, WithoutANonEmptyTagTheWholeKeyIsHashed) {
  for (const std::string_view key : {"{}"sv, "{"sv, "}"sv, "}{"sv, "a{b"sv, "{}{a}"sv, "plain"sv, ""sv}) {
    EXPECT_EQ(hash_tag(key), key) << key;
    EXPECT_EQ(key_slot(key), crc16_xmodem(key) % slot_count) << key;
  }
  // "{}{a}": the first { meets } at once, so "a" is not the tag either.
  EXPECT_NE(key_slot("{}{a}"), key_slot("a"));
}

TEST(ClusterSlot, KeysSharingATagShareASlot) {
  EXPECT_EQ(key_slot("a{b}c{d}"), key_slot("b"));
  EXPECT_EQ(key_slot("{group}:lease"), key_slot("{group}:token"));
  EXPECT_EQ(key_slot("{group}:lease"), key_slot("group"));
  EXPECT_EQ(key_slot("{{a}}"), key_slot("{a"));
}

TEST(ClusterSlot, EverySlotIsBelowTheSlotCount) {
  std::string key;
  for (int i = 0; i < 5000; ++i) {
    key = "key:" + std::to_string(i * 7919);
    EXPECT_LT(key_slot(key), slot_count) << key;
  }
}

}  // namespace
}  // namespace unit_cluster_slot_test
