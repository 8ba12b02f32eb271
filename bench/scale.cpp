// Issue #5 item 5: one Elector campaigning for many groups (default 10,000,
// ttl 5 s) against a private redis-server, measured over a steady window.
// Issue #15: the same on a Redis Cluster (--topology cluster: N masters with
// R replicas each on loopback, default 3 masters and no replica).
//
//   scale [--groups 10000] [--ttl-ms 5000] [--duration-s 45] [--settle-s 6]
//         [--csv scale.csv] [--command-timeout-ms N] [--stagger-ms N]
//         [--topology single|cluster] [--masters 3] [--replicas 0]
//
// Reports client CPU (getrusage of this process, every thread, as % of one
// core), resident memory per group (RSS growth from before the Elector was
// built to when it led every group and to the end of the window, / groups;
// the memory target must hold at both), Redis CPU (INFO cpu deltas)
// and command rates (INFO commandstats deltas), the renewal round trip
// (audit hook: `extended` records, at - sent_at) and every revocation, which
// here can only mean a missed renewal. On a cluster, also each node's CPU and
// command rates and each master's share of the groups (its lease keys), in
// <csv>.nodes.csv beside the main table.
// Targets (reported, not asserted): <= 5% of a core, <= 1 KiB per group, no
// missed renewal.

#include "common/allocation_counter.hpp"
#include "common/redis_info.hpp"
#include "common/resource_usage.hpp"
#include "common/summary.hpp"
#include "common/table.hpp"
#include "scale/deployment.hpp"

#include <leasehold/leasehold.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace lh = leasehold;
namespace bench = leasehold::bench;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

struct Options {
  int groups = 10000;
  std::chrono::milliseconds ttl{5000};
  int duration_s = 45;
  int settle_s = 6;  // after the last election, so the start-up burst is not measured
  std::string csv = "scale.csv";
  std::chrono::milliseconds command_timeout{0};  // 0: the library's default (raise it to profile under valgrind)
  // 0: every group in ElectorOptions::groups (all start together). N: groups
  // registered with Elector::group() spread over N ms after start(), so that
  // their renewals are spread over the heartbeat instead of in one burst.
  std::chrono::milliseconds stagger{0};
  bench::DeploymentOptions deployment;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--groups") o.groups = std::stoi(value);
    else if (flag == "--ttl-ms") o.ttl = std::chrono::milliseconds(std::stoi(value));
    else if (flag == "--duration-s") o.duration_s = std::stoi(value);
    else if (flag == "--settle-s") o.settle_s = std::stoi(value);
    else if (flag == "--csv") o.csv = value;
    else if (flag == "--stagger-ms") o.stagger = std::chrono::milliseconds(std::stoi(value));
    else if (flag == "--command-timeout-ms") o.command_timeout = std::chrono::milliseconds(std::stoi(value));
    else if (flag == "--topology") {
      if (value != "single" && value != "cluster") throw std::invalid_argument("--topology is single or cluster");
      o.deployment.cluster = value == "cluster";
    } else if (flag == "--masters") o.deployment.masters = std::clamp(std::stoi(value), 3, 16);
    else if (flag == "--replicas") o.deployment.replicas = std::clamp(std::stoi(value), 0, 2);
    else throw std::invalid_argument("unknown flag " + flag);
  }
  if (argc % 2 == 0) throw std::invalid_argument(std::string("missing value after ") + argv[argc - 1]);
  o.groups = std::clamp(o.groups, 1, 2000000);
  o.duration_s = std::clamp(o.duration_s, 1, 600);
  o.settle_s = std::clamp(o.settle_s, 0, 120);
  return o;
}

// Collects from the audit hook, on the elector's thread. Storage is reserved
// and touched before the baseline RSS is taken, so it does not count as the
// library's memory.
struct AuditLog {
  std::atomic<bool> measuring{false};
  std::vector<std::int64_t> renewal_ns;  // elector thread only while measuring
  std::atomic<std::uint64_t> began{0}, extended{0}, ended{0};

  void reserve(std::size_t n) {
    renewal_ns.resize(n);
    renewal_ns.clear();
  }
  void record(const lh::LeaseAuditEvent& e) {
    using Kind = lh::LeaseAuditEvent::Kind;
    if (e.kind == Kind::began) ++began;
    if (e.kind == Kind::ended) ++ended;
    if (e.kind != Kind::extended) return;
    ++extended;
    if (measuring.load(std::memory_order_relaxed) && renewal_ns.size() < renewal_ns.capacity()) {
      renewal_ns.push_back((e.at - e.sent_at).count());
    }
  }
};

// Per node of a cluster: its share of the groups (lease keys), CPU and
// command rates over the window.
bench::Table node_table(const bench::Deployment& d, const std::vector<bench::NodeSample>& a,
                        const std::vector<bench::NodeSample>& b, const std::vector<std::uint64_t>& lease_keys,
                        double wall) {
  std::uint64_t groups = 0;
  std::size_t masters = 0;
  for (std::size_t i = 0; i < d.node_count(); ++i) {
    groups += lease_keys[i];
    masters += d.is_master(i) ? 1 : 0;
  }
  const double mean = static_cast<double>(groups) / static_cast<double>(std::max<std::size_t>(1, masters));
  bench::Table t({"node", "groups (lease keys)", "vs mean", "Redis CPU %", "EVALSHA/s", "renewals/s (PEXPIRE)",
                  "PING/s", "CLUSTER/s", "other/s"});
  for (std::size_t i = 0; i < d.node_count(); ++i) {
    const auto cmds = bench::diff(a[i].commands, b[i].commands);
    const auto rate = [&](std::string_view name) { return static_cast<double>(bench::calls(cmds, name)) / wall; };
    double all = 0;
    for (const auto& [name, n] : cmds) all += static_cast<double>(n) / wall;
    const double cluster = rate("cluster|shards") + rate("cluster|slots");
    const bool master = d.is_master(i);
    // Inside the lease scripts Redis counts GET, HGET, HMGET, PEXPIRE, ... too.
    const double scripted = all - rate("evalsha") - rate("eval") - rate("ping") - cluster;
    t.add({d.describe(i), master ? std::to_string(lease_keys[i]) : "",
           master ? fmt::format("{:+.1f} %", (static_cast<double>(lease_keys[i]) / mean - 1) * 100) : "",
           bench::fixed((b[i].cpu_s - a[i].cpu_s) / wall * 100, 2), bench::fixed(rate("evalsha"), 0),
           bench::fixed(rate("pexpire"), 0), bench::fixed(rate("ping"), 1), bench::fixed(cluster, 2),
           master ? fmt::format("{:.0f} (in scripts)", scripted) : bench::fixed(all, 0)});
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options opt = parse(argc, argv);
  // A mass revocation would log one warning per group; the table counts them.
  lh::set_log_level(lh::LogLevel::error);
  bench::Deployment deployment(opt.deployment);

  lh::ElectorOptions options;
  options.ttl = opt.ttl;
  std::vector<std::string> names;
  for (int i = 0; i < opt.groups; ++i) names.push_back(fmt::format("group-{:06}", i));
  if (opt.stagger.count() == 0) options.groups = names;
  const auto total_groups = static_cast<std::uint64_t>(opt.groups) + 1;  // + "default"
  const double heartbeat_s = std::chrono::duration<double>(options.effective_heartbeat()).count();

  AuditLog audit;
  audit.reserve(static_cast<std::size_t>(static_cast<double>(total_groups) * (opt.duration_s / heartbeat_s + 4)));
  std::atomic<std::uint64_t> elected{0}, revoked{0}, errors{0};
  std::mutex reasons_mutex;
  std::map<std::string, int> revoke_reasons;

  const std::size_t rss_before = bench::resident_bytes();
  const std::size_t heap_before = bench::heap_in_use_bytes();
  const double cpu_before = bench::process_cpu_seconds();
  const auto t_construct = Clock::now();
  lh::RedisOptions redis = deployment.options();
  redis.command_timeout = opt.command_timeout.count() > 0 ? opt.command_timeout : lh::RedisOptions{}.command_timeout;
  auto elector = std::make_unique<lh::Elector>(redis, options);  // standalone: own I/O thread
  elector->on_lease_audit([&audit](const lh::LeaseAuditEvent& e) { audit.record(e); });
  elector->on_elected([&](const lh::ElectedEvent&) { ++elected; });
  elector->on_revoked([&](const lh::RevokedEvent& e) {
    if (e.reason == lh::RevokeReason::stopped) return;  // the final stop, not a missed renewal
    ++revoked;
    std::lock_guard lock(reasons_mutex);
    ++revoke_reasons[std::string(lh::to_string(e.reason))];
  });
  elector->on_error([&](const lh::ErrorEvent&) { ++errors; });
  elector->start();
  if (opt.stagger.count() > 0) {
    // Registering a group after start() campaigns for it at once.
    const auto begin = Clock::now();
    for (std::size_t i = 0; i < names.size(); ++i) {
      std::this_thread::sleep_until(begin + opt.stagger * static_cast<long>(i) / static_cast<long>(names.size()));
      elector->group(names[i]);
    }
  }

  const auto elect_bound = Clock::now() + 120s;
  while (elected.load() < total_groups && Clock::now() < elect_bound) std::this_thread::sleep_for(10ms);
  const auto t_all_elected = Clock::now();
  if (elected.load() < total_groups) {
    throw std::runtime_error(fmt::format("only {} of {} groups elected within 120 s", elected.load(), total_groups));
  }
  const std::size_t rss_elected = bench::resident_bytes();
  const std::size_t heap_elected = bench::heap_in_use_bytes();
  const double cpu_startup = bench::process_cpu_seconds() - cpu_before;

  std::this_thread::sleep_for(std::chrono::seconds(opt.settle_s));
  const std::uint64_t revoked_before_window = revoked.load();

  // ---- the measured window ----
  const auto nodes0 = deployment.sample();
  const double cpu0 = bench::process_cpu_seconds();
  const std::uint64_t allocations0 = bench::allocations();
  const auto t0 = Clock::now();
  audit.measuring = true;
  std::vector<double> cpu_per_second;  // client CPU % in each second, to show bursts
  double cpu_prev = cpu0;
  for (int s = 0; s < opt.duration_s; ++s) {
    std::this_thread::sleep_until(t0 + std::chrono::seconds(s + 1));
    const double c = bench::process_cpu_seconds();
    cpu_per_second.push_back((c - cpu_prev) * 100);
    cpu_prev = c;
  }
  audit.measuring = false;
  const auto t1 = Clock::now();
  const double cpu1 = bench::process_cpu_seconds();
  const std::uint64_t allocations1 = bench::allocations();
  const auto nodes1 = deployment.sample();
  const std::size_t rss_end = bench::resident_bytes();
  const std::size_t heap_end = bench::heap_in_use_bytes();
  // Read before the stop releases (deletes) the leases.
  const auto lease_keys = deployment.cluster() ? deployment.count_keys("leader:{*}") : std::vector<std::uint64_t>{};

  const auto t_stop = Clock::now();
  elector.reset();  // stops: releases every lease (bounded by stop_timeout)
  const double stop_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_stop).count();

  // ---- report ----
  const double wall = std::chrono::duration<double>(t1 - t0).count();
  const auto masters = bench::total_delta(deployment, nodes0, nodes1, true);
  const auto& cmds = masters.commands;
  const auto rate = [&](std::string_view name) { return static_cast<double>(bench::calls(cmds, name)) / wall; };
  std::vector<double> renewal_ms;
  renewal_ms.reserve(audit.renewal_ns.size());
  for (const auto ns : audit.renewal_ns) renewal_ms.push_back(static_cast<double>(ns) / 1e6);
  const auto lat = bench::Summary::of(renewal_ms);
  const auto per_second = bench::Summary::of(cpu_per_second);
  const double client_cpu_pct = (cpu1 - cpu0) / wall * 100;
  const double bytes_per_group = static_cast<double>(rss_elected - rss_before) / static_cast<double>(total_groups);
  const double bytes_per_group_end = static_cast<double>(rss_end - rss_before) / static_cast<double>(total_groups);
  const std::uint64_t missed = revoked.load();

  bench::Table t({"measurement", "value", "target"});
  t.add({"groups (incl. default)", std::to_string(total_groups), ""});
  t.add({"ttl / heartbeat", fmt::format("{} ms / {} ms", opt.ttl.count(), options.effective_heartbeat().count()), ""});
  t.add({"time to lead every group", fmt::format("{:.0f} ms", std::chrono::duration<double, std::milli>(t_all_elected - t_construct).count()), ""});
  t.add({"client CPU during start-up", fmt::format("{:.2f} s", cpu_startup), ""});
  t.add({"client CPU, steady (% of one core)", bench::fixed(client_cpu_pct, 2), "<= 5"});
  t.add({"client CPU per second: p50 / max", fmt::format("{:.1f} / {:.1f} %", per_second.p50, per_second.max), ""});
  t.add({"client CPU per renewal", fmt::format("{:.1f} µs", (cpu1 - cpu0) * 1e6 / std::max(1.0, rate("pexpire") * wall)), ""});
  t.add({"RSS growth per group (to all elected)", fmt::format("{:.0f} B", bytes_per_group), "<= 1024"});
  t.add({"heap in use per group (mallinfo2, to all elected)", fmt::format("{:.0f} B", static_cast<double>(heap_elected - heap_before) / static_cast<double>(total_groups)), ""});
  t.add({"operator new calls per renewal", bench::fixed(static_cast<double>(allocations1 - allocations0) / std::max(1.0, rate("pexpire") * wall), 1), ""});
  t.add({"RSS growth per group (to end of window)", fmt::format("{:.0f} B", bytes_per_group_end), "<= 1024"});
  t.add({"heap in use per group (to end of window)", fmt::format("{:.0f} B", (static_cast<double>(heap_end) - static_cast<double>(heap_before)) / static_cast<double>(total_groups)), ""});
  t.add({deployment.cluster() ? "Redis CPU, masters together (% of one core)" : "Redis CPU (% of one core)",
         bench::fixed(masters.cpu_s / wall * 100, 2), ""});
  // Redis's own cost per renewal (its process CPU, which other load on the
  // machine barely distorts) and every command it ran, those inside
  // scripts included.
  std::uint64_t all_calls = 0;
  for (const auto& [name, n] : cmds) all_calls += n;
  const double renewals = std::max(1.0, rate("pexpire") * wall);
  t.add({"Redis CPU per renewal", fmt::format("{:.2f} µs", masters.cpu_s * 1e6 / renewals), "<= 1.5"});
  t.add({"Redis commands per second, inside scripts too", bench::fixed(static_cast<double>(all_calls) / wall, 0), ""});
  t.add({"  per renewal", bench::fixed(static_cast<double>(all_calls) / renewals, 2), ""});
  t.add({"EVALSHA per second (lease scripts)", bench::fixed(rate("evalsha"), 0), fmt::format("{:.0f} (groups / heartbeat)", static_cast<double>(total_groups) / heartbeat_s)});
  t.add({"  of which renewals (PEXPIRE in scripts)", bench::fixed(rate("pexpire"), 0), ""});
  t.add({"other commands per second (PING, ...)", bench::fixed(rate("ping") + rate("eval"), 1), ""});
  t.add({"renewal round trip p50 / p99 / max", fmt::format("{:.2f} / {:.2f} / {:.2f} ms", lat.p50, lat.p99, lat.max), ""});
  t.add({"renewals measured", std::to_string(lat.count), ""});
  t.add({"missed renewals (revoked events, whole run)", std::to_string(missed), "0"});
  t.add({"  of which before the window", std::to_string(revoked_before_window), ""});
  t.add({"error events", std::to_string(errors.load()), "0"});
  t.add({"graceful stop (release every lease)", fmt::format("{:.0f} ms", stop_ms), ""});

  std::printf("scale run: one Elector, %llu groups, ttl %lld ms, %.1f s window%s%s\n\n%s\n%s",
              static_cast<unsigned long long>(total_groups), static_cast<long long>(opt.ttl.count()), wall,
              opt.stagger.count() > 0 ? fmt::format(", groups registered over {} ms", opt.stagger.count()).c_str() : "",
              deployment.cluster() ? fmt::format(", Redis Cluster of {} masters with {} replicas each",
                                                 opt.deployment.masters, opt.deployment.replicas).c_str()
                                   : "",
              t.text().c_str(), t.markdown().c_str());
  if (deployment.cluster()) {
    const auto nodes = node_table(deployment, nodes0, nodes1, lease_keys, wall);
    std::printf("\nper node (the window; groups: its lease keys at the end of the window)\n\n%s\n%s",
                nodes.text().c_str(), nodes.markdown().c_str());
    nodes.write_csv(opt.csv + ".nodes.csv");
  }
  if (missed != 0) {
    for (const auto& [reason, n] : revoke_reasons) std::printf("revoked: %s x%d\n", reason.c_str(), n);
  }
  std::printf("load average at end: %s\n", bench::load_average().c_str());
  std::printf("targets: client CPU %s, memory %s, missed renewals %s\n", client_cpu_pct <= 5 ? "MET" : "MISSED",
              std::max(bytes_per_group, bytes_per_group_end) <= 1024 ? "MET" : "MISSED", missed == 0 ? "MET" : "MISSED");
  t.write_csv(opt.csv);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "scale: %s\n", e.what());
  return 1;
}
