#include <leasehold/impl/redis/reconnect.hpp>

#include <leasehold/impl/redis/sentinel_rules.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>

namespace leasehold::redis::detail {

namespace {

Reconnect::Jitter default_jitter() {
  auto rng = std::make_shared<std::mt19937_64>(std::random_device{}());
  return [rng](std::int64_t max) { return std::uniform_int_distribution<std::int64_t>(0, max)(*rng); };
}

// Beyond this many failures in a row the delay is at its cap anyway.
constexpr unsigned max_counted_attempts = 64;

}  // namespace

Reconnect::Reconnect(const RedisOptions& options, Jitter jitter)
    : options_(options), jitter_(jitter ? std::move(jitter) : default_jitter()) {}

Reconnect::Action Reconnect::start(clock::time_point now) {
  if (state_ != State::stopped) return {};
  attempt_ = 0;
  state_ = State::connecting;
  return {Action::Kind::connect, now + options_.connect_timeout};
}

void Reconnect::stop() noexcept { state_ = State::stopped; }

Request Reconnect::begin_handshake(std::span<const Script* const> preloaded) {
  steps_.clear();
  next_step_ = 0;
  Request request;
  if (!options_.password.empty()) {
    if (options_.username.empty()) {
      request.push({"AUTH", options_.password});
    } else {
      request.push({"AUTH", options_.username, options_.password});
    }
    steps_.push_back(Step::auth);
  }
  if (options_.database != 0) {
    const std::string db = std::to_string(options_.database);
    request.push({"SELECT", db});
    steps_.push_back(Step::select);
  }
  if (!options_.client_name.empty()) {
    request.push({"CLIENT", "SETNAME", options_.client_name});
    steps_.push_back(Step::setname);
  }
  if (options_.sentinel) {
    // The spec's check: a sentinel may name a replica (stale, or mid-failover).
    request.push({"ROLE"});
    steps_.push_back(Step::role);
  } else if (check_primary_) {
    // A host name may still name a demoted primary after a managed failover.
    request.push({"ROLE"});
    steps_.push_back(Step::role_if_answered);
  }
  for (const Script* s : preloaded) {
    request.push({"SCRIPT", "LOAD", s->body()});
    steps_.push_back(Step::script);
  }
  return request;
}

Error Reconnect::on_handshake_reply(const Reply& reply) {
  if (next_step_ == steps_.size()) {
    return {make_error_code(errc::protocol_error),
            fmt::format("reply with no pending handshake step: {}", reply.debug_string())};
  }
  const Step step = steps_[next_step_++];
  if (step == Step::role) return check_role(reply);
  if (step == Step::role_if_answered && !reply.is_error()) {
    Error error = check_role(reply);
    // A replica may be the primary of a moment ago: the name may move yet.
    if (error.code == errc::not_master && reply.elements[0].str != "active-replica") {
      error.detail += "; connecting again (after a failover the name may not point at the new primary yet; "
                      "RedisOptions::require_primary = false uses any server)";
    }
    return error;
  }
  if (!reply.is_error()) return {};
  // Any step may meet a server that wants a password none was given for.
  if (reply.str.starts_with("NOAUTH")) {
    return {make_error_code(errc::auth_failed), fmt::format("the server requires a password: {}", reply.str)};
  }
  switch (step) {
    case Step::auth:
      return {make_error_code(errc::auth_failed),
              fmt::format("user \"{}\": {}", options_.username.empty() ? "default" : options_.username, reply.str)};
    case Step::select:
      return {make_error_code(errc::handshake_failed), fmt::format("SELECT {}: {}", options_.database, reply.str)};
    case Step::setname:
      return {make_error_code(errc::handshake_failed), fmt::format("CLIENT SETNAME: {}", reply.str)};
    case Step::role:
    case Step::role_if_answered:  // refused (some managed services block ROLE): used unchecked
    case Step::script:
      break;
  }
  return {};
}

bool Reconnect::on_up() {
  if (state_ != State::connecting) return false;
  state_ = State::up;
  served_ = false;
  return true;
}

Reconnect::Action Reconnect::on_failed(Error error, clock::time_point now) {
  if (state_ == State::stopped) return {Action::Kind::stop};
  const bool was_up = state_ == State::up;
  // Only a connection that answered something after its handshake resets the
  // backoff: one that fails at once (a server sending garbage after the
  // handshake) must not be retried at full speed.
  if (was_up && served_) attempt_ = 0;
  const bool report = was_up || attempt_ == 0;  // the first failed attempt in a row is news
  const auto delay = backoff();
  attempt_ = std::min(attempt_ + 1, max_counted_attempts);
  state_ = State::waiting;
  served_ = false;
  return {Action::Kind::wait, now + delay, std::move(error), report, was_up};
}

Reconnect::Action Reconnect::on_connect_timeout(clock::time_point now) {
  return on_failed({make_error_code(errc::timeout),
                    fmt::format("connecting to {} took longer than {} ms", options_.to_string(),
                                options_.connect_timeout.count())},
                   now);
}

Reconnect::Action Reconnect::on_wait_elapsed(clock::time_point now) {
  if (state_ != State::waiting) return {state_ == State::stopped ? Action::Kind::stop : Action::Kind::none};
  state_ = State::connecting;
  return {Action::Kind::connect, now + options_.connect_timeout};
}

std::chrono::milliseconds Reconnect::backoff() {
  // Exponential backoff with "equal jitter": half fixed, half random, so that
  // a fleet restarted together does not reconnect in lockstep.
  const auto cap = options_.reconnect_max.count();
  std::int64_t base = options_.reconnect_min.count();
  for (unsigned i = 0; i < attempt_ && base < cap; ++i) base *= 2;
  base = std::min<std::int64_t>(base, cap);
  const std::int64_t jitter = std::clamp<std::int64_t>(jitter_(base / 2), 0, base / 2);
  return std::chrono::milliseconds(base - base / 2 + jitter);
}

}  // namespace leasehold::redis::detail
