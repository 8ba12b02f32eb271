#include "chaos/fleet.hpp"

#include "support/admin_client.hpp"
#include "support/process.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace leasehold::chaos {

Nanos now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct MemberFleet::Member {
  std::string id;
  std::string out;
  int commands = -1;  // write end of the FIFO that is the member's stdin
  std::optional<test::Process> process;
  std::optional<Nanos> dead_at;
  bool expected_exit = false;  // killed or stopped by us

  Member() = default;
  Member(const Member&) = delete;
  Member& operator=(const Member&) = delete;
  ~Member() {
    if (commands >= 0) ::close(commands);
  }
};

namespace {

std::string join(const std::vector<std::string>& list) {
  std::string out;
  for (const auto& s : list) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

MemberFleet::MemberFleet(FleetOptions options) : options_(std::move(options)) {}

MemberFleet::~MemberFleet() = default;  // each Process SIGKILLs and reaps its child

std::size_t MemberFleet::add(std::string url) {
  slots_.push_back(Slot{std::move(url), fmt::format("m{}-0", slots_.size()), 0, nullptr});
  spawn(slots_.size() - 1);
  return slots_.size() - 1;
}

const std::string& MemberFleet::id(std::size_t slot) const { return slots_.at(slot).id; }

std::optional<std::size_t> MemberFleet::slot_of(const std::string& id) const {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].id == id) return i;
  }
  return std::nullopt;
}

void MemberFleet::spawn(std::size_t slot) {
  Slot& s = slots_.at(slot);
  auto m = std::make_shared<Member>();
  m->id = s.id;
  const std::string stem = fmt::format("{}/p{}-{}", options_.dir, history_.size(), s.id);
  m->out = stem + ".out";

  // The harness gives children /dev/null as stdin, so the member reads its
  // commands from a FIFO that a shell puts in place before exec'ing it (the
  // pid stays the member's). We hold the FIFO open for reading and writing,
  // so neither side ever blocks on open and a dead reader raises no SIGPIPE.
  const std::string fifo = stem + ".cmd";
  if (::mkfifo(fifo.c_str(), 0600) != 0) {
    throw std::system_error(errno, std::generic_category(), "mkfifo " + fifo);
  }
  m->commands = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (m->commands < 0) throw std::system_error(errno, std::generic_category(), "open " + fifo);

  std::vector<std::string> argv{"/bin/sh", "-c", "fifo=$1; shift; exec \"$@\" <\"$fifo\"", "member", fifo,
                                options_.member_binary, "--url", s.url, "--id", s.id, "--groups",
                                join(options_.groups), "--ttl", std::to_string(options_.ttl.count()),
                                "--retry", std::to_string(options_.retry.count()), "--out", m->out};
  if (options_.confirm_replicas > 0) {
    argv.insert(argv.end(), {"--confirm-replicas", std::to_string(options_.confirm_replicas), "--confirm-timeout",
                             std::to_string(options_.confirm_timeout.count())});
  }
  m->process.emplace(std::move(argv), stem + ".err");
  s.current = m;
  history_.push_back(std::move(m));
}

Nanos MemberFleet::kill(std::size_t slot) {
  Member& m = *slots_.at(slot).current;
  m.expected_exit = true;
  m.process->kill();
  m.dead_at = now_ns();
  return *m.dead_at;
}

void MemberFleet::respawn(std::size_t slot, bool new_id) {
  Slot& s = slots_.at(slot);
  if (new_id) s.id = fmt::format("m{}-{}", slot, ++s.generation);
  spawn(slot);
}

void MemberFleet::freeze(std::size_t slot) { slots_.at(slot).current->process->stop(); }
void MemberFleet::thaw(std::size_t slot) { slots_.at(slot).current->process->cont(); }

void MemberFleet::step_down(std::size_t slot, const std::string& group) {
  const std::string line = "step_down " + group + "\n";
  // A full pipe (a member frozen for very long) just loses the command.
  [[maybe_unused]] auto n = ::write(slots_.at(slot).current->commands, line.data(), line.size());
}

void MemberFleet::wait(std::chrono::milliseconds duration) {
  const auto until = std::chrono::steady_clock::now() + duration;
  for (auto now = std::chrono::steady_clock::now(); now < until; now = std::chrono::steady_clock::now()) {
    reap_crashed();
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(until - now, std::chrono::milliseconds(20)));
  }
  reap_crashed();
}

bool MemberFleet::wait_until_led(test::AdminClient& admin, std::chrono::milliseconds bound) {
  return wait_until_led([&admin](const std::vector<std::string>& groups) { return holders(admin, groups); }, bound);
}

bool MemberFleet::wait_until_led(
    const std::function<std::vector<std::string>(const std::vector<std::string>&)>& holders,
    std::chrono::milliseconds bound) {
  const auto groups = all_groups();
  for (const auto until = std::chrono::steady_clock::now() + bound; std::chrono::steady_clock::now() < until;) {
    const auto h = holders(groups);
    if (!h.empty() && std::none_of(h.begin(), h.end(), [](const std::string& id) { return id.empty(); })) {
      wait(std::chrono::milliseconds(100));  // the key is set before the reply reaches its holder
      return true;
    }
    wait(std::chrono::milliseconds(20));
  }
  return false;
}

void MemberFleet::reap_crashed() {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Member& m = *slots_[i].current;
    if (m.expected_exit || m.process->running()) continue;
    m.dead_at = now_ns();
    crashes_.push_back(
        fmt::format("{} ({}): {}", m.id, m.out, test::describe_wait_status(*m.process->exit_status())));
    spawn(i);
  }
}

std::vector<std::string> MemberFleet::stop_all(std::chrono::milliseconds bound) {
  std::vector<std::string> out;
  for (auto& s : slots_) {
    s.current->expected_exit = true;
    s.current->process->cont();  // a frozen process cannot handle SIGTERM
    s.current->process->signal(SIGTERM);
  }
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (auto& s : slots_) {
    Member& m = *s.current;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const auto status = m.process->wait_exit(std::max(left, std::chrono::milliseconds(0)));
    if (!status) {
      out.push_back(fmt::format("{} ({}): hung, still running {} ms after SIGTERM", m.id, m.out, bound.count()));
      m.process->kill();
    } else if (*status != 0) {
      out.push_back(fmt::format("{} ({}): {} after SIGTERM", m.id, m.out, test::describe_wait_status(*status)));
    }
  }
  return out;
}

std::vector<RunLog> MemberFleet::load_runs() const {
  std::vector<RunLog> runs;
  for (const auto& m : history_) {
    try {
      runs.push_back(load_run(m->out, m->id));
    } catch (const std::exception& e) {
      RunLog missing;  // the process died before it could write anything
      missing.source = m->out;
      missing.instance = m->id;
      missing.problems.push_back(e.what());
      runs.push_back(std::move(missing));
    }
    runs.back().dead_at = m->dead_at;
  }
  return runs;
}

std::vector<std::string> MemberFleet::all_groups() const {
  std::vector<std::string> groups{"default"};
  groups.insert(groups.end(), options_.groups.begin(), options_.groups.end());
  return groups;
}

std::string make_temp_dir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" + prefix + "XXXXXX";
  if (::mkdtemp(path.data()) == nullptr) throw std::system_error(errno, std::generic_category(), "mkdtemp " + path);
  return path;
}

std::vector<std::string> holders(test::AdminClient& admin, const std::vector<std::string>& groups) {
  std::vector<std::string> out;
  try {
    for (const auto& g : groups) out.push_back(admin.get("leader:" + g).value_or(""));
  } catch (const std::exception&) {
    out.clear();  // Redis down, paused or out of reach: nobody can say
  }
  return out;
}

}  // namespace leasehold::chaos
