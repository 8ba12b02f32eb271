#include "leases.hpp"

#include <leasehold/key_layout.hpp>

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

asio::awaitable<std::vector<LeaseInfo>> read_leases(Connection& redis, std::string_view prefix,
                                                    const std::vector<std::string>& groups) {
  std::vector<LeaseInfo> out;
  if (groups.empty()) co_return out;
  const KeyLayout layout = layout_for(redis.options(), std::string(prefix));
  std::vector<KeyedRequest> requests;
  for (const auto& group : groups) {
    LeaseInfo& info = out.emplace_back();
    info.group = group;
    info.key = layout.lease_key(group);
    redis::Request request;
    request.push({"GET", info.key}).push({"PTTL", info.key}).push({"GET", layout.token_key(group)});
    requests.push_back({info.key, std::move(request)});
  }
  const auto replies = co_await redis.exec_each(std::move(requests));
  for (std::size_t i = 0; i < out.size(); ++i) {
    LeaseInfo& info = out[i];
    const redis::Reply& value = replies.at(i).at(0);
    const redis::Reply& pttl = replies.at(i).at(1);
    const redis::Reply& token = replies.at(i).at(2);
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

asio::awaitable<std::vector<std::string>> scan_groups(Connection& redis, std::string_view prefix) {
  const KeyLayout layout = layout_for(redis.options(), std::string(prefix));
  std::vector<std::string> groups;
  co_await redis.scan(escape_glob(prefix) + "*", [&](const redis::Reply& keys) {
    for (const redis::Reply& key : keys.elements) {
      std::string_view name = key.str;
      // A fencing counter or holder record names its group too: both outlive the lease.
      for (const std::string_view suffix : {KeyLayout::token_suffix, KeyLayout::holder_suffix}) {
        if (name.ends_with(suffix)) name.remove_suffix(suffix.size());
      }
      if (const auto group = layout.group_of_key(name)) groups.emplace_back(*group);
    }
  });
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  co_return groups;
}

}  // namespace leasehold::cli
