#include "connection.hpp"

#include "exit_code.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>

namespace leasehold::cli {

namespace asio = boost::asio;

// "cannot connect to Redis at <endpoint>: <why>", without naming the
// endpoint twice when the client's detail already does.
std::string unavailable(const redis::Client& client, std::string_view what, const Error& error) {
  const std::string endpoint = client.options().to_string();
  if (error.detail.find(endpoint) != std::string::npos) return fmt::format("{}: {}", what, error.detail);
  return fmt::format("{} at {}: {}", what, endpoint, error.message());
}

asio::awaitable<void> connect(redis::Client& client) {
  // The client reports its first attempt through on_state; the timer only
  // bounds the wait in case it never does.
  asio::steady_timer wake(co_await asio::this_coro::executor,
                          client.options().connect_timeout + std::chrono::seconds(1));
  std::optional<Error> outcome;
  client.on_state([&](bool, const Error& error) {
    if (outcome) return;
    outcome = error;
    wake.cancel();
  });
  client.start();
  co_await wake.async_wait(asio::as_tuple(asio::use_awaitable));
  client.on_state(nullptr);
  if (!outcome) outcome = Error{make_error_code(errc::timeout), "no answer to the connection attempt"};
  if (*outcome) {
    client.stop();
    throw Failure(exit_unavailable, unavailable(client, "cannot connect to Redis", *outcome));
  }
}

asio::awaitable<std::vector<redis::Reply>> exec(redis::Client& client, redis::Request request) {
  auto [ec, replies] = co_await client.async_exec(std::move(request), asio::as_tuple(asio::use_awaitable));
  if (ec) {
    // The client keeps the detail (which timeout, which endpoint) beside the code.
    const Error& last = client.last_error();
    throw Failure(exit_unavailable, unavailable(client, "Redis request failed", last ? last : Error{ec, {}}));
  }
  co_return replies;
}

void check_reply(const redis::Reply& reply, std::string_view what) {
  if (reply.is_error()) throw Failure(exit_unavailable, fmt::format("{}: Redis answered: {}", what, reply.str));
}

}  // namespace leasehold::cli
