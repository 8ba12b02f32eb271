// Tests of the test harness itself: real redis-server processes, the fault
// proxy, the scripted fake server and child-process control. Every wait is
// bounded.

#include "support/admin_client.hpp"
#include "support/fault_proxy.hpp"
#include "support/free_port.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/scripted_server.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace integration_harness_test {
namespace {

using namespace std::chrono_literals;
using leasehold::redis::Reply;
using leasehold::test::AdminClient;
using leasehold::test::AdminClientOptions;
using leasehold::test::FaultProxy;
using leasehold::test::Process;
using leasehold::test::RedisServer;
using leasehold::test::RedisServerOptions;
using leasehold::test::ScriptedAction;
using leasehold::test::ScriptedServer;
using leasehold::test::ScriptStep;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool pid_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

AdminClient admin_via(std::uint16_t port, std::chrono::milliseconds timeout,
                      const std::string& password = {}) {
  AdminClientOptions o;
  o.port = port;
  o.password = password;
  o.timeout = timeout;
  return AdminClient(o);
}

// A raw blocking TCP client, to see exactly which bytes arrive and when.
class RawClient {
 public:
  explicit RawClient(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    if (fd_ < 0) throw std::runtime_error("socket failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      throw std::runtime_error("connect failed");
    }
  }
  ~RawClient() { ::close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void send(const std::string& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }

  // Reads until `want` bytes arrived, EOF/error, or the timeout.
  std::string receive(std::size_t want, std::chrono::milliseconds timeout) {
    std::string out;
    const auto deadline = Clock::now() + timeout;
    while (out.size() < want && !eof_) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        eof_ = true;
        break;
      }
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }

  bool eof() const { return eof_; }

 private:
  int fd_;
  bool eof_ = false;
};

// ---------------------------------------------------------------------------
// Process

TEST(HarnessProcess, ReportsExitStatusAndRedirectsOutput) {
  const std::string log = fs::temp_directory_path() / ("harness-proc-" + std::to_string(::getpid()));
  fs::remove(log);
  {
    Process p({"sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3"}, log);
    EXPECT_GT(p.pid(), 0);
    const auto status = p.wait_exit(10s);
    ASSERT_TRUE(status.has_value());
    ASSERT_TRUE(WIFEXITED(*status));
    EXPECT_EQ(WEXITSTATUS(*status), 3);
    EXPECT_FALSE(p.running());
  }
  const std::string out = read_file(log);
  EXPECT_NE(out.find("to-stdout"), std::string::npos) << out;
  EXPECT_NE(out.find("to-stderr"), std::string::npos) << out;
  fs::remove(log);
}

TEST(HarnessProcess, StopContAndKill) {
  Process p({"sleep", "30"}, "");
  EXPECT_TRUE(p.running());
  p.stop();
  EXPECT_TRUE(p.running());  // stopped is still alive
  p.cont();
  EXPECT_FALSE(p.wait_exit(100ms).has_value());
  const pid_t pid = p.pid();
  p.kill();
  EXPECT_FALSE(p.running());
  ASSERT_TRUE(p.exit_status().has_value());
  ASSERT_TRUE(WIFSIGNALED(*p.exit_status()));
  EXPECT_EQ(WTERMSIG(*p.exit_status()), SIGKILL);
  EXPECT_FALSE(pid_alive(pid));
}

TEST(HarnessProcess, DestructorKillsAndMoveTransfersOwnership) {
  pid_t pid = -1;
  {
    Process a({"sleep", "30"}, "");
    pid = a.pid();
    Process b(std::move(a));
    EXPECT_EQ(b.pid(), pid);
    EXPECT_FALSE(a.running());  // NOLINT(bugprone-use-after-move): moved-from is inert
    EXPECT_TRUE(b.running());
  }
  EXPECT_FALSE(pid_alive(pid));
}

TEST(HarnessProcess, MissingProgramThrows) {
  EXPECT_THROW(Process({"leasehold-no-such-program-xyz"}, ""), std::runtime_error);
  EXPECT_THROW(Process({"/nonexistent/leasehold/prog"}, ""), std::runtime_error);
}

TEST(HarnessProcess, ChildInheritsNoDescriptors) {
  // A descriptor without close-on-exec, at a recognisable number.
  const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  ASSERT_EQ(::dup2(sock, 117), 117);
  ::close(sock);
  const std::string log =
      fs::temp_directory_path() / ("harness-fds-" + std::to_string(::getpid()));
  fs::remove(log);
  {
    Process p({"sh", "-c", "exec ls -1 /proc/self/fd"}, log);
    const auto status = p.wait_exit(10s);
    ASSERT_TRUE(status.has_value());
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  }
  ::close(117);
  std::istringstream fds(read_file(log));
  std::vector<std::string> listed;
  for (std::string line; std::getline(fds, line);) listed.push_back(line);
  EXPECT_EQ(std::count(listed.begin(), listed.end(), "117"), 0);
  EXPECT_LE(listed.size(), 4u);  // 0, 1, 2 and ls's own directory handle
  fs::remove(log);
}

// ---------------------------------------------------------------------------
// free_port

TEST(HarnessFreePort, ReturnsABindableLoopbackPort) {
  const std::uint16_t port = leasehold::test::free_port();
  EXPECT_GT(port, 0);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  EXPECT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  ::close(fd);
}

// ---------------------------------------------------------------------------
// RedisServer and AdminClient

TEST(HarnessRedisServer, StartsAnswersAndCleansUp) {
  pid_t pid = -1;
  std::string dir;
  {
    RedisServer server;
    pid = server.pid();
    dir = server.dir();
    EXPECT_GT(pid, 0);
    EXPECT_TRUE(server.running());
    EXPECT_GT(server.port(), 0);
    EXPECT_EQ(server.port(), server.plain_port());
    EXPECT_EQ(server.host(), "127.0.0.1");
    EXPECT_TRUE(server.unix_path().empty());
    EXPECT_TRUE(fs::is_directory(dir));

    auto admin = server.admin();
    const Reply pong = admin.call({"PING"});
    EXPECT_TRUE(pong.is_status());
    EXPECT_EQ(pong.str, "PONG");
    admin.set("k", "v");
    EXPECT_EQ(admin.get("k"), "v");
    EXPECT_EQ(admin.get("missing"), std::nullopt);
    EXPECT_EQ(admin.pttl("missing"), -2);
    EXPECT_EQ(admin.pttl("k"), -1);
    EXPECT_TRUE(admin.call({"PEXPIRE", "k", "5000"}).is_integer());
    const long long ttl = admin.pttl("k");
    EXPECT_GT(ttl, 0);
    EXPECT_LE(ttl, 5000);
    const Reply err = admin.call({"INCR", "k"});
    EXPECT_TRUE(err.is_error()) << leasehold::test::describe_reply(err);
    const Reply arr = admin.call({"CONFIG", "GET", "save"});
    ASSERT_TRUE(arr.is_array());
    ASSERT_EQ(arr.elements.size(), 2u);
    EXPECT_EQ(arr.elements[1].str, "");
  }
  EXPECT_FALSE(pid_alive(pid));
  EXPECT_FALSE(fs::exists(dir));
}

TEST(HarnessRedisServer, OptionsAndUrlDescribeTheServer) {
  RedisServer server;
  const auto o = server.options();
  EXPECT_EQ(o.host, "127.0.0.1");
  EXPECT_EQ(o.port, server.port());
  EXPECT_TRUE(o.password.empty());
  EXPECT_FALSE(o.tls.enabled);
  EXPECT_EQ(o.connect_timeout, 1000ms);
  EXPECT_EQ(o.command_timeout, 1000ms);
  EXPECT_EQ(server.url().rfind("redis://127.0.0.1:" + std::to_string(server.port()), 0), 0u)
      << server.url();
}

TEST(HarnessRedisServer, KillMakesItUnreachable) {
  RedisServer server;
  auto admin = server.admin(500ms);
  ASSERT_EQ(admin.call({"PING"}).str, "PONG");
  const pid_t pid = server.pid();
  server.kill();
  EXPECT_FALSE(server.running());
  EXPECT_EQ(server.pid(), -1);
  EXPECT_FALSE(pid_alive(pid));
  EXPECT_THROW(admin.call({"PING"}), std::runtime_error);
  EXPECT_FALSE(admin.ok());
  EXPECT_THROW(server.admin(500ms), std::runtime_error);
}

TEST(HarnessRedisServer, RestartOnTheSamePortIsEmpty) {
  RedisServer server;
  const auto port = server.port();
  const pid_t old_pid = server.pid();
  server.admin().set("survivor", "1");
  server.admin().call({"SAVE"});  // even an RDB on disk must not come back
  server.restart();
  EXPECT_EQ(server.port(), port);
  EXPECT_TRUE(server.running());
  EXPECT_NE(server.pid(), old_pid);
  EXPECT_FALSE(pid_alive(old_pid));
  auto admin = server.admin();
  EXPECT_EQ(admin.get("survivor"), std::nullopt);
  EXPECT_EQ(admin.call({"DBSIZE"}).integer, 0);

  // Restart after an explicit kill works too.
  server.kill();
  server.restart();
  EXPECT_EQ(server.admin().call({"PING"}).str, "PONG");
}

TEST(HarnessRedisServer, PauseMakesCallsTimeOutAndResumeAnswers) {
  RedisServer server;
  auto admin = server.admin(300ms);
  ASSERT_EQ(admin.call({"PING"}).str, "PONG");
  server.pause();
  EXPECT_TRUE(server.running());
  const auto start = Clock::now();
  EXPECT_THROW(admin.call({"PING"}), std::runtime_error);
  const auto elapsed = Clock::now() - start;
  EXPECT_GE(elapsed, 250ms);
  EXPECT_LT(elapsed, 5s);
  server.resume();
  EXPECT_EQ(server.admin(2000ms).call({"PING"}).str, "PONG");
}

TEST(HarnessRedisServer, PasswordAndAclUser) {
  RedisServerOptions opts;
  opts.password = "s3cret pass";
  opts.acl_users = {"alice on >wonderland ~leader:* &* +@all"};
  RedisServer server(opts);

  // admin() authenticates as the default user.
  EXPECT_EQ(server.admin().call({"PING"}).str, "PONG");

  // Without credentials: NOAUTH.
  AdminClient anonymous(server.host(), server.plain_port());
  const Reply noauth = anonymous.call({"GET", "x"});
  ASSERT_TRUE(noauth.is_error());
  EXPECT_EQ(noauth.str.rfind("NOAUTH", 0), 0u) << noauth.str;

  // The ACL user may touch leader:* only.
  AdminClient alice(server.host(), server.plain_port(), "alice", "wonderland");
  EXPECT_TRUE(alice.call({"SET", "leader:x", "1"}).is_status());
  const Reply denied = alice.call({"SET", "other:x", "1"});
  ASSERT_TRUE(denied.is_error());
  EXPECT_EQ(denied.str.rfind("NOPERM", 0), 0u) << denied.str;
  EXPECT_EQ(alice.call({"ACL", "WHOAMI"}).str, "alice");

  EXPECT_THROW(AdminClient(server.host(), server.plain_port(), "alice", "wrong"),
               std::runtime_error);
  EXPECT_THROW(AdminClient(server.host(), server.plain_port(), "", "wrong"), std::runtime_error);

  EXPECT_EQ(server.options().password, "s3cret pass");
  EXPECT_NE(server.url().find(":s3cret%20pass@"), std::string::npos) << server.url();
}

TEST(HarnessRedisServer, UnixSocketIsReachable) {
  RedisServerOptions opts;
  opts.unix_socket = true;
  RedisServer server(opts);
  const std::string path = server.unix_path();
  ASSERT_FALSE(path.empty());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  AdminClientOptions o;
  o.unix_socket = path;
  AdminClient admin(o);
  EXPECT_EQ(admin.call({"PING"}).str, "PONG");
  EXPECT_EQ(server.unix_options().unix_socket, path);
}

TEST(HarnessRedisServer, TlsServerHasCertificatesAndAPlainPort) {
  RedisServerOptions opts;
  opts.tls = true;
  RedisServer server(opts);
  EXPECT_NE(server.port(), server.plain_port());
  for (const auto& f : {server.ca_file(), server.wrong_ca_file(), server.server_cert_file(),
                        server.server_key_file(), server.client_cert_file(),
                        server.client_key_file(), server.wrong_client_cert_file(),
                        server.wrong_client_key_file()}) {
    ASSERT_FALSE(f.empty());
    EXPECT_GT(fs::file_size(f), 0u) << f;
  }

  // Admin goes through the plain port; the TLS port is the configured one.
  auto admin = server.admin();
  EXPECT_EQ(admin.call({"PING"}).str, "PONG");
  const Reply tls_port = admin.call({"CONFIG", "GET", "tls-port"});
  ASSERT_TRUE(tls_port.is_array());
  ASSERT_EQ(tls_port.elements.size(), 2u);
  EXPECT_EQ(tls_port.elements[1].str, std::to_string(server.port()));

  const auto o = server.options();
  EXPECT_EQ(o.port, server.port());
  EXPECT_TRUE(o.tls.enabled);
  EXPECT_EQ(o.tls.ca_file, server.ca_file());
  EXPECT_EQ(o.tls.server_name, "localhost");
  EXPECT_EQ(server.url().rfind("rediss://", 0), 0u);

  // The chain is consistent: the server certificate verifies against ca.pem
  // and not against the unrelated CA.
  auto verify = [&](const std::string& ca, const std::string& cert) {
    Process p({"openssl", "verify", "-CAfile", ca, cert}, server.dir() + "/verify.log");
    const auto status = p.wait_exit(20s);
    return status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
  };
  EXPECT_TRUE(verify(server.ca_file(), server.server_cert_file()));
  EXPECT_TRUE(verify(server.ca_file(), server.client_cert_file()));
  EXPECT_FALSE(verify(server.wrong_ca_file(), server.server_cert_file()));
  EXPECT_TRUE(verify(server.wrong_ca_file(), server.wrong_client_cert_file()));

  // A real TLS round trip on port() (redis-cli built with TLS support).
  const std::string log = server.dir() + "/cli.log";
  Process cli({"redis-cli", "--tls", "--cacert", server.ca_file(), "--sni", "localhost", "-h",
               "127.0.0.1", "-p", std::to_string(server.port()), "PING"},
              log);
  const auto status = cli.wait_exit(20s);
  ASSERT_TRUE(status.has_value());
  EXPECT_NE(read_file(log).find("PONG"), std::string::npos) << read_file(log);
}

TEST(HarnessRedisServer, MaxmemoryRejectsWritesWithOom) {
  RedisServerOptions opts;
  opts.maxmemory = "2mb";
  RedisServer server(opts);
  auto admin = server.admin();
  const Reply policy = admin.call({"CONFIG", "GET", "maxmemory-policy"});
  ASSERT_EQ(policy.elements.size(), 2u);
  EXPECT_EQ(policy.elements[1].str, "noeviction");
  const std::string big(64 * 1024, 'x');
  bool oom = false;
  for (int i = 0; i < 200 && !oom; ++i) {
    const Reply r = admin.call({"SET", "big:" + std::to_string(i), big});
    oom = r.is_error() && r.str.rfind("OOM", 0) == 0;
  }
  EXPECT_TRUE(oom);
}

TEST(HarnessRedisServer, ExtraConfigIsApplied) {
  RedisServerOptions opts;
  opts.extra_config = {"hz 42"};
  RedisServer server(opts);
  const Reply hz = server.admin().call({"CONFIG", "GET", "hz"});
  ASSERT_EQ(hz.elements.size(), 2u);
  EXPECT_EQ(hz.elements[1].str, "42");
}

// The server's wall clock is the harness's steady one (immune to steps of
// the machine's clock), shifted by clock_skew: TIME and key expiry follow it.
TEST(HarnessRedisServer, WallClockFollowsTheSteadyClockShiftedByTheSkew) {
  auto server_time_s = [](RedisServer& server) {
    const auto reply = server.admin().call({"TIME"});
    return std::stoll(reply.elements.at(0).str);
  };
  const auto local_s = [] {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  RedisServer plain;
  EXPECT_NEAR(server_time_s(plain), local_s(), 5);

  RedisServerOptions options;
  options.clock_skew = std::chrono::hours(1);
  RedisServer ahead(options);
  EXPECT_NEAR(server_time_s(ahead), local_s() + 3600, 5);
  // Expiry runs on that clock too: a key set to expire at the local wall
  // clock's "in 10 minutes" is already past on a server an hour ahead.
  auto admin = ahead.admin();
  admin.call({"SET", "k", "v", "PXAT", std::to_string((local_s() + 600) * 1000)});
  EXPECT_FALSE(admin.get("k").has_value());
}

TEST(HarnessRedisServer, IndependentServersAndMoves) {
  RedisServer a;
  RedisServer b;
  EXPECT_NE(a.port(), b.port());
  a.admin().set("k", "a");
  EXPECT_EQ(b.admin().get("k"), std::nullopt);
  const pid_t pid = a.pid();
  RedisServer moved(std::move(a));
  EXPECT_EQ(moved.pid(), pid);
  EXPECT_EQ(moved.admin().get("k"), "a");
}

// ---------------------------------------------------------------------------
// FaultProxy

TEST(HarnessFaultProxy, ForwardsCommands) {
  RedisServer server;
  FaultProxy proxy(server.plain_port());
  EXPECT_NE(proxy.port(), server.port());
  auto admin = admin_via(proxy.port(), 2000ms);
  EXPECT_EQ(admin.call({"PING"}).str, "PONG");
  admin.set("through", "proxy");
  EXPECT_EQ(server.admin().get("through"), "proxy");
  EXPECT_EQ(proxy.connection_count(), 1u);
  EXPECT_EQ(proxy.accepted_count(), 1u);
  const auto o = proxy.options_for(server.options());
  EXPECT_EQ(o.port, proxy.port());
  EXPECT_EQ(o.host, "127.0.0.1");
}

TEST(HarnessFaultProxy, BlackholeMakesCallsTimeOut) {
  RedisServer server;
  FaultProxy proxy(server.plain_port());
  auto admin = admin_via(proxy.port(), 300ms);
  ASSERT_EQ(admin.call({"PING"}).str, "PONG");

  proxy.blackhole();
  EXPECT_EQ(proxy.mode(), FaultProxy::Mode::blackhole);
  const auto start = Clock::now();
  EXPECT_THROW(admin.call({"SET", "lost", "1"}), std::runtime_error);
  EXPECT_GE(Clock::now() - start, 250ms);
  EXPECT_EQ(server.admin().get("lost"), std::nullopt);  // never reached Redis
  EXPECT_EQ(proxy.connection_count(), 1u);              // kept open

  // New connections are accepted but as silent.
  auto late = admin_via(proxy.port(), 300ms);
  EXPECT_THROW(late.call({"PING"}), std::runtime_error);

  // Back to forward: the connections that lost bytes are reset, new ones work.
  proxy.forward();
  EXPECT_EQ(proxy.connection_count(), 0u);
  EXPECT_EQ(admin_via(proxy.port(), 2000ms).call({"PING"}).str, "PONG");
}

TEST(HarnessFaultProxy, ResetAllBreaksOpenConnections) {
  RedisServer server;
  FaultProxy proxy(server.plain_port());
  auto admin = admin_via(proxy.port(), 1000ms);
  ASSERT_EQ(admin.call({"PING"}).str, "PONG");
  RawClient raw(proxy.port());
  ASSERT_TRUE(proxy.wait_for_connections(2, 2s));

  proxy.reset_all();
  EXPECT_EQ(proxy.connection_count(), 0u);
  EXPECT_THROW(admin.call({"PING"}), std::runtime_error);
  EXPECT_EQ(raw.receive(1, 2s), "");
  EXPECT_TRUE(raw.eof());

  EXPECT_EQ(admin_via(proxy.port(), 1000ms).call({"PING"}).str, "PONG");
}

TEST(HarnessFaultProxy, LatencyDelaysEachDirection) {
  RedisServer server;
  FaultProxy proxy(server.plain_port());
  auto admin = admin_via(proxy.port(), 5000ms);
  ASSERT_EQ(admin.call({"PING"}).str, "PONG");
  proxy.set_latency(150ms);
  const auto start = Clock::now();
  EXPECT_EQ(admin.call({"PING"}).str, "PONG");
  const auto elapsed = Clock::now() - start;
  EXPECT_GE(elapsed, 150ms);
  EXPECT_LT(elapsed, 4s);

  // Pipelined commands keep their order.
  RawClient raw(proxy.port());
  raw.send("*2\r\n$4\r\nECHO\r\n$1\r\na\r\n");
  raw.send("*2\r\n$4\r\nECHO\r\n$1\r\nb\r\n");
  raw.send("*2\r\n$4\r\nECHO\r\n$1\r\nc\r\n");
  EXPECT_EQ(raw.receive(21, 5s), "$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n");

  proxy.set_latency(0ms);
  const auto fast = Clock::now();
  EXPECT_EQ(admin.call({"PING"}).str, "PONG");
  EXPECT_LT(Clock::now() - fast, 150ms);
}

TEST(HarnessFaultProxy, RefuseClosesNewConnectionsOnly) {
  RedisServer server;
  FaultProxy proxy(server.plain_port());
  auto existing = admin_via(proxy.port(), 1000ms);
  ASSERT_EQ(existing.call({"PING"}).str, "PONG");

  proxy.refuse();
  EXPECT_TRUE(proxy.refusing());
  // The TCP handshake completes, then RST: read as EOF, or as a failed
  // connect() when the RST arrives before connect() has returned (seen once
  // on a loaded machine). Either way the proxy counted it before the RST.
  try {
    RawClient raw(proxy.port());
    EXPECT_EQ(raw.receive(1, 2s), "");
    EXPECT_TRUE(raw.eof());
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "connect failed");
  }
  EXPECT_EQ(proxy.accepted_count(), 2u);
  EXPECT_EQ(proxy.connection_count(), 1u);
  EXPECT_THROW(admin_via(proxy.port(), 500ms).call({"PING"}), std::runtime_error);
  EXPECT_EQ(existing.call({"PING"}).str, "PONG");  // existing ones are untouched

  proxy.forward();
  EXPECT_EQ(admin_via(proxy.port(), 1000ms).call({"PING"}).str, "PONG");
}

TEST(HarnessFaultProxy, StallHoldsBytesUntilForward) {
  RedisServer server;
  FaultProxy proxy(server.plain_port());
  RawClient raw(proxy.port());
  ASSERT_TRUE(proxy.wait_for_connections(1, 2s));
  proxy.stall();
  raw.send("*3\r\n$3\r\nSET\r\n$7\r\nstalled\r\n$1\r\n1\r\n");
  EXPECT_EQ(raw.receive(5, 300ms), "");
  EXPECT_EQ(server.admin().get("stalled"), std::nullopt);
  proxy.forward();
  EXPECT_EQ(raw.receive(5, 2s), "+OK\r\n");
  EXPECT_EQ(server.admin().get("stalled"), "1");
}

TEST(HarnessFaultProxy, ServerDeathReachesTheClient) {
  RedisServer server;
  FaultProxy proxy(server.plain_port());
  RawClient raw(proxy.port());
  raw.send("*1\r\n$4\r\nPING\r\n");
  ASSERT_EQ(raw.receive(7, 2s), "+PONG\r\n");
  server.kill();
  EXPECT_EQ(raw.receive(1, 2s), "");
  EXPECT_TRUE(raw.eof());
  // With Redis gone, new connections through the proxy fail.
  EXPECT_THROW(admin_via(proxy.port(), 500ms).call({"PING"}), std::runtime_error);
}

// ---------------------------------------------------------------------------
// ScriptedServer

TEST(HarnessScriptedServer, AnswersTheHandshakeThenSendsGarbage) {
  RedisServer real;
  const std::string script = "return redis.call('GET', KEYS[1])";
  const std::string real_sha = real.admin().call({"SCRIPT", "LOAD", script}).str;

  ScriptedServer fake(
      ScriptedServer::redis_like_until("EVALSHA", ScriptedAction::reply("?garbage\r\n")));
  AdminClient client("127.0.0.1", fake.port(), "", "pw", 1000ms);  // AUTH answered +OK
  EXPECT_EQ(client.call({"PING"}).str, "PONG");
  EXPECT_EQ(client.call({"CLIENT", "SETNAME", "x"}).str, "OK");
  EXPECT_EQ(client.call({"SCRIPT", "LOAD", script}).str, real_sha);
  EXPECT_THROW(client.call({"EVALSHA", real_sha, "1", "k"}), std::runtime_error);

  const auto cmds = fake.commands();
  ASSERT_EQ(cmds.size(), 5u);
  EXPECT_EQ(cmds[0].name(), "AUTH");
  EXPECT_EQ(cmds[3].subcommand(), "LOAD");
  EXPECT_EQ(cmds[4].args, (std::vector<std::string>{"EVALSHA", real_sha, "1", "k"}));
  EXPECT_EQ(fake.connection_count(), 1u);
  EXPECT_NE(fake.received(0).find("EVALSHA"), std::string::npos);
}

TEST(HarnessScriptedServer, ClosesMidReply) {
  ScriptedServer fake(std::vector<ScriptStep>{{"GET", "$10\r\nabc", true, 0ms}});
  {
    RawClient raw(fake.port());
    raw.send("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
    EXPECT_EQ(raw.receive(100, 2s), "$10\r\nabc");
    EXPECT_TRUE(raw.eof());
  }
  AdminClient client("127.0.0.1", fake.port(), "", "", 1000ms);
  EXPECT_THROW(client.get("k"), std::runtime_error);
  EXPECT_EQ(fake.connection_count(), 2u);
  EXPECT_NE(fake.received(1).find("GET"), std::string::npos);
}

TEST(HarnessScriptedServer, StepsRunInOrderWithDelays) {
  ScriptedServer fake(std::vector<ScriptStep>{
      {"", "+HELLO\r\n", false, 0ms},       // speaks first
      {"ONE", "+1\r\n", false, 0ms},
      {"TWO", "+2\r\n", false, 200ms},
  });
  RawClient raw(fake.port());
  EXPECT_EQ(raw.receive(8, 2s), "+HELLO\r\n");
  raw.send("ONE\r\n");
  EXPECT_EQ(raw.receive(4, 2s), "+1\r\n");
  const auto start = Clock::now();
  raw.send("TWO\r\n");
  EXPECT_EQ(raw.receive(4, 2s), "+2\r\n");
  EXPECT_GE(Clock::now() - start, 200ms);
  raw.send("THREE\r\n");  // past the script: ignored, connection stays open
  EXPECT_EQ(raw.receive(1, 200ms), "");
  EXPECT_FALSE(raw.eof());
  EXPECT_EQ(fake.open_connections(), 1u);
}

TEST(HarnessScriptedServer, HandlerSeesEveryCommandAndCanReset) {
  ScriptedServer fake([](const leasehold::test::ScriptedCommand& c) {
    if (c.name() == "BOOM") return ScriptedAction::reset_after();
    if (c.name() == "SLOW") {
      ScriptedAction a = ScriptedAction::reply("+SLOW\r\n");
      a.delay = 300ms;
      return a;
    }
    return ScriptedServer::redis_like(c);
  });
  AdminClient client("127.0.0.1", fake.port(), "", "", 100ms);
  EXPECT_EQ(client.call({"PING"}).str, "PONG");
  EXPECT_THROW(client.call({"SLOW"}), std::runtime_error);  // later than the timeout

  AdminClient other("127.0.0.1", fake.port(), "", "", 1000ms);
  EXPECT_EQ(other.call({"ECHO", "hi"}).str, "hi");
  EXPECT_THROW(other.call({"BOOM"}), std::runtime_error);
  EXPECT_TRUE(fake.wait_for_command("boom", 1s));
  EXPECT_EQ(fake.connection_count(), 2u);
}

TEST(HarnessScriptedServer, Sha1MatchesKnownVectors) {
  EXPECT_EQ(ScriptedServer::sha1_hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(ScriptedServer::sha1_hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(ScriptedServer::sha1_hex(std::string(1000, 'a')),
            "291e9a6c66994949b57ba5e650361e98fc36b1ba");
}

}  // namespace
}  // namespace integration_harness_test
