#include "support/scripted_server.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>
#include <utility>

namespace leasehold::test {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}

std::string integer(long long v) { return ":" + std::to_string(v) + "\r\n"; }

enum class ParseResult { complete, incomplete, invalid };

// Parses one client command from the front of buf: a RESP array of bulk
// strings, or an inline line of space-separated words. On success removes
// it from buf.
ParseResult parse_command(std::string& buf, std::vector<std::string>& out) {
  out.clear();
  if (buf.empty()) return ParseResult::incomplete;
  auto read_line = [&buf](std::size_t from, std::string_view& line, std::size_t& next) {
    const auto end = buf.find("\r\n", from);
    if (end == std::string::npos) return false;
    line = std::string_view(buf).substr(from, end - from);
    next = end + 2;
    return true;
  };
  auto read_number = [](std::string_view s, long long& v) {
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && ptr == s.data() + s.size();
  };

  std::string_view line;
  std::size_t pos = 0;
  if (buf[0] != '*') {
    if (!read_line(0, line, pos)) {
      return buf.size() > 65536 ? ParseResult::invalid : ParseResult::incomplete;
    }
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && line[i] == ' ') ++i;
      const auto start = i;
      while (i < line.size() && line[i] != ' ') ++i;
      if (i > start) out.emplace_back(line.substr(start, i - start));
    }
    buf.erase(0, pos);
    return ParseResult::complete;
  }

  if (!read_line(0, line, pos)) return ParseResult::incomplete;
  long long count = 0;
  if (!read_number(line.substr(1), count) || count < 0 || count > 1024 * 1024) {
    return ParseResult::invalid;
  }
  std::vector<std::string> args;
  for (long long i = 0; i < count; ++i) {
    if (pos >= buf.size()) return ParseResult::incomplete;
    if (buf[pos] != '$') return ParseResult::invalid;
    if (!read_line(pos, line, pos)) return ParseResult::incomplete;
    long long len = 0;
    if (!read_number(line.substr(1), len) || len < 0 || len > 512LL * 1024 * 1024) {
      return ParseResult::invalid;
    }
    const auto n = static_cast<std::size_t>(len);
    if (buf.size() < pos + n + 2) return ParseResult::incomplete;
    if (buf.compare(pos + n, 2, "\r\n") != 0) return ParseResult::invalid;
    args.emplace_back(buf, pos, n);
    pos += n + 2;
  }
  buf.erase(0, pos);
  out = std::move(args);
  return ParseResult::complete;
}

}  // namespace

std::string ScriptedCommand::name() const { return args.empty() ? "" : upper(args[0]); }

std::string ScriptedCommand::subcommand() const { return args.size() < 2 ? "" : upper(args[1]); }

struct ScriptedServer::Impl {
  struct Conn : std::enable_shared_from_this<Conn> {
    Conn(Impl& s, tcp::socket sock, std::size_t idx)
        : server(s), socket(std::move(sock)), timer(s.io), linger_timer(s.io), index(idx) {}

    void start() {
      error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      run_steps();  // a script may speak first
      read();
    }

    void read() {
      socket.async_read_some(asio::buffer(buf),
                             [self = shared_from_this()](error_code ec, std::size_t n) {
                               self->on_read(ec, n);
                             });
    }

    void on_read(error_code ec, std::size_t n) {
      if (closed) return;
      if (ec) {
        if (ec == asio::error::operation_aborted) return;
        // The peer closed or reset: finish what is queued, then forget it.
        peer_gone = true;
        if (closing || (actions.empty() && !busy)) finish();
        return;
      }
      const std::string_view data(buf.data(), n);
      {
        std::lock_guard lock(server.mutex);
        server.received[index].append(data);
      }
      if (!closing) {
        pending.append(data);
        if (server.handler) {
          run_handler();
        } else {
          run_steps();
        }
      }
      if (!closed) read();
    }

    void run_handler() {
      std::vector<std::string> args;
      while (!closed) {
        const auto r = parse_command(pending, args);
        if (r == ParseResult::incomplete) return;
        if (r == ParseResult::invalid) {
          std::fprintf(stderr, "ScriptedServer: unparsable command bytes on connection %zu\n",
                       index);
          close(true);
          return;
        }
        ScriptedCommand cmd{index, commands++, std::move(args)};
        {
          std::lock_guard lock(server.mutex);
          server.commands.push_back(cmd);
        }
        ScriptedAction action;
        try {
          action = server.handler(cmd);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "ScriptedServer: handler threw: %s\n", e.what());
          close(true);
          return;
        }
        enqueue(std::move(action));
      }
    }

    void run_steps() {
      auto& steps = server.steps;
      while (!closed && !closing && step < steps.size()) {
        const auto& s = steps[step];
        if (!s.wait_for.empty()) {
          const auto at = pending.find(s.wait_for);
          if (at == std::string::npos) return;
          pending.erase(0, at + s.wait_for.size());
        }
        ++step;
        enqueue(ScriptedAction{s.send, s.delay, s.close, false});
      }
      if (step >= steps.size()) pending.clear();
    }

    void enqueue(ScriptedAction action) {
      if (action.send.empty() && !action.close && !action.reset && action.delay.count() == 0) {
        return;  // silence
      }
      actions.push_back(std::move(action));
      next();
    }

    void next() {
      if (closed || closing || busy || actions.empty()) return;
      auto& front = actions.front();
      if (front.delay.count() > 0) {
        busy = true;
        timer.expires_after(front.delay);
        front.delay = std::chrono::milliseconds(0);
        timer.async_wait([self = shared_from_this()](error_code) {
          self->busy = false;
          self->next();
        });
        return;
      }
      if (!front.send.empty()) {
        busy = true;
        out = std::move(front.send);
        front.send.clear();
        asio::async_write(socket, asio::buffer(out),
                          [self = shared_from_this()](error_code ec, std::size_t) {
                            self->busy = false;
                            if (self->closed) return;
                            if (ec) {
                              self->close(true);
                              return;
                            }
                            self->next();
                          });
        return;
      }
      const bool do_close = front.close;
      const bool do_reset = front.reset;
      actions.pop_front();
      if (do_close || do_reset) {
        close(do_reset);
        return;
      }
      if (peer_gone && actions.empty()) {
        finish();
        return;
      }
      next();
    }

    // Reset: at once. Graceful: shut down our sending side and keep reading
    // until the peer closes too (closing a socket with unread input would
    // send RST and could destroy the bytes just written), at most 2 s.
    void close(bool with_reset) {
      if (closed) return;
      if (with_reset) {
        error_code ignored;
        socket.set_option(asio::socket_base::linger(true, 0), ignored);
        finish();
        return;
      }
      if (closing) return;
      closing = true;
      actions.clear();
      timer.cancel();
      error_code ignored;
      socket.shutdown(tcp::socket::shutdown_send, ignored);
      if (peer_gone) {
        finish();
        return;
      }
      linger_timer.expires_after(std::chrono::seconds(2));
      linger_timer.async_wait([self = shared_from_this()](error_code ec) {
        if (!ec) self->finish();
      });
    }

    void finish() {
      if (closed) return;
      closed = true;
      error_code ignored;
      socket.close(ignored);
      timer.cancel();
      linger_timer.cancel();
      actions.clear();
      server.open.fetch_sub(1, std::memory_order_relaxed);
      server.conns.erase(shared_from_this());
    }

    Impl& server;
    tcp::socket socket;
    asio::steady_timer timer;
    asio::steady_timer linger_timer;
    std::size_t index;
    std::array<char, 16384> buf{};
    std::string pending;  // received, not yet consumed by the parser or a step
    std::string out;      // the buffer being written
    std::deque<ScriptedAction> actions;
    std::size_t step = 0;
    std::size_t commands = 0;
    bool busy = false;
    bool peer_gone = false;
    bool closing = false;  // graceful close under way
    bool closed = false;
  };

  Impl(Handler h, std::vector<ScriptStep> s) : handler(std::move(h)), steps(std::move(s)) {
    tcp::endpoint listen(asio::ip::address_v4::loopback(), 0);
    acceptor.open(listen.protocol());
    acceptor.set_option(tcp::acceptor::reuse_address(true));
    acceptor.bind(listen);
    acceptor.listen(asio::socket_base::max_listen_connections);
    port = acceptor.local_endpoint().port();
    accept();
    thread = std::thread([this] { io.run(); });
  }

  ~Impl() {
    asio::post(io, [this] {
      stopping = true;
      error_code ignored;
      acceptor.close(ignored);
      auto all = conns;
      for (const auto& c : all) c->close(true);
      work.reset();
    });
    thread.join();
  }

  void accept() {
    acceptor.async_accept([this](error_code ec, tcp::socket socket) {
      if (stopping || ec == asio::error::operation_aborted) return;
      if (!ec) {
        std::size_t index;
        {
          std::lock_guard lock(mutex);
          index = received.size();
          received.emplace_back();
        }
        accepted.fetch_add(1, std::memory_order_relaxed);
        open.fetch_add(1, std::memory_order_relaxed);
        auto conn = std::make_shared<Conn>(*this, std::move(socket), index);
        conns.insert(conn);
        conn->start();
      }
      accept();
    });
  }

  const Handler handler;
  const std::vector<ScriptStep> steps;

  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  tcp::acceptor acceptor{io};
  std::uint16_t port = 0;
  std::thread thread;

  // Owned by the server thread.
  std::unordered_set<std::shared_ptr<Conn>> conns;
  bool stopping = false;

  std::atomic<std::size_t> accepted{0};
  std::atomic<std::size_t> open{0};

  mutable std::mutex mutex;  // guards the two below
  std::vector<std::string> received;
  std::vector<ScriptedCommand> commands;
};

ScriptedServer::ScriptedServer(Handler handler)
    : impl_(std::make_unique<Impl>(std::move(handler), std::vector<ScriptStep>{})) {}

ScriptedServer::ScriptedServer(std::vector<ScriptStep> steps)
    : impl_(std::make_unique<Impl>(Handler{}, std::move(steps))) {}

ScriptedServer::~ScriptedServer() = default;

std::uint16_t ScriptedServer::port() const noexcept { return impl_->port; }

std::size_t ScriptedServer::connection_count() const noexcept {
  return impl_->accepted.load(std::memory_order_relaxed);
}

std::size_t ScriptedServer::open_connections() const noexcept {
  return impl_->open.load(std::memory_order_relaxed);
}

bool ScriptedServer::wait_for_connections(std::size_t n,
                                          std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (connection_count() < n) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

std::vector<ScriptedCommand> ScriptedServer::commands() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->commands;
}

bool ScriptedServer::wait_for_command(std::string_view name,
                                      std::chrono::milliseconds timeout) const {
  const std::string wanted = upper(name);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    {
      std::lock_guard lock(impl_->mutex);
      for (const auto& c : impl_->commands) {
        if (c.name() == wanted) return true;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::string ScriptedServer::received(std::size_t connection) const {
  std::lock_guard lock(impl_->mutex);
  return connection < impl_->received.size() ? impl_->received[connection] : std::string();
}

leasehold::RedisOptions ScriptedServer::options_for(leasehold::RedisOptions base) const {
  base.host = "127.0.0.1";
  base.port = port();
  base.unix_socket.clear();
  base.tls = {};
  base.connect_timeout = std::chrono::milliseconds(1000);
  base.command_timeout = std::chrono::milliseconds(1000);
  return base;
}

ScriptedAction ScriptedServer::redis_like(const ScriptedCommand& command) {
  const std::string name = command.name();
  const auto& args = command.args;
  auto ok = [] { return ScriptedAction::reply("+OK\r\n"); };

  if (name == "PING") {
    return ScriptedAction::reply(args.size() > 1 ? bulk(args[1]) : "+PONG\r\n");
  }
  if (name == "ECHO" && args.size() > 1) return ScriptedAction::reply(bulk(args[1]));
  if (name == "HELLO") {
    if (args.size() > 1 && args[1] != "2") {
      return ScriptedAction::reply("-NOPROTO unsupported protocol version\r\n");
    }
    std::string r = "*14\r\n";
    r += bulk("server") + bulk("redis") + bulk("version") + bulk("7.0.15") + bulk("proto") +
         integer(2) + bulk("id") + integer(static_cast<long long>(command.connection) + 1) +
         bulk("mode") + bulk("standalone") + bulk("role") + bulk("master") + bulk("modules") +
         "*0\r\n";
    return ScriptedAction::reply(std::move(r));
  }
  if (name == "ROLE") return ScriptedAction::reply("*3\r\n" + bulk("master") + integer(0) + "*0\r\n");
  if (name == "CLIENT" && command.subcommand() == "ID") {
    return ScriptedAction::reply(integer(static_cast<long long>(command.connection) + 1));
  }
  if (name == "SCRIPT" && command.subcommand() == "LOAD" && args.size() > 2) {
    return ScriptedAction::reply(bulk(sha1_hex(args[2])));
  }
  if (name == "SCRIPT" && command.subcommand() == "EXISTS") {
    std::string r = "*" + std::to_string(args.size() - 2) + "\r\n";
    for (std::size_t i = 2; i < args.size(); ++i) r += integer(1);
    return ScriptedAction::reply(std::move(r));
  }
  if (name == "SUBSCRIBE" || name == "PSUBSCRIBE" || name == "UNSUBSCRIBE" ||
      name == "PUNSUBSCRIBE") {
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string r;
    const bool subscribing = name[0] != 'U' && name[1] != 'U';
    for (std::size_t i = 1; i < args.size(); ++i) {
      r += "*3\r\n" + bulk(lower) + bulk(args[i]) +
           integer(subscribing ? static_cast<long long>(i) : 0);
    }
    if (args.size() == 1 && !subscribing) r = "*3\r\n" + bulk(lower) + "$-1\r\n" + integer(0);
    return ScriptedAction::reply(std::move(r));
  }
  if (name == "GET") return ScriptedAction::reply("$-1\r\n");
  if (name == "PUBLISH" || name == "DEL" || name == "EXISTS") {
    return ScriptedAction::reply(integer(0));
  }
  if (name == "QUIT") return ScriptedAction::close_after("+OK\r\n");
  return ok();
}

ScriptedServer::Handler ScriptedServer::redis_like_until(std::string command_name,
                                                         ScriptedAction action) {
  // Handlers only ever run on the server thread: no locking needed.
  auto triggered = std::make_shared<std::unordered_set<std::size_t>>();
  return [name = upper(command_name), action = std::move(action),
          triggered](const ScriptedCommand& command) {
    if (triggered->count(command.connection) != 0) return ScriptedAction::silence();
    if (command.name() == name) {
      triggered->insert(command.connection);
      return action;
    }
    return redis_like(command);
  };
}

std::string ScriptedServer::sha1_hex(std::string_view data) {
  std::uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
  auto rotl = [](std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); };

  std::string msg(data);
  const std::uint64_t bit_len = static_cast<std::uint64_t>(data.size()) * 8;
  msg.push_back(static_cast<char>(0x80));
  while (msg.size() % 64 != 56) msg.push_back('\0');
  for (int i = 7; i >= 0; --i) msg.push_back(static_cast<char>((bit_len >> (i * 8)) & 0xFF));

  for (std::size_t block = 0; block < msg.size(); block += 64) {
    std::uint32_t w[80];
    for (int i = 0; i < 16; ++i) {
      const auto* p = reinterpret_cast<const unsigned char*>(msg.data() + block + 4 * i);
      w[i] = (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
             (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
    }
    for (int i = 16; i < 80; ++i) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; ++i) {
      std::uint32_t f, k;
      if (i < 20) {
        f = (b & c) | (~b & d);
        k = 0x5A827999u;
      } else if (i < 40) {
        f = b ^ c ^ d;
        k = 0x6ED9EBA1u;
      } else if (i < 60) {
        f = (b & c) | (b & d) | (c & d);
        k = 0x8F1BBCDCu;
      } else {
        f = b ^ c ^ d;
        k = 0xCA62C1D6u;
      }
      const std::uint32_t t = rotl(a, 5) + f + e + k + w[i];
      e = d;
      d = c;
      c = rotl(b, 30);
      b = a;
      a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (const std::uint32_t v : h) {
    for (int shift = 28; shift >= 0; shift -= 4) out += hex[(v >> shift) & 0xF];
  }
  return out;
}

}  // namespace leasehold::test
