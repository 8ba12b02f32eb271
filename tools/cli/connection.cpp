#include "connection.hpp"

#include "exit_code.hpp"

#include <leasehold/impl/cluster/slot_map.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <memory>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace leasehold::cli {

namespace asio = boost::asio;

namespace {

constexpr auto await_tuple = asio::as_tuple(asio::use_awaitable);

}  // namespace

KeyLayout layout_for(const RedisOptions& options, std::string prefix) {
  return KeyLayout(std::move(prefix), options.effective_key_layout());
}

Connection::Connection(asio::any_io_executor executor, RedisOptions options)
    : commands_(std::move(executor), std::move(options)) {}

bool Connection::connected() const noexcept {
  if (const auto* cluster = commands_.cluster()) return cluster->ready();
  return commands_.server()->connected();
}

// "cannot connect to Redis at <endpoint>: <why>", without naming the
// endpoint twice when the client's detail already does.
std::string Connection::unavailable(std::string_view what, const Error& error) const {
  const std::string endpoint = options().to_string();
  if (error.detail.find(endpoint) != std::string::npos) return fmt::format("{}: {}", what, error.detail);
  return fmt::format("{} at {}: {}", what, endpoint, error.message());
}

asio::awaitable<void> Connection::connect() {
  // The first attempt is reported through on_state (a cluster: once its slot
  // map is read); the timer only bounds the wait in case it never is.
  asio::steady_timer wake(co_await asio::this_coro::executor, options().connect_timeout + std::chrono::seconds(1));
  std::optional<Error> outcome;
  commands_.on_state([&](bool, const Error& error) {
    if (outcome) return;
    outcome = error;
    wake.cancel();
  });
  // A cluster: why each node it asked gave no slot map, for the message.
  std::map<std::string, std::string> seeds_failed;
  auto* cluster = commands_.cluster();
  if (cluster != nullptr) {
    cluster->on_node_state([&](const std::string& address, bool up, const Error& error) {
      if (up) return;
      const std::string reason = error.message();
      seeds_failed[address] = reason.find(address) != std::string::npos ? reason : address + ": " + reason;
    });
    cluster->on_map_read([&](const Error& error) {
      if (error) seeds_failed[error.detail] = error.message();
    });
  }
  commands_.start();
  co_await wake.async_wait(await_tuple);
  commands_.on_state(nullptr);
  if (cluster != nullptr) {
    cluster->on_node_state(nullptr);
    cluster->on_map_read(nullptr);
  }
  if (!outcome) {
    std::string why = is_cluster() ? "no slot map read from any seed node" : "no answer to the connection attempt";
    for (const auto& [where, reason] : seeds_failed) {
      why += fmt::format("{} {}", why.ends_with("node") ? ":" : ";", reason);
    }
    outcome = Error{make_error_code(errc::timeout), std::move(why)};
  }
  if (*outcome) {
    commands_.stop();
    throw Failure(exit_unavailable, unavailable("cannot connect to Redis", *outcome));
  }
}

asio::awaitable<std::vector<redis::Reply>> Connection::exec(redis::Request request, std::string_view key) {
  std::vector<KeyedRequest> one;
  one.push_back({std::string(key), std::move(request)});
  auto replies = co_await exec_each(std::move(one));
  co_return std::move(replies.front());
}

asio::awaitable<std::vector<std::vector<redis::Reply>>> Connection::exec_each(std::vector<KeyedRequest> requests) {
  // All sent before the first reply is awaited; the last reply wakes the coroutine.
  struct Pending {
    explicit Pending(asio::any_io_executor ex, std::size_t n) : replies(n), left(n), all_in(std::move(ex)) {}
    std::vector<std::vector<redis::Reply>> replies;
    std::size_t left;
    error_code first_error;
    asio::steady_timer all_in;
  };
  auto pending = std::make_shared<Pending>(co_await asio::this_coro::executor, requests.size());
  pending->all_in.expires_at(asio::steady_timer::time_point::max());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    commands_.exec(std::move(requests[i].request), requests[i].key,
                   [pending, i](error_code ec, std::vector<redis::Reply> replies) {
                     if (ec && !pending->first_error) pending->first_error = ec;
                     pending->replies[i] = std::move(replies);
                     if (--pending->left == 0) pending->all_in.cancel();
                   });
  }
  if (pending->left != 0) co_await pending->all_in.async_wait(await_tuple);
  if (pending->first_error) {
    const redis::Client* server = commands_.server();
    const Error& last = server != nullptr ? server->last_error() : Error{};
    throw Failure(exit_unavailable,
                  unavailable("Redis request failed", last ? last : Error{pending->first_error, {}}));
  }
  co_return std::move(pending->replies);
}

asio::awaitable<redis::Reply> Connection::eval(const redis::Script& script, std::vector<std::string> keys,
                                               std::vector<std::string> args) {
  auto [ec, reply, via] = co_await asio::async_initiate<decltype(await_tuple),
                                                        void(error_code, redis::Reply, redis::Client*)>(
      [&](auto handler) { commands_.eval(script, std::move(keys), std::move(args), std::move(handler)); },
      await_tuple);
  if (ec && !reply.is_error()) {
    const Error& last = via != nullptr ? via->last_error() : Error{};
    throw Failure(exit_unavailable, unavailable("Redis request failed", last ? last : Error{ec, {}}));
  }
  co_return std::move(reply);
}

asio::awaitable<std::vector<redis::Reply>> Connection::exec_on_master(const std::string& master,
                                                                     redis::Request request) {
  // A slot the master serves routes the command there.
  auto* cluster = commands_.cluster();
  for (const auto& range : cluster->slot_map().ranges()) {
    if (range.master.to_string() != master) continue;
    auto [ec, replies] = co_await asio::async_initiate<decltype(await_tuple),
                                                       void(error_code, std::vector<redis::Reply>)>(
        [&](auto handler) {
          cluster->async_exec(range.first, std::move(request),
                              cluster::detail::ClusterClient::ExecDone(std::move(handler)));
        },
        await_tuple);
    if (ec) throw Failure(exit_unavailable, unavailable(fmt::format("Redis request to {} failed", master), {ec, {}}));
    co_return std::move(replies);
  }
  throw Failure(exit_unavailable, fmt::format("{} no longer serves any slot (the cluster changed during SCAN)", master));
}

asio::awaitable<void> Connection::scan(const std::string& pattern,
                                       const std::function<void(const redis::Reply&)>& visit) {
  // One server: itself. A cluster: each master once, as the map listed them
  // when the scan began (a master that loses its slots meanwhile fails the scan).
  std::vector<std::string> masters{""};
  if (auto* cluster = commands_.cluster()) {
    masters.clear();
    for (const auto& node : cluster->slot_map().masters()) masters.push_back(node.to_string());
  }
  for (const std::string& master : masters) {
    std::string cursor = "0";
    do {
      redis::Request request{"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"};
      // Not a conditional expression: GCC 12 miscompiles co_await in one.
      std::vector<redis::Reply> replies;
      if (master.empty()) {
        replies = co_await exec(std::move(request), "");
      } else {
        replies = co_await exec_on_master(master, std::move(request));
      }
      const redis::Reply& reply = replies.at(0);
      check_reply(reply, "SCAN");
      if (!reply.is_array() || reply.elements.size() != 2 || !reply.elements[1].is_array()) {
        throw Failure(exit_unavailable, "SCAN: unexpected reply " + reply.debug_string());
      }
      cursor = reply.elements[0].str;
      visit(reply.elements[1]);
    } while (cursor != "0");
  }
}

void check_reply(const redis::Reply& reply, std::string_view what) {
  if (!reply.is_error()) return;
  // The layout is the URL's: say which option fixes it.
  const std::string_view hint = classify_server_error(reply.str) == errc::cross_slot
                                    ? " (a sharded server behind one endpoint: add key_layout=hash_tagged to the URL)"
                                    : "";
  throw Failure(exit_unavailable, fmt::format("{}: Redis answered: {}{}", what, reply.str, hint));
}

}  // namespace leasehold::cli
