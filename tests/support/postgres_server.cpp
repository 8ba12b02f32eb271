#include "support/postgres_server.hpp"

#include "support/free_port.hpp"

#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace leasehold::test {

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::size_t max_unix_path = 107;  // sizeof(sockaddr_un::sun_path) - 1
constexpr int max_port_attempts = 8;
constexpr auto initdb_timeout = 120s;       // a noisy machine: initdb writes a whole cluster
constexpr auto ready_timeout = 60s;
constexpr auto shutdown_timeout = 10s;
constexpr auto query_timeout = 30s;

std::string read_file(const std::string& path, std::uintmax_t from = 0) {
  std::ifstream in(path);
  in.seekg(static_cast<std::streamoff>(from));
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::string tail(const std::string& path, std::size_t lines) {
  std::istringstream in(read_file(path));
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(std::move(line));
  std::string out;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += all[i] + "\n";
  return out;
}

bool is_executable(const fs::path& p) { return ::access(p.c_str(), X_OK) == 0; }

// Runs a process to completion within `timeout`; throws with its output
// unless it exits with 0.
void run(const std::string& what, std::vector<std::string> argv, const std::string& log,
         std::chrono::seconds timeout) {
  Process p(std::move(argv), log);
  const auto status = p.wait_exit(timeout);
  if (!status) {
    p.kill();
    throw std::runtime_error("PostgresServer: " + what + " timed out:\n" + tail(log, 30));
  }
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    throw std::runtime_error("PostgresServer: " + what + " " + describe_wait_status(*status) + ":\n" +
                             tail(log, 30));
  }
}

}  // namespace

std::string PostgresServer::find_bin_dir() {
  if (const char* env = std::getenv("LEASEHOLD_POSTGRES_BIN"); env != nullptr && *env != '\0') {
    return is_executable(fs::path(env) / "postgres") ? env : "";
  }
  std::error_code ec;
  fs::path best;
  int best_version = -1;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const fs::path bin = entry.path() / "bin";
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) continue;
    if (!is_executable(bin / "initdb") || !is_executable(bin / "postgres") || !is_executable(bin / "psql")) continue;
    if (const int version = std::stoi(name); version > best_version) {
      best_version = version;
      best = bin;
    }
  }
  return best.string();
}

PostgresServer::PostgresServer() : bin_(find_bin_dir()) {
  if (bin_.empty()) throw std::runtime_error("PostgresServer: no PostgreSQL binaries found");
  try {
    const char* env = std::getenv("TMPDIR");
    std::string base = env != nullptr && *env != '\0' ? env : "/tmp";
    // "/leasehold-pg-XXXXXX/.s.PGSQL.65535" is 35 characters.
    if (base.size() + 35 > max_unix_path) base = "/tmp";
    std::string tmpl = base + "/leasehold-pg-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("PostgresServer: mkdtemp failed under " + base);
    dir_ = tmpl;

    if (::geteuid() == 0) {
      const passwd* pw = ::getpwnam("postgres");
      if (pw == nullptr) pw = ::getpwnam("nobody");
      if (pw == nullptr) throw std::runtime_error("PostgresServer: running as root, and no postgres or nobody user");
      user_ = pw->pw_name;
      group_id_ = pw->pw_gid;
      if (::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        throw std::system_error(errno, std::generic_category(), "PostgresServer: chown " + dir_);
      }
    }

    init_cluster();
    for (int attempt = 1;; ++attempt) {
      if (start_on(free_port())) break;
      if (attempt >= max_port_attempts) {
        throw std::runtime_error("PostgresServer: no free port after " + std::to_string(attempt) +
                                 " attempts. Log tail:\n" + log_tail());
      }
    }
  } catch (...) {
    cleanup();
    throw;
  }
}

PostgresServer::~PostgresServer() { cleanup(); }

std::vector<std::string> PostgresServer::as_server_user() const {
  std::vector<std::string> prefix;
  if (!user_.empty()) {
    prefix = {"setpriv", "--reuid=" + user_, "--regid=" + std::to_string(group_id_),
              "--clear-groups", "--pdeathsig", "KILL", "--"};
  }
  prefix.insert(prefix.end(), {"env", "-C", dir_});
  return prefix;
}

void PostgresServer::init_cluster() {
  auto argv = as_server_user();
  argv.insert(argv.end(), {bin_ + "/initdb", "-D", dir_ + "/data", "-U", "leasehold", "-A", "trust", "-E", "UTF8",
                           "--no-locale", "--no-sync", "--no-instructions"});
  run("initdb", std::move(argv), dir_ + "/initdb.log", initdb_timeout);
}

bool PostgresServer::start_on(std::uint16_t port) {
  const std::string log = dir_ + "/postgres.log";
  std::error_code ec;
  const std::uintmax_t offset = fs::exists(log) ? fs::file_size(log, ec) : 0;
  auto argv = as_server_user();
  // Throwaway data: durability off, which also makes it fast.
  argv.insert(argv.end(), {bin_ + "/postgres", "-D", dir_ + "/data", "-p", std::to_string(port),
                           "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir_,
                           "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                           "-c", "max_connections=20"});
  process_.emplace(std::move(argv), log);

  const auto deadline = std::chrono::steady_clock::now() + ready_timeout;
  while (true) {
    const std::string output = read_file(log, offset);
    if (output.find("database system is ready to accept connections") != std::string::npos) {
      port_ = port;
      return true;
    }
    if (!process_->running()) {
      const auto status = process_->exit_status();
      process_.reset();
      if (output.find("Address already in use") != std::string::npos) return false;
      throw std::runtime_error("PostgresServer: postgres " +
                               (status ? describe_wait_status(*status) : std::string("exited")) +
                               " during startup. Log tail:\n" + log_tail());
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      process_.reset();
      throw std::runtime_error("PostgresServer: postgres not ready after " +
                               std::to_string(ready_timeout.count()) + " s. Log tail:\n" + log_tail());
    }
    std::this_thread::sleep_for(20ms);
  }
}

std::string PostgresServer::conninfo() const {
  return "host=127.0.0.1 port=" + std::to_string(port_) + " user=leasehold dbname=postgres connect_timeout=5";
}

std::string PostgresServer::log_tail(std::size_t lines) const { return tail(dir_ + "/postgres.log", lines); }

std::vector<std::string> PostgresServer::query(const std::string& sql) const {
  const std::string log = dir_ + "/query-" + std::to_string(++queries_) + ".log";
  run("psql", {bin_ + "/psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", conninfo(), "-c", sql}, log,
      query_timeout);
  std::vector<std::string> rows;
  std::istringstream in(read_file(log));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) rows.push_back(line);
  }
  return rows;
}

void PostgresServer::stop() {
  if (!process_) return;
  // The postmaster stops its children before it exits; SIGKILL would orphan them.
  process_->signal(SIGINT);
  if (!process_->wait_exit(shutdown_timeout)) process_->kill();
  process_.reset();
}

void PostgresServer::cleanup() noexcept {
  try {
    stop();
  } catch (...) {
    process_.reset();
  }
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    dir_.clear();
  }
}

}  // namespace leasehold::test
