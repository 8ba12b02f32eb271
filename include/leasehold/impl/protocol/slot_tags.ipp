#include <leasehold/impl/protocol/slot_tags.hpp>

#include <leasehold/impl/protocol/key_slot.hpp>

#include <array>
#include <cassert>
#include <cstddef>
#include <string>

namespace leasehold::cluster::detail {

namespace {

constexpr std::string_view alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
constexpr std::size_t max_tag = 4;

struct Tag {
  std::array<char, max_tag> text{};
  std::uint8_t size = 0;
};

// Candidates in order of length, then of alphabet: the first name found for
// a slot is kept. Every slot is reached by some three-character name (CRC16
// spreads them: 238,328 names over 16,384 slots); four is the safety net.
std::array<Tag, slot_count> compute_tags() {
  std::array<Tag, slot_count> tags{};
  std::size_t found = 0;
  std::string name;
  for (std::size_t length = 1; length <= max_tag && found < slot_count; ++length) {
    std::size_t combinations = 1;
    for (std::size_t i = 0; i < length; ++i) combinations *= alphabet.size();
    name.assign(length, alphabet[0]);
    for (std::size_t n = 0; n < combinations && found < slot_count; ++n) {
      std::size_t rest = n;
      for (std::size_t i = length; i-- > 0;) {
        name[i] = alphabet[rest % alphabet.size()];
        rest /= alphabet.size();
      }
      Tag& tag = tags[crc16_xmodem(name) % slot_count];
      if (tag.size != 0) continue;
      name.copy(tag.text.data(), length);
      tag.size = static_cast<std::uint8_t>(length);
      ++found;
    }
  }
  assert(found == slot_count);
  return tags;
}

}  // namespace

std::string_view slot_tag(std::uint16_t slot) {
  static const std::array<Tag, slot_count> tags = compute_tags();
  const Tag& tag = tags[slot % slot_count];
  return {tag.text.data(), tag.size};
}

}  // namespace leasehold::cluster::detail
