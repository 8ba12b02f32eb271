// Tests of the variant proxy (tests/support/variant_proxy.hpp) against a real
// redis-server: untouched forwarding, refusals and rewrites that keep a
// pipeline's order, scripts refused by body and by SHA1, pub/sub, Redis 7.0's
// exact error texts, counters. Every wait is bounded (a few seconds at most).

#include "support/admin_client.hpp"
#include "support/elector_fixture.hpp"
#include "support/redis_server.hpp"
#include "support/scripted_server.hpp"
#include "support/variant_proxy.hpp"

#include <leasehold/redis/codec.hpp>
#include <leasehold/impl/protocol/reply_decoder.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace integration_variant_proxy_test {
namespace {

using namespace std::chrono_literals;
using leasehold::redis::Reply;
using leasehold::test::AdminClient;
using leasehold::test::noperm_error;
using leasehold::test::RedisServer;
using leasehold::test::resp_error;
using leasehold::test::ScriptedServer;
using leasehold::test::unknown_command_error;
using leasehold::test::unknown_subcommand_error;
using leasehold::test::VariantProxy;
using Clock = std::chrono::steady_clock;

std::string command(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

std::string bulk(std::string_view s) { return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n"; }

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

AdminClient admin_via(const VariantProxy& proxy) { return AdminClient("127.0.0.1", proxy.port()); }

// A plain blocking TCP client: raw bytes out, raw bytes or decoded (RESP2)
// replies in. Use either read() or reply() on one client, not both.
class RawClient {
 public:
  explicit RawClient(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    if (fd_ < 0) throw std::runtime_error("socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      throw std::runtime_error("connect");
    }
  }
  ~RawClient() { ::close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void send(std::string_view bytes) {
    while (!bytes.empty()) {
      const auto n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send");
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  /// Waits until n bytes arrived (or the timeout) and returns them (fewer on timeout).
  std::string read(std::size_t n, std::chrono::milliseconds timeout = 3s) {
    const auto deadline = Clock::now() + timeout;
    while (buffer_.size() < n && receive(deadline)) {
    }
    const std::string out = buffer_.substr(0, n);
    buffer_.erase(0, out.size());
    return out;
  }

  /// Whatever arrives within d (for "nothing more" checks).
  std::string read_for(std::chrono::milliseconds d) {
    const auto deadline = Clock::now() + d;
    while (receive(deadline)) {
    }
    return std::exchange(buffer_, {});
  }

  /// Reads until the received bytes end with `suffix`.
  std::string read_until(std::string_view suffix, std::chrono::milliseconds timeout = 3s) {
    const auto deadline = Clock::now() + timeout;
    while (!std::string_view(buffer_).ends_with(suffix) && receive(deadline)) {
    }
    return std::exchange(buffer_, {});
  }

  /// The next decoded reply; throws on timeout.
  Reply reply(std::chrono::milliseconds timeout = 3s) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      leasehold::Error error;
      if (!buffer_.empty()) {
        decoder_.feed(buffer_.data(), buffer_.size());
        buffer_.clear();
      }
      if (auto r = decoder_.next(error)) return *r;
      if (error) throw std::runtime_error("bad RESP: " + error.message());
      if (!receive(deadline)) throw std::runtime_error("no reply in time");
    }
  }

  /// True once the peer closed or reset the connection (within timeout).
  bool closed_by_peer(std::chrono::milliseconds timeout = 3s) {
    const auto deadline = Clock::now() + timeout;
    while (receive(deadline)) {
    }
    return eof_;
  }

 private:
  // Appends what arrives before the deadline; false on timeout or EOF.
  bool receive(Clock::time_point deadline) {
    if (eof_) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[65536];
    const auto n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buffer_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  int fd_;
  std::string buffer_;
  leasehold::redis::detail::ReplyDecoder decoder_;
  bool eof_ = false;
};

std::vector<std::string> strings_of(const Reply& r) {
  std::vector<std::string> out;
  for (const auto& e : r.elements) out.push_back(e.is_integer() ? std::to_string(e.integer) : e.str);
  return out;
}

using Strings = std::vector<std::string>;

// ---------------------------------------------------------------------------

TEST(VariantProxy, ForwardsCommandsAndPipelinesUntouched) {
  RedisServer server;
  VariantProxy proxy(server.port());
  auto admin = admin_via(proxy);
  admin.set("k", "v");
  EXPECT_EQ(admin.get("k"), "v");

  RawClient client(proxy.port());
  std::string pipeline;
  std::string expected;
  for (int i = 0; i < 100; ++i) {
    const std::string n = std::to_string(i);
    const std::string before = std::to_string(i - 1);
    switch (i % 4) {
      case 0:
        pipeline += command({"SET", "key" + n, "value" + n});
        expected += "+OK\r\n";
        break;
      case 1:
        pipeline += command({"GET", "key" + before});
        expected += bulk("value" + before);
        break;
      case 2:
        pipeline += command({"INCR", "counter"});
        expected += ":" + std::to_string(i / 4 + 1) + "\r\n";
        break;
      default:
        pipeline += command({"GET", "missing"});
        expected += "$-1\r\n";
        break;
    }
  }
  // A value larger than a read: replies are cut across reads.
  const std::string big(300 * 1024, 'x');
  pipeline += command({"SET", "big", big}) + command({"GET", "big"}) + command({"LRANGE", "nothing", "0", "-1"});
  expected += "+OK\r\n" + bulk(big) + "*0\r\n";
  client.send(pipeline);
  EXPECT_EQ(client.read(expected.size()), expected);
  EXPECT_EQ(client.read_for(50ms), "");
  EXPECT_EQ(proxy.seen("SET"), 25u + 1 + 1);
  EXPECT_EQ(proxy.seen("get"), 1u + 50 + 1);
  EXPECT_EQ(proxy.seen("INCR"), 25u);
  EXPECT_EQ(proxy.refused("SET"), 0u);
  EXPECT_EQ(proxy.connection_count(), 2u);
  EXPECT_EQ(proxy.accepted_count(), 2u);
}

TEST(VariantProxy, RefusedCommandsKeepThePipelinesOrder) {
  RedisServer server;
  VariantProxy proxy(server.port());
  proxy.refuse_as_unknown("WAIT");
  RawClient client(proxy.port());
  // The refusals are known at once, the replies before them come 200 ms later.
  client.send(command({"DEBUG", "SLEEP", "0.2"}) + command({"WAIT", "0", "0"}) + command({"SET", "a", "1"}) +
              command({"WAIT", "1", "100"}) + command({"wait", "2", "0"}) + command({"GET", "a"}) +
              command({"INCR", "n"}));
  const std::string expected = "+OK\r\n" + unknown_command_error("WAIT", {"0", "0"}) + "+OK\r\n" +
                               unknown_command_error("WAIT", {"1", "100"}) +
                               unknown_command_error("wait", {"2", "0"}) + bulk("1") + ":1\r\n";
  EXPECT_EQ(client.read(expected.size()), expected);
  EXPECT_EQ(expected.find("-ERR unknown command 'WAIT', with args beginning with: '0' '0' \r\n"), 5u);

  // First in line, and a pipeline of refusals only.
  RawClient second(proxy.port());
  second.send(command({"WAIT", "0", "0"}) + command({"PING"}));
  const std::string first_refused = unknown_command_error("WAIT", {"0", "0"}) + "+PONG\r\n";
  EXPECT_EQ(second.read(first_refused.size()), first_refused);
  second.send(command({"WAIT", "0", "0"}) + command({"WAIT", "0", "0"}));
  const std::string two = unknown_command_error("WAIT", {"0", "0"}) + unknown_command_error("WAIT", {"0", "0"});
  EXPECT_EQ(second.read(two.size()), two);

  EXPECT_EQ(proxy.seen("WAIT"), 6u);
  EXPECT_EQ(proxy.refused("WAIT"), 6u);
  const Reply stats = server.admin().call({"INFO", "commandstats"});
  EXPECT_EQ(stats.str.find("cmdstat_wait"), std::string::npos) << "WAIT reached the server";
  EXPECT_NE(stats.str.find("cmdstat_debug"), std::string::npos);

  // Rules apply to commands read after the call.
  proxy.clear("WAIT");
  client.send(command({"WAIT", "0", "0"}));
  EXPECT_EQ(client.read(4), ":0\r\n");
}

// The helpers' texts are byte for byte what redis-server 7.0 answers.
TEST(VariantProxy, ErrorTextsAreRedis7s) {
  RedisServer server;
  auto admin = server.admin();
  std::vector<Strings> unknown{
      {"NOSUCH"},
      {"nosuch", "a", "b"},
      {std::string(200, 'f'), "x"},
      {"foo", std::string(120, 'x'), std::string(20, 'y'), "z"},
      {"foo", std::string("a\0b", 3), "c"},
      {"fo\r\no", "a\rb", "c\nd"},
      {"foo", std::string(200, 'x'), "y"},
  };
  Strings many{"foo"};
  for (int i = 0; i < 40; ++i) many.push_back("arg" + std::to_string(i));
  unknown.push_back(many);
  for (const auto& args : unknown) {
    const Reply r = admin.call(args);
    ASSERT_TRUE(r.is_error());
    EXPECT_EQ(resp_error(r.str), unknown_command_error(args[0], Strings(args.begin() + 1, args.end())));
  }
  for (const char* container : {"ACL", "CLIENT", "CLUSTER", "COMMAND", "CONFIG", "FUNCTION", "LATENCY", "MEMORY",
                                "MODULE", "OBJECT", "PUBSUB", "SCRIPT", "SLOWLOG", "XGROUP", "XINFO"}) {
    const Reply r = admin.call({lower(container), "NoSuchSub"});
    ASSERT_TRUE(r.is_error()) << container;
    EXPECT_EQ(resp_error(r.str), unknown_subcommand_error(lower(container), "NoSuchSub")) << container;
  }
  const Reply long_sub = admin.call({"cluster", std::string(200, 's')});
  EXPECT_EQ(resp_error(long_sub.str), unknown_subcommand_error("cluster", std::string(200, 's')));
  // Not a container: an unknown command, whatever follows.
  EXPECT_EQ(resp_error(admin.call({"SHARDS", "x"}).str), unknown_command_error("SHARDS", {"x"}));

  ASSERT_TRUE(admin.call({"ACL", "SETUSER", "limited", "on", ">pw", "~*", "&*", "+@all", "-wait",
                          "-cluster|shards"}).is_status());
  AdminClient limited("127.0.0.1", server.plain_port(), "limited", "pw");
  EXPECT_EQ(resp_error(limited.call({"WAIT", "0", "0"}).str), noperm_error("wait"));
  EXPECT_EQ(resp_error(limited.call({"CLUSTER", "SHARDS"}).str), noperm_error("cluster|shards"));
}

TEST(VariantProxy, RefusedSubcommandAndCounters) {
  RedisServer server;
  VariantProxy proxy(server.port());
  proxy.refuse_as_unknown("cluster  shards");
  auto client = admin_via(proxy);
  EXPECT_EQ(client.call({"cluster", "shards"}).str, "ERR unknown subcommand 'shards'. Try CLUSTER HELP.");
  // Other subcommands reach the server (which has no cluster support).
  EXPECT_EQ(client.call({"CLUSTER", "INFO"}).str, "ERR This instance has cluster support disabled");

  EXPECT_EQ(proxy.seen("CLUSTER"), 2u);
  EXPECT_EQ(proxy.refused("CLUSTER"), 1u);
  EXPECT_EQ(proxy.seen("CLUSTER SHARDS"), 1u);
  EXPECT_EQ(proxy.refused("cluster shards"), 1u);
  EXPECT_EQ(proxy.seen("CLUSTER INFO"), 1u);
  EXPECT_EQ(proxy.refused("CLUSTER INFO"), 0u);
  EXPECT_EQ(proxy.counts("GET").seen, 0u);

  // A rule on the name alone; the subcommand's rule comes first.
  proxy.refuse("CLUSTER", "-ERR no cluster here");
  EXPECT_EQ(client.call({"CLUSTER", "INFO"}).str, "ERR no cluster here");
  EXPECT_EQ(client.call({"CLUSTER", "SHARDS"}).str, "ERR unknown subcommand 'SHARDS'. Try CLUSTER HELP.");

  // A counted probe: seen once, however many other commands follow.
  for (int i = 0; i < 20; ++i) client.call({"PING"});
  EXPECT_TRUE(proxy.wait_for_seen("PING", 20, 1s));
  EXPECT_FALSE(proxy.wait_for_seen("PING", 21, 20ms));
  EXPECT_EQ(proxy.seen("CLUSTER SHARDS"), 2u);
  proxy.reset_counts();
  EXPECT_EQ(proxy.seen("PING"), 0u);
  EXPECT_EQ(proxy.seen("CLUSTER"), 0u);

  EXPECT_THROW(proxy.refuse("GET", "not RESP"), std::invalid_argument);
  EXPECT_THROW(proxy.refuse("GET", "+OK\r\n+OK\r\n"), std::invalid_argument);
  EXPECT_THROW(proxy.refuse("A B C", "+OK"), std::invalid_argument);
  proxy.refuse("GET", "$3\r\nabc");  // the final CRLF is added
  EXPECT_EQ(client.call({"GET", "x"}).str, "abc");
}

TEST(VariantProxy, RewriteReplacesTheServersReply) {
  RedisServer server;
  VariantProxy proxy(server.port());
  // KeyDB's multi-master ROLE.
  proxy.rewrite_reply("ROLE", [](std::string_view raw) {
    std::string out(raw);
    const std::string from = bulk("master");
    if (const auto at = out.find(from); at != std::string::npos) out.replace(at, from.size(), bulk("active-replica"));
    return out;
  });
  auto client = admin_via(proxy);
  const Reply role = client.call({"ROLE"});
  ASSERT_TRUE(role.is_array());
  ASSERT_FALSE(role.elements.empty());
  EXPECT_EQ(role.elements[0].str, "active-replica");

  RawClient raw(proxy.port());
  raw.send(command({"PING"}) + command({"ROLE"}) + command({"ECHO", "after"}));
  const std::string expected = "+PONG\r\n*3\r\n" + bulk("active-replica") + ":0\r\n*0\r\n" + bulk("after");
  EXPECT_EQ(raw.read(expected.size()), expected);
  EXPECT_EQ(proxy.rewritten("ROLE"), 2u);
  EXPECT_EQ(proxy.seen("ROLE"), 2u);
  EXPECT_EQ(proxy.refused("ROLE"), 0u);

  proxy.clear("ROLE");
  EXPECT_EQ(client.call({"ROLE"}).elements.at(0).str, "master");
  EXPECT_EQ(proxy.rewritten("ROLE"), 2u);
}

TEST(VariantProxy, RefusesScriptsByBodyAndBySha) {
  RedisServer server;
  VariantProxy proxy(server.port());
  const std::string refusal = "-ERR Dragonfly-like: script uses a command it may not";
  proxy.refuse_script_containing("SPUBLISH", refusal);
  const std::string refused_body = "redis.call('SPUBLISH', 'ch', 'x') return 1";
  const std::string refused_sha = ScriptedServer::sha1_hex(refused_body);
  const std::string allowed_body = "return 7";
  const std::string refusal_text = refusal.substr(1);

  auto client = admin_via(proxy);
  EXPECT_EQ(client.call({"SCRIPT", "LOAD", refused_body}).str, refusal_text);
  EXPECT_EQ(client.call({"EVALSHA", refused_sha, "0"}).str, refusal_text);
  EXPECT_EQ(client.call({"evalsha_ro", refused_sha, "0"}).str, refusal_text);
  EXPECT_EQ(client.call({"EVALSHA", ScriptedServer::sha1_hex("unknown"), "0"}).str,
            "NOSCRIPT No matching script. Please use EVAL.");
  EXPECT_EQ(client.call({"EVAL", refused_body, "0"}).str, refusal_text);
  EXPECT_EQ(client.call({"EVAL", allowed_body, "0"}).integer, 7);
  const Reply loaded = client.call({"SCRIPT", "LOAD", allowed_body});
  EXPECT_EQ(loaded.str, ScriptedServer::sha1_hex(allowed_body));
  EXPECT_EQ(client.call({"EVALSHA", loaded.str, "0"}).integer, 7);
  auto direct = server.admin();
  EXPECT_EQ(direct.call({"SCRIPT", "EXISTS", refused_sha}).elements.at(0).integer, 0)
      << "the refused SCRIPT LOAD reached the server";

  // A script loaded by another path: unknown to the proxy until learned.
  const std::string elsewhere = "redis.call('SPUBLISH', 'c', 'm') return 2";
  const std::string elsewhere_sha = direct.call({"SCRIPT", "LOAD", elsewhere}).str;
  EXPECT_EQ(client.call({"EVALSHA", elsewhere_sha, "0"}).integer, 2);
  proxy.learn_script(elsewhere);
  EXPECT_EQ(client.call({"EVALSHA", elsewhere_sha, "0"}).str, refusal_text);

  EXPECT_EQ(proxy.refused("SCRIPT LOAD"), 1u);
  EXPECT_EQ(proxy.refused("EVALSHA"), 2u);
  EXPECT_EQ(proxy.refused("EVALSHA_RO"), 1u);
  EXPECT_EQ(proxy.refused("EVAL"), 1u);
  EXPECT_EQ(proxy.seen("EVALSHA"), 5u);
  EXPECT_EQ(proxy.seen("SCRIPT"), 2u);

  // A rule on the command itself comes first.
  proxy.refuse_as_unknown("EVAL");
  EXPECT_EQ(client.call({"EVAL", allowed_body, "0"}).str,
            "ERR unknown command 'EVAL', with args beginning with: 'return 7' '0' ");
  proxy.clear_all();
  EXPECT_EQ(client.call({"EVAL", refused_body, "0"}).integer, 1);
}

TEST(VariantProxy, PubSubMessagesPassThroughAndRefusalsStayInOrder) {
  RedisServer server;
  VariantProxy proxy(server.port());
  proxy.refuse_as_unknown("SSUBSCRIBE");
  RawClient sub(proxy.port());
  sub.send(command({"SUBSCRIBE", "a", "b"}) + command({"PSUBSCRIBE", "p*"}));
  EXPECT_EQ(strings_of(sub.reply()), (Strings{"subscribe", "a", "1"}));
  EXPECT_EQ(strings_of(sub.reply()), (Strings{"subscribe", "b", "2"}));
  EXPECT_EQ(strings_of(sub.reply()), (Strings{"psubscribe", "p*", "3"}));

  auto publisher = server.admin();
  EXPECT_EQ(publisher.call({"PUBLISH", "a", "m1"}).integer, 1);
  EXPECT_EQ(publisher.call({"PUBLISH", "pq", "m2"}).integer, 1);
  EXPECT_EQ(strings_of(sub.reply()), (Strings{"message", "a", "m1"}));
  EXPECT_EQ(strings_of(sub.reply()), (Strings{"pmessage", "p*", "pq", "m2"}));

  // Messages pushed while commands (one refused) are under way.
  constexpr int messages = 200;
  std::thread publishing([port = server.plain_port()] {
    AdminClient p("127.0.0.1", port);
    for (int i = 0; i < messages; ++i) p.call({"PUBLISH", "a", "n" + std::to_string(i)});
  });
  std::string pipeline;
  for (int i = 0; i < 10; ++i) pipeline += command({"PING", "p" + std::to_string(i)});
  pipeline += command({"SSUBSCRIBE", "s"});
  for (int i = 10; i < 20; ++i) pipeline += command({"PING", "p" + std::to_string(i)});
  pipeline += command({"SUBSCRIBE", "c"});
  sub.send(pipeline);
  std::vector<std::string> answers;  // replies, in order
  int next_message = 0;
  bool ok = true;
  while (ok && (next_message < messages || answers.size() < 22)) {
    Reply r;
    try {
      r = sub.reply();
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what() << " after " << next_message << " messages and " << answers.size() << " replies";
      break;
    }
    const auto s = strings_of(r);
    if (r.is_array() && s.size() == 3 && s[0] == "message") {
      ok = s[2] == "n" + std::to_string(next_message);
      EXPECT_TRUE(ok) << "message " << s[2] << " where n" << next_message << " was due";
      ++next_message;
    } else if (r.is_error()) {
      answers.push_back(r.str);
    } else {
      answers.push_back(s.empty() ? r.str : s[0] + " " + s[1]);
    }
  }
  publishing.join();
  std::vector<std::string> expected;
  for (int i = 0; i < 10; ++i) expected.push_back("pong p" + std::to_string(i));
  expected.push_back("ERR unknown command 'SSUBSCRIBE', with args beginning with: 's' ");
  for (int i = 10; i < 20; ++i) expected.push_back("pong p" + std::to_string(i));
  expected.push_back("subscribe c");
  EXPECT_EQ(answers, expected);
  EXPECT_EQ(next_message, messages);

  // Unsubscribing from everything leaves subscribed mode: a reply that looks
  // like a message is a reply again, and keeps its place before a refusal.
  sub.send(command({"UNSUBSCRIBE"}) + command({"PUNSUBSCRIBE"}));
  Strings unsubscribed;
  for (int i = 0; i < 4; ++i) {
    const auto s = strings_of(sub.reply());
    unsubscribed.push_back(s.at(0) + " " + s.at(1));
  }
  std::sort(unsubscribed.begin(), unsubscribed.begin() + 3);
  EXPECT_EQ(unsubscribed, (Strings{"unsubscribe a", "unsubscribe b", "unsubscribe c", "punsubscribe p*"}));
  sub.send(command({"RPUSH", "l", "message", "x", "y"}) + command({"LRANGE", "l", "0", "-1"}) +
           command({"SSUBSCRIBE", "s"}) + command({"PING"}));
  EXPECT_EQ(sub.reply().integer, 3);
  EXPECT_EQ(strings_of(sub.reply()), (Strings{"message", "x", "y"}));
  EXPECT_EQ(sub.reply().str, "ERR unknown command 'SSUBSCRIBE', with args beginning with: 's' ");
  EXPECT_EQ(sub.reply().str, "PONG");
  EXPECT_EQ(proxy.refused("SSUBSCRIBE"), 2u);
}

TEST(VariantProxy, RefusedSsubscribeLeavesTheConnectionUsable) {
  RedisServer server;
  VariantProxy proxy(server.port());
  proxy.refuse_as_unknown("SSUBSCRIBE");
  RawClient client(proxy.port());
  client.send(command({"SSUBSCRIBE", "ch"}) + command({"SET", "k", "v"}) + command({"GET", "k"}));
  const std::string expected = unknown_command_error("SSUBSCRIBE", {"ch"}) + "+OK\r\n" + bulk("v");
  EXPECT_EQ(client.read(expected.size()), expected);
  auto publisher = server.admin();
  EXPECT_EQ(publisher.call({"SPUBLISH", "ch", "m"}).integer, 0);
  EXPECT_EQ(client.read_for(100ms), "");
  EXPECT_EQ(proxy.refused("SSUBSCRIBE"), 1u);

  // Allowed again: a shard subscription works through the proxy.
  proxy.clear("SSUBSCRIBE");
  client.send(command({"SSUBSCRIBE", "ch"}));
  const std::string confirmed = "*3\r\n" + bulk("ssubscribe") + bulk("ch") + ":1\r\n";
  EXPECT_EQ(client.read(confirmed.size()), confirmed);
  EXPECT_EQ(publisher.call({"SPUBLISH", "ch", "m"}).integer, 1);
  const std::string message = "*3\r\n" + bulk("smessage") + bulk("ch") + bulk("m");
  EXPECT_EQ(client.read(message.size()), message);
  client.send(command({"SUNSUBSCRIBE", "ch"}) + command({"GET", "k"}));
  const std::string left = "*3\r\n" + bulk("sunsubscribe") + bulk("ch") + ":0\r\n" + bulk("v");
  EXPECT_EQ(client.read(left.size()), left);
}

TEST(VariantProxy, Resp3PushesAndReplies) {
  RedisServer server;
  VariantProxy proxy(server.port());
  proxy.refuse_as_unknown("WAIT");
  RawClient client(proxy.port());
  client.send(command({"HELLO", "3"}));
  const std::string hello = client.read_until(bulk("modules") + "*0\r\n");
  ASSERT_TRUE(hello.starts_with("%7\r\n")) << hello;
  client.send(command({"SUBSCRIBE", "a"}) + command({"PING"}) + command({"WAIT", "0", "0"}) +
              command({"GET", "nothing"}));
  const std::string expected = ">3\r\n" + bulk("subscribe") + bulk("a") + ":1\r\n" + "+PONG\r\n" +
                               unknown_command_error("WAIT", {"0", "0"}) + "_\r\n";
  EXPECT_EQ(client.read(expected.size()), expected);
  EXPECT_EQ(server.admin().call({"PUBLISH", "a", "m"}).integer, 1);
  const std::string message = ">3\r\n" + bulk("message") + bulk("a") + bulk("m");
  EXPECT_EQ(client.read(message.size()), message);
  client.send(command({"UNSUBSCRIBE", "a"}) + command({"WAIT", "0", "0"}));
  const std::string left =
      ">3\r\n" + bulk("unsubscribe") + bulk("a") + ":0\r\n" + unknown_command_error("WAIT", {"0", "0"});
  EXPECT_EQ(client.read(left.size()), left);
}

TEST(VariantProxy, RefusalInsideMultiAbortsTheTransactionAsRedisDoes) {
  RedisServer server;
  VariantProxy proxy(server.port());
  proxy.refuse_as_unknown("WAIT");
  const auto transaction = [](const std::string& refused_name) {
    return command({"MULTI"}) + command({"SET", "t", "1"}) + command({refused_name, "0", "0"}) + command({"EXEC"}) +
           command({"GET", "t"});
  };
  // What Redis itself answers when it does not know the command.
  RawClient direct(server.plain_port());
  direct.send(transaction("NOSUCH"));
  const std::string redis_answer = direct.read_until("$-1\r\n");
  const std::string abort_line = "-EXECABORT Transaction discarded because of previous errors.\r\n";
  ASSERT_EQ(redis_answer, "+OK\r\n+QUEUED\r\n" + unknown_command_error("NOSUCH", {"0", "0"}) + abort_line + "$-1\r\n");

  RawClient client(proxy.port());
  client.send(transaction("WAIT"));
  const std::string expected =
      "+OK\r\n+QUEUED\r\n" + unknown_command_error("WAIT", {"0", "0"}) + abort_line + "$-1\r\n";
  EXPECT_EQ(client.read(expected.size()), expected);
  // The next transaction is clean.
  client.send(command({"MULTI"}) + command({"SET", "t", "2"}) + command({"EXEC"}) + command({"GET", "t"}));
  const std::string clean = "+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n" + bulk("2");
  EXPECT_EQ(client.read(clean.size()), clean);
}

TEST(VariantProxy, ResetAllAndReconnect) {
  RedisServer server;
  VariantProxy proxy(server.port());
  RawClient client(proxy.port());
  client.send(command({"PING"}));
  EXPECT_EQ(client.read(7), "+PONG\r\n");
  proxy.reset_all();
  EXPECT_TRUE(client.closed_by_peer(2s));
  EXPECT_EQ(proxy.connection_count(), 0u);
  auto again = admin_via(proxy);
  EXPECT_EQ(again.call({"PING"}).str, "PONG");
  EXPECT_EQ(proxy.accepted_count(), 2u);

  // QUIT: the server closes, and so does the proxy.
  RawClient quitting(proxy.port());
  quitting.send(command({"QUIT"}));
  EXPECT_EQ(quitting.read(5), "+OK\r\n");
  EXPECT_TRUE(quitting.closed_by_peer(2s));
}

// The library itself through the proxy: a server that refuses ROLE (as some
// managed services do) still gets a leader, and ROLE is asked once per
// connection, not per renewal.
TEST(VariantProxy, ElectorLeadsThroughTheProxyWithRoleRefused) {
  RedisServer server;
  VariantProxy proxy(server.port());
  proxy.refuse_as_unknown("ROLE");
  leasehold::test::Fleet fleet(proxy.options_for(server.options()));
  fleet.add(leasehold::test::fast_options("through-proxy"));
  ASSERT_TRUE(fleet.wait_single_leader("default", 5s));
  leasehold::test::run_for(fleet.io, 700ms);  // a few renewals
  EXPECT_GE(proxy.refused("ROLE"), 1u);
  EXPECT_LE(proxy.seen("ROLE"), proxy.accepted_count());
  EXPECT_GE(proxy.seen("EVALSHA") + proxy.seen("EVAL"), 2u);
}

}  // namespace
}  // namespace integration_variant_proxy_test
