#include "leases.hpp"

#include <leasehold/key_layout.hpp>

#include "connection.hpp"
#include "exit_code.hpp"

#include <algorithm>
#include <charconv>

namespace leasehold::cli {

namespace asio = boost::asio;

namespace {


std::int64_t parse_token(const redis::Reply& reply) {
  std::int64_t value = 0;
  if (reply.is_string()) std::from_chars(reply.str.data(), reply.str.data() + reply.str.size(), value);
  return value;
}

}  // namespace

std::string escape_glob(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

asio::awaitable<std::vector<LeaseInfo>> read_leases(redis::Client& client, std::string_view prefix,
                                                    const std::vector<std::string>& groups) {
  std::vector<LeaseInfo> out;
  if (groups.empty()) co_return out;
  const KeyLayout layout{std::string(prefix)};
  redis::Request request;
  for (const auto& group : groups) {
    LeaseInfo& info = out.emplace_back();
    info.group = group;
    info.key = layout.lease_key(group);
    request.push({"GET", info.key}).push({"PTTL", info.key}).push({"GET", layout.token_key(group)});
  }
  const auto replies = co_await exec(client, std::move(request));
  for (std::size_t i = 0; i < out.size(); ++i) {
    LeaseInfo& info = out[i];
    const redis::Reply& value = replies.at(3 * i);
    const redis::Reply& pttl = replies.at(3 * i + 1);
    const redis::Reply& token = replies.at(3 * i + 2);
    for (const redis::Reply* r : {&value, &pttl, &token}) {
      if (r->is_error() && info.error.empty()) info.error = r->str;
    }
    if (!info.error.empty()) continue;
    info.token = parse_token(token);
    // The three reads are not atomic: a key that expired between GET and
    // PTTL (PTTL -2) is reported as not held, which it now is.
    // An empty holder is the empty-restart guard's marker, not a holder.
    if (value.is_string() && value.str.empty() && pttl.is_integer() && pttl.integer > 0) {
      info.guard_ms = pttl.integer;
    } else if (value.is_string() && pttl.is_integer() && pttl.integer != -2) {
      info.holder = value.str;
      info.ttl_ms = pttl.integer;
    }
  }
  co_return out;
}

asio::awaitable<std::vector<std::string>> scan_groups(redis::Client& client, std::string_view prefix) {
  const KeyLayout layout{std::string(prefix)};
  const std::string pattern = escape_glob(prefix) + "*";
  std::vector<std::string> groups;
  std::string cursor = "0";
  do {
    redis::Request scan{"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"};
    auto replies = co_await exec(client, std::move(scan));
    const redis::Reply& reply = replies.at(0);
    check_reply(reply, "SCAN");
    if (!reply.is_array() || reply.elements.size() != 2 || !reply.elements[1].is_array()) {
      throw Failure(exit_unavailable, "SCAN: unexpected reply " + reply.debug_string());
    }
    cursor = reply.elements[0].str;
    for (const redis::Reply& key : reply.elements[1].elements) {
      std::string_view name = key.str;
      // A fencing counter or holder record names its group too: both outlive the lease.
      for (const std::string_view suffix : {KeyLayout::token_suffix, KeyLayout::holder_suffix}) {
        if (name.ends_with(suffix)) name.remove_suffix(suffix.size());
      }
      if (const auto group = layout.group_of_key(name)) groups.emplace_back(*group);
    }
  } while (cursor != "0");
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  co_return groups;
}

}  // namespace leasehold::cli
