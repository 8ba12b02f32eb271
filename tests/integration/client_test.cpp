// The Redis client against real redis-server processes and scripted fakes.

#include <leasehold/config.hpp>
#include <leasehold/redis/client.hpp>

#include "support/fault_proxy.hpp"
#include "support/io_helpers.hpp"
#include "support/redis_server.hpp"
#include "support/scripted_server.hpp"

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace integration_client_test {
namespace {

namespace lh = leasehold;
using lh::redis::Client;
using lh::redis::Reply;
using lh::redis::Request;
using lh::test::run_until;
using namespace std::chrono_literals;

struct Result {
  lh::error_code ec;
  std::vector<Reply> replies;
};

// Sends one request and runs the io_context until it completes (bounded).
std::optional<Result> exec(boost::asio::io_context& io, Client& client, Request request,
                           std::chrono::milliseconds bound = 10s) {
  std::optional<Result> result;
  client.async_exec(std::move(request), [&](lh::error_code ec, std::vector<Reply> replies) {
    result = Result{ec, std::move(replies)};
  });
  run_until(io, [&] { return result.has_value(); }, bound);
  return result;
}

std::string echo_of(boost::asio::io_context& io, Client& client, const std::string& text) {
  auto r = exec(io, client, Request{"ECHO", text});
  if (!r || r->ec || r->replies.size() != 1) return "<failed>";
  return r->replies[0].str;
}

bool connect(boost::asio::io_context& io, Client& client) {
  client.start();
  return run_until(io, [&] { return client.connected(); });
}

TEST(Client, TenThousandPipelinedCommandsComeBackCompleteAndInOrder) {
  lh::test::RedisServer server;
  boost::asio::io_context io;
  auto options = server.options();
  options.command_timeout = 20s;  // a loaded or sanitized build may need seconds for 10,000
  Client client(io.get_executor(), options);
  ASSERT_TRUE(connect(io, client)) << client.last_error().message();

  constexpr int n = 10000;
  std::vector<std::string> seen;
  int failures = 0;
  for (int i = 0; i < n; ++i) {
    client.async_exec(Request{"ECHO", std::to_string(i)}, [&](lh::error_code ec, std::vector<Reply> r) {
      if (ec || r.size() != 1) ++failures;
      else seen.push_back(r[0].str);
    });
  }
  ASSERT_TRUE(run_until(io, [&] { return seen.size() + failures == n; }, 30s));
  EXPECT_EQ(failures, 0);
  for (int i = 0; i < n; ++i) ASSERT_EQ(seen[i], std::to_string(i)) << "reply " << i << " out of order";

  // The same volume as one request of many commands.
  Request batch;
  for (int i = 0; i < n; ++i) batch.push({"INCR", "counter"});
  auto r = exec(io, client, std::move(batch), 30s);
  ASSERT_TRUE(r);
  ASSERT_FALSE(r->ec) << r->ec.message();
  ASSERT_EQ(r->replies.size(), std::size_t(n));
  for (int i = 0; i < n; ++i) ASSERT_EQ(r->replies[i].integer, i + 1);
}

TEST(Client, TimeoutOnPausedServerResetsAndNeverMatchesTheStaleReply) {
  lh::test::RedisServer server;
  boost::asio::io_context io;
  auto options = server.options();
  options.command_timeout = 300ms;
  options.health_check_interval = 0ms;
  Client client(io.get_executor(), options);
  ASSERT_TRUE(connect(io, client));

  server.pause();
  auto stale = exec(io, client, Request{"ECHO", "stale"});
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->ec, lh::errc::timeout) << stale->ec.message();
  EXPECT_FALSE(client.connected()) << "a timeout must close the connection";
  EXPECT_EQ(client.stats().timeouts, 1u);

  server.resume();
  ASSERT_TRUE(run_until(io, [&] { return client.connected(); }));
  EXPECT_GE(client.stats().connects, 2u) << "the command must run on a fresh connection";
  // The stale ECHO was answered on the old socket, if at all: the new
  // connection's first reply must be its own.
  EXPECT_EQ(echo_of(io, client, "fresh"), "fresh");
  EXPECT_EQ(echo_of(io, client, "again"), "again");
}

TEST(Client, ReconnectsAfterServerKillAndRestart) {
  lh::test::RedisServer server;
  boost::asio::io_context io;
  Client client(io.get_executor(), server.options());
  std::vector<bool> transitions;
  client.on_state([&](bool up, const lh::Error&) { transitions.push_back(up); });
  ASSERT_TRUE(connect(io, client));

  server.kill();
  ASSERT_TRUE(run_until(io, [&] { return !client.connected(); }));
  auto down = exec(io, client, Request{"PING"});
  ASSERT_TRUE(down);
  EXPECT_EQ(down->ec, lh::errc::not_connected) << "nothing is queued while disconnected";

  server.restart();
  ASSERT_TRUE(run_until(io, [&] { return client.connected(); }, 15s));
  EXPECT_EQ(echo_of(io, client, "back"), "back");
  ASSERT_GE(transitions.size(), 3u);
  EXPECT_TRUE(transitions.front());
  EXPECT_TRUE(transitions.back());
}

TEST(Client, SubscriberResubscribesAfterRestartAndReceivesLaterMessages) {
  lh::test::RedisServer server;
  boost::asio::io_context io;
  Client subscriber(io.get_executor(), server.options(), lh::redis::Role::subscriber);
  std::vector<std::string> messages;
  int confirmations = 0;
  subscriber.on_message([&](std::string_view channel, std::string_view payload) {
    messages.push_back(std::string(channel) + "=" + std::string(payload));
  });
  subscriber.on_subscribed([&](std::string_view) { ++confirmations; });
  subscriber.subscribe({"news"});
  subscriber.start();
  ASSERT_TRUE(run_until(io, [&] { return subscriber.subscribed(); }));

  server.admin().call({"PUBLISH", "news", "first"});
  ASSERT_TRUE(run_until(io, [&] { return messages.size() == 1; }));

  server.kill();
  ASSERT_TRUE(run_until(io, [&] { return !subscriber.subscribed(); }));
  server.restart();
  ASSERT_TRUE(run_until(io, [&] { return subscriber.subscribed(); }, 15s));
  EXPECT_EQ(confirmations, 2);

  auto admin = server.admin();
  EXPECT_EQ(admin.call({"PUBLISH", "news", "second"}).integer, 1) << "one subscriber after restart";
  ASSERT_TRUE(run_until(io, [&] { return messages.size() == 2; }));
  EXPECT_EQ(messages[0], "news=first");
  EXPECT_EQ(messages[1], "news=second");
}

TEST(Client, PatternSubscriptionDeliversTheChannelAndComesBackAfterRestart) {
  lh::test::RedisServer server;
  boost::asio::io_context io;
  Client subscriber(io.get_executor(), server.options(), lh::redis::Role::subscriber);
  std::vector<std::string> messages;
  std::vector<std::string> confirmed;
  subscriber.on_message([&](std::string_view channel, std::string_view payload) {
    messages.push_back(std::string(channel) + "=" + std::string(payload));
  });
  subscriber.on_subscribed([&](std::string_view name) { confirmed.emplace_back(name); });
  subscriber.subscribe({"plain"});
  subscriber.psubscribe({"news.*"});
  subscriber.psubscribe({"news.*"});  // wanted once
  subscriber.start();
  ASSERT_TRUE(run_until(io, [&] { return subscriber.subscribed(); }));

  auto admin = server.admin();
  EXPECT_EQ(admin.call({"PUBLISH", "news.sport", "goal"}).integer, 1);
  EXPECT_EQ(admin.call({"PUBLISH", "weather", "rain"}).integer, 0);
  EXPECT_EQ(admin.call({"PUBLISH", "plain", "text"}).integer, 1);
  ASSERT_TRUE(run_until(io, [&] { return messages.size() == 2; }));
  EXPECT_EQ(messages[0], "news.sport=goal") << "the channel it was published on, not the pattern";
  EXPECT_EQ(messages[1], "plain=text");

  server.kill();
  ASSERT_TRUE(run_until(io, [&] { return !subscriber.subscribed(); }));
  server.restart();
  ASSERT_TRUE(run_until(io, [&] { return subscriber.subscribed(); }, 15s));
  std::sort(confirmed.begin(), confirmed.end());
  EXPECT_EQ(confirmed, (std::vector<std::string>{"news.*", "news.*", "plain", "plain"}));
  EXPECT_EQ(server.admin().call({"PUBLISH", "news.tech", "chip"}).integer, 1);
  ASSERT_TRUE(run_until(io, [&] { return messages.size() == 3; }));
  EXPECT_EQ(messages[2], "news.tech=chip");
}

TEST(Client, AclUserWithPasswordSucceedsAndWrongPasswordIsAClearAuthError) {
  lh::test::RedisServerOptions server_options;
  server_options.acl_users = {"alice on >wonderland ~* &* +@all"};
  lh::test::RedisServer server(server_options);
  boost::asio::io_context io;

  auto good = server.options();
  good.username = "alice";
  good.password = "wonderland";
  Client client(io.get_executor(), good);
  ASSERT_TRUE(connect(io, client)) << client.last_error().message();
  auto who = exec(io, client, Request{"ACL", "WHOAMI"});
  ASSERT_TRUE(who);
  EXPECT_EQ(who->replies.at(0).str, "alice");

  auto bad = good;
  bad.password = "not-the-password";
  Client wrong(io.get_executor(), bad);
  wrong.start();
  ASSERT_TRUE(run_until(io, [&] { return static_cast<bool>(wrong.last_error()); }));
  EXPECT_FALSE(wrong.connected());
  EXPECT_EQ(wrong.last_error().code, lh::errc::auth_failed);
  const std::string message = wrong.last_error().message();
  EXPECT_NE(message.find("alice"), std::string::npos) << message;
  EXPECT_EQ(message.find("not-the-password"), std::string::npos) << "password leaked: " << message;
}

TEST(Client, UnixSocketWorks) {
  lh::test::RedisServerOptions server_options;
  server_options.unix_socket = true;
  lh::test::RedisServer server(server_options);
  boost::asio::io_context io;
  Client client(io.get_executor(), server.unix_options());
  ASSERT_TRUE(connect(io, client)) << client.last_error().message();
  EXPECT_EQ(echo_of(io, client, "over unix"), "over unix");
}

#if LEASEHOLD_HAS_TLS
TEST(Client, TlsWithVerificationSucceedsAndAWrongCaIsAClearTlsError) {
  lh::test::RedisServerOptions server_options;
  server_options.tls = true;
  lh::test::RedisServer server(server_options);
  boost::asio::io_context io;

  Client client(io.get_executor(), server.options());
  ASSERT_TRUE(connect(io, client)) << client.last_error().message();
  EXPECT_EQ(echo_of(io, client, "secret handshake"), "secret handshake");

  auto wrong_ca = server.options();
  wrong_ca.tls.ca_file = server.wrong_ca_file();
  Client untrusting(io.get_executor(), wrong_ca);
  untrusting.start();
  ASSERT_TRUE(run_until(io, [&] { return static_cast<bool>(untrusting.last_error()); }));
  EXPECT_FALSE(untrusting.connected());
  EXPECT_EQ(untrusting.last_error().code, lh::errc::tls_failed) << untrusting.last_error().message();
}
#endif

TEST(Client, EvalshaAfterScriptFlushReloadsTransparently) {
  lh::test::RedisServer server;
  boost::asio::io_context io;
  Client client(io.get_executor(), server.options());
  static const lh::redis::Script script("return ARGV[1] .. '!'");
  client.preload(script);
  ASSERT_TRUE(connect(io, client));

  auto eval = [&](const std::string& arg) {
    std::optional<std::pair<lh::error_code, Reply>> out;
    client.async_eval(script, {}, {arg}, [&](lh::error_code ec, Reply r) { out.emplace(ec, std::move(r)); });
    run_until(io, [&] { return out.has_value(); });
    return out;
  };
  auto first = eval("hello");
  ASSERT_TRUE(first);
  ASSERT_FALSE(first->first) << first->first.message();
  EXPECT_EQ(first->second.str, "hello!");

  auto admin = server.admin();
  ASSERT_EQ(admin.call({"SCRIPT", "FLUSH"}).str, "OK");
  ASSERT_EQ(admin.call({"SCRIPT", "EXISTS", script.sha1()}).elements.at(0).integer, 0);

  auto second = eval("again");
  ASSERT_TRUE(second);
  ASSERT_FALSE(second->first) << second->first.message();
  EXPECT_EQ(second->second.str, "again!");
  EXPECT_EQ(admin.call({"SCRIPT", "EXISTS", script.sha1()}).elements.at(0).integer, 1)
      << "the fallback EVAL must have reloaded the script";
}

TEST(Client, ServerErrorRepliesAreClassified) {
  lh::test::RedisServer server;
  boost::asio::io_context io;
  Client client(io.get_executor(), server.options());
  ASSERT_TRUE(connect(io, client));
  server.admin().call({"HSET", "h", "f", "v"});
  static const lh::redis::Script script("return redis.call('GET', KEYS[1])");
  std::optional<std::pair<lh::error_code, Reply>> out;
  client.async_eval(script, {"h"}, {}, [&](lh::error_code ec, Reply r) { out.emplace(ec, std::move(r)); });
  ASSERT_TRUE(run_until(io, [&] { return out.has_value(); }));
  EXPECT_EQ(out->first, lh::errc::wrong_type) << out->second.debug_string();
  EXPECT_NE(out->second.str.find("WRONGTYPE"), std::string::npos);
  EXPECT_TRUE(client.connected()) << "a server error is not a connection error";
}

TEST(Client, InvalidRespIsAProtocolErrorAndResetsTheConnection) {
  lh::test::ScriptedServer fake([](const lh::test::ScriptedCommand& c) {
    if (c.name() == "ECHO") return lh::test::ScriptedAction::reply("?this is not RESP\r\n");
    return lh::test::ScriptedServer::redis_like(c);
  });
  boost::asio::io_context io;
  Client client(io.get_executor(), fake.options_for());
  ASSERT_TRUE(connect(io, client)) << client.last_error().message();

  auto r = exec(io, client, Request{"ECHO", "x"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->ec, lh::errc::protocol_error) << r->ec.message();
  EXPECT_EQ(client.stats().protocol_errors, 1u);
  EXPECT_TRUE(run_until(io, [&] { return fake.connection_count() >= 2; }))
      << "the client must reconnect on a new connection";
  ASSERT_TRUE(run_until(io, [&] { return client.connected(); }));
  auto ping = exec(io, client, Request{"PING"});
  ASSERT_TRUE(ping);
  EXPECT_FALSE(ping->ec) << ping->ec.message();
}

TEST(Client, AServerThatFailsRightAfterTheHandshakeIsRetriedWithGrowingBackoff) {
  // The handshake succeeds; the bytes after its last reply are garbage.
  lh::test::ScriptedServer fake([](const lh::test::ScriptedCommand& c) {
    if (c.name() == "ROLE") return lh::test::ScriptedAction::reply("*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n?garbage\r\n");
    return lh::test::ScriptedServer::redis_like(c);
  });
  boost::asio::io_context io;
  auto options = fake.options_for();
  options.reconnect_min = 50ms;
  options.reconnect_max = 2s;
  Client client(io.get_executor(), options);
  client.start();
  lh::test::run_for(io, 2s);
  // Growing delays (25-50, 50-100, 100-200, 200-400, 400-800 ms ...) allow
  // about six connections in 2 s; a backoff reset by every handshake
  // allowed one every 25-50 ms, 40 or more.
  EXPECT_GE(fake.connection_count(), 2u);
  EXPECT_LE(fake.connection_count(), 10u);
  EXPECT_GE(client.stats().protocol_errors, 2u) << "the garbage is seen at once, not at the next read";
  client.stop();
}

TEST(Client, ConnectionClosedMidReplyFailsThePendingCommand) {
  lh::test::ScriptedServer fake([](const lh::test::ScriptedCommand& c) {
    if (c.name() == "ECHO") return lh::test::ScriptedAction::close_after("$10\r\nabc");
    return lh::test::ScriptedServer::redis_like(c);
  });
  boost::asio::io_context io;
  Client client(io.get_executor(), fake.options_for());
  ASSERT_TRUE(connect(io, client));
  auto r = exec(io, client, Request{"ECHO", "x"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->ec, lh::errc::connection_lost) << r->ec.message();
}

// A cancelled request is detached, not the connection reset: its handler
// completes at once, its reply (BLPOP's nil, a second later) is read and
// dropped, and the requests around it complete with their own replies.
TEST(Client, CancellingACommandDetachesItAndKeepsTheConnection) {
  lh::test::RedisServer server;
  boost::asio::io_context io;
  auto options = server.options();
  options.command_timeout = 5s;  // above BLPOP's own 1 s
  Client client(io.get_executor(), options);
  ASSERT_TRUE(connect(io, client));
  const auto disconnects = client.stats().disconnects;

  std::vector<std::string> echoes;
  const auto echo = [&](const std::string& text) {
    client.async_exec(Request{"ECHO", text}, [&](lh::error_code ec, std::vector<Reply> r) {
      echoes.push_back(ec ? "error: " + ec.message() : r.at(0).str);
    });
  };
  boost::asio::cancellation_signal signal;
  std::optional<lh::error_code> result;
  echo("before");
  client.async_exec(Request{"BLPOP", "nothing", "1"},
                    boost::asio::bind_cancellation_slot(
                        signal.slot(), [&](lh::error_code ec, std::vector<Reply>) { result = ec; }));
  echo("behind the blocked one");
  ASSERT_TRUE(run_until(io, [&] { return echoes.size() == 1; }));
  const auto cancelled_at = std::chrono::steady_clock::now();
  signal.emit(boost::asio::cancellation_type::terminal);
  ASSERT_TRUE(run_until(io, [&] { return result.has_value(); }));
  EXPECT_EQ(*result, boost::asio::error::operation_aborted);
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled_at, 500ms) << "the handler must not wait for the reply";
  echo("after cancel");

  ASSERT_TRUE(run_until(io, [&] { return echoes.size() == 3; }));
  EXPECT_EQ(echoes, (std::vector<std::string>{"before", "behind the blocked one", "after cancel"}))
      << "BLPOP's nil must be dropped, not matched to a later request";
  EXPECT_TRUE(client.connected());
  EXPECT_EQ(client.stats().disconnects, disconnects);
  EXPECT_EQ(client.stats().connects, 1u);
  EXPECT_EQ(echo_of(io, client, "still here"), "still here");
}

// `total` promises that the operation had no effect, which a command already
// sent cannot keep: it is ignored, and the request completes with its reply.
TEST(Client, TotalCancellationIsIgnored) {
  lh::test::RedisServer server;
  boost::asio::io_context io;
  Client client(io.get_executor(), server.options());
  ASSERT_TRUE(connect(io, client));
  boost::asio::cancellation_signal signal;
  std::optional<Result> result;
  client.async_exec(Request{"BLPOP", "nothing", "0.2"},
                    boost::asio::bind_cancellation_slot(signal.slot(), [&](lh::error_code ec, std::vector<Reply> r) {
                      result = Result{ec, std::move(r)};
                    }));
  lh::test::run_for(io, 20ms);
  signal.emit(boost::asio::cancellation_type::total);
  ASSERT_TRUE(run_until(io, [&] { return result.has_value(); }));
  EXPECT_FALSE(result->ec) << result->ec.message();
  ASSERT_EQ(result->replies.size(), 1u);
  EXPECT_TRUE(result->replies[0].is_nil());
  EXPECT_EQ(client.stats().disconnects, 0u);
}

TEST(Client, BlackholedConnectionTimesOutThroughTheHealthCheck) {
  lh::test::RedisServer server;
  lh::test::FaultProxy proxy(server.port());
  boost::asio::io_context io;
  auto options = proxy.options_for(server.options());
  options.command_timeout = 300ms;
  options.health_check_interval = 200ms;
  Client client(io.get_executor(), options);
  ASSERT_TRUE(connect(io, client));
  proxy.blackhole();
  // No command of ours is pending: only the idle PING can notice.
  ASSERT_TRUE(run_until(io, [&] { return !client.connected(); }, 10s));
  EXPECT_GE(client.stats().timeouts, 1u);
  EXPECT_EQ(client.last_error().code, lh::errc::timeout);
  proxy.forward();
  ASSERT_TRUE(run_until(io, [&] { return client.connected(); }, 10s));
}

TEST(Client, StopFailsPendingCommandsWithStopped) {
  lh::test::RedisServer server;
  boost::asio::io_context io;
  Client client(io.get_executor(), server.options());
  ASSERT_TRUE(connect(io, client));
  std::optional<lh::error_code> result;
  client.async_exec(Request{"BLPOP", "nothing", "5"},
                    [&](lh::error_code ec, std::vector<Reply>) { result = ec; });
  lh::test::run_for(io, 20ms);
  client.stop();
  ASSERT_TRUE(run_until(io, [&] { return result.has_value(); }));
  EXPECT_EQ(*result, lh::errc::stopped);
  EXPECT_FALSE(client.connected());
}

// Plain handlers are completed in one posted batch per read, handlers with an
// executor of their own through it: the completion order is still the order
// of the replies, whatever the mix, and every handler still runs outside the
// call that started it.
TEST(Client, HandlersWithAndWithoutTheirOwnExecutorCompleteInReplyOrder) {
  lh::test::RedisServer server;
  boost::asio::io_context io;
  Client client(io.get_executor(), server.options());
  const lh::redis::Script script("return ARGV[1]");
  client.preload(script);  // else the first EVALSHA's NOSCRIPT retry reorders it
  ASSERT_TRUE(connect(io, client));
  auto strand = boost::asio::make_strand(io);

  constexpr int n = 300;
  std::vector<int> order;
  for (int i = 0; i < n; ++i) {
    auto record = [&order, i](lh::error_code ec, auto&&) { order.push_back(ec ? -1 - i : i); };
    switch (i % 4) {
      case 0: client.async_exec(Request{"ECHO", std::to_string(i)}, record); break;
      case 1: client.async_exec(Request{"ECHO", std::to_string(i)}, boost::asio::bind_executor(strand, record)); break;
      case 2: client.async_eval(script, {}, {std::to_string(i)}, record); break;
      case 3: client.async_eval(script, {}, {std::to_string(i)}, boost::asio::bind_executor(strand, record)); break;
    }
  }
  ASSERT_TRUE(order.empty()) << "a handler ran inside the call that started it";
  ASSERT_TRUE(run_until(io, [&] { return order.size() == n; }, 30s)) << order.size() << " of " << n;
  for (int i = 0; i < n; ++i) ASSERT_EQ(order[i], i) << "completion " << i;
}

// A handler that throws propagates out of run(); the handlers completed in
// the same batch after it are not lost but run on the next run().
TEST(Client, AThrowingHandlerDoesNotLoseTheCompletionsAfterIt) {
  lh::test::RedisServer server;
  boost::asio::io_context io;
  Client client(io.get_executor(), server.options());
  ASSERT_TRUE(connect(io, client));

  std::vector<std::string> seen;
  client.async_exec(Request{"ECHO", "first"}, [&](lh::error_code, std::vector<Reply> r) {
    seen.push_back(r.at(0).str);
    throw std::runtime_error("handler failed");
  });
  for (const char* text : {"second", "third"}) {
    client.async_exec(Request{"ECHO", text}, [&](lh::error_code, std::vector<Reply> r) { seen.push_back(r.at(0).str); });
  }
  bool threw = false;
  const auto bound = std::chrono::steady_clock::now() + 10s;
  while (seen.size() < 3 && std::chrono::steady_clock::now() < bound) {
    try {
      io.run_for(50ms);
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "handler failed");
      threw = true;
    }
    io.restart();
  }
  EXPECT_TRUE(threw);
  EXPECT_EQ(seen, (std::vector<std::string>{"first", "second", "third"}));
}

}  // namespace
}  // namespace integration_client_test
