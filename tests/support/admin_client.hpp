#pragma once
// A small blocking Redis client for test assertions and manipulation,
// deliberately independent from the library under test (hiredis's
// synchronous API).

#include <leasehold/redis/reply.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct redisContext;  // hiredis; kept out of this header

namespace leasehold::test {

struct AdminClientOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  std::string unix_socket;   ///< when set, host and port are ignored
  std::string username;      ///< AUTH <username> <password> when set
  std::string password;      ///< AUTH <password> when set without a username
  std::chrono::milliseconds timeout{2000};  ///< connect, and each command
};

class AdminClient {
 public:
  /// Connects (and authenticates when a password is given). Throws
  /// std::runtime_error if the connection or AUTH fails or times out.
  explicit AdminClient(AdminClientOptions options);
  AdminClient(std::string host, std::uint16_t port, std::string username = {},
              std::string password = {},
              std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));

  AdminClient(AdminClient&& other) noexcept;
  AdminClient& operator=(AdminClient&& other) noexcept;
  AdminClient(const AdminClient&) = delete;
  AdminClient& operator=(const AdminClient&) = delete;
  ~AdminClient();

  /// Sends one command and waits (at most the timeout) for its reply.
  /// Redis error replies come back as Reply::Type::error; I/O failures and
  /// timeouts throw std::runtime_error, after which the client is broken
  /// (every later call throws): make a new one.
  leasehold::redis::Reply call(std::vector<std::string> args);

  /// GET; nullopt when the key does not exist. Throws on an error reply.
  std::optional<std::string> get(std::string_view key);
  /// SET key value. Throws on an error reply.
  void set(std::string_view key, std::string_view value);
  /// PTTL: remaining milliseconds, -1 without TTL, -2 when missing.
  long long pttl(std::string_view key);
  /// How often the server ran `command` (lower case, as INFO commandstats
  /// names it; inside scripts too) since it started or CONFIG RESETSTAT.
  long long command_calls(std::string_view command);

  /// The server's identity as leasehold's data marker names it:
  /// "<run_id>:<master_replid>" (INFO). Throws when INFO lacks either.
  std::string data_identity();

  /// Changes the per-command timeout.
  void set_timeout(std::chrono::milliseconds timeout);

  /// False after an I/O failure (or once moved from).
  bool ok() const noexcept;

 private:
  void connect();
  void close() noexcept;

  AdminClientOptions options_;
  redisContext* ctx_ = nullptr;
  std::string broken_;  // why the connection is unusable, once it is
};

/// A short rendering of a reply for assertion messages (the harness does not
/// depend on Reply::debug_string, which lives in the library).
std::string describe_reply(const leasehold::redis::Reply& reply);

}  // namespace leasehold::test
