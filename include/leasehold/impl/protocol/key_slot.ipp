#include <leasehold/impl/protocol/key_slot.hpp>

#include <array>

namespace leasehold::cluster::detail {

namespace {

constexpr std::uint16_t xmodem_polynomial = 0x1021;

// The CRC of each byte value on its own: the register after shifting the
// byte in from the top, eight steps of the polynomial division.
constexpr std::array<std::uint16_t, 256> byte_table() {
  std::array<std::uint16_t, 256> table{};
  for (unsigned value = 0; value < table.size(); ++value) {
    unsigned crc = value << 8;
    for (int step = 0; step < 8; ++step) {
      crc = (crc & 0x8000U) != 0 ? (crc << 1) ^ xmodem_polynomial : crc << 1;
    }
    table[value] = static_cast<std::uint16_t>(crc & 0xFFFFU);
  }
  return table;
}

constexpr auto crc_of_byte = byte_table();

}  // namespace

std::uint16_t crc16_xmodem(std::string_view data) noexcept {
  unsigned crc = 0;
  for (const char ch : data) {
    const unsigned top = ((crc >> 8) ^ static_cast<unsigned char>(ch)) & 0xFFU;
    crc = ((crc << 8) ^ crc_of_byte[top]) & 0xFFFFU;
  }
  return static_cast<std::uint16_t>(crc);
}

std::string_view hash_tag(std::string_view key) noexcept {
  const auto open = key.find('{');
  if (open == std::string_view::npos) return key;
  const auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

std::uint16_t key_slot(std::string_view key) noexcept {
  // slot_count is a power of two: the low 14 bits.
  return static_cast<std::uint16_t>(crc16_xmodem(hash_tag(key)) % slot_count);
}

}  // namespace leasehold::cluster::detail
