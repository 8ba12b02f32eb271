// leasehold_member: one instance of a test fleet, run as its own process by
// the multi-process safety test, the chaos runner and the failover benchmark.
//
// It campaigns for the given groups and writes one line per record to --out
// (each with a single write(2), so a SIGKILL loses nothing already written).
// Times are steady_clock nanoseconds, which all processes on the machine share.
//
//   audit <began|extended|ended> <group> <token> <at> <sent_at> <deadline>
//   elected <group> <token> <now>
//   revoked <group> <token> <reason> <now>
//   error <group|-> <code> <now> <detail...>
//   step_down <group> <now>        (when the command was received)
//   join <group> <now>             (when the command was received)
//   log <now> <level> <message...> (with --log-level: the library's own log)
//   ready <now> / stopped <now>
//   background_led <now>           (--background-groups N: once it led all N)
//   background_revoked <group> <reason> <now>
//
// --background-groups N also campaigns for N groups of its own,
// "<id>-bg<k>", whose terms and renewals it does not write (the failover
// benchmark measures a hand-over while an elector renews many other groups).
//
// Commands on stdin, one per line: "step_down <group>", "join <group>" (campaign
// for one more group from now on), "stop" (graceful stop, then exit 0).
// SIGTERM and SIGINT also stop gracefully.

#include <leasehold/leasehold.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/streambuf.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <istream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lh = leasehold;
namespace asio = boost::asio;

namespace {

std::int64_t ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
std::int64_t now_ns() { return ns(std::chrono::steady_clock::now()); }

class Output {
 public:
  explicit Output(const std::string& path)
      : fd_(path.empty() ? STDOUT_FILENO : ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {
    if (fd_ < 0) throw std::runtime_error("cannot open --out " + path);
  }
  void line(const std::string& text) const {
    const std::string l = text + "\n";
    if (::write(fd_, l.data(), l.size()) < 0) std::perror("leasehold_member: write");
  }

 private:
  int fd_;
};

struct Args {
  std::string url;
  std::string id;
  std::vector<std::string> groups;
  std::string out;
  std::string log_level;  // empty: the library's default (warnings to stderr)
  int background_groups = 0;
  lh::ElectorOptions options;
};

std::chrono::milliseconds parse_ms(std::string_view flag, std::string_view value) {
  long long v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc{} || p != value.data() + value.size() || v <= 0) {
    throw std::invalid_argument(fmt::format("{} needs a positive number of milliseconds, got \"{}\"", flag, value));
  }
  return std::chrono::milliseconds(v);
}

std::vector<std::string> split(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const auto comma = list.find(',');
    if (comma != 0) out.emplace_back(list.substr(0, comma));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(fmt::format("{} needs a value", flag));
    const std::string_view value = argv[++i];
    if (flag == "--url") a.url = value;
    else if (flag == "--id") a.options.instance_id = value;
    else if (flag == "--groups") a.groups = split(value);
    else if (flag == "--group-count") {
      for (int g = 0, n = std::atoi(std::string(value).c_str()); g < n; ++g) a.groups.push_back(fmt::format("g{}", g));
    }
    else if (flag == "--out") a.out = value;
    else if (flag == "--ttl") a.options.ttl = parse_ms(flag, value);
    else if (flag == "--heartbeat") a.options.heartbeat_interval = parse_ms(flag, value);
    else if (flag == "--retry") a.options.retry_interval = parse_ms(flag, value);
    else if (flag == "--prefix") a.options.key_prefix = value;
    else if (flag == "--priority") a.options.priority = std::atoi(std::string(value).c_str());
    else if (flag == "--confirm-replicas") a.options.confirm_replicas = std::atoi(std::string(value).c_str());
    else if (flag == "--confirm-timeout") a.options.confirm_timeout = parse_ms(flag, value);
    else if (flag == "--empty-restart-guard") a.options.empty_restart_guard = value != "off";
    else if (flag == "--log-level") a.log_level = value;
    else if (flag == "--background-groups") a.background_groups = std::atoi(std::string(value).c_str());
    else throw std::invalid_argument(fmt::format("unknown flag {}", flag));
  }
  if (a.url.empty()) throw std::invalid_argument("--url is required");
  a.options.groups = a.groups;
  if (a.background_groups > 0 && a.options.instance_id.empty()) {
    throw std::invalid_argument("--background-groups needs --id (the groups are named after it)");
  }
  for (int k = 0; k < a.background_groups; ++k) {
    a.options.groups.push_back(fmt::format("{}-bg{}", a.options.instance_id, k));
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  const Output out(args.out);
  if (!args.log_level.empty()) {
    // Into --out, on the shared clock: the failover benchmark reads when a
    // member heard +switch-master and when it reconnected.
    static constexpr std::string_view levels[] = {"debug", "info", "warning", "error"};
    int level = 0;
    while (level < 4 && levels[level] != args.log_level) ++level;
    if (level == 4) throw std::invalid_argument("--log-level must be debug, info, warning or error");
    lh::set_log_level(static_cast<lh::LogLevel>(level));
    lh::set_log_sink([&out](lh::LogLevel l, std::string_view message) {
      out.line(fmt::format("log {} {} {}", now_ns(), lh::to_string(l), message));
    });
  }
  asio::io_context io(1);
  lh::Elector elector(io.get_executor(), lh::RedisOptions::from_url(args.url), args.options);

  const std::string background_prefix = args.options.instance_id + "-bg";
  auto background = [&](std::string_view group) {
    return args.background_groups > 0 && group.starts_with(background_prefix);
  };
  int background_led = 0;

  elector.on_lease_audit([&](const lh::LeaseAuditEvent& e) {
    if (background(e.group)) return;
    static constexpr const char* kinds[] = {"began", "extended", "ended"};
    out.line(fmt::format("audit {} {} {} {} {} {}", kinds[static_cast<int>(e.kind)], e.group, e.token, ns(e.at),
                         ns(e.sent_at), e.kind == lh::LeaseAuditEvent::Kind::ended ? 0 : ns(e.deadline)));
  });
  elector.on_elected([&](const lh::ElectedEvent& e) {
    if (background(e.group)) {
      if (++background_led == args.background_groups) out.line(fmt::format("background_led {}", now_ns()));
      return;
    }
    out.line(fmt::format("elected {} {} {}", e.group, e.token, now_ns()));
  });
  elector.on_revoked([&](const lh::RevokedEvent& e) {
    if (background(e.group)) {
      out.line(fmt::format("background_revoked {} {} {}", e.group, lh::to_string(e.reason), now_ns()));
      return;
    }
    out.line(fmt::format("revoked {} {} {} {}", e.group, e.token, lh::to_string(e.reason), now_ns()));
  });
  elector.on_error([&out](const lh::ErrorEvent& e) {
    out.line(fmt::format("error {} {} {} {}", e.group.empty() ? "-" : e.group, e.error.code.value(), now_ns(),
                         e.error.message()));
  });

  bool stopping = false;
  auto stop = [&] {
    if (stopping) return;
    stopping = true;
    elector.stop([&](lh::error_code) {
      out.line(fmt::format("stopped {}", now_ns()));
      io.stop();
    });
  };
  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](lh::error_code ec, int) {
    if (!ec) stop();
  });

  asio::posix::stream_descriptor input(io, ::dup(STDIN_FILENO));
  asio::streambuf buffer;
  std::function<void()> read_command = [&] {
    asio::async_read_until(input, buffer, '\n', [&](lh::error_code ec, std::size_t) {
      if (ec) return;  // stdin closed: keep running until signalled
      std::istream in(&buffer);
      std::string verb, group;
      in >> verb;
      std::getline(in, group);
      if (!group.empty() && group.front() == ' ') group.erase(0, 1);
      if (verb == "step_down") {
        out.line(fmt::format("step_down {} {}", group, now_ns()));
        elector.step_down(group, [](lh::error_code) {});
      } else if (verb == "join") {
        out.line(fmt::format("join {} {}", group, now_ns()));
        elector.group(group);
      } else if (verb == "stop") {
        stop();
      }
      read_command();
    });
  };
  read_command();

  elector.start();
  out.line(fmt::format("ready {}", now_ns()));
  io.run();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "leasehold_member: %s\n", e.what());
  return 2;
}
