#include "support/redis_server.hpp"

#include "support/free_port.hpp"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

namespace leasehold::test {

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::size_t max_unix_path = 107;  // sizeof(sockaddr_un::sun_path) - 1
constexpr int max_port_attempts = 8;
constexpr auto ready_timeout = 10s;
constexpr auto rebind_timeout = 5s;

std::string percent_encode(const std::string& value, bool keep_slash) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
                            c == '~' || (keep_slash && c == '/');
    if (unreserved) {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 0xF];
    }
  }
  return out;
}

std::string read_tail(const std::string& path, std::size_t lines) {
  std::ifstream in(path);
  if (!in) return "(no log at " + path + ")";
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(std::move(line));
  std::string out;
  const std::size_t first = all.size() > lines ? all.size() - lines : 0;
  for (std::size_t i = first; i < all.size(); ++i) out += all[i] + "\n";
  return out;
}

std::string make_temp_dir(const std::string& base) {
  std::string tmpl = base + "/leasehold-redis-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw std::runtime_error("RedisServer: mkdtemp failed under " + base);
  }
  return tmpl;
}

// Runs the openssl CLI, bounded; throws with its output on failure.
void openssl(std::vector<std::string> args, const std::string& log) {
  args.insert(args.begin(), "openssl");
  std::string cmd;
  for (const auto& a : args) cmd += a + " ";
  Process proc(std::move(args), log);
  const auto status = proc.wait_exit(30s);
  if (!status) {
    proc.kill();
    throw std::runtime_error("RedisServer: openssl timed out: " + cmd + "\n" + read_tail(log, 20));
  }
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    throw std::runtime_error("RedisServer: openssl failed (" + describe_wait_status(*status) +
                             "): " + cmd + "\n" + read_tail(log, 20));
  }
}

}  // namespace

std::string config_quote(const std::string& value) {
  std::string out = "\"";
  for (const char c : value) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

RedisServer::RedisServer(RedisServerOptions options) : options_(std::move(options)) {
  try {
    make_dir();
    if (options_.tls) generate_tls_material();
    start(/*fixed_ports=*/false);
  } catch (...) {
    cleanup();
    throw;
  }
}

RedisServer::~RedisServer() { cleanup(); }

RedisServer::RedisServer(RedisServer&& other) noexcept
    : options_(std::move(other.options_)),
      dir_(std::exchange(other.dir_, std::string())),
      port_(std::exchange(other.port_, 0)),
      plain_port_(std::exchange(other.plain_port_, 0)),
      cluster_port_(std::exchange(other.cluster_port_, 0)),
      process_(std::exchange(other.process_, std::nullopt)) {}

RedisServer& RedisServer::operator=(RedisServer&& other) noexcept {
  if (this != &other) {
    cleanup();
    options_ = std::move(other.options_);
    dir_ = std::exchange(other.dir_, std::string());
    port_ = std::exchange(other.port_, 0);
    plain_port_ = std::exchange(other.plain_port_, 0);
    cluster_port_ = std::exchange(other.cluster_port_, 0);
    process_ = std::exchange(other.process_, std::nullopt);
  }
  return *this;
}

void RedisServer::cleanup() noexcept {
  process_.reset();  // SIGKILL + reap
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    dir_.clear();
  }
}

void RedisServer::make_dir() {
  const char* env = std::getenv("TMPDIR");
  std::string base = env != nullptr && *env != '\0' ? env : "/tmp";
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  // "/leasehold-redis-XXXXXX/redis.sock" is 34 characters.
  if (options_.unix_socket && base.size() + 34 > max_unix_path) base = "/tmp";
  dir_ = make_temp_dir(base);
}

std::string RedisServer::file(const char* name) const { return dir_ + "/" + name; }

void RedisServer::generate_tls_material() {
  const std::string log = file("openssl.log");
  std::mt19937_64 rng(std::random_device{}());
  auto serial = [&rng] { return std::to_string(rng() >> 2); };
  const std::vector<std::string> ec_key{"-newkey", "ec", "-pkeyopt",
                                        "ec_paramgen_curve:prime256v1", "-nodes"};

  auto make_ca = [&](const std::string& name, const std::string& cn) {
    std::vector<std::string> args{"req", "-x509", "-new"};
    args.insert(args.end(), ec_key.begin(), ec_key.end());
    args.insert(args.end(), {"-keyout", file((name + ".key").c_str()), "-out",
                             file((name + ".pem").c_str()), "-days", "2", "-subj", "/CN=" + cn,
                             "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
                             "keyUsage=critical,keyCertSign,cRLSign"});
    openssl(std::move(args), log);
  };
  auto make_leaf = [&](const std::string& name, const std::string& cn, const std::string& ca,
                       const std::string& extensions) {
    const std::string ext_file = file((name + ".ext").c_str());
    {
      std::ofstream ext(ext_file);
      ext << extensions;
      if (!ext) throw std::runtime_error("RedisServer: cannot write " + ext_file);
    }
    std::vector<std::string> req{"req", "-new"};
    req.insert(req.end(), ec_key.begin(), ec_key.end());
    req.insert(req.end(), {"-keyout", file((name + ".key").c_str()), "-out",
                           file((name + ".csr").c_str()), "-subj", "/CN=" + cn});
    openssl(std::move(req), log);
    openssl({"x509", "-req", "-in", file((name + ".csr").c_str()), "-CA",
             file((ca + ".pem").c_str()), "-CAkey", file((ca + ".key").c_str()), "-set_serial",
             serial(), "-days", "2", "-out", file((name + ".pem").c_str()), "-extfile", ext_file},
            log);
  };

  make_ca("ca", "leasehold-test-ca");
  make_ca("wrong_ca", "leasehold-unrelated-ca");
  make_leaf("server", "localhost", "ca",
            "basicConstraints=CA:FALSE\n"
            "keyUsage=critical,digitalSignature,keyEncipherment\n"
            "extendedKeyUsage=serverAuth\n"
            "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
  const std::string client_ext =
      "basicConstraints=CA:FALSE\n"
      "keyUsage=critical,digitalSignature,keyEncipherment\n"
      "extendedKeyUsage=clientAuth\n";
  make_leaf("client", "leasehold-test-client", "ca", client_ext);
  make_leaf("wrong_client", "leasehold-wrong-client", "wrong_ca", client_ext);
}

void RedisServer::write_config() const {
  std::ostringstream conf;
  conf << "# generated by leasehold::test::RedisServer\n"
       << "bind " << options_.bind_address << "\n"
       << "port " << plain_port_ << "\n"
       << "dir " << config_quote(dir_) << "\n"
       << "daemonize no\n"
       << "logfile \"\"\n"
       << "loglevel notice\n"
       << "save \"\"\n"
       << "appendonly no\n"
       << "enable-debug-command yes\n";
  if (!options_.password.empty()) conf << "requirepass " << config_quote(options_.password) << "\n";
  for (const auto& user : options_.acl_users) conf << "user " << user << "\n";
  if (options_.unix_socket) {
    conf << "unixsocket " << config_quote(unix_path()) << "\n"
         << "unixsocketperm 700\n";
  }
  if (options_.tls) {
    conf << "tls-port " << port_ << "\n"
         << "tls-cert-file " << config_quote(server_cert_file()) << "\n"
         << "tls-key-file " << config_quote(server_key_file()) << "\n"
         << "tls-ca-cert-file " << config_quote(ca_file()) << "\n"
         << "tls-auth-clients " << (options_.tls_require_client_cert ? "yes" : "optional")
         << "\n";
  }
  if (!options_.maxmemory.empty()) {
    conf << "maxmemory " << options_.maxmemory << "\n"
         << "maxmemory-policy noeviction\n";
  }
  if (options_.cluster) {
    // Without cluster-port the bus would be port + 10000, which is past
    // 65535 for much of the ephemeral range that free_port() draws from.
    conf << "cluster-enabled yes\n"
         << "cluster-port " << cluster_port_ << "\n"
         << "cluster-config-file nodes.conf\n";
  }
  for (const auto& line : options_.extra_config) conf << line << "\n";

  const std::string path = file("redis.conf");
  std::ofstream out(path, std::ios::trunc);
  out << conf.str();
  out.close();
  if (!out) throw std::runtime_error("RedisServer: cannot write " + path);
}

std::vector<std::string> RedisServer::clock_environment() const {
  // A step of the machine's wall clock (a paused VM resumed) would expire
  // every key at once; the preloaded clock follows CLOCK_MONOTONIC instead.
  std::string preload = "LD_PRELOAD=" LEASEHOLD_STEADY_CLOCK_LIBRARY;
  if (const char* inherited = std::getenv("LD_PRELOAD"); inherited != nullptr && *inherited != '\0') {
    preload += std::string(":") + inherited;
  }
  return {preload, "LEASEHOLD_CLOCK_SKEW_MS=" + std::to_string(options_.clock_skew.count())};
}

void RedisServer::start(bool fixed_ports, bool keep_snapshot) {
  const auto rebind_deadline = std::chrono::steady_clock::now() + rebind_timeout;
  for (int attempt = 1;; ++attempt) {
    if (!fixed_ports) {
      plain_port_ = options_.port != 0 ? options_.port : free_port();
      port_ = plain_port_;
      if (options_.tls) {
        do {
          port_ = free_port();
        } while (port_ == plain_port_);
      }
      if (options_.cluster) {
        do {
          cluster_port_ = free_port();
        } while (cluster_port_ == plain_port_ || cluster_port_ == port_);
      }
    }
    // An RDB or AOF left by a manual SAVE would make a restart non-empty.
    std::error_code ec;
    if (!keep_snapshot) {
      fs::remove(file("dump.rdb"), ec);
      fs::remove_all(file("appendonlydir"), ec);
    }
    // A sentinel's rewritten config holds its id and what it discovered.
    if (!(fixed_ports && options_.sentinel)) write_config();

    std::ofstream(log_file(), std::ios::app)
        << "=== leasehold test harness: starting redis-server (attempt " << attempt << ") ===\n";
    const std::uintmax_t log_offset = fs::file_size(log_file(), ec);
    std::vector<std::string> argv{"redis-server", file("redis.conf")};
    if (options_.sentinel) argv.emplace_back("--sentinel");
    process_.emplace(std::move(argv), log_file(), clock_environment());
    if (wait_ready(ready_timeout, ec ? 0 : log_offset)) return;

    // The port was taken between free_port() and bind.
    process_.reset();
    if (fixed_ports || options_.port != 0) {
      if (std::chrono::steady_clock::now() >= rebind_deadline) {
        throw std::runtime_error("RedisServer: port " + std::to_string(port_) +
                                 " stayed in use. Log tail:\n" + log_tail());
      }
      std::this_thread::sleep_for(100ms);
    } else if (attempt >= max_port_attempts) {
      throw std::runtime_error("RedisServer: no free port after " + std::to_string(attempt) +
                               " attempts. Log tail:\n" + log_tail());
    }
  }
}

bool RedisServer::wait_ready(std::chrono::milliseconds timeout, std::uintmax_t log_offset) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last_error = "no attempt";
  while (true) {
    if (!process_->running()) {
      // Only this attempt's part of the (appended) log.
      std::string output;
      {
        std::ifstream in(log_file());
        in.seekg(static_cast<std::streamoff>(log_offset));
        std::ostringstream buf;
        buf << in.rdbuf();
        output = buf.str();
      }
      if (output.find("Address already in use") != std::string::npos) return false;
      const std::string tail = log_tail(40);
      const auto status = process_->exit_status();
      throw std::runtime_error("RedisServer: redis-server " +
                               (status ? describe_wait_status(*status) : std::string("exited")) +
                               " during startup. Log tail:\n" + tail);
    }
    try {
      AdminClient client(admin_options(200ms));
      const auto reply = client.call({"PING"});
      if (reply.is_status() && reply.str == "PONG") return true;
      last_error = "PING answered " + describe_reply(reply);
    } catch (const std::exception& e) {
      last_error = e.what();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      process_.reset();
      throw std::runtime_error("RedisServer: not answering PING on port " +
                               std::to_string(plain_port_) + " after " +
                               std::to_string(timeout.count()) + " ms (" + last_error +
                               "). Log tail:\n" + log_tail());
    }
    std::this_thread::sleep_for(10ms);
  }
}

std::uint16_t RedisServer::port() const noexcept { return port_; }

std::string RedisServer::unix_path() const {
  return options_.unix_socket && !dir_.empty() ? file("redis.sock") : std::string();
}

std::string RedisServer::log_tail(std::size_t lines) const { return read_tail(log_file(), lines); }

pid_t RedisServer::pid() const { return running() ? process_->pid() : -1; }

leasehold::RedisOptions RedisServer::options() const {
  leasehold::RedisOptions o;
  o.host = host();
  o.port = port();
  o.password = options_.password;
  o.connect_timeout = std::chrono::milliseconds(1000);
  o.command_timeout = std::chrono::milliseconds(1000);
  if (options_.tls) {
    o.tls.enabled = true;
    o.tls.ca_file = ca_file();
    o.tls.cert_file = client_cert_file();
    o.tls.key_file = client_key_file();
    o.tls.server_name = "localhost";
    o.tls.verify_peer = true;
  }
  return o;
}

leasehold::RedisOptions RedisServer::unix_options() const {
  if (!options_.unix_socket) {
    throw std::logic_error("RedisServer::unix_options: started without unix_socket");
  }
  leasehold::RedisOptions o = options();
  o.unix_socket = unix_path();
  o.tls = {};
  return o;
}

std::string RedisServer::url() const {
  std::string url = options_.tls ? "rediss://" : "redis://";
  if (!options_.password.empty()) url += ":" + percent_encode(options_.password, false) + "@";
  url += host() + ":" + std::to_string(port());
  url += "?connect_timeout=1000&command_timeout=1000";
  if (options_.tls) {
    url += "&ca_file=" + percent_encode(ca_file(), true);
    url += "&cert_file=" + percent_encode(client_cert_file(), true);
    url += "&key_file=" + percent_encode(client_key_file(), true);
    url += "&server_name=localhost";
  }
  return url;
}

std::string RedisServer::ca_file() const { return options_.tls ? file("ca.pem") : ""; }
std::string RedisServer::wrong_ca_file() const { return options_.tls ? file("wrong_ca.pem") : ""; }
std::string RedisServer::server_cert_file() const {
  return options_.tls ? file("server.pem") : "";
}
std::string RedisServer::server_key_file() const { return options_.tls ? file("server.key") : ""; }
std::string RedisServer::client_cert_file() const {
  return options_.tls ? file("client.pem") : "";
}
std::string RedisServer::client_key_file() const { return options_.tls ? file("client.key") : ""; }
std::string RedisServer::wrong_client_cert_file() const {
  return options_.tls ? file("wrong_client.pem") : "";
}
std::string RedisServer::wrong_client_key_file() const {
  return options_.tls ? file("wrong_client.key") : "";
}

void RedisServer::kill() {
  if (process_) process_->kill();
}

void RedisServer::pause() {
  if (process_) process_->stop();
}

void RedisServer::resume() {
  if (process_) process_->cont();
}

void RedisServer::restart() {
  if (dir_.empty()) throw std::logic_error("RedisServer::restart on a moved-from server");
  process_.reset();
  start(/*fixed_ports=*/true);
}

void RedisServer::restart_from_snapshot() {
  if (dir_.empty()) throw std::logic_error("RedisServer::restart_from_snapshot on a moved-from server");
  process_.reset();
  start(/*fixed_ports=*/true, /*keep_snapshot=*/true);
}

void RedisServer::restart(std::vector<std::string> extra_config) {
  if (options_.sentinel) {
    throw std::logic_error("RedisServer::restart: a sentinel restarts from its rewritten config");
  }
  options_.extra_config = std::move(extra_config);
  restart();
}

bool RedisServer::running() const { return process_ && process_->running(); }

AdminClientOptions RedisServer::admin_options(std::chrono::milliseconds timeout) const {
  AdminClientOptions o;
  o.host = host();
  o.port = plain_port_;
  o.password = options_.password;
  o.timeout = timeout;
  return o;
}

AdminClient RedisServer::admin(std::chrono::milliseconds timeout) const {
  return AdminClient(admin_options(timeout));
}

}  // namespace leasehold::test
