#pragma once
// A RESP-aware TCP proxy in front of a real Redis that makes it answer like a
// server variant (Dragonfly, KeyDB, Valkey, Redis 6.2, a managed service with
// restricted commands): chosen commands are refused with a variant's exact
// error text, chosen replies are rewritten, scripts whose body contains a
// given text are refused (EVALSHA of such a body too). Everything else is
// forwarded untouched, pipelines keep their order, pub/sub works.
//
// Limits: plain TCP only (no TLS); inline commands are split on blanks
// (no quotes); a SUBSCRIBE queued in MULTI is not seen as subscribing; a
// refusal inside MULTI turns EXEC into DISCARD and answers EXECABORT, as
// Redis does; a server that drops a shard channel on its own just as the
// client sends SUNSUBSCRIBE for it may confuse the reply count.

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

/// "-" + text + "\r\n": a RESP error line (text such as "ERR no such thing").
std::string resp_error(std::string_view text);

/// Redis 7.0's reply to a command it does not know (a raw RESP error line):
/// `-ERR unknown command '<name>', with args beginning with: '<a1>' '<a2>' \r\n`,
/// the name cut at 128 bytes, each argument quoted and followed by a space,
/// the list cut at 128 bytes, each text cut at a NUL byte and CR/LF turned
/// into spaces (src/server.c, processCommand / commandCheckExistence).
/// `args` are the arguments after the name.
std::string unknown_command_error(std::string_view name, const std::vector<std::string>& args = {});
/// Redis 7.0's reply to an unknown subcommand of a container command:
/// `-ERR unknown subcommand '<subcommand>'. Try <COMMAND> HELP.\r\n`.
std::string unknown_subcommand_error(std::string_view command, std::string_view subcommand);
/// Redis 7.0's ACL denial: `-NOPERM this user has no permissions to run the
/// '<command>' command\r\n`; `command` as Redis names it, lower case, a
/// subcommand after a bar ("wait", "cluster|shards").
std::string noperm_error(std::string_view command);

class VariantProxy {
 public:
  /// A client command: its name and arguments as sent.
  using Args = std::vector<std::string>;
  /// Computes a canned reply (raw RESP; a missing final CRLF is added) from
  /// the command it answers. Runs on the proxy thread.
  using ReplyFor = std::function<std::string(const Args& command)>;
  /// Replaces one raw RESP reply of the server with another. Runs on the
  /// proxy thread.
  using Rewrite = std::function<std::string(std::string_view raw_reply)>;

  /// What the proxy did with commands of one name (see counts()).
  struct Counts {
    std::size_t seen = 0;       ///< commands read from clients
    std::size_t refused = 0;    ///< answered by the proxy, not forwarded
    std::size_t rewritten = 0;  ///< server replies replaced by a rewrite rule
  };

  /// Listens on a free 127.0.0.1 port (its own thread and io_context) and
  /// forwards each accepted connection to target_host:target_port.
  explicit VariantProxy(std::uint16_t target_port, std::string target_host = "127.0.0.1");
  /// Stops the thread; every proxied connection is reset.
  ~VariantProxy();

  VariantProxy(const VariantProxy&) = delete;
  VariantProxy& operator=(const VariantProxy&) = delete;
  VariantProxy(VariantProxy&&) = delete;
  VariantProxy& operator=(VariantProxy&&) = delete;

  std::uint16_t port() const noexcept;

  // Rules. `command` is a command name ("WAIT") or a name and its first
  // argument ("CLUSTER SHARDS", "SCRIPT LOAD"), case-insensitive. A rule on a
  // name and subcommand takes precedence over a rule on the name alone; one
  // name holds one rule (a new one replaces it). Every call below is
  // thread-safe and synchronous: commands the proxy reads after it returns
  // follow the new rules. Do not call them from a ReplyFor or Rewrite.

  /// Do not forward `command`: answer `reply` instead (raw RESP, typically
  /// an error line such as unknown_command_error("WAIT"); a missing final
  /// CRLF is added). Throws std::invalid_argument unless reply is one RESP
  /// value.
  void refuse(std::string_view command, std::string reply);
  /// The same with a reply computed from each refused command (a variant's
  /// error text that quotes the arguments).
  void refuse(std::string_view command, ReplyFor reply);
  /// refuse() with Redis 7.0's own text for a missing command:
  /// unknown_subcommand_error() for "NAME SUB", else unknown_command_error()
  /// with the command's arguments (as rename-command "" would answer).
  void refuse_as_unknown(std::string_view command);
  /// Forward `command`, then give the client rewrite(server's reply) instead
  /// of the reply (each reply, for a command that has several, such as
  /// SUBSCRIBE of several channels).
  void rewrite_reply(std::string_view command, Rewrite rewrite);
  /// Refuse EVAL, EVAL_RO and SCRIPT LOAD whose script contains `substring`
  /// (case-sensitive), and EVALSHA / EVALSHA_RO of the SHA1 of such a script
  /// (known from an EVAL or SCRIPT LOAD through this proxy, refused or not,
  /// or from learn_script()). A rule on the command itself (refuse or
  /// rewrite_reply) comes first.
  void refuse_script_containing(std::string substring, std::string reply);
  void refuse_script_containing(std::string substring, ReplyFor reply);
  /// Makes EVALSHA of `body`'s SHA1 recognisable (a script loaded on the
  /// server by another path than this proxy).
  void learn_script(std::string_view body);
  /// Removes the rule on `command` (script rules stay).
  void clear(std::string_view command);
  /// Removes every rule, script rules included (learned scripts stay).
  void clear_all();

  /// Closes every current connection abruptly (RST on both sides), e.g. to
  /// make the library reconnect and probe again. New connections work.
  void reset_all();

  /// Counts for commands named `command` (case-insensitive) since
  /// construction or reset_counts(): a name ("EVALSHA", "CLUSTER" for every
  /// CLUSTER subcommand), or a container command and its subcommand
  /// ("CLUSTER SHARDS", "SCRIPT LOAD"; containers as in Redis 7.0: ACL,
  /// CLIENT, CLUSTER, COMMAND, CONFIG, FUNCTION, LATENCY, MEMORY, MODULE,
  /// OBJECT, PUBSUB, SCRIPT, SLOWLOG, XGROUP, XINFO).
  Counts counts(std::string_view command) const;
  std::size_t seen(std::string_view command) const { return counts(command).seen; }
  std::size_t refused(std::string_view command) const { return counts(command).refused; }
  std::size_t rewritten(std::string_view command) const { return counts(command).rewritten; }
  void reset_counts();
  /// Polls until seen(command) >= n; false on timeout.
  bool wait_for_seen(std::string_view command, std::size_t n,
                     std::chrono::milliseconds timeout) const;

  /// Currently open proxied connections.
  std::size_t connection_count() const noexcept;
  /// Connections accepted since construction.
  std::size_t accepted_count() const noexcept;

  /// base pointed at this proxy: host 127.0.0.1, port(), no unix socket.
  /// The proxy reads RESP: no TLS through it.
  leasehold::RedisOptions options_for(leasehold::RedisOptions base) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace leasehold::test
