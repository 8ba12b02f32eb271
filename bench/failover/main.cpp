// Failover latency and steady-state Redis load of a fleet of leasehold_member
// processes against a private redis-server.
//
//   failover [--candidates 3] [--rounds 50] [--ttl-ms 1000] [--heartbeat-ms 333]
//            [--retry-ms 500] [--scenarios step_down,stop,crash,load]
//            [--load-standbys 2,10] [--load-seconds 10] [--out-dir failover-results]
//            [--plot PREFIX] [--member PATH] [--seed N] [--background-groups N]
//   failover --scenarios priority [--candidates 3] [--rounds 50] [--stop-oldest 1]
//            [--ttl-ms 1000] [--heartbeat-ms 333] ... (see priority_bench.hpp)
//   failover --topology sentinel [--scenarios kill,failover,confirm_cost]
//            [--confirm-replicas 1] [--cost-replicas 0,1,2] [--cost-groups 1000]
//            [--rounds 20] [--ttl-ms 2000] ... (see sentinel_bench.hpp)
//   failover --topology cluster [--scenarios step_down,stop] [--rounds 200]
//            [--cluster-replicas 0] ... (see cluster_bench.hpp)
//
// Scenarios (each repeated --rounds times, with a random wait of up to one
// heartbeat before each round so that every phase of the renewal cycle is
// sampled):
//   step_down  stdin "step_down default" to the leader: from the instant the
//              member logged the command to another member's `elected`;
//   stop       stdin "stop" (graceful stop): from the benchmark's write;
//   crash      SIGKILL of the leader: from the kill, and from the lease's
//              expiry in Redis (PTTL read right after the kill), to another
//              member's `elected`; a fresh member replaces the dead one;
//   load       1 leader + N standbys, INFO commandstats over a window.
//   new_group  (not in the default set) every member joins a group nobody
//              has used (stdin "join <group>"), once the server's data
//              marker (on a cluster: every slot's, which each member writes
//              as it starts) is one ttl old: from the first member's join
//              to the first `elected` of that group (a new group's first
//              election on a server that has kept its data);
//   floor      (with step_down) the machine's own floor: PUBLISH -> a
//              subscriber process woken, through the same redis-server,
//              without leasehold (wake_floor.hpp), --rounds times.
//   --background-groups N: every member of step_down, stop and crash also
//              leads N groups of its own (a member joins the fleet once it
//              leads them), so the hand-over of "default" is measured while
//              its elector renews N other groups; the groups lost meanwhile
//              are reported (target 0).
//   priority   (not in the default set) a rolling deploy under preferred-
//              holder priorities: each round starts a member of a higher
//              priority than every running one, from its start to its
//              election by hand-over, then stops the oldest (--stop-oldest 0:
//              the fleet grows); the chaos checker reads every member's
//              claims; members of the leader's priority and below then join
//              and must never take over. On its own private redis-server.
// Prints tables (text and Markdown), writes CSV files and a timeline picture
// of the median crash and hand-over rounds. Targets are reported, not asserted.

#include "common/resource_usage.hpp"
#include "common/summary.hpp"
#include "common/table.hpp"
#include "failover/cluster_bench.hpp"
#include "failover/fleet.hpp"
#include "failover/wake_floor.hpp"
#include "failover/metric.hpp"
#include "failover/priority_bench.hpp"
#include "failover/scenarios.hpp"
#include "failover/sentinel_bench.hpp"
#include "failover/steady_load.hpp"
#include "failover/timeline_plot.hpp"
#include "support/redis_server.hpp"

#include <fmt/format.h>

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <random>
#include <vector>

namespace lh = leasehold;
namespace bench = leasehold::bench;
using namespace std::chrono_literals;

namespace {

struct Options {
  int candidates = 3;
  int rounds = 50;
  std::chrono::milliseconds ttl{1000};
  std::chrono::milliseconds heartbeat{0};  // 0: ttl / 3, the library's default
  std::chrono::milliseconds retry{500};
  std::set<std::string> scenarios{"step_down", "stop", "crash", "load", "floor"};
  std::vector<int> load_standbys{2, 10};
  std::chrono::seconds load_window{10};
  std::string out_dir = "failover-results";
  std::string plot;  // empty: <out_dir>/failover_timeline
  std::string member = LEASEHOLD_MEMBER_BINARY;
  unsigned seed = 1;
  bool sentinel = false;        // --topology sentinel
  bool cluster = false;         // --topology cluster
  int cluster_replicas = 0;
  bool stop_oldest = true;      // priority: keep the fleet's size
  bool scenarios_given = false;
  std::vector<int> confirm_replicas{1}, cost_replicas{0, 1, 2};
  int cost_groups = 1000;
  int background_groups = 0;  // each member also leads this many groups of its own
};

std::vector<int> numbers(const std::vector<std::string>& list, int lo, int hi) {
  std::vector<int> out;
  for (const auto& s : list) out.push_back(std::clamp(std::stoi(s), lo, hi));
  return out;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t comma; (comma = s.find(',', start)) != std::string::npos; start = comma + 1) {
    out.push_back(s.substr(start, comma - start));
  }
  out.push_back(s.substr(start));
  return out;
}

constexpr const char* usage =
    "failover [--candidates 3] [--rounds 50] [--ttl-ms 1000] [--heartbeat-ms 333] [--retry-ms 500]\n"
    "         [--scenarios step_down,stop,crash,load,floor] [--background-groups N] [--load-standbys 2,10]\n"
    "         [--load-seconds 10] [--out-dir failover-results] [--plot PREFIX] [--member PATH] [--seed N]\n"
    "  more scenarios on one server: new_group, priority [--stop-oldest 1]\n"
    "  --topology sentinel [--scenarios kill,failover,confirm_cost] [--confirm-replicas 1]\n"
    "                      [--cost-replicas 0,1,2] [--cost-groups 1000]\n"
    "  --topology cluster [--scenarios step_down,stop,new_group] [--cluster-replicas 0]\n"
    "(bench/failover/main.cpp says what each scenario measures)\n";

// Each topology's scenarios (on Sentinel also the default set, on Cluster
// without new_group): a misspelt one would otherwise run nothing.
const std::set<std::string> sentinel_scenarios{"kill", "failover", "confirm_cost"};
const std::set<std::string> cluster_scenarios{"step_down", "stop", "new_group"};
const std::set<std::string> cluster_default{"step_down", "stop"};
const std::set<std::string> single_scenarios{"step_down", "stop", "crash", "load", "floor", "new_group", "priority"};

void check_scenarios(const Options& o) {
  const std::set<std::string>& known = o.sentinel ? sentinel_scenarios : o.cluster ? cluster_scenarios : single_scenarios;
  for (const auto& name : o.scenarios) {
    if (known.count(name)) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw std::invalid_argument(fmt::format("unknown scenario \"{}\" for this topology (known: {})", name, list));
  }
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(usage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
    const std::string value = argv[i + 1];
    if (flag == "--candidates") o.candidates = std::clamp(std::stoi(value), 2, 50);
    else if (flag == "--rounds") o.rounds = std::clamp(std::stoi(value), 1, 10000);
    else if (flag == "--ttl-ms") o.ttl = std::chrono::milliseconds(std::stoi(value));
    else if (flag == "--heartbeat-ms") o.heartbeat = std::chrono::milliseconds(std::stoi(value));
    else if (flag == "--retry-ms") o.retry = std::chrono::milliseconds(std::stoi(value));
    else if (flag == "--scenarios") {
      o.scenarios.clear();
      for (const auto& s : split(value)) o.scenarios.insert(s);
      o.scenarios_given = true;
    } else if (flag == "--load-standbys") o.load_standbys = numbers(split(value), 1, 100);
    else if (flag == "--topology") {
      if (value != "sentinel" && value != "single" && value != "cluster") {
        throw std::invalid_argument("--topology is single, sentinel or cluster");
      }
      o.sentinel = value == "sentinel";
      o.cluster = value == "cluster";
    } else if (flag == "--confirm-replicas") o.confirm_replicas = numbers(split(value), 0, 2);
    else if (flag == "--cost-replicas") o.cost_replicas = numbers(split(value), 0, 2);
    else if (flag == "--cluster-replicas") o.cluster_replicas = std::clamp(std::stoi(value), 0, 2);
    else if (flag == "--cost-groups") o.cost_groups = std::clamp(std::stoi(value), 1, 100000);
    else if (flag == "--background-groups") o.background_groups = std::clamp(std::stoi(value), 0, 100000);
    else if (flag == "--load-seconds") o.load_window = std::chrono::seconds(std::clamp(std::stoi(value), 1, 600));
    else if (flag == "--out-dir") o.out_dir = value;
    else if (flag == "--plot") o.plot = value;
    else if (flag == "--member") o.member = value;
    else if (flag == "--seed") o.seed = static_cast<unsigned>(std::stoul(value));
    else if (flag == "--stop-oldest") o.stop_oldest = value != "0";
    else throw std::invalid_argument("unknown flag " + flag + " (--help lists them)");
  }
  if (o.heartbeat.count() == 0) o.heartbeat = o.ttl / 3;
  if (o.sentinel && !o.scenarios_given) o.scenarios = sentinel_scenarios;
  if (o.cluster && !o.scenarios_given) o.scenarios = cluster_default;
  if (o.plot.empty()) o.plot = o.out_dir + "/failover_timeline";
  check_scenarios(o);
  return o;
}

double ms_between(std::int64_t from_ns, std::int64_t to_ns) { return static_cast<double>(to_ns - from_ns) / 1e6; }
double ttl_of(const Options& o) { return static_cast<double>(o.ttl.count()); }

// The round whose value is the median of `value` over the ok rounds.
template <typename Round>
const Round* median_round(const std::vector<Round>& rounds, const std::function<double(const Round&)>& value) {
  std::vector<const Round*> ok;
  for (const auto& r : rounds) {
    if (r.ok) ok.push_back(&r);
  }
  if (ok.empty()) return nullptr;
  std::sort(ok.begin(), ok.end(), [&](const Round* a, const Round* b) { return value(*a) < value(*b); });
  return ok[ok.size() / 2];
}

std::vector<bench::TimelinePanel> timeline(const bench::CrashRound& c, const bench::HandOverRound& h,
                                           const Options& o) {
  using P = bench::TimelinePanel;
  const std::string leader_c = "#1f77b4", redis_c = "#d62728", new_c = "#2ca02c", event_c = "#333333";
  const auto rel = [](std::int64_t at, std::int64_t origin) { return ms_between(origin, at); };
  std::vector<P> panels;

  // A: the whole crash, relative to the SIGKILL.
  P a;
  a.title = fmt::format("Crash failover (SIGKILL of the leader {}; ttl {} ms, heartbeat {} ms), median round",
                        c.old_leader, o.ttl.count(), o.heartbeat.count());
  a.xlabel = "ms after SIGKILL";
  a.lanes = {"old leader " + c.old_leader, "lease key in Redis", "standby " + c.new_leader};
  // From one ttl before the kill (or the term's start) to just after the election.
  const double term_start = rel(c.term_sent_ns, c.kill_ns);
  a.x_min = std::max(-ttl_of(o), term_start - 40);
  a.x_max = rel(c.elected_ns, c.kill_ns) + 0.08 * (rel(c.elected_ns, c.kill_ns) - a.x_min);
  a.bars.push_back({0, std::max(a.x_min, term_start), 0, leader_c, ""});
  a.bars.push_back({1, std::max(a.x_min, term_start), rel(c.expiry_ns, c.kill_ns), redis_c, "held by " + c.old_leader});
  a.bars.push_back({2, rel(c.elected_ns, c.kill_ns), a.x_max, new_c, ""});
  if (term_start > a.x_min) a.marks.push_back({0, term_start, "acquired", event_c, 0});
  for (std::size_t i = 0; i < c.renew_sent_ns.size(); ++i) {
    const double at = rel(c.renew_sent_ns[i], c.kill_ns);
    if (at > a.x_min) a.marks.push_back({0, at, "renewal sent", event_c, 0});
  }
  a.marks.push_back({0, 0, "SIGKILL", event_c, 0});
  a.marks.push_back({1, rel(c.expiry_ns, c.kill_ns), fmt::format("lease expires +{:.0f} ms", rel(c.expiry_ns, c.kill_ns)), redis_c, 0});
  a.marks.push_back({2, rel(c.elected_ns, c.kill_ns), fmt::format("elected +{:.0f} ms", c.kill_to_elected_ms()), new_c, 0});
  panels.push_back(a);

  // B: zoom on the expiry, relative to it.
  P b;
  b.title = fmt::format("... zoomed on the expiry: new leader elected {:.2f} ms after the lease expired in Redis",
                        c.expiry_to_elected_ms());
  b.xlabel = "ms after the lease expired in Redis (error bar: uncertainty of the expiry instant)";
  b.lanes = {"lease key in Redis", "standby " + c.new_leader};
  const double e_new_sent = rel(c.new_sent_ns, c.expiry_ns), e_elected = rel(c.elected_ns, c.expiry_ns);
  b.x_min = std::min(-1.5, e_new_sent - 0.5);
  b.x_max = std::max(1.5, e_elected + 0.5);
  b.bars.push_back({0, b.x_min, 0, redis_c, ""});
  b.bars.push_back({1, rel(c.new_began_ns, c.expiry_ns), b.x_max, new_c, ""});
  b.marks.push_back({0, 0, "expiry", redis_c, c.expiry_error_ms});
  b.marks.push_back({1, e_new_sent, fmt::format("acquire sent {:+.2f}", e_new_sent), event_c, 0});
  b.marks.push_back({1, rel(c.new_began_ns, c.expiry_ns), fmt::format("reply: leads {:+.2f}", rel(c.new_began_ns, c.expiry_ns)), new_c, 0});
  b.marks.push_back({1, e_elected, fmt::format("elected callback {:+.2f}", e_elected), new_c, 0});
  panels.push_back(b);

  // C: graceful hand-over, relative to the step_down command.
  P g;
  g.title = fmt::format("Graceful hand-over (step_down), median round: {:.2f} ms from command to new leader",
                        h.latency_ms());
  g.xlabel = "ms after the leader received \"step_down\"";
  g.lanes = {"old leader " + h.old_leader, "standby " + h.new_leader};
  const double g_end = rel(h.elected_ns, h.command_ns);
  g.x_min = -0.25 * std::max(1.0, g_end);
  g.x_max = std::max(1.0, g_end) * 1.3;
  g.bars.push_back({0, g.x_min, rel(h.old_ended_ns, h.command_ns), leader_c, ""});
  g.bars.push_back({1, rel(h.new_began_ns, h.command_ns), g.x_max, new_c, ""});
  g.marks.push_back({0, 0, "step_down received", event_c, 0});
  g.marks.push_back({0, rel(h.old_ended_ns, h.command_ns), fmt::format("claim withdrawn {:+.2f}", rel(h.old_ended_ns, h.command_ns)), event_c, 0});
  g.marks.push_back({1, rel(h.new_sent_ns, h.command_ns), fmt::format("release notice -> acquire sent {:+.2f}", rel(h.new_sent_ns, h.command_ns)), event_c, 0});
  g.marks.push_back({1, rel(h.new_began_ns, h.command_ns), fmt::format("reply: leads {:+.2f}", rel(h.new_began_ns, h.command_ns)), new_c, 0});
  g.marks.push_back({1, g_end, fmt::format("elected callback {:+.2f}", g_end), new_c, 0});
  panels.push_back(g);
  return panels;
}

}  // namespace

int main(int argc, char** argv) try {
  ::signal(SIGPIPE, SIG_IGN);  // a member that died must not take the benchmark with it
  const Options o = parse(argc, argv);
  std::filesystem::create_directories(o.out_dir);
  std::printf("failover benchmark: %d candidates, %d rounds, ttl %lld ms, heartbeat %lld ms, retry %lld ms, "
              "%d background groups per member\n"
              "load average at start: %s\n",
              o.candidates, o.rounds, static_cast<long long>(o.ttl.count()),
              static_cast<long long>(o.heartbeat.count()), static_cast<long long>(o.retry.count()), o.background_groups,
              bench::load_average().c_str());
  if (o.sentinel) {
    bench::run_sentinel(bench::SentinelBenchOptions{o.member, o.out_dir, o.candidates, o.rounds, o.ttl, o.heartbeat,
                                                    o.retry, o.scenarios, o.confirm_replicas, o.cost_replicas,
                                                    o.cost_groups, o.load_window, o.seed});
    std::printf("load average at end: %s\n", bench::load_average().c_str());
    return 0;
  }
  if (o.cluster) {
    bench::run_cluster(bench::ClusterBenchOptions{o.member, o.out_dir, o.candidates, o.rounds, o.ttl, o.heartbeat,
                                                  o.retry, o.scenarios, o.cluster_replicas, o.seed});
    std::printf("load average at end: %s\n", bench::load_average().c_str());
    return 0;
  }
  if (o.scenarios.count("priority")) {
    bench::run_priority(bench::PriorityBenchOptions{o.member, o.out_dir, o.candidates, o.rounds, o.ttl, o.heartbeat,
                                                    o.retry, o.stop_oldest, o.seed});
  }

  std::vector<bench::HandOverRound> step_downs, stops, new_groups;
  std::vector<bench::CrashRound> crashes;
  int background_lost = 0;  // background groups lost while the rounds ran (before the final stop)
  std::vector<double> floor_ms;
  const bool any_failover = o.scenarios.count("step_down") || o.scenarios.count("stop") || o.scenarios.count("crash") ||
                            o.scenarios.count("new_group");
  if (any_failover) {
    lh::test::RedisServer server;
    auto admin = server.admin();
    const std::string dir = o.out_dir + "/fleet";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    bench::Fleet fleet(
        bench::FleetConfig{o.member, server.url(), dir, "default", o.ttl, o.heartbeat, o.retry, {}, o.background_groups});
    bench::Scenarios scenarios(fleet, admin, o.seed);
    scenarios.start(o.candidates);
    auto repeat = [&](const char* name, auto round, auto& into) {
      if (o.scenarios.count(name)) bench::run_rounds(name, o.rounds, round, into);
    };
    repeat("step_down", [&] { return scenarios.step_down_round(); }, step_downs);
    repeat("stop", [&] { return scenarios.stop_round(); }, stops);
    repeat("crash", [&] { return scenarios.crash_round(); }, crashes);
    repeat("new_group", [&] { return scenarios.new_group_round(); }, new_groups);
    for (auto& m : fleet.members()) {
      if (m->alive) m->log.poll();
      for (const auto& e : m->log.events()) {
        if (e.kind == bench::MemberEvent::Kind::background_revoked) ++background_lost;
      }
    }
    if (o.scenarios.count("floor") && o.scenarios.count("step_down")) {
      std::mt19937 rng(o.seed);  // with the fleet still running, as in the rounds
      floor_ms = bench::measure_wake_floor(server.plain_port(), o.rounds, rng);
    }
    fleet.stop_all();
  }

  // ---- latency table ----
  const double ttl_ms = static_cast<double>(o.ttl.count());
  std::vector<bench::Metric> metrics;
  auto hand_over = [&](const char* scenario, const std::vector<bench::HandOverRound>& rounds, const std::string& target,
                       const char* from = "command", const char* to = "elected (other process)") {
    if (rounds.empty()) return;
    bench::Metric m{scenario, fmt::format("{} -> {}", from, to), target, {}, static_cast<int>(rounds.size())};
    bench::Metric ended{scenario, fmt::format("{} -> old claim ended", from), "", {}, m.attempted};
    bench::Metric sent{scenario, fmt::format("{} -> winning acquire sent", from), "", {}, m.attempted};
    for (const auto& r : rounds) {
      if (!r.ok) continue;
      m.samples.push_back(r.latency_ms());
      if (r.old_ended_ns) ended.samples.push_back(ms_between(r.command_ns, r.old_ended_ns));
      if (r.new_sent_ns) sent.samples.push_back(ms_between(r.command_ns, r.new_sent_ns));
    }
    metrics.push_back(m);
    if (!ended.samples.empty()) metrics.push_back(ended);  // none where there was no old claim (new_group)
    metrics.push_back(sent);
  };
  hand_over("step_down", step_downs, "p99 <= 5 ms");
  if (!floor_ms.empty()) {
    metrics.push_back(bench::Metric{"floor", "PUBLISH -> subscriber woken (no leasehold)", "(the machine's floor)",
                                    floor_ms, static_cast<int>(floor_ms.size())});
  }
  hand_over("stop", stops, "");
  hand_over("new_group", new_groups, "one round trip", "first join", "elected");
  if (!crashes.empty()) {
    const int n = static_cast<int>(crashes.size());
    bench::Metric kill{"crash", "SIGKILL -> elected", fmt::format("<= ttl ({} ms) + a few ms", o.ttl.count()), {}, n};
    bench::Metric expiry{"crash", "lease expiry (PTTL) -> elected", "p99 <= 5 ms", {}, n};
    bench::Metric bound{"crash", "last confirmed renewal sent + ttl -> elected", "(upper bound of the row above)", {}, n};
    bench::Metric acquire{"crash", "lease expiry (PTTL) -> winning acquire sent", "", {}, n};
    bench::Metric left{"crash", "SIGKILL -> lease expiry (lease left)", "in [ttl - heartbeat, ttl]", {}, n};
    for (const auto& r : crashes) {
      if (!r.ok) continue;
      kill.samples.push_back(r.kill_to_elected_ms());
      expiry.samples.push_back(r.expiry_to_elected_ms());
      bound.samples.push_back(r.audit_bound_ms(o.ttl));
      if (r.new_sent_ns) acquire.samples.push_back(ms_between(r.expiry_ns, r.new_sent_ns));
      left.samples.push_back(ms_between(r.kill_ns, r.expiry_ns));
    }
    metrics.insert(metrics.end(), {kill, expiry, bound, acquire, left});
  }
  bench::Table latency(bench::metric_header());
  for (const auto& m : metrics) bench::add_row(latency, m);
  if (!metrics.empty()) {
    std::printf("\n%s\n%s", latency.text().c_str(), latency.markdown().c_str());
    latency.write_csv(o.out_dir + "/failover_summary.csv");
  }

  // ---- every round, for scripts ----
  bench::Table rounds({"scenario", "round", "ok", "old", "new", "command_or_kill_ns", "expiry_ns", "expiry_error_ms",
                       "last_confirm_sent_ns", "old_ended_ns", "new_acquire_sent_ns", "new_began_ns", "elected_ns",
                       "latency_ms", "expiry_to_elected_ms"});
  auto add_hand_over = [&](const char* name, const std::vector<bench::HandOverRound>& rs) {
    for (std::size_t i = 0; i < rs.size(); ++i) {
      const auto& r = rs[i];
      rounds.add({name, std::to_string(i + 1), r.ok ? "1" : "0", r.old_leader, r.new_leader,
                  std::to_string(r.command_ns), "", "", "", std::to_string(r.old_ended_ns),
                  std::to_string(r.new_sent_ns), std::to_string(r.new_began_ns), std::to_string(r.elected_ns),
                  r.ok ? bench::fixed(r.latency_ms(), 3) : "", ""});
    }
  };
  add_hand_over("step_down", step_downs);
  add_hand_over("stop", stops);
  add_hand_over("new_group", new_groups);
  for (std::size_t i = 0; i < crashes.size(); ++i) {
    const auto& r = crashes[i];
    rounds.add({"crash", std::to_string(i + 1), r.ok ? "1" : "0", r.old_leader, r.new_leader,
                std::to_string(r.kill_ns), std::to_string(r.expiry_ns), bench::fixed(r.expiry_error_ms, 3),
                std::to_string(r.last_confirm_sent_ns), "", std::to_string(r.new_sent_ns),
                std::to_string(r.new_began_ns), std::to_string(r.elected_ns),
                r.ok ? bench::fixed(r.kill_to_elected_ms(), 3) : "", r.ok ? bench::fixed(r.expiry_to_elected_ms(), 3) : ""});
  }
  if (any_failover) rounds.write_csv(o.out_dir + "/failover_rounds.csv");

  // ---- steady-state load ----
  if (o.scenarios.count("load")) {
    const double hb_s = static_cast<double>(o.heartbeat.count()) / 1000;
    const double standby_target = 1.0 / ((ttl_ms - static_cast<double>(o.heartbeat.count())) / 1000);
    bench::Table load({"standbys", "window s", "lease scripts/s (group)", "leader renewals/s", "target 1/heartbeat",
                       "standby acquires/s (all)", "per standby /s", "target <= 1/(ttl-hb)", "renewals/s (audit)",
                       "PING/s (per-connection)", "other/s", "sent/s (all members)",
                       "Redis commands/s, in scripts too", "leaders"});
    for (const int n : o.load_standbys) {
      std::fprintf(stderr, "load: 1 leader + %d standbys for %lld s\n", n, static_cast<long long>(o.load_window.count()));
      const auto r = bench::measure_steady_load(bench::LoadConfig{o.member, o.out_dir, n, o.ttl, o.heartbeat, o.retry, o.load_window});
      const double per_standby = r.standby_acquires_per_s / n;
      // A window holds at most one look more than window / period: the
      // count's own resolution, not a miss.
      const bool standby_met = per_standby <= standby_target + 1.0 / r.seconds;
      load.add({std::to_string(n), bench::fixed(r.seconds, 1), bench::fixed(r.evalsha_per_s), bench::fixed(r.renewals_per_s),
                bench::fixed(1 / hb_s), bench::fixed(r.standby_acquires_per_s), bench::fixed(per_standby),
                fmt::format("{:.2f} {}", standby_target, standby_met ? "met" : "MISSED"),
                bench::fixed(r.audit_renewals_per_s), bench::fixed(r.ping_per_s), bench::fixed(r.other_per_s),
                bench::fixed(r.client_commands_per_s), bench::fixed(r.redis_commands_per_s),
                std::to_string(r.leaders_seen)});
    }
    std::printf("\nsteady-state Redis load of one group (INFO commandstats deltas)\n\n%s\n%s", load.text().c_str(),
                load.markdown().c_str());
    load.write_csv(o.out_dir + "/failover_load.csv");
  }

  // ---- the picture ----
  const auto* crash = median_round<bench::CrashRound>(crashes, [](const auto& r) { return r.expiry_to_elected_ms(); });
  const auto* graceful = median_round<bench::HandOverRound>(step_downs, [](const auto& r) { return r.latency_ms(); });
  if (crash != nullptr && graceful != nullptr) {
    if (bench::plot_timeline(timeline(*crash, *graceful, o), o.plot)) {
      std::printf("\ntimeline: %s.svg, %s.png\n", o.plot.c_str(), o.plot.c_str());
    }
  }
  if (o.background_groups > 0 && any_failover) {
    std::printf("\nbackground: every member also led %d groups of its own; %d of them were lost during the rounds "
                "(target 0)\n",
                o.background_groups, background_lost);
  }
  std::printf("load average at end: %s\n", bench::load_average().c_str());
  if (any_failover || o.scenarios.count("load")) {
    std::printf("CSV: %s/failover_summary.csv, failover_rounds.csv, failover_load.csv\n", o.out_dir.c_str());
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "failover: %s\n", e.what());
  return 1;
}
