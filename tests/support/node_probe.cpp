#include "support/node_probe.hpp"

#include <exception>

namespace leasehold::test {

std::optional<redis::Reply> try_call(const AdminClientOptions& options, std::vector<std::string> args) {
  try {
    AdminClient client(options);
    return client.call(std::move(args));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string info_field(const std::string& info, std::string_view key) {
  const std::string marker = "\n" + std::string(key) + ":";
  const std::string text = "\n" + info;  // the first line counts too
  const auto at = text.find(marker);
  if (at == std::string::npos) return {};
  const auto begin = at + marker.size();
  return text.substr(begin, text.find_first_of("\r\n", begin) - begin);
}

}  // namespace leasehold::test
