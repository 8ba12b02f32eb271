#pragma once
// Which of Redis Cluster's 16384 hash slots a key lives in (the Redis Cluster
// specification, "Keys distribution model" and "Hash tags"). Pure: no I/O.

#include <cstdint>
#include <string_view>

namespace leasehold::cluster::detail {

/// The number of hash slots in a Redis Cluster; slots are 0 .. slot_count - 1.
inline constexpr std::uint16_t slot_count = 16384;

/// CRC-16/XMODEM of `data` (polynomial 0x1021, initial value 0, neither
/// input nor output reflected, no final xor): 0x31C3 for "123456789".
std::uint16_t crc16_xmodem(std::string_view data) noexcept;

/// The part of `key` that decides its slot: the bytes between the first `{`
/// and the first `}` after it when there is at least one byte between them;
/// otherwise the whole key ("{}", "{" and "a}{" hash whole).
std::string_view hash_tag(std::string_view key) noexcept;

/// CRC16(hash_tag(key)) mod 16384, what CLUSTER KEYSLOT answers.
std::uint16_t key_slot(std::string_view key) noexcept;

}  // namespace leasehold::cluster::detail
