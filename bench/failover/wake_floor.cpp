#include "failover/wake_floor.hpp"

#include "failover/fleet.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <csignal>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace leasehold::bench {

namespace {

int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("wake floor: socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error(fmt::format("wake floor: cannot connect to 127.0.0.1:{}", port));
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

constexpr std::string_view channel = "leasehold-wake-floor";

// The child: subscribes, says so on `woken`, then writes one byte to it for
// every read that brings a message (one PUBLISH at a time is in flight).
[[noreturn]] void subscriber(int port, int woken) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const int fd = connect_loopback(port);
  write_all(fd, fmt::format("*2\r\n$9\r\nSUBSCRIBE\r\n${}\r\n{}\r\n", channel.size(), channel));
  char buffer[512];
  if (::read(fd, buffer, sizeof buffer) <= 0) ::_exit(1);
  if (!write_all(woken, "r")) ::_exit(1);
  while (::read(fd, buffer, sizeof buffer) > 0) {
    if (!write_all(woken, "x")) ::_exit(1);
  }
  ::_exit(0);
}

}  // namespace

std::vector<double> measure_wake_floor(int port, int rounds, std::mt19937& rng) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("wake floor: pipe() failed");
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("wake floor: fork() failed");
  if (child == 0) {
    ::close(pipe_fds[0]);
    subscriber(port, pipe_fds[1]);
  }
  ::close(pipe_fds[1]);
  const int woken = pipe_fds[0];
  std::vector<double> spans;
  char byte = 0;
  const int publisher = connect_loopback(port);
  if (::read(woken, &byte, 1) == 1) {  // subscribed
    const std::string publish =
        fmt::format("*3\r\n$7\r\nPUBLISH\r\n${}\r\n{}\r\n$1\r\nx\r\n", channel.size(), channel);
    std::uniform_int_distribution<int> idle_us(20'000, 60'000);
    char reply[64];
    for (int i = 0; i < rounds; ++i) {
      std::this_thread::sleep_for(std::chrono::microseconds(idle_us(rng)));
      const std::int64_t t0 = now_ns();
      if (!write_all(publisher, publish) || ::read(woken, &byte, 1) != 1) break;
      spans.push_back(static_cast<double>(now_ns() - t0) / 1e6);
      if (::read(publisher, reply, sizeof reply) <= 0) break;  // ":1\r\n"
    }
  }
  ::close(publisher);
  ::close(woken);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  if (static_cast<int>(spans.size()) < rounds) throw std::runtime_error("wake floor: the subscriber went away");
  return spans;
}

}  // namespace leasehold::bench
