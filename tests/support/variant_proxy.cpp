#include "support/variant_proxy.hpp"

#include "support/scripted_server.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <deque>
#include <exception>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace leasehold::test {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

namespace {

constexpr auto npos = std::string_view::npos;

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// What printf("%.*s", max, s) prints of s: up to a NUL byte, at most max bytes.
std::string_view c_text(std::string_view s, std::size_t max) {
  const auto nul = s.find('\0');
  if (nul != npos) s = s.substr(0, nul);
  return s.substr(0, std::min(max, s.size()));
}

// Redis turns CR and LF of an error text into spaces (the protocol needs it).
std::string one_line(std::string s) {
  std::replace_if(s.begin(), s.end(), [](char c) { return c == '\r' || c == '\n'; }, ' ');
  return s;
}

bool parse_int(std::string_view s, long long& v) {
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
}

// ---- RESP values, server to client -----------------------------------------

constexpr std::size_t incomplete = npos;
constexpr std::size_t invalid = npos - 1;
constexpr long long max_elements = 1 << 24;
constexpr long long max_bulk = 512LL * 1024 * 1024;

// The offset just past the RESP value that starts at `pos`, or incomplete /
// invalid. Knows every RESP2 and RESP3 type Redis 7 sends (an attribute is
// taken together with the value it annotates).
std::size_t scan_value(std::string_view buf, std::size_t pos, int depth) {
  if (depth > 64) return invalid;
  if (pos >= buf.size()) return incomplete;
  const auto eol = buf.find("\r\n", pos);
  if (eol == npos) return incomplete;
  const char type = buf[pos];
  const std::string_view line = buf.substr(pos + 1, eol - pos - 1);
  const std::size_t next = eol + 2;
  switch (type) {
    case '+': case '-': case ':': case '_': case ',': case '#': case '(':
      return next;
    case '$': case '!': case '=': {
      long long len = 0;
      if (!parse_int(line, len) || len < -1 || len > max_bulk) return invalid;
      if (len == -1) return next;
      const std::size_t end = next + static_cast<std::size_t>(len);
      if (buf.size() < end + 2) return incomplete;
      if (buf.substr(end, 2) != "\r\n") return invalid;
      return end + 2;
    }
    case '*': case '~': case '>': case '%': case '|': {
      long long n = 0;
      if (!parse_int(line, n) || n < -1 || n > max_elements) return invalid;
      if (type == '%' || type == '|') n *= 2;
      std::size_t at = next;
      for (long long i = 0; i < n; ++i) {
        at = scan_value(buf, at, depth + 1);
        if (at >= invalid) return at;
      }
      return type == '|' ? scan_value(buf, at, depth + 1) : at;
    }
    default:
      return invalid;
  }
}

// What the proxy needs to know of a server reply to place it.
struct Head {
  char type = 0;
  std::string kind;     // an array's or push's first element, lower case, when a string
  std::string channel;  // its second element, when a string
  bool has_channel = false;
  bool error() const noexcept { return type == '-' || type == '!'; }
};

// Reads a simple or bulk string value at `at` (which must be complete).
bool read_string(std::string_view v, std::size_t at, std::string& out, std::size_t& next) {
  next = scan_value(v, at, 1);
  if (next >= invalid) return false;
  if (v[at] == '+') {
    out = v.substr(at + 1, next - at - 3);
    return true;
  }
  if (v[at] != '$') return false;
  const auto eol = v.find("\r\n", at);
  long long len = 0;
  if (!parse_int(v.substr(at + 1, eol - at - 1), len) || len < 0) return false;
  out = v.substr(eol + 2, static_cast<std::size_t>(len));
  return true;
}

Head head_of(std::string_view value) {
  Head h;
  h.type = value[0];
  if (h.type != '*' && h.type != '>') return h;
  const auto eol = value.find("\r\n");
  long long n = 0;
  if (!parse_int(value.substr(1, eol - 1), n) || n < 1) return h;
  std::string first;
  std::size_t next = 0;
  if (!read_string(value, eol + 2, first, next)) return h;
  h.kind = lower(first);
  if (n >= 2) h.has_channel = read_string(value, next, h.channel, next);
  return h;
}

// A canned reply: a missing final CRLF added; nullopt unless one RESP value.
std::optional<std::string> as_reply(std::string reply) {
  if (reply.size() < 2 || reply.compare(reply.size() - 2, 2, "\r\n") != 0) reply += "\r\n";
  if (scan_value(reply, 0, 0) != reply.size()) return std::nullopt;
  return reply;
}

// ---- commands, client to server --------------------------------------------

struct ParsedCommand {
  enum class Status { complete, incomplete, invalid };
  Status status = Status::incomplete;
  std::size_t length = 0;         // bytes taken from the buffer
  std::vector<std::string> args;  // empty: a command Redis ignores (*0, an empty line)
};

// One command at the front of buf: a RESP array of bulk strings, or an
// inline line of words (as redis-cli or telnet send; quotes not handled).
ParsedCommand parse_command(std::string_view buf) {
  using Status = ParsedCommand::Status;
  ParsedCommand out;
  if (buf.empty()) return out;
  if (buf[0] != '*') {
    const auto nl = buf.find('\n');
    if (nl == npos) {
      if (buf.size() > 65536) out.status = Status::invalid;
      return out;
    }
    std::string_view line = buf.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      const auto start = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
      if (i > start) out.args.emplace_back(line.substr(start, i - start));
    }
    out.status = Status::complete;
    out.length = nl + 1;
    return out;
  }
  auto eol = buf.find("\r\n");
  if (eol == npos) return out;
  long long count = 0;
  if (!parse_int(buf.substr(1, eol - 1), count) || count > 1024 * 1024) {
    out.status = Status::invalid;
    return out;
  }
  std::size_t pos = eol + 2;
  for (long long i = 0; i < count; ++i) {
    if (pos >= buf.size()) return out;
    if (buf[pos] != '$') {
      out.status = Status::invalid;
      return out;
    }
    eol = buf.find("\r\n", pos);
    if (eol == npos) return out;
    long long len = 0;
    if (!parse_int(buf.substr(pos + 1, eol - pos - 1), len) || len < 0 || len > max_bulk) {
      out.status = Status::invalid;
      return out;
    }
    const std::size_t start = eol + 2;
    const std::size_t end = start + static_cast<std::size_t>(len);
    if (buf.size() < end + 2) return out;
    if (buf.substr(end, 2) != "\r\n") {
      out.status = Status::invalid;
      return out;
    }
    out.args.emplace_back(buf.substr(start, end - start));
    pos = end + 2;
  }
  out.status = Status::complete;
  out.length = pos;
  return out;
}

// Redis 7.0's commands with subcommands.
bool is_container(std::string_view name) {
  static const std::unordered_set<std::string_view> containers{
      "ACL",    "CLIENT", "CLUSTER", "COMMAND", "CONFIG",  "FUNCTION", "LATENCY", "MEMORY",
      "MODULE", "OBJECT", "PUBSUB",  "SCRIPT",  "SLOWLOG", "XGROUP",   "XINFO"};
  return containers.count(name) != 0;
}

// The counters a command adds to: its name, and "NAME SUB" for a container.
std::vector<std::string> counter_keys(const std::vector<std::string>& args) {
  std::vector<std::string> keys{upper(args[0])};
  if (args.size() >= 2 && is_container(keys[0])) keys.push_back(keys[0] + " " + upper(args[1]));
  return keys;
}

bool is_pubsub_command(std::string_view name) {
  return name == "SUBSCRIBE" || name == "PSUBSCRIBE" || name == "SSUBSCRIBE" ||
         name == "UNSUBSCRIBE" || name == "PUNSUBSCRIBE" || name == "SUNSUBSCRIBE";
}

// "name" or "NAME  sub" -> "NAME" or "NAME SUB".
std::string rule_key(std::string_view command) {
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < command.size()) {
    while (i < command.size() && std::isspace(static_cast<unsigned char>(command[i]))) ++i;
    const auto start = i;
    while (i < command.size() && !std::isspace(static_cast<unsigned char>(command[i]))) ++i;
    if (i > start) words.push_back(upper(command.substr(start, i - start)));
  }
  if (words.empty() || words.size() > 2) {
    throw std::invalid_argument("VariantProxy: a rule names a command or a command and its subcommand, not '" +
                                std::string(command) + "'");
  }
  return words.size() == 1 ? words[0] : words[0] + " " + words[1];
}

}  // namespace

std::string resp_error(std::string_view text) { return "-" + std::string(text) + "\r\n"; }

std::string unknown_command_error(std::string_view name, const std::vector<std::string>& args) {
  std::string list;
  for (const auto& arg : args) {
    if (list.size() >= 128) break;
    const std::size_t room = 128 - list.size();
    list += '\'';
    list += c_text(arg, room);
    list += "' ";
  }
  return resp_error(one_line("ERR unknown command '" + std::string(c_text(name, 128)) +
                             "', with args beginning with: " + list));
}

std::string unknown_subcommand_error(std::string_view command, std::string_view subcommand) {
  return resp_error(one_line("ERR unknown subcommand '" + std::string(c_text(subcommand, 128)) +
                             "'. Try " + upper(c_text(command, npos)) + " HELP."));
}

std::string noperm_error(std::string_view command) {
  return resp_error(one_line("NOPERM this user has no permissions to run the '" + std::string(command) +
                             "' command"));
}

// How replies keep their order. Each command read from a client owes it one
// slot, in command order: a refused command's slot holds its canned reply, a
// forwarded command's slot takes the server's next reply(ies). Canned replies
// leave as soon as every slot before them is answered. Server replies are cut
// into whole RESP values; those that answer no command pass straight through:
// RESP3 pushes, and in subscribed mode (the (P|S)SUBSCRIBE confirmations the
// server sent, minus the unsubscriptions) message, pmessage and smessage
// arrays, and a sunsubscribe the server sends on its own when a slot moves.
struct VariantProxy::Impl {
  // One rule: exactly one of the two is set.
  struct Rule {
    ReplyFor refuse;
    Rewrite rewrite;
  };
  struct ScriptRule {
    std::string substring;
    ReplyFor reply;
  };
  // What to do with one command.
  struct Decision {
    std::optional<std::string> reply;  // refused: this answer
    Rewrite rewrite;                   // forwarded: through this, if set
  };

  // One reply the client is owed, in command order.
  struct Slot {
    bool forwarded = false;
    std::string canned;       // not forwarded: the whole reply
    std::string replacement;  // forwarded: sent instead of the server's reply
    Rewrite rewrite;
    std::vector<std::string> keys;  // counter names
    // (P|S)(UN)SUBSCRIBE outside MULTI: one reply per name, of this kind
    // ("subscribe", ...), or one error.
    std::string pubsub_kind;
    std::size_t replies = 1;   // server replies still owed
    bool until_empty = false;  // UN*SUBSCRIBE of everything: until none is left
    bool resets = false;       // RESET: no subscription afterwards
  };

  struct Conn : std::enable_shared_from_this<Conn> {
    struct Out {
      std::string pending;
      std::string inflight;
      bool writing = false;
      bool shutdown_wanted = false;  // then shut the socket's sending side
      bool shut = false;
    };

    Conn(Impl& p, tcp::socket accepted) : proxy(p), client(std::move(accepted)), upstream(p.io) {}

    void start() {
      error_code ignored;
      client.set_option(tcp::no_delay(true), ignored);
      read_client();
      upstream.async_connect(proxy.target, [self = shared_from_this()](error_code ec) {
        if (self->closed) return;
        if (ec) {
          self->abort();
          return;
        }
        error_code ignored2;
        self->upstream.set_option(tcp::no_delay(true), ignored2);
        self->upstream_ready = true;
        self->read_server();
        self->flush(self->to_server, self->upstream);
      });
    }

    // ---- client -> server

    void read_client() {
      client.async_read_some(asio::buffer(client_buf), [self = shared_from_this()](error_code ec, std::size_t n) {
        self->on_client_bytes(ec, n);
      });
    }

    void on_client_bytes(error_code ec, std::size_t n) {
      if (closed) return;
      if (ec) {
        if (ec == asio::error::operation_aborted) return;
        if (ec != asio::error::eof) {
          abort();
          return;
        }
        client_eof = true;
        to_server.shutdown_wanted = true;
        flush(to_server, upstream);
        maybe_finish();
        return;
      }
      if (!server_eof) {
        from_client.append(client_buf.data(), n);
        if (!take_commands()) return;
      }
      read_client();
    }

    bool take_commands() {
      std::size_t used = 0;
      for (;;) {
        auto parsed = parse_command(std::string_view(from_client).substr(used));
        if (parsed.status == ParsedCommand::Status::incomplete) break;
        if (parsed.status == ParsedCommand::Status::invalid) {
          std::fprintf(stderr, "VariantProxy: unparsable command bytes from a client; connection reset\n");
          abort();
          return false;
        }
        const std::string_view raw = std::string_view(from_client).substr(used, parsed.length);
        try {
          on_command(parsed.args, raw);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "VariantProxy: a rule threw: %s; connection reset\n", e.what());
          abort();
          return false;
        }
        used += parsed.length;
      }
      from_client.erase(0, used);
      drain();
      flush(to_server, upstream);
      flush(to_client, client);
      return true;
    }

    void on_command(const std::vector<std::string>& args, std::string_view raw) {
      if (args.empty()) {  // Redis skips it without a reply
        to_server.pending.append(raw);
        return;
      }
      auto keys = counter_keys(args);
      proxy.add(keys, &Counts::seen);
      const std::string name = upper(args[0]);
      Decision decision = proxy.decide(args);
      if (decision.reply) {
        proxy.add(keys, &Counts::refused);
        // Redis flags the transaction when it rejects a command inside MULTI.
        if (in_multi && name != "EXEC" && name != "DISCARD" && name != "MULTI") multi_dirty = true;
        Slot slot;
        slot.canned = std::move(*decision.reply);
        slots.push_back(std::move(slot));
        return;
      }
      Slot slot;
      slot.forwarded = true;
      slot.rewrite = std::move(decision.rewrite);
      slot.keys = std::move(keys);
      if (name == "EXEC" && in_multi && multi_dirty) {
        // What Redis answers after a rejected command in the transaction:
        // the server discards it instead of running the rest.
        raw = "*1\r\n$7\r\nDISCARD\r\n";
        slot.replacement = "-EXECABORT Transaction discarded because of previous errors.\r\n";
      }
      if (!in_multi && is_pubsub_command(name)) {
        slot.pubsub_kind = lower(name);
        if (args.size() == 1 && name.ends_with("UNSUBSCRIBE")) {
          slot.until_empty = true;
        } else {
          slot.replies = std::max<std::size_t>(1, args.size() - 1);
        }
      }
      if (name == "RESET") {
        slot.resets = true;
        in_multi = false;
        multi_dirty = false;
      } else if (name == "MULTI") {
        in_multi = true;
      } else if (name == "EXEC" || name == "DISCARD") {
        in_multi = false;
        multi_dirty = false;
      }
      to_server.pending.append(raw);
      slots.push_back(std::move(slot));
    }

    // ---- server -> client

    void read_server() {
      upstream.async_read_some(asio::buffer(server_buf), [self = shared_from_this()](error_code ec, std::size_t n) {
        self->on_server_bytes(ec, n);
      });
    }

    void on_server_bytes(error_code ec, std::size_t n) {
      if (closed) return;
      if (ec) {
        if (ec == asio::error::operation_aborted) return;
        if (ec != asio::error::eof) {
          abort();
          return;
        }
        // Nothing more will be answered (after QUIT, say): the owed replies
        // are dropped, as with a server that closes.
        server_eof = true;
        slots.clear();
        to_client.shutdown_wanted = true;
        flush(to_client, client);
        maybe_finish();
        return;
      }
      from_server.append(server_buf.data(), n);
      std::size_t used = 0;
      for (;;) {
        const std::size_t end = scan_value(from_server, used, 0);
        if (end == incomplete) break;
        if (end == invalid) {
          std::fprintf(stderr, "VariantProxy: unparsable reply bytes from the server; connection reset\n");
          abort();
          return;
        }
        try {
          on_reply(std::string_view(from_server).substr(used, end - used));
        } catch (const std::exception& e) {
          std::fprintf(stderr, "VariantProxy: a rewrite threw: %s; connection reset\n", e.what());
          abort();
          return;
        }
        used = end;
      }
      from_server.erase(0, used);
      flush(to_client, client);
      read_server();
    }

    void on_reply(std::string_view value) {
      const Head head = head_of(value);
      Slot* front = slots.empty() ? nullptr : &slots.front();  // forwarded (see drain)
      if (front && !front->pubsub_kind.empty() && (head.error() || head.kind == front->pubsub_kind)) {
        consume(*front, value, head);
        return;
      }
      if (head.type == '>') {  // RESP3 push: never a reply
        track(head);
        to_client.pending.append(value);
        return;
      }
      if (subscribed() && head.type == '*' &&
          (head.kind == "message" || head.kind == "pmessage" || head.kind == "smessage" ||
           head.kind == "sunsubscribe")) {  // a message, or a shard channel whose slot moved
        track(head);
        to_client.pending.append(value);
        return;
      }
      if (front) {
        consume(*front, value, head);
        return;
      }
      to_client.pending.append(value);  // not asked for (an error before the server closes)
    }

    void consume(Slot& slot, std::string_view value, const Head& head) {
      if (!slot.replacement.empty()) {
        to_client.pending.append(slot.replacement);
      } else if (slot.rewrite) {
        to_client.pending.append(slot.rewrite(value));
        proxy.add(slot.keys, &Counts::rewritten);
      } else {
        to_client.pending.append(value);
      }
      bool done = true;
      if (!slot.pubsub_kind.empty() && !head.error()) {
        track(head);
        done = slot.until_empty ? names_of(slot.pubsub_kind).empty() : --slot.replies == 0;
      }
      if (slot.resets && !head.error()) {
        channels.clear();
        patterns.clear();
        shard_channels.clear();
      }
      if (done) {
        slots.pop_front();
        drain();
      }
    }

    // The client's subscriptions as the server confirmed them.
    std::set<std::string>& names_of(std::string_view kind) {
      if (kind == "psubscribe" || kind == "punsubscribe") return patterns;
      if (kind == "ssubscribe" || kind == "sunsubscribe") return shard_channels;
      return channels;
    }

    void track(const Head& head) {
      if (!head.has_channel) return;
      const std::string_view kind = head.kind;
      if (kind == "subscribe" || kind == "psubscribe" || kind == "ssubscribe") {
        names_of(kind).insert(head.channel);
      } else if (kind == "unsubscribe" || kind == "punsubscribe" || kind == "sunsubscribe") {
        names_of(kind).erase(head.channel);
      }
    }

    bool subscribed() const { return !channels.empty() || !patterns.empty() || !shard_channels.empty(); }

    // Canned replies whose turn has come.
    void drain() {
      while (!slots.empty() && !slots.front().forwarded) {
        to_client.pending.append(slots.front().canned);
        slots.pop_front();
      }
    }

    // ---- output, close

    void flush(Out& out, tcp::socket& socket) {
      if (closed || out.writing) return;
      if (&socket == &upstream && !upstream_ready) return;
      if (out.pending.empty()) {
        if (out.shutdown_wanted && !out.shut) {
          out.shut = true;
          error_code ignored;
          socket.shutdown(tcp::socket::shutdown_send, ignored);
        }
        maybe_finish();
        return;
      }
      out.inflight.swap(out.pending);
      out.pending.clear();
      out.writing = true;
      asio::async_write(socket, asio::buffer(out.inflight),
                        [self = shared_from_this(), &out, &socket](error_code ec, std::size_t) {
                          out.writing = false;
                          if (self->closed) return;
                          if (ec) {
                            self->abort();
                            return;
                          }
                          out.inflight.clear();
                          self->flush(out, socket);
                        });
    }

    // Both peers closed their side and the client has every reply.
    void maybe_finish() {
      if (client_eof && server_eof && !to_client.writing && to_client.pending.empty()) close(false);
    }

    void abort() { close(true); }

    void close(bool with_reset) {
      if (closed) return;
      closed = true;
      error_code ignored;
      for (tcp::socket* s : {&client, &upstream}) {
        if (with_reset && s->is_open()) s->set_option(asio::socket_base::linger(true, 0), ignored);
        s->close(ignored);
      }
      slots.clear();
      proxy.open.fetch_sub(1, std::memory_order_relaxed);
      proxy.conns.erase(shared_from_this());
    }

    Impl& proxy;
    tcp::socket client;
    tcp::socket upstream;
    std::array<char, 16384> client_buf{};
    std::array<char, 16384> server_buf{};
    std::string from_client;  // not yet a whole command
    std::string from_server;  // not yet a whole reply
    Out to_client;
    Out to_server;
    std::deque<Slot> slots;
    std::set<std::string> channels;
    std::set<std::string> patterns;
    std::set<std::string> shard_channels;
    bool in_multi = false;
    bool multi_dirty = false;  // a command was refused since MULTI
    bool upstream_ready = false;
    bool client_eof = false;
    bool server_eof = false;
    bool closed = false;
  };

  Impl(std::uint16_t target_port, const std::string& target_host)
      : target(asio::ip::make_address(target_host), target_port) {
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
      for (const auto& c : all) c->abort();
      work.reset();
    });
    thread.join();
  }

  void accept() {
    acceptor.async_accept([this](error_code ec, tcp::socket socket) {
      if (stopping || ec == asio::error::operation_aborted) return;
      if (!ec) {
        accepted.fetch_add(1, std::memory_order_relaxed);
        auto conn = std::make_shared<Conn>(*this, std::move(socket));
        conns.insert(conn);
        open.fetch_add(1, std::memory_order_relaxed);
        conn->start();
      }
      accept();
    });
  }

  // Runs f on the proxy thread and waits for it (bounded).
  template <class F>
  void run_sync(F f) {
    auto done = std::make_shared<std::promise<void>>();
    auto future = done->get_future();
    asio::post(io, [f = std::move(f), done]() mutable {
      try {
        f();
        done->set_value();
      } catch (...) {
        done->set_exception(std::current_exception());
      }
    });
    if (future.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      throw std::runtime_error("VariantProxy: proxy thread unresponsive");
    }
    future.get();
  }

  // ---- rules (proxy thread)

  Decision decide(const std::vector<std::string>& args) {
    const std::string name = upper(args[0]);
    const Rule* rule = nullptr;
    if (args.size() >= 2) rule = find_rule(name + " " + upper(args[1]));
    if (rule == nullptr) rule = find_rule(name);
    if (rule != nullptr && rule->refuse) return {canned(rule->refuse(args)), {}};
    if (const std::string* body = script_of(name, args)) {
      for (const auto& s : script_rules) {
        if (body->find(s.substring) != std::string::npos) return {canned(s.reply(args)), {}};
      }
    }
    return {std::nullopt, rule != nullptr ? rule->rewrite : Rewrite{}};
  }

  const Rule* find_rule(const std::string& key) const {
    const auto it = rules.find(key);
    return it == rules.end() ? nullptr : &it->second;
  }

  // The script a command runs or loads (remembered by its SHA1), if any.
  const std::string* script_of(const std::string& name, const std::vector<std::string>& args) {
    if ((name == "EVAL" || name == "EVAL_RO") && args.size() >= 2) return &remember(args[1]);
    if (name == "SCRIPT" && args.size() >= 3 && upper(args[1]) == "LOAD") return &remember(args[2]);
    if ((name == "EVALSHA" || name == "EVALSHA_RO") && args.size() >= 2) {
      const auto it = scripts.find(lower(args[1]));
      return it == scripts.end() ? nullptr : &it->second;
    }
    return nullptr;
  }

  const std::string& remember(const std::string& body) {
    return scripts.try_emplace(ScriptedServer::sha1_hex(body), body).first->second;
  }

  static std::string canned(std::string reply) {
    auto checked = as_reply(reply);
    if (!checked) {
      std::fprintf(stderr, "VariantProxy: a rule's reply is not one RESP value: %s\n", reply.c_str());
      return reply;
    }
    return std::move(*checked);
  }

  // ---- counters (any thread)

  void add(const std::vector<std::string>& keys, std::size_t Counts::*field) {
    std::lock_guard lock(counts_mutex);
    for (const auto& k : keys) ++(counts[k].*field);
  }

  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  tcp::acceptor acceptor{io};
  tcp::endpoint target;
  std::uint16_t port = 0;
  std::thread thread;

  // Owned by the proxy thread.
  std::unordered_set<std::shared_ptr<Conn>> conns;
  std::unordered_map<std::string, Rule> rules;
  std::vector<ScriptRule> script_rules;
  std::unordered_map<std::string, std::string> scripts;  // SHA1 (hex) -> body
  bool stopping = false;

  // Any thread.
  mutable std::mutex counts_mutex;
  std::unordered_map<std::string, Counts> counts;
  std::atomic<std::size_t> open{0};
  std::atomic<std::size_t> accepted{0};
};

VariantProxy::VariantProxy(std::uint16_t target_port, std::string target_host)
    : impl_(std::make_unique<Impl>(target_port, target_host)) {}

VariantProxy::~VariantProxy() = default;

std::uint16_t VariantProxy::port() const noexcept { return impl_->port; }

void VariantProxy::refuse(std::string_view command, std::string reply) {
  auto checked = as_reply(std::move(reply));
  if (!checked) throw std::invalid_argument("VariantProxy::refuse: the reply is not one RESP value");
  refuse(command, [r = std::move(*checked)](const Args&) { return r; });
}

void VariantProxy::refuse(std::string_view command, ReplyFor reply) {
  impl_->run_sync([impl = impl_.get(), key = rule_key(command), reply = std::move(reply)]() mutable {
    impl->rules[key] = Impl::Rule{std::move(reply), {}};
  });
}

void VariantProxy::refuse_as_unknown(std::string_view command) {
  const std::string key = rule_key(command);
  if (key.find(' ') != std::string::npos) {
    refuse(key, [](const Args& args) { return unknown_subcommand_error(args[0], args[1]); });
  } else {
    refuse(key, [](const Args& args) {
      return unknown_command_error(args[0], std::vector<std::string>(args.begin() + 1, args.end()));
    });
  }
}

void VariantProxy::rewrite_reply(std::string_view command, Rewrite rewrite) {
  impl_->run_sync([impl = impl_.get(), key = rule_key(command), rewrite = std::move(rewrite)]() mutable {
    impl->rules[key] = Impl::Rule{{}, std::move(rewrite)};
  });
}

void VariantProxy::refuse_script_containing(std::string substring, std::string reply) {
  auto checked = as_reply(std::move(reply));
  if (!checked) {
    throw std::invalid_argument("VariantProxy::refuse_script_containing: the reply is not one RESP value");
  }
  refuse_script_containing(std::move(substring), [r = std::move(*checked)](const Args&) { return r; });
}

void VariantProxy::refuse_script_containing(std::string substring, ReplyFor reply) {
  impl_->run_sync([impl = impl_.get(), s = std::move(substring), reply = std::move(reply)]() mutable {
    impl->script_rules.push_back({std::move(s), std::move(reply)});
  });
}

void VariantProxy::learn_script(std::string_view body) {
  impl_->run_sync([impl = impl_.get(), b = std::string(body)] { impl->remember(b); });
}

void VariantProxy::clear(std::string_view command) {
  impl_->run_sync([impl = impl_.get(), key = rule_key(command)] { impl->rules.erase(key); });
}

void VariantProxy::clear_all() {
  impl_->run_sync([impl = impl_.get()] {
    impl->rules.clear();
    impl->script_rules.clear();
  });
}

void VariantProxy::reset_all() {
  impl_->run_sync([impl = impl_.get()] {
    auto all = impl->conns;
    for (const auto& c : all) c->abort();
  });
}

VariantProxy::Counts VariantProxy::counts(std::string_view command) const {
  const std::string key = rule_key(command);
  std::lock_guard lock(impl_->counts_mutex);
  const auto it = impl_->counts.find(key);
  return it == impl_->counts.end() ? Counts{} : it->second;
}

void VariantProxy::reset_counts() {
  std::lock_guard lock(impl_->counts_mutex);
  impl_->counts.clear();
}

bool VariantProxy::wait_for_seen(std::string_view command, std::size_t n,
                                 std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (seen(command) < n) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

std::size_t VariantProxy::connection_count() const noexcept {
  return impl_->open.load(std::memory_order_relaxed);
}

std::size_t VariantProxy::accepted_count() const noexcept {
  return impl_->accepted.load(std::memory_order_relaxed);
}

leasehold::RedisOptions VariantProxy::options_for(leasehold::RedisOptions base) const {
  base.host = "127.0.0.1";
  base.port = port();
  base.unix_socket.clear();
  return base;
}

}  // namespace leasehold::test
