#pragma once
// A fake Redis on a free loopback port (own thread) that answers what a test
// scripts: well-formed replies for the handshake, then invalid RESP bytes, a
// reply cut in the middle, silence, a close or a reset.

#include <leasehold/redis_options.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::test {

/// What the server does in answer to one command (or one script step).
struct ScriptedAction {
  std::string send;                    ///< raw bytes to write; may be invalid RESP
  std::chrono::milliseconds delay{0};  ///< wait this long before writing
  bool close = false;                  ///< then close the connection (FIN)
  bool reset = false;                  ///< then close it abruptly (RST)

  static ScriptedAction reply(std::string bytes) { return {std::move(bytes), {}, false, false}; }
  /// Send nothing, keep the connection open.
  static ScriptedAction silence() { return {}; }
  /// Send bytes (possibly none), then close gracefully.
  static ScriptedAction close_after(std::string bytes = {}) {
    return {std::move(bytes), {}, true, false};
  }
  /// Send bytes (possibly none), then reset.
  static ScriptedAction reset_after(std::string bytes = {}) {
    return {std::move(bytes), {}, false, true};
  }
};

/// A command the server received (a RESP array of bulk strings, or an
/// inline command line).
struct ScriptedCommand {
  std::size_t connection = 0;  ///< 0-based, in accept order
  std::size_t index = 0;       ///< 0-based position on its connection
  std::vector<std::string> args;

  /// args[0] upper-cased ("" if empty).
  std::string name() const;
  /// args[1] upper-cased ("" if absent): SCRIPT LOAD -> "LOAD".
  std::string subcommand() const;
};

/// A raw-bytes script step, run on each connection from the first step.
struct ScriptStep {
  /// Wait until these bytes occur in what this connection received since
  /// the previous step matched (empty: do not wait).
  std::string wait_for;
  std::string send;                    ///< then write these bytes
  bool close = false;                  ///< then close (FIN)
  std::chrono::milliseconds delay{0};  ///< before writing
};

class ScriptedServer {
 public:
  using Handler = std::function<ScriptedAction(const ScriptedCommand&)>;

  /// Parses each connection's bytes into commands and calls handler for
  /// each, in order, on the server thread (it must be thread-safe with
  /// respect to anything the test touches concurrently). Actions on one
  /// connection are carried out in order.
  explicit ScriptedServer(Handler handler);
  /// Plays steps on every accepted connection; once they are exhausted the
  /// connection stays open and further bytes are ignored.
  explicit ScriptedServer(std::vector<ScriptStep> steps);
  /// Stops the thread; open connections are reset.
  ~ScriptedServer();

  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;
  ScriptedServer(ScriptedServer&&) = delete;
  ScriptedServer& operator=(ScriptedServer&&) = delete;

  std::uint16_t port() const noexcept;
  /// Connections accepted so far.
  std::size_t connection_count() const noexcept;
  /// Connections currently open (closed by the server or by the peer: not counted).
  std::size_t open_connections() const noexcept;
  bool wait_for_connections(std::size_t n, std::chrono::milliseconds timeout) const;

  /// Every command parsed so far (Handler mode), across connections.
  std::vector<ScriptedCommand> commands() const;
  /// Polls until a command named `name` (case-insensitive) was received.
  bool wait_for_command(std::string_view name, std::chrono::milliseconds timeout) const;
  /// The raw bytes received on a connection so far ("" if no such connection).
  std::string received(std::size_t connection) const;

  /// base (default: library defaults) pointed at this server, with connect
  /// and command timeouts of 1000 ms, no TLS, no unix socket.
  leasehold::RedisOptions options_for(leasehold::RedisOptions base = {}) const;

  /// A plausible Redis 7 (RESP2) answer: PING, ECHO, HELLO (proto 2), AUTH,
  /// SELECT, CLIENT *, ROLE (master), SCRIPT LOAD (the script's real SHA1), SCRIPT EXISTS,
  /// (P)SUBSCRIBE/(P)UNSUBSCRIBE confirmations, GET (nil), PUBLISH/DEL (0),
  /// QUIT (+OK and close); +OK for anything else.
  static ScriptedAction redis_like(const ScriptedCommand& command);
  /// redis_like() until the first command named command_name (e.g.
  /// "EVALSHA") on each connection, which gets `action`; later commands on
  /// that connection get silence.
  static Handler redis_like_until(std::string command_name, ScriptedAction action);
  /// Lowercase hex SHA-1, as SCRIPT LOAD reports.
  static std::string sha1_hex(std::string_view data);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace leasehold::test
