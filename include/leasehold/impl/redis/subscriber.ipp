#include <leasehold/impl/redis/subscriber.hpp>

#include <leasehold/redis/codec.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace leasehold::redis::detail {

namespace {

void encode(std::string_view verb, const std::set<std::string>& names, std::string& out) {
  std::vector<std::string_view> argv{verb};
  argv.insert(argv.end(), names.begin(), names.end());
  encode_command(out, argv);
}

}  // namespace

std::size_t Subscriber::append(std::string_view verb, std::set<std::string>& wanted,
                               const std::vector<std::string>& names, std::string& out) {
  std::vector<std::string_view> fresh{verb};
  for (const auto& name : names) {
    if (wanted.insert(name).second) fresh.push_back(name);
  }
  if (fresh.size() == 1) return 0;
  encode_command(out, fresh);
  return 1;
}

std::size_t Subscriber::subscribe(const std::vector<std::string>& channels, std::string& out) {
  return append("SUBSCRIBE", channels_, channels, out);
}

std::size_t Subscriber::psubscribe(const std::vector<std::string>& patterns, std::string& out) {
  return append("PSUBSCRIBE", patterns_, patterns, out);
}

std::size_t Subscriber::unsubscribe(const std::vector<std::string>& channels, std::string& out) {
  std::vector<std::string_view> gone{"UNSUBSCRIBE"};
  for (const auto& c : channels) {
    if (channels_.erase(c) != 0) gone.push_back(c);
  }
  if (gone.size() == 1) return 0;
  encode_command(out, gone);
  return 1;
}

std::size_t Subscriber::ssubscribe(const std::vector<std::string>& channels, std::string& out) {
  std::size_t commands = 0;
  for (const auto& c : channels) {
    if (!shard_channels_.insert(c).second) continue;
    encode_command(out, std::array<std::string_view, 2>{"SSUBSCRIBE", c});
    ++commands;
  }
  return commands;
}

std::size_t Subscriber::sunsubscribe(const std::vector<std::string>& channels, std::string& out) {
  std::size_t commands = 0;
  for (const auto& c : channels) {
    if (shard_channels_.erase(c) == 0) continue;
    encode_command(out, std::array<std::string_view, 2>{"SUNSUBSCRIBE", c});
    ++commands;
  }
  return commands;
}

std::size_t Subscriber::resubscribe(std::string& out) {
  server_subscriptions_ = 0;
  server_shard_subscriptions_ = 0;
  std::size_t commands = 0;
  for (auto [verb, wanted] : {std::pair{"SUBSCRIBE", &channels_}, std::pair{"PSUBSCRIBE", &patterns_}}) {
    if (wanted->empty()) continue;
    encode(verb, *wanted, out);
    ++commands;
  }
  for (const auto& c : shard_channels_) {
    encode_command(out, std::array<std::string_view, 2>{"SSUBSCRIBE", c});
    ++commands;
  }
  return commands;
}

Subscriber::Event Subscriber::on_push(const Reply& reply) {
  using Kind = Event::Kind;
  if (reply.is_error()) return {Kind::error_reply, {}, {}, {make_error_code(classify_server_error(reply.str)), reply.str}};
  if (!reply.is_array() || reply.elements.empty() || !reply.elements[0].is_string()) {
    return {Kind::protocol_error, {}, {},
            {make_error_code(errc::protocol_error), fmt::format("unexpected pub/sub reply: {}", reply.debug_string())}};
  }
  const std::string& kind = reply.elements[0].str;
  const std::size_t n = reply.elements.size();
  const auto arg = [&](std::size_t i) -> std::string_view { return i < n ? std::string_view(reply.elements[i].str) : ""; };
  if (kind == "message" && n == 3) return {Kind::message, arg(1), arg(2)};
  if (kind == "pmessage" && n == 4) return {Kind::message, arg(2), arg(3)};  // [pmessage, pattern, channel, payload]
  if (kind == "smessage" && n == 3) return {Kind::message, arg(1), arg(2)};
  if (kind == "ssubscribe" || kind == "sunsubscribe") return on_shard_push(reply, kind == "ssubscribe");
  const bool channel_kind = kind == "subscribe" || kind == "unsubscribe";
  if (!channel_kind && kind != "psubscribe" && kind != "punsubscribe") return {};  // "pong": activity only
  // The server counts this connection's subscriptions in every reply: enough
  // to tell when all wanted names are confirmed, without a second set.
  if (n == 3 && reply.elements[2].is_integer()) {
    server_subscriptions_ = static_cast<std::size_t>(std::max<std::int64_t>(0, reply.elements[2].integer));
  }
  const bool confirms = kind == "subscribe" || kind == "psubscribe";
  const auto& wanted = channel_kind ? channels_ : patterns_;
  if (confirms && wanted.count(std::string(arg(1))) != 0) return {Kind::subscribed, arg(1)};
  return {};
}

// [ssubscribe|sunsubscribe, channel, count]. A sunsubscribe for a channel
// still wanted was not asked for: the server dropped it (the slot moved).
Subscriber::Event Subscriber::on_shard_push(const Reply& reply, bool subscribed) {
  using Kind = Event::Kind;
  if (reply.elements.size() != 3 || !reply.elements[2].is_integer()) return {};
  server_shard_subscriptions_ = static_cast<std::size_t>(std::max<std::int64_t>(0, reply.elements[2].integer));
  const std::string_view channel = reply.elements[1].str;
  const auto wanted = shard_channels_.find(std::string(channel));
  if (wanted == shard_channels_.end()) return {};
  if (subscribed) return {Kind::subscribed, channel};
  shard_channels_.erase(wanted);
  return {Kind::dropped, channel};
}

}  // namespace leasehold::redis::detail
