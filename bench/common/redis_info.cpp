#include "common/redis_info.hpp"

#include <cstdlib>

namespace leasehold::bench {

InfoFields parse_info(std::string_view text) {
  InfoFields out;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    out.emplace(std::string(line.substr(0, colon)), std::string(line.substr(colon + 1)));
  }
  return out;
}

double info_number(const InfoFields& fields, std::string_view key) {
  const auto it = fields.find(key);
  return it == fields.end() ? 0.0 : std::strtod(it->second.c_str(), nullptr);
}

std::map<std::string, std::uint64_t> parse_commandstats(std::string_view text) {
  std::map<std::string, std::uint64_t> out;
  constexpr std::string_view prefix = "cmdstat_";
  for (const auto& [key, value] : parse_info(text)) {
    if (key.rfind(prefix, 0) != 0) continue;
    const auto at = value.find("calls=");
    if (at == std::string::npos) continue;
    out[key.substr(prefix.size())] = std::strtoull(value.c_str() + at + 6, nullptr, 10);
  }
  return out;
}

std::map<std::string, std::uint64_t> diff(const std::map<std::string, std::uint64_t>& a,
                                          const std::map<std::string, std::uint64_t>& b) {
  std::map<std::string, std::uint64_t> out;
  for (const auto& [name, n] : b) {
    const std::uint64_t before = calls(a, name);
    if (n > before) out[name] = n - before;
  }
  return out;
}

std::uint64_t calls(const std::map<std::string, std::uint64_t>& stats, std::string_view name) {
  const auto it = stats.find(std::string(name));
  return it == stats.end() ? 0 : it->second;
}

}  // namespace leasehold::bench
