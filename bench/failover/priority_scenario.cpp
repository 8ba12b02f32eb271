#include "failover/priority_scenario.hpp"

#include "support/admin_client.hpp"

#include <stdexcept>
#include <thread>

namespace leasehold::bench {

namespace {

using namespace std::chrono_literals;
using Kind = MemberEvent::Kind;

// As in scenarios.cpp: a fresh member has connected, subscribed and been
// refused by then; here it also lets the old leader's hand-over reply and
// its revoked line reach its log before the round is read.
constexpr auto settle_time = 300ms;

// The first event of `kind` for `group` after `after_ns` ("" group: any).
const MemberEvent* first_after(const MemberLog& log, Kind kind, const std::string& group, std::int64_t after_ns) {
  for (const auto& e : log.events()) {
    if (e.kind == kind && e.at > after_ns && (group.empty() || e.group == group)) return &e;
  }
  return nullptr;
}

}  // namespace

void RollingDeploy::start(int count) {
  for (int i = 0; i < count; ++i) fleet_.spawn();
  wait_for_leader();
  std::this_thread::sleep_for(settle_time);
}

bool RollingDeploy::bid_exists() {
  const auto reply = admin_.call({"EXISTS", "leader:" + fleet_.config().group + ":bid"});
  return !reply.is_integer() || reply.integer != 0;
}

int RollingDeploy::priority_of(const std::string& id) const {
  const auto it = priorities_.find(id);
  return it == priorities_.end() ? 0 : it->second;
}

Member& RollingDeploy::wait_for_leader() {
  Member* leader = nullptr;
  const std::chrono::milliseconds bound = fleet_.config().ttl * 3 + 5s;
  if (!fleet_.wait_until([&] { return (leader = fleet_.leader()) != nullptr; }, bound)) {
    throw std::runtime_error("no single leader emerged");
  }
  return *leader;
}

void RollingDeploy::random_phase() {
  std::uniform_int_distribution<long> us(0, fleet_.config().heartbeat.count() * 1000);
  std::this_thread::sleep_for(std::chrono::microseconds(us(rng_)));
}

PriorityRound RollingDeploy::round(bool stop) {
  const FleetConfig& config = fleet_.config();
  Member& leader = wait_for_leader();
  random_phase();
  PriorityRound r;
  r.old_leader = leader.id;
  if (const MemberEvent* e = last_event(leader.log, Kind::elected, config.group)) r.old_token = e->token;
  r.priority = next_priority_++;
  r.spawn_ns = now_ns();
  Member& newcomer = fleet_.spawn({"--priority", std::to_string(r.priority)});
  priorities_[newcomer.id] = r.priority;
  r.newcomer = newcomer.id;
  if (const MemberEvent* ready = last_event(newcomer.log, Kind::ready, "")) r.ready_ns = ready->at;

  // By its bid the newcomer leads about a heartbeat after it starts. The
  // bound is generous, so that a slow hand-over is measured rather than lost
  // (an expiry would take a ttl, and a leader that renews never expires).
  // Meanwhile the bid key is read every 50 ms or so: it stands from the
  // newcomer's refusal to its re-claim, so most rounds see it, which shows
  // that equal_priority_check() reads the right key.
  const std::chrono::milliseconds bound = config.ttl * 2 + config.heartbeat * 4 + 2s;
  auto next_read = std::chrono::steady_clock::now();
  fleet_.wait_until([&] {
    if (std::chrono::steady_clock::now() >= next_read) {
      r.bid_seen = r.bid_seen || bid_exists();
      next_read = std::chrono::steady_clock::now() + 50ms;
    }
    return first_after(newcomer.log, Kind::elected, config.group, r.spawn_ns) != nullptr;
  }, bound);
  std::this_thread::sleep_for(settle_time);
  fleet_.poll();
  r.end_ns = now_ns();

  if (const auto first = fleet_.elected_after(r.spawn_ns, nullptr)) r.first_elected = first->first->id;
  if (const MemberEvent* e = first_after(newcomer.log, Kind::elected, config.group, r.spawn_ns)) {
    r.elected_ns = e->at;
    r.new_token = e->token;
    for (const auto& b : newcomer.log.events()) {
      if (b.kind == Kind::began && b.group == config.group && b.token == e->token) {
        r.new_sent_ns = b.sent_at;
        r.new_began_ns = b.at;
      }
    }
  }
  if (const MemberEvent* e = first_after(leader.log, Kind::revoked, config.group, r.spawn_ns)) {
    r.revoked_ns = e->at;
    r.old_reason = e->detail;
  }
  if (const MemberEvent* e = first_after(leader.log, Kind::ended, config.group, r.spawn_ns)) r.old_ended_ns = e->at;
  r.ok = r.elected_ns != 0 && r.first_elected == r.newcomer && r.old_reason == "handed_over" &&
         r.new_token > r.old_token;
  if (stop) stop_oldest(r);
  return r;
}

// The oldest member that does not lead (the newcomer leads, or the round
// failed and someone else does): a rolling deploy retires the old release.
void RollingDeploy::stop_oldest(PriorityRound& r) {
  const Member* leader = fleet_.leader();
  for (auto& m : fleet_.members()) {
    if (!m->alive || m.get() == leader || m->id == r.newcomer) continue;
    r.stopped = m->id;
    m->process->send("stop");
    if (!m->process->wait_exit(3s)) m->process->kill();
    fleet_.retire(*m);
    return;
  }
}

PriorityCheck RollingDeploy::equal_priority_check(std::chrono::milliseconds window) {
  const std::string& group = fleet_.config().group;
  Member& leader = wait_for_leader();
  PriorityCheck c;
  c.leader = leader.id;
  c.leader_priority = priority_of(leader.id);
  c.from_ns = now_ns();
  c.equal = fleet_.spawn({"--priority", std::to_string(c.leader_priority)}).id;
  priorities_[c.equal] = c.leader_priority;
  c.lower = fleet_.spawn({"--priority", std::to_string(c.leader_priority - 1)}).id;
  priorities_[c.lower] = c.leader_priority - 1;

  // A bid lives one ttl and the leader reads it within a heartbeat: reads
  // every 50 ms would see any.
  const auto until = std::chrono::steady_clock::now() + window;
  while (std::chrono::steady_clock::now() < until) {
    ++c.bid_reads;
    if (bid_exists()) ++c.bids_seen;
    std::this_thread::sleep_for(50ms);
  }
  c.to_ns = now_ns();
  fleet_.poll();
  c.leader_kept = first_after(leader.log, Kind::revoked, group, c.from_ns) == nullptr && fleet_.leader() == &leader;
  for (const auto& m : fleet_.members()) {
    for (const auto& e : m->log.events()) {
      if (e.kind == Kind::elected && e.group == group && e.at > c.from_ns) ++c.elections;
    }
  }
  return c;
}

}  // namespace leasehold::bench
