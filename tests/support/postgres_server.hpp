#pragma once
// A private PostgreSQL cluster for one test: initdb in a fresh temporary
// directory, postgres on a free loopback port (its unix socket in that
// directory too), shut down and removed by the destructor. No libpq: the
// harness drives the server binaries and psql.
//
// PostgreSQL refuses to run as root. When the test runs as root (CI does),
// initdb and postgres run as the `postgres` system user (the Debian package
// creates it), or `nobody` where there is none, through
// `setpriv --reuid --regid --clear-groups --pdeathsig KILL`: the temporary
// directory is chown'ed to that user, and the death signal is set again after
// the switch of user (which clears it), so postgres dies with the test.

#include "support/process.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace leasehold::test {

class PostgresServer {
 public:
  /// The directory holding initdb, postgres and psql: $LEASEHOLD_POSTGRES_BIN
  /// if set, else the newest /usr/lib/postgresql/<version>/bin (Debian's
  /// layout). Empty when there is none: tests then skip.
  static std::string find_bin_dir();

  /// initdb (superuser `leasehold`, trust authentication, no fsync) and
  /// start postgres on 127.0.0.1 and a free port (retried with another port
  /// if taken meanwhile); waits until it accepts connections. Every step is
  /// bounded; throws std::runtime_error with the log tail on failure.
  PostgresServer();
  /// Stops the server (bounded) and removes the directory.
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  /// The postmaster's process id; -1 once stopped.
  pid_t pid() const { return process_ && process_->running() ? process_->pid() : -1; }
  const std::string& dir() const noexcept { return dir_; }
  /// A libpq connection string for the database `postgres` over TCP.
  std::string conninfo() const;
  /// The server's log (for failure messages).
  std::string log_tail(std::size_t lines = 30) const;

  /// Runs `sql` with psql; returns the result rows, one string per row,
  /// columns separated by '|'. Throws with psql's output on an error.
  std::vector<std::string> query(const std::string& sql) const;

  /// Fast shutdown (SIGINT), then SIGKILL if it takes longer than 10 s.
  /// Idempotent.
  void stop();

 private:
  /// The command prefix that runs a server binary as the unprivileged user
  /// (empty unless running as root), then in dir_ (env -C): initdb and
  /// postgres need a readable working directory.
  std::vector<std::string> as_server_user() const;
  void init_cluster();
  // False if the port was taken.
  bool start_on(std::uint16_t port);
  void cleanup() noexcept;

  std::string bin_;
  std::string dir_;
  std::string user_;  // the server's user; empty: the current user
  gid_t group_id_ = 0;
  std::uint16_t port_ = 0;
  std::optional<Process> process_;
  mutable int queries_ = 0;
};

}  // namespace leasehold::test
