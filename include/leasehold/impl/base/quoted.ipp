#include <leasehold/impl/base/quoted.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace leasehold::detail {

bool has_control_char(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

std::string printable(std::string_view s, std::size_t max_bytes) {
  std::string out;
  for (char c : s.substr(0, max_bytes)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  if (s.size() > max_bytes) out += "...";
  return out;
}

std::string quoted(std::string_view s) { return '"' + printable(s, 64) + '"'; }

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace leasehold::detail
