#include <leasehold/impl/redis/sentinel_rules.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace leasehold::redis::detail {

namespace {

std::string describe(const SentinelAddress& sentinel) {
  return MasterAddress{sentinel.host, sentinel.port}.to_string();
}

std::optional<std::uint16_t> parse_port(std::string_view text) {
  unsigned value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc{} || ptr != end || value == 0 || value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

}  // namespace

std::string MasterAddress::to_string() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

SentinelAnswer read_master_reply(const Reply& reply) {
  SentinelAnswer answer;
  if (reply.is_nil() || (reply.is_array() && reply.elements.empty())) {
    answer.kind = SentinelAnswer::Kind::null;
    return answer;
  }
  if (reply.is_error()) {
    answer.error = {make_error_code(classify_server_error(reply.str)), reply.str};
    return answer;
  }
  if (reply.is_array() && reply.elements.size() == 2 && reply.elements[0].is_string() &&
      reply.elements[1].is_string() && !reply.elements[0].str.empty()) {
    if (const auto port = parse_port(reply.elements[1].str)) {
      answer.kind = SentinelAnswer::Kind::address;
      answer.address = {reply.elements[0].str, *port};
      return answer;
    }
  }
  answer.error = {make_error_code(errc::unexpected_reply),
                  "SENTINEL GET-MASTER-ADDR-BY-NAME answered " + reply.debug_string()};
  return answer;
}

SentinelRoster::SentinelRoster(const std::vector<SentinelAddress>& sentinels) : order_(sentinels) {}

void SentinelRoster::answered(std::size_t k) {
  if (k == 0 || k >= order_.size()) return;
  std::rotate(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(k),
              order_.begin() + static_cast<std::ptrdiff_t>(k) + 1);
}

void SentinelRoster::distrust_first() {
  if (order_.size() > 1) std::rotate(order_.begin(), order_.begin() + 1, order_.end());
}

void ResolveRound::add(const SentinelAddress& sentinel, const SentinelAnswer& answer) {
  if (answer.kind == SentinelAnswer::Kind::null) {
    nulls_.push_back(describe(sentinel));
    return;
  }
  if (answer.kind != SentinelAnswer::Kind::failed) return;
  failures_.push_back(fmt::format("{}: {}", describe(sentinel), answer.error.message()));
  if (!shared_failure_) {
    shared_failure_ = answer.error.code;
  } else if (*shared_failure_ != answer.error.code) {
    mixed_failures_ = true;
  }
}

Error ResolveRound::outcome() const {
  if (!nulls_.empty()) {
    std::string detail = fmt::format("no master named \"{}\" at sentinel {} (each answered nil)", master_name_,
                                     join(nulls_));
    if (!failures_.empty()) detail += fmt::format("; not reached: {}", join(failures_));
    return {make_error_code(errc::master_unknown), std::move(detail)};
  }
  // A wrong sentinel password everywhere is one mistake worth its own code;
  // anything else means no sentinel could be reached.
  const bool same_cause = shared_failure_ && !mixed_failures_ && *shared_failure_ != make_error_code(errc::timeout) &&
                          *shared_failure_ != make_error_code(errc::connection_lost);
  const error_code code = same_cause ? *shared_failure_ : make_error_code(errc::sentinel_unreachable);
  return {code, fmt::format("asking the sentinels for master \"{}\": {}", master_name_, join(failures_))};
}

std::optional<MasterAddress> parse_switch_master(std::string_view payload, std::string_view master_name) {
  std::vector<std::string_view> fields;
  std::size_t pos = 0;
  while (pos <= payload.size() && fields.size() < 6) {
    const auto space = payload.find(' ', pos);
    fields.push_back(payload.substr(pos, space == std::string_view::npos ? std::string_view::npos : space - pos));
    if (space == std::string_view::npos) break;
    pos = space + 1;
  }
  if (fields.size() != 5 || fields[0] != master_name || fields[3].empty()) return std::nullopt;
  const auto port = parse_port(fields[4]);
  if (!port) return std::nullopt;
  return MasterAddress{std::string(fields[3]), *port};
}

Error check_role(const Reply& reply) {
  if (!reply.is_array() || reply.elements.empty() ||
      !(reply.elements[0].is_string() || reply.elements[0].is_status())) {
    return {make_error_code(errc::unexpected_reply), "ROLE answered " + reply.debug_string()};
  }
  const std::string& role = reply.elements[0].str;
  if (role == "master") return {};
  if (role == "active-replica") {
    // KeyDB's multi-master replication: two servers take writes to the same
    // key and merge them later, so two instances could each win the lease.
    return {make_error_code(errc::not_master),
            "ROLE says \"active-replica\": KeyDB active replication accepts writes on more than one master, "
            "so two instances could each hold a lease; connect to a server without active-replica"};
  }
  return {make_error_code(errc::not_master), fmt::format("ROLE says \"{}\"", role)};
}

RedisOptions sentinel_node_options(const RedisOptions& base, const SentinelAddress& sentinel) {
  RedisOptions node = base;
  node.sentinel.reset();
  node.host = sentinel.host;
  node.port = sentinel.port;
  node.unix_socket.clear();
  node.database = 0;
  node.username = base.sentinel->username;
  node.password = base.sentinel->password;
  node.tls = base.sentinel->tls;
  node.connect_timeout = std::min(base.connect_timeout, base.sentinel->query_timeout);
  return node;
}

}  // namespace leasehold::redis::detail
