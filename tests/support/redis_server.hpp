#pragma once
// A real redis-server for one test: fresh temporary directory, free loopback
// port(s), no persistence, killed and cleaned up by the destructor.

#include "support/admin_client.hpp"
#include "support/process.hpp"

#include <leasehold/redis_options.hpp>

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace leasehold::test {

struct RedisServerOptions {
  /// The loopback address the server binds (any of 127.0.0.0/8: two servers
  /// may share a port on two addresses, as behind one moving host name).
  std::string bind_address = "127.0.0.1";
  /// The plain-TCP port; 0: a free one. A given port still taken after a few
  /// seconds makes the constructor throw.
  std::uint16_t port = 0;
  std::string password;                   ///< requirepass (the default user's password)
  std::vector<std::string> acl_users;     ///< raw ACL rules, each written as `user <rule>`;
                                          ///< note Redis 7 users get `resetchannels` unless the
                                          ///< rule grants channels (`&*`), which pub/sub needs
  bool unix_socket = false;               ///< also listen on <dir>/redis.sock (unixsocketperm 700)
  bool tls = false;                       ///< TLS on port(); plain TCP stays on plain_port()
  bool tls_require_client_cert = false;   ///< tls-auth-clients yes (default: optional)
  std::string maxmemory;                  ///< e.g. "2mb", with maxmemory-policy noeviction
  std::vector<std::string> extra_config;  ///< raw config lines, written last (they win)
  /// The server's wall clock (which key expiry runs on) follows the
  /// machine's monotonic clock, shifted by this much: a node whose clock is
  /// ahead (> 0) or behind. See tests/support/steady_clock.
  std::chrono::milliseconds clock_skew{0};
  /// Runs `redis-server <conf> --sentinel` (the `sentinel ...` lines go in
  /// extra_config). Sentinel rewrites its config file (its id, the replicas
  /// and sentinels it found), so restart() starts it from that file again.
  bool sentinel = false;
  /// Cluster mode: `cluster-enabled yes` with the cluster bus on a second
  /// free port (`cluster-port`, see cluster_port()) and the node's
  /// configuration in <dir>/nodes.conf, which restart() keeps (the node
  /// comes back with its id and its view of the cluster). The cluster lines
  /// go before extra_config, which can override them.
  bool cluster = false;
};

/// A value quoted for a redis.conf line (which is split like sdssplitargs:
/// "..." with backslash escapes), e.g. a password.
std::string config_quote(const std::string& value);

class RedisServer {
 public:
  /// Starts redis-server in a fresh directory (mkdtemp under $TMPDIR or
  /// /tmp) with `save ""`, `appendonly no`, `bind <bind_address>`,
  /// `enable-debug-command yes`, on free loopback port(s), and waits (at most
  /// 10 s) until it answers PING. A port taken in the meantime is retried
  /// with another. Throws std::runtime_error, with the tail of the server
  /// log, if it cannot be started.
  explicit RedisServer(RedisServerOptions options = {});

  /// SIGKILL, reap, remove the directory.
  ~RedisServer();

  RedisServer(RedisServer&& other) noexcept;
  RedisServer& operator=(RedisServer&& other) noexcept;
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  /// The port clients of the library use: the TLS port when tls is on.
  std::uint16_t port() const noexcept;
  /// The plain-TCP port (same as port() without TLS); admin() uses it.
  std::uint16_t plain_port() const noexcept { return plain_port_; }
  /// The cluster bus port (options.cluster), else 0.
  std::uint16_t cluster_port() const noexcept { return cluster_port_; }
  std::string host() const { return options_.bind_address; }
  /// <dir>/redis.sock, or empty unless options.unix_socket.
  std::string unix_path() const;
  const std::string& dir() const noexcept { return dir_; }
  /// The server's stdout/stderr.
  std::string log_file() const { return dir_ + "/redis.log"; }
  /// The last lines of the server log (for failure messages).
  std::string log_tail(std::size_t lines = 30) const;
  /// The current process id; -1 once killed.
  pid_t pid() const;
  const RedisServerOptions& server_options() const noexcept { return options_; }

  /// Library options for this server: host/port (the TLS port and TLS
  /// settings with ca.pem, the client certificate and server_name
  /// "localhost" when tls is on), password, connect and command timeouts of
  /// 1000 ms. Everything else keeps the library defaults.
  leasehold::RedisOptions options() const;
  /// Like options() but through the unix socket (requires options.unix_socket).
  leasehold::RedisOptions unix_options() const;
  /// The same endpoint as options() in URL form: redis://[:pw@]127.0.0.1:port?...
  /// or rediss://...?ca_file=..&cert_file=..&key_file=..&server_name=localhost
  /// (the password and query values are percent-encoded).
  std::string url() const;

  /// TLS material (empty strings unless tls): the CA that signed the server
  /// and client certificates, the server's pair, a client pair, and a second
  /// unrelated CA (plus a client pair it signed) for negative tests.
  std::string ca_file() const;
  std::string wrong_ca_file() const;
  std::string server_cert_file() const;
  std::string server_key_file() const;
  std::string client_cert_file() const;
  std::string client_key_file() const;
  std::string wrong_client_cert_file() const;
  std::string wrong_client_key_file() const;

  void kill();     ///< SIGKILL + reap; the port stops answering at once
  void pause();    ///< SIGSTOP: connections stay open, nothing is answered
  void resume();   ///< SIGCONT
  /// Kills the server if running and starts it again on the same port(s)
  /// with the same options and an empty dataset; waits until it answers.
  /// Throws if the port(s) cannot be bound again within a few seconds.
  void restart();
  /// Like restart(), with options.extra_config replaced first (a node that
  /// comes back as the replica of another master, say). Not for a sentinel,
  /// which restarts from the config it rewrote: throws std::logic_error.
  void restart(std::vector<std::string> extra_config);
  /// Like restart() (SIGKILL, so nothing is saved at exit), but the server
  /// loads the snapshot a SAVE left in its directory: a restart that keeps
  /// old data and loses the writes made since.
  void restart_from_snapshot();
  bool running() const;

  /// Connection details for an AdminClient on the plain endpoint (TCP
  /// plain_port()), authenticated as the default user when a password is set.
  AdminClientOptions admin_options(
      std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) const;
  /// A fresh blocking admin connection (see admin_options()).
  AdminClient admin(std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) const;

 private:
  void make_dir();
  void generate_tls_material();
  void write_config() const;
  /// LD_PRELOAD of the steady wall clock, and the skew it applies.
  std::vector<std::string> clock_environment() const;
  void start(bool fixed_ports, bool keep_snapshot = false);
  // Returns false if the server exited because its port was taken.
  bool wait_ready(std::chrono::milliseconds timeout, std::uintmax_t log_offset);
  void cleanup() noexcept;
  std::string file(const char* name) const;

  RedisServerOptions options_;
  std::string dir_;
  std::uint16_t port_ = 0;        // TLS port when tls, else the plain port
  std::uint16_t plain_port_ = 0;
  std::uint16_t cluster_port_ = 0;  // the cluster bus, when options.cluster
  std::optional<Process> process_;
};

}  // namespace leasehold::test
