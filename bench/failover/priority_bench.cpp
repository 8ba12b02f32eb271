#include "failover/priority_bench.hpp"

#include "chaos/checker.hpp"
#include "common/table.hpp"
#include "failover/leadership.hpp"
#include "failover/metric.hpp"
#include "failover/priority_scenario.hpp"
#include "support/redis_server.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace leasehold::bench {

namespace {

const std::string group = "default";

double ms(std::int64_t from_ns, std::int64_t to_ns) { return PriorityRound::ms(from_ns, to_ns); }

// What the chaos checker says about every member's whole output.
struct Verdict {
  std::vector<chaos::Overlap> overlaps;
  std::vector<chaos::TokenRegression> regressions;
  std::size_t problems = 0;
  std::vector<double> no_claim_ms;  ///< per round: time in [spawn, end] when no member claimed the group
};

Verdict check(Fleet& fleet, const std::vector<PriorityRound>& rounds) {
  std::vector<chaos::RunLog> runs;
  for (const auto& m : fleet.members()) runs.push_back(chaos::load_run(m->log.path(), m->id));
  Verdict v;
  v.overlaps = chaos::find_overlaps(runs);
  v.regressions = chaos::find_token_regressions(runs, {});
  for (const auto& run : runs) v.problems += run.problems.size();
  for (const auto& r : rounds) {
    double none = 0;
    for (const auto& [g, gaps] : chaos::leaderless_gaps(runs, {group}, r.spawn_ns, r.end_ns)) {
      for (const auto& gap : gaps) none += static_cast<double>(gap.length()) / 1e6;
    }
    v.no_claim_ms.push_back(none);
  }
  return v;
}

std::string hb_target(const PriorityBenchOptions& o) {
  return fmt::format("<= 2 hb ({} ms)", 2 * o.heartbeat.count());
}

Table latency_table(const PriorityBenchOptions& o, const std::vector<PriorityRound>& rounds, const Verdict& v) {
  const int n = static_cast<int>(rounds.size());
  const char* s = "priority";
  Metric spawn{s, "spawn -> newcomer elected", hb_target(o), {}, n};
  Metric ready{s, "newcomer ready -> elected", hb_target(o), {}, n};
  Metric bid{s, "newcomer ready -> old leader revoked (handed_over)", "<= hb + connect + RTT", {}, n};
  Metric gap{s, "old leader revoked -> newcomer elected (leaderless)", "2 RTT + drain (0); p99 <= 5 ms as step_down",
             {}, n};
  Metric claims{s, "old claim ended -> new claim began (audit)", "", {}, n};
  Metric sent{s, "old leader revoked -> winning acquire sent", "", {}, n};
  Metric rtt{s, "winning acquire sent -> reply (its round trip)", "", {}, n};
  Metric none{s, "no claim during the round (chaos checker)", "", {}, n};
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    const auto& r = rounds[i];
    if (!r.ok) continue;
    spawn.samples.push_back(r.spawn_to_elected_ms());
    ready.samples.push_back(r.ready_to_elected_ms());
    bid.samples.push_back(ms(r.ready_ns, r.revoked_ns));
    gap.samples.push_back(r.leaderless_ms());
    if (r.old_ended_ns != 0 && r.new_began_ns != 0) claims.samples.push_back(ms(r.old_ended_ns, r.new_began_ns));
    if (r.new_sent_ns != 0) {
      sent.samples.push_back(ms(r.revoked_ns, r.new_sent_ns));
      rtt.samples.push_back(ms(r.new_sent_ns, r.new_began_ns));
    }
    none.samples.push_back(v.no_claim_ms[i]);
  }
  Table t(metric_header());
  for (const auto* m : {&spawn, &ready, &bid, &gap, &claims, &sent, &rtt, &none}) add_row(t, *m);
  return t;
}

Table heartbeat_table(const PriorityBenchOptions& o, const std::vector<PriorityRound>& rounds) {
  const double hb = static_cast<double>(o.heartbeat.count());
  Table t({"measured span", "ok/rounds", "min hb", "p50 hb", "p95 hb", "p99 hb", "max hb", "within 2 hb", "target"});
  auto row = [&](const char* span, double (PriorityRound::*value)() const) {
    std::vector<double> samples;
    for (const auto& r : rounds) {
      if (r.ok) samples.push_back((r.*value)() / hb);
    }
    const auto within = std::count_if(samples.begin(), samples.end(), [](double x) { return x <= 2; });
    const auto s = Summary::of(samples);
    t.add({span, fmt::format("{}/{}", s.count, rounds.size()), fixed(s.min), fixed(s.p50), fixed(s.p95),
           fixed(s.p99), fixed(s.max), fmt::format("{}/{}", within, rounds.size()), "<= 2 hb"});
  };
  row("spawn -> newcomer elected", &PriorityRound::spawn_to_elected_ms);
  row("newcomer ready -> elected", &PriorityRound::ready_to_elected_ms);
  return t;
}

Table check_table(Fleet& fleet, const std::vector<PriorityRound>& rounds, const PriorityCheck& c, const Verdict& v) {
  const auto n = rounds.size();
  const auto ok = std::count_if(rounds.begin(), rounds.end(), [](const PriorityRound& r) { return r.ok; });
  const auto newcomers =
      std::count_if(rounds.begin(), rounds.end(), [](const PriorityRound& r) { return r.elected_ns != 0; });
  // Every election after the first round began is a newcomer's, or a flap.
  std::size_t elections = 0;
  const std::int64_t from = rounds.empty() ? 0 : rounds.front().spawn_ns;
  const std::int64_t to = rounds.empty() ? 0 : rounds.back().end_ns;
  for (const auto& m : fleet.members()) {
    for (const auto& e : m->log.events()) {
      if (e.kind == MemberEvent::Kind::elected && e.group == group && e.at > from && e.at <= to) ++elections;
    }
  }
  double overlap_ms = 0;
  for (const auto& o : v.overlaps) overlap_ms += static_cast<double>(o.length) / 1e6;
  const auto both = leadership_time(fleet, group, from, to);

  Table t({"check", "result", "target"});
  t.add({"rounds: the newcomer was elected first, the old term ended handed_over, the token rose",
         fmt::format("{}/{}", ok, n), "all"});
  const auto bids = std::count_if(rounds.begin(), rounds.end(), [](const PriorityRound& r) { return r.bid_seen; });
  t.add({"rounds in which a read of the bid key (every ~50 ms) found the newcomer's bid", fmt::format("{}/{}", bids, n),
         "most (the key name is right)"});
  t.add({"overlapping claims of two members (chaos checker, every member's whole output)",
         fmt::format("{} ({} ms)", v.overlaps.size(), fixed(overlap_ms, 3)), "0"});
  t.add({"fencing token regressions (chaos checker)", std::to_string(v.regressions.size()), "0"});
  t.add({"malformed or out-of-order records (chaos checker)", std::to_string(v.problems), "0"});
  t.add({"two members leading at once (elected/revoked callbacks), ms", fixed(both.several_ms, 3), "0"});
  t.add({"elections in the rounds besides the newcomers' (flaps)",
         fmt::format("{}", static_cast<long long>(elections) - static_cast<long long>(newcomers)), "0"});
  const std::string watched = fmt::format("members of priority {} (the leader's) and {} join, {:.0f} ms:",
                                          c.leader_priority, c.leader_priority - 1, ms(c.from_ns, c.to_ns));
  t.add({watched + " elections", std::to_string(c.elections), "0"});
  t.add({watched + " the leader kept its term", c.leader_kept ? "yes" : "no", "yes"});
  t.add({watched + " bid key present", fmt::format("{}/{} reads", c.bids_seen, c.bid_reads), "0"});
  return t;
}

Table round_table(const std::vector<PriorityRound>& rounds, const Verdict& v) {
  Table t({"round", "ok", "old", "new", "priority", "first_elected", "old_reason", "old_token", "new_token",
           "spawn_ns", "ready_ns", "revoked_ns", "old_ended_ns", "new_acquire_sent_ns", "new_began_ns", "elected_ns",
           "stopped", "bid_seen", "spawn_to_elected_ms", "ready_to_elected_ms", "leaderless_ms", "no_claim_ms"});
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    const auto& r = rounds[i];
    const bool e = r.elected_ns != 0;
    t.add({std::to_string(i + 1), r.ok ? "1" : "0", r.old_leader, r.newcomer, std::to_string(r.priority),
           r.first_elected, r.old_reason, std::to_string(r.old_token), std::to_string(r.new_token),
           std::to_string(r.spawn_ns), std::to_string(r.ready_ns), std::to_string(r.revoked_ns),
           std::to_string(r.old_ended_ns), std::to_string(r.new_sent_ns), std::to_string(r.new_began_ns),
           std::to_string(r.elected_ns), r.stopped, r.bid_seen ? "1" : "0", e ? fixed(r.spawn_to_elected_ms(), 3) : "",
           e ? fixed(r.ready_to_elected_ms(), 3) : "", e && r.revoked_ns != 0 ? fixed(r.leaderless_ms(), 3) : "",
           fixed(v.no_claim_ms[i], 3)});
  }
  return t;
}

void print(const std::string& title, const Table& t) {
  std::printf("\n%s\n\n%s\n%s", title.c_str(), t.text().c_str(), t.markdown().c_str());
}

}  // namespace

void run_priority(const PriorityBenchOptions& o) {
  test::RedisServer server;
  auto admin = server.admin();
  const std::string dir = o.out_dir + "/priority-fleet";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Fleet fleet(FleetConfig{o.member, server.url(), dir, group, o.ttl, o.heartbeat, o.retry, {}});
  RollingDeploy deploy(fleet, admin, o.seed);
  deploy.start(o.candidates);

  std::vector<PriorityRound> rounds;
  for (int i = 0; i < o.rounds; ++i) {
    rounds.push_back(deploy.round(o.stop_oldest));
    const auto& r = rounds.back();
    std::fprintf(stderr, "priority round %d/%d: %s -> %s (priority %d): spawn -> elected %.1f ms (%.2f hb), "
                 "leaderless %.2f ms, old leader %s%s\n",
                 i + 1, o.rounds, r.old_leader.c_str(), r.newcomer.c_str(), r.priority,
                 r.elected_ns ? r.spawn_to_elected_ms() : -1.0,
                 r.elected_ns ? r.spawn_to_elected_ms() / static_cast<double>(o.heartbeat.count()) : -1.0,
                 r.elected_ns && r.revoked_ns ? r.leaderless_ms() : -1.0,
                 r.old_reason.empty() ? "not revoked" : r.old_reason.c_str(), r.ok ? "" : " (NOT OK)");
  }
  // The bid lives one ttl, the leader reads bids every heartbeat.
  const auto window = std::max(o.ttl * 2, o.heartbeat * 6);
  std::fprintf(stderr, "priority: equal and lower priority joiners, watched %lld ms\n",
               static_cast<long long>(window.count()));
  const PriorityCheck equal = deploy.equal_priority_check(window);
  fleet.stop_all();

  const Verdict v = check(fleet, rounds);
  const Table latency = latency_table(o, rounds, v);
  const Table heartbeats = heartbeat_table(o, rounds);
  const Table checks = check_table(fleet, rounds, equal, v);
  const std::string setup =
      fmt::format("{} members at the start, each round one more of the highest priority ({}); ttl {} ms, "
                  "heartbeat {} ms, retry {} ms, no guarded work (drain 0)",
                  o.candidates, o.stop_oldest ? "then the oldest stopped" : "none stopped: the fleet grows",
                  o.ttl.count(), o.heartbeat.count(), o.retry.count());
  print("Preferred holder, rolling deploy: " + setup, latency);
  print("... the newcomer's start to its election, in heartbeats", heartbeats);
  print(fmt::format("... safety, and the equal-priority check ({} leads; {} and {} join)", equal.leader, equal.equal,
                    equal.lower),
        checks);
  for (const auto& x : v.overlaps) {
    std::printf("overlap: %s and %s from %lld for %s ms\n", x.first.c_str(), x.second.c_str(),
                static_cast<long long>(x.start), chaos::format_ms(x.length).c_str());
  }
  latency.write_csv(o.out_dir + "/priority_summary.csv");
  heartbeats.write_csv(o.out_dir + "/priority_heartbeats.csv");
  checks.write_csv(o.out_dir + "/priority_checks.csv");
  round_table(rounds, v).write_csv(o.out_dir + "/priority_rounds.csv");
  std::printf("CSV: %s/priority_summary.csv, priority_heartbeats.csv, priority_checks.csv, priority_rounds.csv\n",
              o.out_dir.c_str());
}

}  // namespace leasehold::bench
