// A managed endpoint's failover (ElastiCache, Memorystore, Azure): services
// reach the primary through one host name; the failover promotes the
// replica, moves the name to it and turns the old primary into its replica.
// Here two servers listen on 127.0.0.2 and 127.0.0.3 (one port), and the name
// lives in a hosts file of the test's own: the test process takes a private
// mount namespace and bind-mounts that file over /etc/hosts, so the real
// resolver (getaddrinfo) reads it and the machine's /etc/hosts is never
// touched. Without the privilege for that (not root) the test is skipped.
//
// Two electors; at every step of the event loop at most one may lead, the
// group is led again on the promoted server, and then a take-over happens
// there too: the standby follows the name as well (at the latest when its
// first write meets READONLY on the old primary).

#include "support/elector_fixture.hpp"
#include "support/free_port.hpp"
#include "support/node_probe.hpp"
#include "support/redis_server.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <netdb.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <thread>

namespace integration_managed_failover_test {
namespace {

namespace lh = leasehold;
using lh::test::Fleet;
using lh::test::RedisServer;
using lh::test::RedisServerOptions;
using namespace std::chrono_literals;

constexpr const char* endpoint_name = "primary.managed-redis.leasehold.test";

// /etc/hosts replaced, for this process only, by a file the test rewrites.
class PrivateHosts {
 public:
  // Sets `why` and leaves nothing changed when the process cannot have a
  // private mount namespace (no CAP_SYS_ADMIN, threads already running).
  bool take_over(std::string& why) {
    if (::unshare(CLONE_NEWNS) != 0) return fail(why, "unshare(CLONE_NEWNS)");
    // Mounts made from here on stay in this namespace.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return fail(why, "mount --make-rprivate /");
    char path[] = "/tmp/leasehold-hosts-XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd < 0) return fail(why, "mkstemp");
    ::close(fd);
    file_ = path;
    if (::chmod(path, 0644) != 0) return fail(why, "chmod");
    if (::mount(path, "/etc/hosts", nullptr, MS_BIND, nullptr) != 0) return fail(why, "bind mount over /etc/hosts");
    mounted_ = true;
    // The bind took: /etc/hosts is now the test's file, not the machine's.
    struct stat ours{}, seen{};
    if (::stat(path, &ours) != 0 || ::stat("/etc/hosts", &seen) != 0 || ours.st_ino != seen.st_ino ||
        ours.st_dev != seen.st_dev) {
      why = "/etc/hosts is not the bind-mounted file";
      return false;
    }
    return true;
  }

  // Names `address` as the only address of `name`. Written in place: the
  // mount holds this inode, so a rename would not reach /etc/hosts.
  void point(const std::string& name, const std::string& address) const {
    const std::string content = "127.0.0.1 localhost\n" + address + " " + name + "\n";
    const int fd = ::open(file_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    ASSERT_EQ(::write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
    ::close(fd);
  }

  ~PrivateHosts() {
    if (mounted_) ::umount2("/etc/hosts", MNT_DETACH);
    if (!file_.empty()) ::unlink(file_.c_str());
  }

 private:
  static bool fail(std::string& why, const char* step) {
    why = std::string(step) + ": " + std::strerror(errno);
    return false;
  }

  std::string file_;
  bool mounted_ = false;
};

// What getaddrinfo says `name` is, as the library will ask it.
std::string resolve(const char* name) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(name, nullptr, &hints, &found) != 0 || found == nullptr) return "unresolved";
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof text);
  ::freeaddrinfo(found);
  return text;
}

RedisServerOptions on(const char* address, std::uint16_t port, std::vector<std::string> config = {}) {
  RedisServerOptions o;
  o.bind_address = address;
  o.port = port;
  o.extra_config = std::move(config);
  return o;
}

bool replica_of(const RedisServer& replica, const RedisServer& primary) {
  try {
    const auto info = replica.admin(500ms).call({"INFO", "replication"});
    return info.is_string() && lh::test::info_field(info.str, "role") == "slave" &&
           lh::test::info_field(info.str, "master_host") == primary.host() &&
           lh::test::info_field(info.str, "master_link_status") == "up";
  } catch (const std::exception&) {
    return false;
  }
}

// Command connections (CLIENT SETNAME "leasehold"; subscribers add "-sub")
// that `server` holds.
int command_clients(const RedisServer& server) {
  try {
    const auto list = server.admin(500ms).call({"CLIENT", "LIST"});
    int n = 0;
    for (std::size_t at = list.str.find(" name=leasehold "); at != std::string::npos;
         at = list.str.find(" name=leasehold ", at + 1)) {
      ++n;
    }
    return n;
  } catch (const std::exception&) {
    return -1;
  }
}

// The single leader, when the lease on `server` names it.
std::optional<std::size_t> leader_on(Fleet& fleet, const RedisServer& server) {
  const auto leaders = fleet.leaders();
  if (leaders.size() != 1) return std::nullopt;
  try {
    const auto holder = server.admin(500ms).get("leader:default");
    if (holder && *holder == fleet.at(leaders.front()).instance_id()) return leaders.front();
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

class ManagedFailover : public testing::TestWithParam<int> {};

TEST_P(ManagedFailover, LeadershipFollowsTheHostNameToThePromotedReplica) {
  PrivateHosts hosts;
  std::string why;
  if (!hosts.take_over(why)) GTEST_SKIP() << "no private /etc/hosts: " << why;
  const std::uint16_t port = lh::test::free_port();
  RedisServer first(on("127.0.0.2", port));
  RedisServer second(on("127.0.0.3", port, {"replicaof 127.0.0.2 " + std::to_string(port)}));
  hosts.point(endpoint_name, first.host());
  ASSERT_EQ(resolve(endpoint_name), first.host()) << "the resolver does not read /etc/hosts";

  auto redis = lh::RedisOptions::from_url("redis://" + std::string(endpoint_name) + ":" + std::to_string(port));
  redis.command_timeout = 500ms;
  redis.reconnect_max = 200ms;
  const auto linked_by = std::chrono::steady_clock::now() + 10s;
  while (!replica_of(second, first)) {
    ASSERT_LT(std::chrono::steady_clock::now(), linked_by) << second.log_tail();
    std::this_thread::sleep_for(20ms);
  }
  Fleet fleet(redis);
  lh::test::OverlapWatch watch(fleet);
  for (const char* id : {"a", "b"}) {
    auto o = lh::test::fast_options(id);
    o.ttl = 2000ms;
    o.empty_restart_guard = false;  // a fresh group; the counter is replicated
    o.confirm_replicas = GetParam();
    o.confirm_timeout = 200ms;
    fleet.add(o);
  }
  ASSERT_TRUE(watch.until([&] { return leader_on(fleet, first).has_value(); }, 15s)) << fleet.errors();
  // Unconfirmed, the term's counter may not have reached the replica yet:
  // a promotion then would hand token 1 out again, which is the replication
  // lag that confirm mode exists for, not what this test is about.
  ASSERT_TRUE(watch.until([&] {
    return second.admin(500ms).get("leader:default:token") == first.admin(500ms).get("leader:default:token");
  }, 10s)) << "the replica never caught up with the term's counter";

  // The failover, in a managed service's order: promote, move the name,
  // demote the old primary under the new one.
  second.admin().call({"REPLICAOF", "NO", "ONE"});
  hosts.point(endpoint_name, second.host());
  ASSERT_EQ(resolve(endpoint_name), second.host());
  first.admin().call({"REPLICAOF", second.host(), std::to_string(port)});

  // Led on the new primary within reconnect + ttl + retry (generously
  // bounded). The lease the promoted replica inherited expires within one
  // ttl, so a lease there two ttls after the switch was written since.
  const auto switched = std::chrono::steady_clock::now();
  std::optional<std::size_t> leader;
  EXPECT_TRUE(watch.until([&] {
    leader = leader_on(fleet, second);
    return leader && std::chrono::steady_clock::now() - switched > 4s;
  }, 20s)) << "led on the new primary: " << leader.has_value() << "; command connections there "
           << command_clients(second) << ", on the old primary " << command_clients(first);
  ASSERT_TRUE(leader);
  EXPECT_GE(command_clients(second), 1);

  // And the standby takes over there when the leader dies.
  fleet.crash(*leader);
  const std::size_t standby = 1 - *leader;
  EXPECT_TRUE(watch.until([&] { return leader_on(fleet, second) == standby; }, 20s));
  EXPECT_FALSE(watch.overlap) << "two electors led at once";

  lh::test::expect_distinct_tokens(fleet);
}

INSTANTIATE_TEST_SUITE_P(ConfirmMode, ManagedFailover, testing::Values(0, 1),
                         [](const testing::TestParamInfo<int>& info) {
                           return info.param == 0 ? std::string("Unconfirmed") : std::string("OneReplicaConfirms");
                         });

}  // namespace
}  // namespace integration_managed_failover_test
