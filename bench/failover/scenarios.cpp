#include "failover/scenarios.hpp"

#include "support/admin_client.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <thread>

namespace leasehold::bench {

namespace {

using namespace std::chrono_literals;
using Kind = MemberEvent::Kind;

// Long enough for a fresh member to connect, subscribe and fail its first
// acquire, so that it is a settled standby when the next round starts.
constexpr auto settle_time = 300ms;

}  // namespace

void Scenarios::start(int count) {
  for (int i = 0; i < count; ++i) fleet_.spawn();
  wait_for_leader();
  std::this_thread::sleep_for(settle_time);
}

Member& Scenarios::wait_for_leader() {
  Member* leader = nullptr;
  const std::chrono::milliseconds bound = fleet_.config().ttl * 3 + 5s;
  if (!fleet_.wait_until([&] { return (leader = fleet_.leader()) != nullptr; }, bound)) {
    throw std::runtime_error("no single leader emerged");
  }
  return *leader;
}

void Scenarios::random_phase() {
  std::uniform_int_distribution<long> us(0, fleet_.config().heartbeat.count() * 1000);
  std::this_thread::sleep_for(std::chrono::microseconds(us(rng_)));
}

void Scenarios::fill_new_leader(std::int64_t after_ns, const Member* old, std::int64_t& sent, std::int64_t& began,
                                std::int64_t& elected, std::string& id, const std::string& group) {
  const auto found = fleet_.elected_after(after_ns, old, group);
  if (!found) return;
  auto [member, event] = *found;
  elected = event.at;
  id = member->id;
  // The audit `began` record of that term: the claim's publication and the
  // send instant of the acquire that won it.
  for (const auto& e : member->log.events()) {
    if (e.kind == Kind::began && e.group == event.group && e.token == event.token) {
      sent = e.sent_at;
      began = e.at;
    }
  }
}

void Scenarios::replace() {
  fleet_.spawn();
  std::this_thread::sleep_for(settle_time);
}

HandOverRound Scenarios::step_down_round() {
  Member& leader = wait_for_leader();
  random_phase();
  HandOverRound r;
  r.old_leader = leader.id;
  const std::int64_t before = now_ns();
  leader.process->send("step_down " + fleet_.config().group);
  const auto timeout = 3s;
  fleet_.wait_until([&] { return fleet_.elected_after(before, &leader).has_value(); }, timeout);
  // The poll that saw the election may have read the leader's log before
  // it logged the command: a hand-over can take less than one poll pass.
  leader.log.poll();
  const MemberEvent* cmd = last_event(leader.log, Kind::step_down, fleet_.config().group);
  const MemberEvent* ended = last_event(leader.log, Kind::ended, fleet_.config().group);
  if (cmd == nullptr || cmd->at < before) return r;
  r.command_ns = cmd->at;
  if (ended != nullptr) r.old_ended_ns = ended->at;
  fill_new_leader(before, &leader, r.new_sent_ns, r.new_began_ns, r.elected_ns, r.new_leader);
  r.ok = r.elected_ns != 0;
  // The old leader sits out its hold-off (retry interval), then is a standby again.
  std::this_thread::sleep_for(fleet_.config().retry + settle_time);
  return r;
}

HandOverRound Scenarios::stop_round() {
  Member& leader = wait_for_leader();
  random_phase();
  HandOverRound r;
  r.old_leader = leader.id;
  r.command_ns = now_ns();
  leader.process->send("stop");
  fleet_.wait_until([&] { return fleet_.elected_after(r.command_ns, &leader).has_value(); }, 3s);
  leader.log.poll();  // as in step_down_round
  if (const MemberEvent* ended = last_event(leader.log, Kind::ended, fleet_.config().group)) r.old_ended_ns = ended->at;
  fill_new_leader(r.command_ns, &leader, r.new_sent_ns, r.new_began_ns, r.elected_ns, r.new_leader);
  r.ok = r.elected_ns != 0;
  if (!leader.process->wait_exit(3s)) leader.process->kill();
  fleet_.retire(leader);
  replace();
  return r;
}

CrashRound Scenarios::crash_round() {
  Member& leader = wait_for_leader();
  random_phase();
  CrashRound r;
  r.old_leader = leader.id;
  r.kill_ns = fleet_.kill(leader);  // SIGKILL and reap: nothing more can leave the process

  // A renewal written just before the kill may still sit in Redis's input
  // buffer; give Redis a moment to run it, then read the lease's PTTL. Its
  // expiry instant on our clock is the read instant + PTTL (+0..1 ms: Redis
  // counts whole milliseconds and expires a key once its clock passes it).
  std::this_thread::sleep_for(2ms);
  const std::string key = "leader:" + fleet_.config().group;
  bool ours = false;
  // The read instant is only known to lie between the send and the reply:
  // take the tightest of a few reads (a preempted read is a wide one).
  for (int attempt = 0; attempt < 5; ++attempt) {
    const std::int64_t t0 = now_ns();
    const auto reply =
        admin_.call({"EVAL", "return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}", "1", key});
    const std::int64_t t1 = now_ns();
    const bool valid = reply.is_array() && reply.elements.size() == 2 && reply.elements[0].is_string() &&
                       reply.elements[0].str == leader.id && reply.elements[1].is_integer() &&
                       reply.elements[1].integer >= 0;
    if (!valid) break;
    const double error_ms = static_cast<double>(t1 - t0) / 2e6 + 0.5;
    if (ours && error_ms >= r.expiry_error_ms) continue;
    ours = true;
    r.expiry_ns = (t0 + t1) / 2 + reply.elements[1].integer * 1'000'000 + 500'000;
    r.expiry_error_ms = error_ms;
  }

  fleet_.wait_until([&] { return fleet_.elected_after(r.kill_ns, &leader).has_value(); },
                    fleet_.config().ttl + 3s);
  leader.log.poll();
  for (const auto& e : leader.log.events()) {
    if (e.group != fleet_.config().group || (e.kind != Kind::began && e.kind != Kind::extended)) continue;
    r.last_confirm_sent_ns = e.sent_at;
    if (e.kind == Kind::began) {
      r.term_sent_ns = e.sent_at;
      r.renew_sent_ns.clear();
      r.renew_reply_ns.clear();
    }
    if (e.kind == Kind::extended && e.at > r.kill_ns - 3 * fleet_.config().ttl.count() * 1'000'000) {
      r.renew_sent_ns.push_back(e.sent_at);
      r.renew_reply_ns.push_back(e.at);
    }
  }
  fill_new_leader(r.kill_ns, &leader, r.new_sent_ns, r.new_began_ns, r.elected_ns, r.new_leader);
  r.ok = ours && r.elected_ns != 0;
  replace();
  return r;
}

HandOverRound Scenarios::new_group_round() {
  // The first election on this server wrote its data marker about when
  // start() began (on a cluster, each member marks every slot as it
  // starts); a group is taken at once only once the marker is one ttl old
  // (docs/failover.md), so the first round waits out the rest.
  if (new_groups_++ == 0) std::this_thread::sleep_for(fleet_.config().ttl);
  random_phase();
  HandOverRound r;
  const std::string group = fmt::format("new-group-{}", new_groups_);
  const std::int64_t before = now_ns();
  for (auto& m : fleet_.members()) {
    if (m->alive) m->process->send("join " + group);
  }
  fleet_.wait_until([&] { return fleet_.elected_after(before, nullptr, group).has_value(); },
                    fleet_.config().ttl * 2 + 3s);
  fleet_.poll();
  for (auto& m : fleet_.members()) {
    const MemberEvent* join = m->alive ? last_event(m->log, Kind::join, group) : nullptr;
    if (join != nullptr && (r.command_ns == 0 || join->at < r.command_ns)) {
      r.command_ns = join->at;
      r.old_leader = m->id;  // here: the member that joined first
    }
  }
  fill_new_leader(before, nullptr, r.new_sent_ns, r.new_began_ns, r.elected_ns, r.new_leader, group);
  r.ok = r.command_ns != 0 && r.elected_ns != 0;
  std::this_thread::sleep_for(settle_time);
  return r;
}

}  // namespace leasehold::bench
