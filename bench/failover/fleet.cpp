#include "failover/fleet.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <thread>

namespace leasehold::bench {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const MemberEvent* last_event(const MemberLog& log, MemberEvent::Kind kind, const std::string& group) {
  const auto& ev = log.events();
  for (auto it = ev.rbegin(); it != ev.rend(); ++it) {
    if (it->kind == kind && (group.empty() || it->group == group)) return &*it;
  }
  return nullptr;
}

Fleet::~Fleet() {
  try {
    stop_all();
  } catch (...) {
  }
  members_.clear();  // SIGKILLs anything still running
}

Member& Fleet::spawn(const std::vector<std::string>& extra_args) {
  const std::string id = fmt::format("m{}", next_id_++);
  const std::string out = fmt::format("{}/{}.events", config_.dir, id);
  std::vector<std::string> argv{config_.member_binary,
                                "--url", config_.url,
                                "--id", id,
                                "--group-count", "0",
                                "--ttl", std::to_string(config_.ttl.count()),
                                "--heartbeat", std::to_string(config_.heartbeat.count()),
                                "--retry", std::to_string(config_.retry.count()),
                                "--out", out};
  if (config_.group != "default") argv.insert(argv.end(), {"--groups", config_.group});
  argv.insert(argv.end(), config_.extra_args.begin(), config_.extra_args.end());
  if (config_.background_groups > 0) {
    argv.insert(argv.end(), {"--background-groups", std::to_string(config_.background_groups)});
  }
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  auto m = std::make_unique<Member>(Member{id, nullptr, MemberLog(out), true});
  m->process = std::make_unique<MemberProcess>(argv, fmt::format("{}/{}.log", config_.dir, id));
  Member& ref = *m;
  members_.push_back(std::move(m));
  const bool ready = wait_until([&] { return last_event(ref.log, MemberEvent::Kind::ready, "") != nullptr; },
                                std::chrono::seconds(10));
  if (!ready) throw std::runtime_error(fmt::format("member {} did not start; see {}/{}.log", id, config_.dir, id));
  if (config_.background_groups > 0) {
    const bool led = wait_until(
        [&] { return last_event(ref.log, MemberEvent::Kind::background_led, "") != nullptr; }, std::chrono::seconds(60));
    if (!led) {
      throw std::runtime_error(fmt::format("member {} did not lead its {} background groups within 60 s; see {}",
                                           id, config_.background_groups, ref.log.path()));
    }
  }
  return ref;
}

// Only live members: the benchmark retires dozens of members in a run, and
// re-reading their finished logs every few milliseconds would load the very
// machine whose latency it measures.
void Fleet::poll() {
  for (auto& m : members_) {
    if (m->alive) m->log.poll();
  }
}

void Fleet::retire(Member& m) {
  m.alive = false;
  m.log.poll();  // its last lines, written before it exited
}

Member* Fleet::leader() {
  Member* found = nullptr;
  for (auto& m : members_) {
    if (!m->alive) continue;
    const MemberEvent* e = nullptr;
    for (auto it = m->log.events().rbegin(); it != m->log.events().rend(); ++it) {
      if (it->group == config_.group && (it->kind == MemberEvent::Kind::elected || it->kind == MemberEvent::Kind::revoked)) {
        e = &*it;
        break;
      }
    }
    if (e == nullptr || e->kind != MemberEvent::Kind::elected) continue;
    if (found != nullptr) return nullptr;
    found = m.get();
  }
  return found;
}

bool Fleet::wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    poll();
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    // The measured instants come from the members' own records, so this
    // period only decides how soon the benchmark moves on.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::optional<std::pair<Member*, MemberEvent>> Fleet::elected_after(std::int64_t after_ns, const Member* except,
                                                                    const std::string& group) {
  const std::string& wanted = group.empty() ? config_.group : group;
  std::optional<std::pair<Member*, MemberEvent>> best;
  for (auto& m : members_) {
    if (m.get() == except) continue;
    for (const auto& e : m->log.events()) {
      if (e.kind != MemberEvent::Kind::elected || e.group != wanted || e.at <= after_ns) continue;
      if (!best || e.at < best->second.at) best = std::pair{m.get(), e};
    }
  }
  return best;
}

std::int64_t Fleet::kill(Member& m) {
  const std::int64_t at = now_ns();
  m.process->kill();
  retire(m);
  return at;
}

void Fleet::stop_all() {
  for (auto& m : members_) {
    if (m->alive) m->process->send("stop");
  }
  for (auto& m : members_) {
    if (m->alive && !m->process->wait_exit(std::chrono::seconds(3))) m->process->kill();
    if (m->alive) retire(*m);
  }
}

}  // namespace leasehold::bench
