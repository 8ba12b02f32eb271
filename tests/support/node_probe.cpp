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

std::uint64_t script_calls(AdminClient& admin) {
  const std::string stats = admin.call({"INFO", "commandstats"}).str;
  std::uint64_t calls = 0;
  for (const char* command : {"cmdstat_evalsha", "cmdstat_eval"}) {
    const std::string field = info_field(stats, command);  // calls=N,usec=...
    if (field.starts_with("calls=")) calls += std::stoull(field.substr(6));
  }
  return calls;
}

}  // namespace leasehold::test
