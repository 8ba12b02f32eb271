#include "failover/sentinel_scenarios.hpp"

#include "failover/leadership.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <thread>

namespace leasehold::bench {

namespace {

using namespace std::chrono_literals;
using Kind = MemberEvent::Kind;
const std::string group = "default";

bool confirmed(const MemberEvent& e) { return e.group == group && (e.kind == Kind::began || e.kind == Kind::extended); }

// A member's first sign, after `after_ns`, that it left the old master: it
// heard +switch-master (planned), or lost the connection (killed). It sends
// nothing more on the old connection after either, so whatever it confirms
// later ran on a new one.
std::int64_t left_old_master(const Member& m, std::int64_t after_ns) {
  for (const auto& e : m.log.events()) {
    if (e.kind != Kind::log || e.at <= after_ns) continue;
    if (e.detail.find("+switch-master") != std::string::npos ||
        e.detail.find("lost the connection to Redis") != std::string::npos) {
      return e.at;
    }
  }
  return 0;
}

}  // namespace

SentinelScenarios::SentinelScenarios(SentinelScenarioConfig config, unsigned seed)
    : config_(std::move(config)), rng_(seed) {
  test::SentinelTopologyOptions topology;
  topology.down_after = 1000ms;
  topology.failover_timeout = 3000ms;
  topology_ = std::make_unique<test::SentinelTopology>(topology);
  std::vector<std::uint16_t> ports;
  for (std::size_t j = 0; j < topology_->sentinel_count(); ++j) ports.push_back(topology_->sentinel_port(j));
  watch_ = std::make_unique<SwitchWatch>(ports);
  FleetConfig fleet{config_.member_binary, topology_->sentinel_url(), config_.dir, group,
                    config_.ttl, config_.heartbeat, config_.retry, {}};
  // A fresh topology per run: the empty-restart guard would only add one ttl.
  fleet.extra_args = {"--confirm-replicas", std::to_string(config_.confirm_replicas),
                      "--confirm-timeout", std::to_string(config_.confirm_timeout.count()),
                      "--empty-restart-guard", "off", "--log-level", "info"};
  fleet_ = std::make_unique<Fleet>(fleet);
  for (int i = 0; i < config_.candidates; ++i) fleet_->spawn();
  wait_for_confirmed_leader();
}

SentinelScenarios::~SentinelScenarios() {
  fleet_.reset();  // members first: they would only log the topology going away
  watch_.reset();
  topology_.reset();
}

// One leader, whose lease was confirmed within the last heartbeat or so.
Member& SentinelScenarios::wait_for_confirmed_leader() {
  Member* leader = nullptr;
  const bool found = fleet_->wait_until([&] {
    leader = fleet_->leader();
    if (leader == nullptr) return false;
    const auto& ev = leader->log.events();
    for (auto it = ev.rbegin(); it != ev.rend(); ++it) {
      if (confirmed(*it)) return now_ns() - it->at < (config_.heartbeat + 200ms).count() * 1'000'000;
    }
    return false;
  }, 30s);
  if (!found) throw std::runtime_error("sentinel: no confirmed leader within 30 s\n" + topology_->log_tails());
  return *leader;
}

// The earliest confirmed acquire or renewal sent after its member left the
// old master: that one ran on the new master.
SentinelScenarios::Confirmation SentinelScenarios::first_confirmed_on_new_master(std::int64_t fault_ns) {
  Confirmation best;
  fleet_->poll();
  for (auto& m : fleet_->members()) {
    const std::int64_t left = left_old_master(*m, fault_ns);
    if (left == 0) continue;
    for (const auto& e : m->log.events()) {
      if (!confirmed(e) || e.sent_at <= left) continue;
      if (best.at == 0 || e.at < best.at) best = {m.get(), e.at, e.token, left};
      break;
    }
  }
  return best;
}

// Waits for the new master's first confirmed lease (if not yet), a settled
// topology and one leader; then measures the whole window.
void SentinelScenarios::finish(SentinelRound& r, const Member& old) {
  Confirmation c;
  fleet_->wait_until([&] { return (c = first_confirmed_on_new_master(r.fault_ns)).at != 0; }, 30s);
  topology_->wait_until_settled(60s);
  wait_for_confirmed_leader();
  r.settled_ns = now_ns();
  const auto notices = watch_->after(r.fault_ns);
  if (!notices.empty()) {
    r.switch_ns = notices.front().at;
    r.last_switch_ns = notices.back().at;
  }
  r.ok = c.at != 0 && r.switch_ns != 0;
  r.confirmed_ns = c.at;
  r.left_ns = c.left_old;
  if (c.who != nullptr) {
    r.new_leader = c.who->id;
    r.new_token = c.token;
  }
  const auto time = leadership_time(*fleet_, group, r.fault_ns, r.settled_ns);
  r.leaderless_ms = time.none_ms;
  r.overlap_ms = time.several_ms;
  bool revoked = false;
  for (const auto& e : old.log.events()) {
    if (e.kind == Kind::revoked && e.group == group && e.at > r.fault_ns && e.at < r.settled_ns) revoked = true;
  }
  r.kept = r.ok && !revoked && r.new_leader == r.old_leader && r.new_token == r.old_token;
}

std::pair<Member*, SentinelRound> SentinelScenarios::start_round() {
  Member& leader = wait_for_confirmed_leader();
  std::uniform_int_distribution<long> us(0, config_.heartbeat.count() * 1000);
  std::this_thread::sleep_for(std::chrono::microseconds(us(rng_)));
  SentinelRound r;
  r.old_leader = leader.id;
  r.old_token = last_event(leader.log, Kind::elected, group)->token;
  return {&leader, r};
}

SentinelRound SentinelScenarios::kill_round() {
  auto [leader, r] = start_round();
  const std::size_t old = topology_->master_index();
  r.fault_ns = now_ns();
  topology_->kill_master();
  const std::size_t promoted = topology_->wait_for_new_master(old, 30s);
  // With every replica to confirm, nothing can be until the old master is
  // back as a replica: show that for a while, then bring it back.
  if (config_.confirm_replicas >= static_cast<int>(topology_->node_count()) - 1) std::this_thread::sleep_for(3s);
  topology_->restart_node(old);
  r.restart_ns = now_ns();
  topology_->wait_for_replica_of(old, promoted, 30s);
  finish(r, *leader);
  return r;
}

SentinelRound SentinelScenarios::planned_round() {
  auto [leader, r] = start_round();
  const std::size_t old = topology_->master_index();
  r.fault_ns = now_ns();
  topology_->manual_failover();
  topology_->wait_for_new_master(old, 30s);
  finish(r, *leader);
  return r;
}

}  // namespace leasehold::bench
