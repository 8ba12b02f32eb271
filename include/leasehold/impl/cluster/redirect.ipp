#include <leasehold/impl/cluster/redirect.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <utility>

namespace leasehold::cluster::detail {

namespace {

using namespace std::string_view_literals;

constexpr auto npos = std::string_view::npos;

std::optional<unsigned> parse_number(std::string_view text) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  unsigned value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

// "<endpoint>:<port>": the port follows the last ':', so that an IPv6
// address (which Redis writes without brackets) keeps its own colons.
std::optional<RedirectTarget> parse_target(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == npos) return std::nullopt;
  const auto port = parse_number(text.substr(colon + 1));
  if (!port || *port == 0 || *port > 65535) return std::nullopt;
  RedirectTarget target;
  target.port = static_cast<std::uint16_t>(*port);
  auto host = text.substr(0, colon);
  if (host.empty()) {
    target.kind = RedirectTarget::Host::same_node;
    return target;
  }
  if (host == "?") {
    target.kind = RedirectTarget::Host::unknown;
    return target;
  }
  if (host.front() == '[' || host.back() == ']') {
    // Not what Redis writes, but what an address with a port usually looks like.
    if (host.size() < 3 || host.front() != '[' || host.back() != ']') return std::nullopt;
    host = host.substr(1, host.size() - 2);
  }
  if (host.find_first_of("[]") != npos) return std::nullopt;
  target.host = std::string(host);
  return target;
}

// "MOVED <slot> <endpoint>:<port>" or "ASK ...", after the first word.
ClusterError parse_redirect(ClusterError::Kind kind, std::string_view rest) {
  ClusterError malformed{ClusterError::Kind::malformed, 0, {}};
  const auto space = rest.find(' ');
  if (space == npos) return malformed;
  const auto slot = parse_number(rest.substr(0, space));
  if (!slot || *slot >= slot_count) return malformed;
  const auto endpoint = rest.substr(space + 1);
  if (endpoint.find(' ') != npos) return malformed;
  const auto target = parse_target(endpoint);
  if (!target) return malformed;
  return {kind, static_cast<std::uint16_t>(*slot), *target};
}

std::chrono::milliseconds backoff(const RedirectLimits& limits, int retries) {
  auto delay = limits.backoff_min;
  for (int i = 0; i < retries && delay < limits.backoff_max; ++i) delay *= 2;
  return std::min(delay, limits.backoff_max);
}

}  // namespace

std::optional<ClusterNode> RedirectTarget::resolve(std::string_view answering_host) const {
  switch (kind) {
    case Host::named: return ClusterNode{{}, host, port};
    case Host::same_node:
      if (answering_host.empty()) return std::nullopt;
      return ClusterNode{{}, std::string(answering_host), port};
    case Host::unknown: return std::nullopt;
  }
  return std::nullopt;
}

std::string RedirectTarget::to_string() const {
  switch (kind) {
    case Host::named: return ClusterNode{{}, host, port}.to_string();
    case Host::same_node: return fmt::format(":{}", port);
    case Host::unknown: return fmt::format("?:{}", port);
  }
  return {};
}

ClusterError read_cluster_error(std::string_view text) {
  const auto space = text.find(' ');
  const auto word = text.substr(0, space);
  const auto rest = space == npos ? std::string_view{} : text.substr(space + 1);
  if (word == "MOVED") return parse_redirect(ClusterError::Kind::moved, rest);
  if (word == "ASK") return parse_redirect(ClusterError::Kind::ask, rest);
  if (word == "TRYAGAIN") return {ClusterError::Kind::try_again, 0, {}};
  if (word == "CLUSTERDOWN") return {ClusterError::Kind::cluster_down, 0, {}};
  return {};
}

std::string_view to_string(ClusterError::Kind kind) noexcept {
  switch (kind) {
    case ClusterError::Kind::moved: return "moved"sv;
    case ClusterError::Kind::ask: return "ask"sv;
    case ClusterError::Kind::try_again: return "try_again"sv;
    case ClusterError::Kind::cluster_down: return "cluster_down"sv;
    case ClusterError::Kind::malformed: return "malformed"sv;
    case ClusterError::Kind::other: return "other"sv;
  }
  return "other"sv;
}

RedirectLimits RedirectLimits::from(const ClusterOptions& options) {
  return {options.max_redirects, options.retry_backoff_min, options.retry_backoff_max, options.retry_timeout};
}

RedirectBudget::RedirectBudget(const RedirectLimits& limits, Clock::time_point first_send)
    : limits_(limits), first_send_(first_send), deadline_(first_send + limits.retry_timeout) {}

RedirectStep RedirectBudget::on_error(std::string_view text, std::string_view answering_host,
                                      Clock::time_point now) {
  const ClusterError reply = read_cluster_error(text);
  switch (reply.kind) {
    case ClusterError::Kind::moved:
    case ClusterError::Kind::ask: return redirect(reply, text, answering_host);
    case ClusterError::Kind::try_again:
    case ClusterError::Kind::cluster_down: return retry(reply, text, now);
    case ClusterError::Kind::malformed:
      return give_up(reply.kind, errc::unexpected_reply, fmt::format("unreadable cluster redirection: {}", text));
    case ClusterError::Kind::other: break;
  }
  return {};
}

RedirectStep RedirectBudget::redirect(const ClusterError& reply, std::string_view text,
                                      std::string_view answering_host) {
  if (redirects_ >= limits_.max_redirects) {
    return give_up(reply.kind, errc::server_error,
                   fmt::format("still redirected after {} redirections (max_redirects): {}", redirects_, text));
  }
  ++redirects_;
  RedirectStep step;
  step.action = RedirectStep::Action::resend;
  step.cause = reply.kind;
  step.slot = reply.slot;
  step.node = reply.target.resolve(answering_host);
  if (reply.kind == ClusterError::Kind::moved) {
    step.refresh_map = true;
  } else if (step.node) {
    step.asking = true;
  } else {
    // An ASK to a node without a usable endpoint: the importing node is
    // not in a map that serves the slot from the old one. Nothing to do
    // but wait for the migration to show in the map.
    step.refresh_map = true;
  }
  last_node_ = step.node;
  last_asking_ = step.asking;
  return step;
}

RedirectStep RedirectBudget::retry(const ClusterError& reply, std::string_view text, Clock::time_point now) {
  if (now >= deadline_) {
    return give_up(reply.kind, errc::server_error,
                   fmt::format("still {} after {} retries within {} ms ({}): {}",
                               reply.kind == ClusterError::Kind::try_again ? "TRYAGAIN" : "CLUSTERDOWN", retries_,
                               std::chrono::floor<std::chrono::milliseconds>(deadline_ - first_send_).count(),
                               deadline_ == first_send_ + limits_.retry_timeout ? "retry_timeout" : "retry_until",
                               text));
  }
  RedirectStep step;
  step.action = RedirectStep::Action::resend;
  step.cause = reply.kind;
  const auto left = std::chrono::floor<std::chrono::milliseconds>(deadline_ - now);
  step.delay = std::min(backoff(limits_, retries_), left);
  ++retries_;
  if (reply.kind == ClusterError::Kind::try_again) {
    step.node = last_node_;
    step.asking = last_asking_;
  } else {
    // The shard may be failing over: where the map will say.
    step.refresh_map = true;
    last_node_.reset();
    last_asking_ = false;
  }
  return step;
}

RedirectStep RedirectBudget::give_up(ClusterError::Kind cause, errc code, std::string detail) const {
  RedirectStep step;
  step.action = RedirectStep::Action::give_up;
  step.cause = cause;
  step.error = {make_error_code(code), std::move(detail)};
  return step;
}

}  // namespace leasehold::cluster::detail
