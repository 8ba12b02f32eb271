// leasehold_chaos: a fleet of leasehold_member processes under a random
// fault schedule, against one harness-started redis-server (each member
// through its own FaultProxy) or a Sentinel deployment (deployment.hpp). At
// the end it stops everything, checks every claim interval and term the
// members recorded, prints a table and exits non-zero on any overlap, fencing
// token regression, late recovery, unexplained leaderless gap,
// elected/revoked disorder, crash or hang. See docs/reliability.md.
//
//   leasehold_chaos [--seed N] [--duration S] [--instances N] [--groups N]
//                   [--ttl MS] [--retry MS] [--margin MS]
//                   [--scenario mixed|delayed-replies] [--faults kind,kind,...]
//                   (kinds: tests/chaos/fault.hpp)
//                   [--topology single|sentinel|cluster]
//                   [--confirm-replicas N] [--confirm-timeout MS]
//                   [--member PATH] [--work-dir DIR] [--keep]

#include "chaos/checker.hpp"
#include "chaos/deployment.hpp"
#include "chaos/fault.hpp"
#include "chaos/fleet.hpp"
#include "chaos/report.hpp"
#include "chaos/schedule.hpp"

#include "support/admin_client.hpp"

#include <leasehold/impl/protocol/key_slot.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace chaos = leasehold::chaos;
namespace test = leasehold::test;
using chaos::milliseconds;
using chaos::Nanos;

namespace {

volatile std::sig_atomic_t interrupted = 0;

struct Args {
  std::uint64_t seed = std::random_device{}() ^ (std::uint64_t{std::random_device{}()} << 32);
  int duration_s = 60;
  std::size_t instances = 5;
  std::size_t groups = 20;
  chaos::Timing timing;
  chaos::Scenario scenario = chaos::Scenario::mixed;
  std::vector<chaos::FaultKind> faults;  // empty: the topology's default set
  chaos::Topology topology = chaos::Topology::single;
  int confirm_replicas = 0;
  milliseconds confirm_timeout{100};
  std::string member = LEASEHOLD_MEMBER_BINARY;
  std::string work_dir;
  bool keep = false;
};

std::uint64_t number(std::string_view flag, std::string_view value, std::uint64_t min) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc{} || p != value.data() + value.size() || v < min) {
    throw std::invalid_argument(fmt::format("{} needs an integer >= {}, got \"{}\"", flag, min, value));
  }
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--keep") {
      a.keep = true;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(fmt::format("{} needs a value", flag));
    const std::string_view value = argv[++i];
    if (flag == "--seed") a.seed = number(flag, value, 0);
    else if (flag == "--duration") a.duration_s = static_cast<int>(number(flag, value, 1));
    else if (flag == "--instances") a.instances = number(flag, value, 2);
    else if (flag == "--groups") a.groups = number(flag, value, 1);
    else if (flag == "--ttl") a.timing.ttl = milliseconds(number(flag, value, 100));
    else if (flag == "--retry") a.timing.retry = milliseconds(number(flag, value, 1));
    else if (flag == "--margin") a.timing.margin = milliseconds(number(flag, value, 0));
    else if (flag == "--member") a.member = value;
    else if (flag == "--work-dir") a.work_dir = value;
    else if (flag == "--confirm-replicas") a.confirm_replicas = static_cast<int>(number(flag, value, 0));
    else if (flag == "--confirm-timeout") a.confirm_timeout = milliseconds(number(flag, value, 1));
    else if (flag == "--topology") {
      if (value == "single") a.topology = chaos::Topology::single;
      else if (value == "sentinel") a.topology = chaos::Topology::sentinel;
      else if (value == "cluster") a.topology = chaos::Topology::cluster;
      else throw std::invalid_argument(fmt::format("unknown topology \"{}\" (single, sentinel, cluster)", value));
    }
    else if (flag == "--scenario") {
      if (value == "mixed") a.scenario = chaos::Scenario::mixed;
      else if (value == "delayed-replies") a.scenario = chaos::Scenario::delayed_replies;
      else throw std::invalid_argument(fmt::format("unknown scenario \"{}\" (mixed, delayed-replies)", value));
    } else if (flag == "--faults") {
      a.faults.clear();
      for (std::string_view rest = value; !rest.empty();) {
        const auto comma = rest.find(',');
        const auto name = rest.substr(0, comma);
        const auto kind = chaos::fault_from_string(name);
        if (!kind) throw std::invalid_argument(fmt::format("unknown fault kind \"{}\"", name));
        a.faults.push_back(*kind);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      }
    } else {
      throw std::invalid_argument(fmt::format("unknown flag {}", flag));
    }
  }
  // A cluster master learns of its replacement from the next gossip and
  // turns into its replica at once; there are no sentinels to wait for.
  if (a.topology == chaos::Topology::cluster) a.timing.convert = milliseconds(2000);
  if (a.faults.empty()) a.faults = chaos::default_faults(a.topology);
  for (auto kind : a.faults) {
    if (const auto why = chaos::unsupported(a.topology, kind); !why.empty()) throw std::invalid_argument(why);
  }
  return a;
}

std::string replay_command(const Args& a) {
  std::string faults;
  for (auto k : a.faults) faults += (faults.empty() ? "" : ",") + std::string(chaos::to_string(k));
  return fmt::format("leasehold_chaos --seed {} --duration {} --instances {} --groups {} --ttl {} --retry {} "
                     "--margin {} --scenario {} --faults {} --topology {} --confirm-replicas {} --confirm-timeout {}",
                     a.seed, a.duration_s, a.instances, a.groups, a.timing.ttl.count(), a.timing.retry.count(),
                     a.timing.margin.count(),
                     a.scenario == chaos::Scenario::mixed ? "mixed" : "delayed-replies", faults,
                     chaos::to_string(a.topology), a.confirm_replicas, a.confirm_timeout.count());
}

// "default" is the first of `total`. On a cluster the others come four to a
// slot, so that a leader's groups of one slot renew together (one script,
// early renewals) under the faults too.
std::vector<std::string> group_names(std::size_t total, chaos::Topology topology) {
  std::vector<std::string> out;
  if (topology != chaos::Topology::cluster) {
    for (std::size_t g = 1; g < total; ++g) out.push_back(fmt::format("g{}", g));
    return out;
  }
  std::map<std::uint16_t, std::vector<std::string>> by_slot;
  for (std::size_t i = 0; out.size() + 1 < total; ++i) {
    std::string name = fmt::format("g{}", i);
    auto& same = by_slot[leasehold::cluster::detail::key_slot("{" + name + "}")];  // the slot of <prefix>{name}
    same.push_back(std::move(name));
    if (same.size() < 4) continue;
    for (auto& n : same) {
      if (out.size() + 1 < total) out.push_back(std::move(n));
    }
    same.clear();
  }
  return out;
}

// As MemberFleet::all_groups(): "default" and the others.
std::vector<std::string> every_group(std::size_t total, chaos::Topology topology) {
  auto out = group_names(total, topology);
  out.insert(out.begin(), "default");
  return out;
}

Nanos ns(milliseconds ms) { return ms.count() * chaos::kNanosPerMs; }

// Every term of every group, and how many went to another instance than
// the group's term before.
std::pair<std::size_t, std::size_t> leader_changes(const std::vector<chaos::RunLog>& runs) {
  std::map<std::string, std::vector<std::pair<Nanos, std::string>>> by_group;
  for (const auto& run : runs) {
    for (const auto& [group, list] : run.terms) {
      for (const auto& t : list) by_group[group].emplace_back(t.at, run.instance);
    }
  }
  std::size_t terms = 0, changes = 0;
  for (auto& [group, list] : by_group) {
    std::sort(list.begin(), list.end());
    terms += list.size();
    for (std::size_t i = 1; i < list.size(); ++i) changes += list[i].second != list[i - 1].second ? 1 : 0;
  }
  return {terms, changes};
}

std::string work_dir(const std::string& requested) {
  if (requested.empty()) return chaos::make_temp_dir("leasehold-chaos-");
  std::filesystem::create_directories(requested);
  return requested;
}

class ChaosRun {
 public:
  explicit ChaosRun(Args args)
      : args_(std::move(args)),
        dir_(work_dir(args_.work_dir)),
        deployment_(chaos::make_deployment({args_.topology, args_.instances, args_.timing, every_group(args_.groups, args_.topology)})),
        fleet_({args_.member, dir_, group_names(args_.groups, args_.topology), args_.timing.ttl, args_.timing.retry,
                args_.confirm_replicas, args_.confirm_timeout}),
        groups_(fleet_.all_groups()),
        planner_(args_.seed, args_.scenario, args_.timing, args_.faults, args_.instances) {
    for (std::size_t i = 0; i < args_.instances; ++i) fleet_.add(deployment_->member_url(i));
  }

  int run() {
    const auto began = std::chrono::steady_clock::now();
    const auto holders = [this](const std::vector<std::string>& groups) { return deployment_->holders(groups); };
    if (!fleet_.wait_until_led(holders, std::chrono::seconds(15))) {
      fmt::print("FAIL: not every group had a leader within 15 s of the start\n");
      return 1;
    }
    from_ = chaos::now_ns();
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(args_.duration_s);
    while (std::chrono::steady_clock::now() < end && interrupted == 0) {
      chaos::Batch batch = planner_.next();
      run_batch(batch);
    }
    if (interrupted != 0) fmt::print("interrupted: checking what ran so far\n");
    const int status = verdict();
    // A directory the user named is theirs; ours is kept only to be looked at.
    const bool remove = status == 0 && !args_.keep && args_.work_dir.empty();
    fmt::print("wall time {:.1f} s; member output in {}{}\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(), dir_,
               remove ? " (removed)" : "");
    if (remove) std::filesystem::remove_all(dir_);
    return status;
  }

 private:
  struct Times {
    Nanos started = 0;
    Nanos healed = 0;
  };

  // Instance faults hit the holder of a random group (a leader, mostly), each
  // a different instance; if Redis cannot say, a slot chosen by the seed.
  void resolve_targets(chaos::Batch& batch) {
    const std::vector<std::string> h = deployment_->holders(groups_);
    std::set<std::size_t> used;
    for (auto& f : batch.faults) {
      if (!chaos::hits_instance(f.kind)) {
        f.target = "redis";
        continue;
      }
      if (batch.kill_the_delayed && f.kind == chaos::FaultKind::kill) {
        f.slot = batch.faults.front().slot;
      } else {
        const std::size_t g = f.pick % groups_.size();
        f.group = groups_[g];
        std::optional<std::size_t> slot = h.empty() ? std::nullopt : fleet_.slot_of(h[g]);
        if (!slot || used.count(*slot) != 0) {
          slot = (f.pick / groups_.size()) % fleet_.size();
          while (used.count(*slot) != 0 && used.size() < fleet_.size()) slot = (*slot + 1) % fleet_.size();
        }
        f.slot = *slot;
      }
      used.insert(f.slot);
      f.target = fleet_.id(f.slot);
    }
  }

  // Instance faults are the fleet's, the rest the deployment's. A fault
  // that cannot be injected or healed is a runner error; the run goes on.
  void inject(chaos::Fault& f) {
    using K = chaos::FaultKind;
    try {
      switch (f.kind) {
        case K::kill:
          fleet_.kill(f.slot);
          deployment_->reset_line(f.slot);
          fleet_.respawn(f.slot, f.new_id);
          break;
        case K::freeze: fleet_.freeze(f.slot); break;
        case K::step_down: fleet_.step_down(f.slot, f.group); break;
        default: deployment_->inject(f); break;
      }
    } catch (const std::exception& e) {
      runner_errors_.push_back(fmt::format("{}: {}", chaos::to_string(f.kind), e.what()));
    }
  }

  void heal(const chaos::Fault& f) {
    try {
      if (f.kind == chaos::FaultKind::freeze) fleet_.thaw(f.slot);
      else deployment_->heal(f);
    } catch (const std::exception& e) {
      runner_errors_.push_back(fmt::format("healing {}: {}", chaos::to_string(f.kind), e.what()));
    }
  }

  void run_batch(chaos::Batch& batch) {
    try {
      deployment_->settle();
    } catch (const std::exception& e) {
      const std::string what = e.what();
      fmt::print("{}\n", what);
      runner_errors_.push_back("before a batch: " + what.substr(0, what.find('\n')));
    }
    resolve_targets(batch);
    struct Action {
      milliseconds at;
      std::size_t fault;
      bool heal;
    };
    std::vector<Action> actions;
    for (std::size_t i = 0; i < batch.faults.size(); ++i) {
      const auto& f = batch.faults[i];
      actions.push_back({f.offset, i, false});
      if (f.duration.count() > 0) actions.push_back({f.offset + f.duration, i, true});
    }
    std::stable_sort(actions.begin(), actions.end(), [](const Action& x, const Action& y) { return x.at < y.at; });

    std::vector<Times> times(batch.faults.size());
    const Nanos start = chaos::now_ns();
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& a : actions) {
      fleet_.wait(std::chrono::duration_cast<milliseconds>(t0 + a.at - std::chrono::steady_clock::now()));
      auto& f = batch.faults[a.fault];
      if (a.heal) {
        heal(f);
        times[a.fault].healed = chaos::now_ns();
      } else {
        times[a.fault].started = chaos::now_ns();
        inject(f);
        if (f.duration.count() == 0) times[a.fault].healed = chaos::now_ns();
        report_.injected(f.kind);
      }
    }

    // One disruption per batch. A lone fault has its own bound; several
    // together get the latest of their deadlines (or the last heal) plus one
    // ttl, because one can strand a lease that only expiry frees (a paused
    // server executing the queued acquire of an instance another fault
    // killed, say).
    chaos::Disruption d{"", start, 0, 0};
    std::string formula;
    Nanos deadline = 0, healed = 0;
    for (std::size_t i = 0; i < batch.faults.size(); ++i) {
      const auto b = chaos::bound_of(batch.faults[i], args_.timing);
      const Nanos reference = b.from_start ? times[i].started : times[i].healed;
      if (reference + ns(b.value) > deadline) {
        deadline = reference + ns(b.value);
        d.reference = reference;
        formula = b.formula;
      }
      healed = std::max(healed, times[i].healed);
      d.kind += (d.kind.empty() ? "" : "+") + std::string(chaos::to_string(batch.faults[i].kind));
    }
    if (batch.faults.size() > 1) {
      deadline = std::max(deadline, healed) + ns(args_.timing.ttl);
      d.reference = healed;
    }
    d.bound = deadline - d.reference;
    disruptions_.push_back(d);
    formulas_.push_back(formula);

    std::string what;
    for (const auto& f : batch.faults) what += (what.empty() ? "" : " + ") + chaos::describe(f);
    fmt::print("[{:7.1f} s] #{:<3} {}; bound {} ms\n", static_cast<double>(start - from_) / 1e9,
               disruptions_.size(), what, chaos::format_ms(d.bound));
    std::fflush(stdout);

    const Nanos rest = deadline - chaos::now_ns();
    fleet_.wait(milliseconds(std::max<Nanos>(rest / chaos::kNanosPerMs, 0)) + batch.quiet);
  }

  int verdict() {
    const Nanos to = chaos::now_ns();
    // stop() waits for releases at most stop_timeout (2 s by default).
    const auto stop_problems = fleet_.stop_all(std::chrono::seconds(5));
    const auto runs = fleet_.load_runs();
    const auto overlaps = chaos::find_overlaps(runs);
    const auto& losses = deployment_->data_losses();
    const auto regressions = chaos::find_token_regressions(runs, losses);
    const auto gaps = chaos::leaderless_gaps(runs, groups_, from_, to);
    const auto live = chaos::check_liveness(gaps, disruptions_, ns(args_.timing.margin));

    std::size_t claims = 0, problems = 0, errors = 0;
    for (const auto& run : runs) {
      for (const auto& [group, list] : run.claims) claims += list.size();
      errors += run.errors;
      for (const auto& p : run.problems) {
        if (++problems <= 20) fmt::print("ORDER: {}\n", p);
      }
    }
    std::size_t late = 0;
    for (const auto& r : live.recoveries) {
      report_.recovered(disruptions_[r.disruption], r, formulas_[r.disruption]);
      if (r.ok) continue;
      const auto& d = disruptions_[r.disruption];
      if (++late <= 20) {
        fmt::print("LATE: #{} {} at {:.1f} s: group {} led again {} ms after the {}, bound {} ms\n",
                   r.disruption + 1, d.kind, static_cast<double>(d.start - from_) / 1e9, r.worst_group,
                   chaos::format_ms(r.time_to_leader), d.reference == d.start ? "fault" : "heal",
                   chaos::format_ms(d.bound));
      }
    }
    for (const auto& [group, gap] : live.unexplained) {
      fmt::print("GAP: group {} had no leader for {} ms from {:.3f} s, outside every disruption\n", group,
                 chaos::format_ms(gap.length()), static_cast<double>(gap.begin - from_) / 1e9);
    }
    Nanos longest_overlap = 0, total_overlap = 0;
    for (const auto& o : overlaps) {
      longest_overlap = std::max(longest_overlap, o.length);
      total_overlap += o.length;
    }
    for (std::size_t i = 0; i < overlaps.size() && i < 20; ++i) {
      const auto& o = overlaps[i];
      fmt::print("OVERLAP: group {}: {} and {} both claimed it for {} ms from {:.3f} s\n", o.group, o.first,
                 o.second, chaos::format_ms(o.length), static_cast<double>(o.start - from_) / 1e9);
    }
    for (std::size_t i = 0; i < regressions.size() && i < 20; ++i) {
      const auto& r = regressions[i];
      fmt::print("TOKEN: group {}: {} began a term with token {} at {:.3f} s, after {} had token {}\n", r.group,
                 r.later, r.later_token, static_cast<double>(r.at - from_) / 1e9, r.earlier, r.earlier_token);
    }
    for (const auto& c : fleet_.crashes()) fmt::print("CRASH: {}\n", c);
    for (const auto& p : stop_problems) fmt::print("STOP: {}\n", p);
    for (const auto& e : runner_errors_) fmt::print("RUNNER: {}\n", e);

    report_.print();
    // The share of group-time some live process claimed.
    Nanos leaderless = 0;
    for (const auto& [group, list] : gaps) {
      for (const auto& g : list) leaderless += g.length();
    }
    const double window = static_cast<double>(to - from_) * static_cast<double>(groups_.size());
    const double leader_share = window > 0 ? 1.0 - static_cast<double>(leaderless) / window : 0.0;

    const bool ok = overlaps.empty() && regressions.empty() && live.ok() && problems == 0 &&
                    fleet_.crashes().empty() && stop_problems.empty() && runner_errors_.empty();
    fmt::print("\nseed {}; topology {}; confirm replicas {}; {:.1f} s observed; {} claim intervals from {} processes "
               "over {} groups; {} error events\n",
               args_.seed, chaos::to_string(args_.topology), args_.confirm_replicas,
               static_cast<double>(to - from_) / 1e9, claims, runs.size(), groups_.size(), errors);
    const auto [terms, changes] = leader_changes(runs);
    fmt::print("terms {}; leader changes {} (a term of another instance than the group's previous one)\n", terms,
               changes);
    fmt::print("overlaps {} (longest {} ms, total {} ms); token regressions {}; leader time {:.1f} %\n",
               overlaps.size(), chaos::format_ms(longest_overlap), chaos::format_ms(total_overlap),
               regressions.size(), 100.0 * leader_share);
    if (!losses.empty()) {
      fmt::print("Redis lost its data {} time(s) (restarted empty): tokens are compared only within each "
                 "stretch between losses; across a loss they start over and no check applies\n",
                 losses.size());
    }
    fmt::print("RESULT: {} overlaps={} token_regressions={} late={} unexplained_gaps={} order_problems={} "
               "crashes={} stop_problems={} runner_errors={}\n",
               ok ? "PASS" : "FAIL", overlaps.size(), regressions.size(), late, live.unexplained.size(), problems,
               fleet_.crashes().size(), stop_problems.size(), runner_errors_.size());
    if (!ok) fmt::print("replay: {}\n", replay_command(args_));
    return ok ? 0 : 1;
  }

  Args args_;
  std::string dir_;
  std::unique_ptr<chaos::Deployment> deployment_;
  chaos::MemberFleet fleet_;  // after the deployment: its processes die first
  std::vector<std::string> groups_;
  chaos::Planner planner_;
  chaos::Report report_;
  Nanos from_ = 0;
  std::vector<chaos::Disruption> disruptions_;
  std::vector<std::string> formulas_;
  std::vector<std::string> runner_errors_;
};

}  // namespace

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  fmt::print("leasehold_chaos: seed {}\nreplay: {}\n", args.seed, replay_command(args));
  fmt::print("ttl {} ms, retry {} ms, margin {} ms, {} instances x {} groups, topology {}, confirm replicas {}, "
             "member {}\n",
             args.timing.ttl.count(), args.timing.retry.count(), args.timing.margin.count(), args.instances,
             args.groups, chaos::to_string(args.topology), args.confirm_replicas, args.member);
  std::fflush(stdout);
  std::signal(SIGINT, [](int) { interrupted = 1; });
  std::signal(SIGTERM, [](int) { interrupted = 1; });
  std::signal(SIGPIPE, SIG_IGN);
  ChaosRun run(args);
  return run.run();
} catch (const std::exception& e) {
  std::fprintf(stderr, "leasehold_chaos: %s\n", e.what());
  return 2;
}
