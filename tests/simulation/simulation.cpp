#include "simulation.hpp"

#include "lease_model.hpp"

#include <chaos/checker.hpp>
#include <leasehold/impl/core/elector_core.hpp>
#include <support/slot_names.hpp>

#include <fmt/format.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <set>

namespace leasehold::sim {
namespace {

using detail::Clock;
using detail::Command;
using detail::GroupState;
using detail::TimePoint;
using Ms = std::chrono::milliseconds;

// Simulated time starts far from the clock's epoch (a zero deadline means
// "none" to the elector).
const TimePoint origin{std::chrono::hours(1)};

std::int64_t ns(TimePoint t) { return detail::to_ns(t); }

class World;

// One elector process: the core plus its side of the connections.
class Process final : public detail::LeaseTransport, public detail::ElectorListener {
 public:
  Process(World& world, int index, std::string id, const ElectorOptions& options, detail::CoreLimits limits);

  void start(TimePoint now);
  void connect(TimePoint now);
  void reset_connection(TimePoint now, bool lose_in_flight);
  void crash(TimePoint now);

  detail::ElectorCore& core() { return *core_; }
  bool alive() const { return alive_; }
  bool connected() const { return connected_; }
  bool stopped() const { return stopped_; }
  const std::string& id() const { return id_; }
  std::string& log() { return log_; }
  std::optional<chaos::Nanos> dead_at;
  TimePoint paused_until{};

  // LeaseTransport
  void send(GroupState& g, Command command, std::uint64_t seq, detail::LeaseReplyListener& replies) override;
  // ElectorListener
  void term_began(GroupState& g) override;
  void term_ended(GroupState& g, std::int64_t token, RevokeReason reason) override;
  void leader_changed(GroupState&) override {}
  void released(GroupState&, bool) override {}
  void group_error(GroupState&, const Error&) override {}
  void audit(const LeaseAuditEvent& e) override;
  void arm_timer(TimePoint at) override;
  void resume_later() override;
  void stopped() override { stopped_ = true; }

  void deliver_notice(const std::string& channel, const std::string& releaser);

 private:
  struct Pending {
    GroupState* group;
    Command command;
    std::uint64_t seq;
  };
  TimePoint now() const;
  void fail_pending(TimePoint now);

  World& world_;
  const int index_;
  const std::string id_;
  const bool guarded_;  // acquires through the empty-restart guard
  std::unique_ptr<detail::ElectorCore> core_;
  std::string log_;
  bool alive_ = true;
  bool connected_ = false;
  bool stopped_ = false;
  std::uint64_t epoch_ = 0;  // bumped by every reset: older replies are dropped
  std::map<std::uint64_t, Pending> pending_;  // by the command's seq, this connection
  std::uint64_t next_tag_ = 1;
  std::set<std::uint64_t> lost_;  // commands a reset lost on their way to the server
  TimePoint last_to_server_{};
  TimePoint last_to_client_{};
  friend class World;
};

class World {
 public:
  explicit World(const Config& config);
  Result run();

  // The event queue: (time, insertion order), so equal times keep order.
  void at(TimePoint when, int process, std::function<void()> action);
  TimePoint now() const { return now_; }
  Ms delay() { return Ms(std::uniform_int_distribution<std::int64_t>(0, config_.max_delay_ms)(rng_)); }
  bool coin(double p) { return std::bernoulli_distribution(p)(rng_); }
  bool server_up() const { return now_ >= server_down_until_; }
  LeaseModel& model() { return model_; }
  int next_incarnation() { return next_incarnation_++; }
  const detail::LeaseTiming& timing() const { return timing_; }
  KeyLayout::Form form() const { return config_.hash_tagged ? KeyLayout::Form::hash_tagged : KeyLayout::Form::plain; }
  void publish(const LeaseModel::Published& notice);
  /// A disruption from `now` whose leaderless gaps must end within the
  /// fault bound of `heal`; one that starts while the last one's window is
  /// open joins it.
  void disruption(std::string kind, TimePoint heal);

 private:
  struct Slot {
    std::unique_ptr<Process> process;
    std::uint64_t generation = 0;  // bumped at a crash: the dead process's events are dropped
    Process* operator->() const { return process.get(); }
  };
  struct Event {
    TimePoint when;
    std::uint64_t order;
    int process;  // -1: the world itself
    std::uint64_t generation;
    std::function<void()> action;
    bool operator>(const Event& o) const { return when != o.when ? when > o.when : order > o.order; }
  };

  void inject_fault();
  void spawn(int slot, std::string id);
  void step(Event e);
  void check_window(Process& p);
  void finish();
  Result judge();

  Config config_;
  std::mt19937_64 rng_;
  ElectorOptions options_;
  detail::LeaseTiming timing_;
  LeaseModel model_;
  std::vector<Slot> processes_;
  std::vector<std::unique_ptr<Process>> retired_;  // crashed ones, for their logs
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  std::uint64_t order_ = 0;
  TimePoint now_ = origin;
  TimePoint server_down_until_{};
  std::vector<chaos::Disruption> disruptions_;
  std::size_t events_ = 0;
  std::vector<std::string> window_problems_;
  int next_process_id_ = 0;
  int next_incarnation_ = 0;
  friend class Process;
};

// ---- Process ---------------------------------------------------------------

Process::Process(World& world, int index, std::string id, const ElectorOptions& options,
                 detail::CoreLimits limits)
    : world_(world), index_(index), id_(std::move(id)), guarded_(options.empty_restart_guard) {
  // Deterministic incarnations: a restarted process is a new one.
  core_ = std::make_unique<detail::ElectorCore>(options, id_, fmt::format("{}#{}", id_, world.next_incarnation()),
                                                *this, *this, limits, world.form());
}

TimePoint Process::now() const { return world_.now(); }

void Process::start(TimePoint now) {
  core_->start(now);
  connect(now);
}

void Process::connect(TimePoint now) {
  if (!alive_ || connected_) return;
  if (!world_.server_up()) {
    world_.at(now + Ms(50), index_, [this] { connect(world_.now()); });
    return;
  }
  connected_ = true;
  core_->connection_up(now);
  core_->notices_available(true, now);
}

void Process::send(GroupState& g, Command command, std::uint64_t seq, detail::LeaseReplyListener& replies) {
  const TimePoint t = now();
  if (!connected_) {
    world_.at(t, index_, [this, &g, command, seq, &replies] {
      replies.on_lease_reply(g, command, seq, make_error_code(errc::not_connected), {}, detail::Replicated::not_asked, now());
    });
    return;
  }
  const std::uint64_t tag = next_tag_++;
  pending_[tag] = Pending{&g, command, seq};
  last_to_server_ = std::max(t + world_.delay(), last_to_server_);
  const std::uint64_t epoch = epoch_;
  const std::string key(g.key);
  const std::string token_key = core_->layout().token_key(g.name);
  const std::string channel = core_->layout().release_channel(g.name);
  const std::int64_t ttl = std::chrono::duration_cast<Ms>(world_.timing().ttl).count();
  const LeaseModel::Campaigner who{id_, core_->incarnation(), g.machine.priority()};
  std::optional<LeaseModel::Campaigner> to;
  if (const detail::Bid* b = g.machine.hand_over_target(); b && command == Command::release) {
    to = LeaseModel::Campaigner{b->id, b->incarnation, b->priority};
  }
  // The server's side: it runs the script when the bytes arrive (even if the
  // client has given the connection up meanwhile), unless it is down.
  world_.at(last_to_server_, -1, [this, &g, command, seq, tag, epoch, key, token_key, channel, ttl, who, to,
                                   &replies] {
    if (!world_.server_up() || lost_.count(tag) != 0) return;
    const std::int64_t ms = std::chrono::duration_cast<Ms>(world_.now() - origin).count();
    redis::Reply reply;
    std::optional<LeaseModel::Published> notice;
    switch (command) {
      case Command::acquire: reply = world_.model().acquire(key, token_key, who, ttl, ms, guarded_); break;
      case Command::renew: reply = world_.model().renew(key, who, ttl, ms); break;
      case Command::release: reply = world_.model().release(key, channel, who, ttl, ms, to, notice); break;
      case Command::none: return;
    }
    if (notice) {
      // A Cluster's release script names the lease key in its notice.
      if (world_.form() == KeyLayout::Form::hash_tagged) notice->message = key + "\n" + notice->message;
      world_.publish(*notice);
    }
    last_to_client_ = std::max(world_.now() + world_.delay(), last_to_client_);
    world_.at(last_to_client_, index_, [this, &g, command, seq, tag, epoch, reply, &replies] {
      if (epoch != epoch_ || pending_.erase(tag) == 0) return;
      replies.on_lease_reply(g, command, seq, {}, reply, detail::Replicated::not_asked, now());
    });
  });
}

void Process::reset_connection(TimePoint now, bool lose_in_flight) {
  if (!connected_) return;
  connected_ = false;
  // What was on its way to the server may still arrive and run there, or
  // not: the client cannot know, so every pending command fails.
  for (const auto& [tag, p] : pending_) {
    if (lose_in_flight || world_.coin(0.5)) lost_.insert(tag);
  }
  ++epoch_;
  fail_pending(now);
  core_->notices_available(false, now);
  core_->connection_down(now, false);
  world_.at(now + Ms(10) + world_.delay() * 3, index_, [this] { connect(world_.now()); });
}

void Process::fail_pending(TimePoint now) {
  auto failed = std::exchange(pending_, {});
  for (const auto& [tag, p] : failed) {
    core_->on_lease_reply(*p.group, p.command, p.seq, make_error_code(errc::connection_lost), {}, detail::Replicated::not_asked, now);
  }
}

void Process::crash(TimePoint now) {
  alive_ = false;
  connected_ = false;
  dead_at = ns(now);
}

void Process::arm_timer(TimePoint at) {
  world_.at(at, index_, [this, at] { core_->timer_expired(at, now()); });
}

void Process::resume_later() {
  world_.at(now(), index_, [this] { core_->resume(now()); });
}

void Process::deliver_notice(const std::string& channel, const std::string& releaser) {
  if (connected_) core_->release_notice(channel, releaser, now());
}

void Process::term_began(GroupState& g) {
  log_ += fmt::format("elected {} {} {}\n", g.name, g.machine.token(), ns(now()));
}

void Process::term_ended(GroupState& g, std::int64_t token, RevokeReason reason) {
  log_ += fmt::format("revoked {} {} {} {}\n", g.name, token, to_string(reason), ns(now()));
  // A hand-over leaves the group without a leader for a round trip or so.
  if (reason == RevokeReason::handed_over) world_.disruption("hand_over", now());
}

void Process::audit(const LeaseAuditEvent& e) {
  static constexpr const char* kinds[] = {"began", "extended", "ended"};
  log_ += fmt::format("audit {} {} {} {} {} {}\n", kinds[static_cast<int>(e.kind)], e.group, e.token, ns(e.at),
                      ns(e.sent_at), e.kind == LeaseAuditEvent::Kind::ended ? 0 : ns(e.deadline));
}

// ---- World -----------------------------------------------------------------

World::World(const Config& config)
    : config_(config),
      rng_(config.seed),
      timing_{Ms(config.ttl_ms), Ms(config.ttl_ms) / 3, Ms(config.retry_ms), Ms(config.ttl_ms / 100 + 2),
              Ms(config.ttl_ms)} {
  if (config_.instances == 0) config_.instances = 3 + static_cast<int>(rng_() % 5);
  options_.ttl = Ms(config_.ttl_ms);
  options_.retry_interval = Ms(config_.retry_ms);
  options_.empty_restart_guard = config_.empty_restart_guard;
  if (config_.hash_tagged) {
    const KeyLayout layout(options_.key_prefix, form());
    options_.groups = test::names_in_one_slot(static_cast<std::size_t>(config_.groups),
                                              [&](const std::string& name) { return layout.lease_key(name); });
  } else {
    for (int g = 1; g <= config_.groups; ++g) options_.groups.push_back(fmt::format("g{}", g));
  }
  timing_ = detail::LeaseTiming::from(options_);
  processes_.resize(static_cast<std::size_t>(config_.instances));
  for (int i = 0; i < config_.instances; ++i) {
    spawn(i, fmt::format("i{}", config_.duplicate_ids && i == 1 ? 0 : i));
  }
}

void World::spawn(int slot, std::string id) {
  auto& s = processes_[static_cast<std::size_t>(slot)];
  if (s.process) retired_.push_back(std::move(s.process));
  ++s.generation;
  detail::CoreLimits limits;
  limits.max_in_flight = config_.max_in_flight;
  limits.groups_per_pass = 2;
  ElectorOptions options = options_;
  if (config_.priorities) options.priority = static_cast<int>(rng_() % 3);
  s.process = std::make_unique<Process>(*this, slot, std::move(id), options, limits);
  s.process->start(now_);
}

void World::at(TimePoint when, int process, std::function<void()> action) {
  const std::uint64_t generation = process >= 0 ? processes_[static_cast<std::size_t>(process)].generation : 0;
  queue_.push(Event{std::max(when, now_), order_++, process, generation, std::move(action)});
}

void World::publish(const LeaseModel::Published& notice) {
  for (std::size_t i = 0; i < processes_.size(); ++i) {
    Process* p = processes_[i].process.get();
    at(now_ + delay(), static_cast<int>(i), [p, notice] { p->deliver_notice(notice.channel, notice.message); });
  }
}

void World::step(Event e) {
  if (e.process >= 0) {
    const Slot& slot = processes_[static_cast<std::size_t>(e.process)];
    if (slot.generation != e.generation || !slot->alive()) return;
    // A paused process handles nothing until it resumes, then all in order.
    if (e.when < slot->paused_until) {
      e.when = slot->paused_until;
      queue_.push(std::move(e));
      return;
    }
  }
  now_ = e.when;
  ++events_;
  e.action();
  if (e.process >= 0) check_window(*processes_[static_cast<std::size_t>(e.process)].process);
}

// The command window's invariants hold after every input.
void World::check_window(Process& p) {
  const auto& core = p.core();
  const std::size_t limit = config_.max_in_flight * detail::ElectorCore::window_weight(detail::Command::acquire);
  if (core.window_in_flight() > limit || (core.held_back() > 0 && core.window_in_flight() == 0)) {
    window_problems_.push_back(fmt::format("WINDOW {} at {} ms: weight {} in flight (limit {}), {} held back", p.id(),
                                           chaos::format_ms(ns(now_) - ns(origin)), core.window_in_flight(), limit,
                                           core.held_back()));
  }
}

void World::disruption(std::string kind, TimePoint heal) {
  const Ms bound = 3 * Ms(config_.ttl_ms) + Ms(config_.retry_ms);
  const auto bound_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(bound).count();
  // A gap is then judged against the later heal of the two.
  if (!disruptions_.empty() && disruptions_.back().deadline() >= ns(now_)) {
    auto& d = disruptions_.back();
    d.kind = d.kind == kind ? kind : "combined";
    d.reference = std::max(d.reference, ns(heal));
    return;
  }
  disruptions_.push_back(chaos::Disruption{std::move(kind), ns(now_), ns(heal), bound_ns});
}

// One fault at a time starts, but they overlap freely. Each is a disruption
// whose leaderless gaps must end within a bound of its heal.
void World::inject_fault() {
  const int target = static_cast<int>(rng_() % processes_.size());
  Process& p = *processes_[static_cast<std::size_t>(target)].process;
  const int kinds = config_.empty_restarts ? 5 : 4;
  switch (rng_() % kinds) {
    case 0: {  // the connection is reset; what was in flight may or may not arrive
      const bool lose = coin(0.3);
      at(now_, target, [this, &p, lose] { p.reset_connection(now_, lose); });
      disruption("reset", now_ + Ms(200));
      break;
    }
    case 1: {  // the process stalls (GC, swap, SIGSTOP), past its deadline or not
      const Ms length(std::uniform_int_distribution<std::int64_t>(10, 2 * config_.ttl_ms)(rng_));
      p.paused_until = std::max(p.paused_until, now_ + length);
      disruption("pause", p.paused_until);
      break;
    }
    case 2: {  // crash, and a restart later with the same id or a new one
      if (!p.alive()) break;  // already down: its restart is on its way (a second would replace it live)
      p.crash(now_);
      Ms down(std::uniform_int_distribution<std::int64_t>(0, 2 * config_.ttl_ms)(rng_));
      // A successor with the same id is a new incarnation: it waits out the
      // dead one's leases (and cannot release them), however soon it starts.
      const bool same_id = coin(0.5);
      std::string id = same_id ? p.id() : fmt::format("i{}", config_.instances + next_process_id_++);
      at(now_ + down, -1, [this, target, id] { spawn(target, id); });
      disruption("crash", now_ + down);
      break;
    }
    case 3: {  // a graceful step-down of a group this process may lead
      const auto& groups = p.core().begun();
      if (p.alive() && !groups.empty()) {
        p.core().step_down(*groups[rng_() % groups.size()], now_);
        disruption("step_down", now_);
      }
      break;
    }
    case 4: {  // Redis restarts empty: every lease and counter is gone
      model_.clear();
      server_down_until_ = now_ + Ms(std::uniform_int_distribution<std::int64_t>(0, 300)(rng_));
      // Each process learns of it on its next turn: a paused one late.
      for (std::size_t i = 0; i < processes_.size(); ++i) {
        Process* q = processes_[i].process.get();
        at(now_, static_cast<int>(i), [this, q] { q->reset_connection(now_, true); });
      }
      disruption("empty_restart", server_down_until_);
      break;
    }
  }
}

Result World::run() {
  const TimePoint faults_end = origin + Ms(config_.duration_ms);
  const TimePoint quiet_end = faults_end + 4 * Ms(config_.ttl_ms);
  TimePoint next_fault = origin + 3 * Ms(config_.ttl_ms);
  std::size_t faults = 0;
  while (!queue_.empty() || now_ < quiet_end) {
    if (next_fault < faults_end && (queue_.empty() || next_fault <= queue_.top().when)) {
      now_ = next_fault;
      inject_fault();
      ++faults;
      next_fault = now_ + Ms(std::uniform_int_distribution<std::int64_t>(config_.ttl_ms / 2, 4 * config_.ttl_ms)(rng_));
      continue;
    }
    if (queue_.empty() || queue_.top().when >= quiet_end) break;
    Event e = queue_.top();
    queue_.pop();
    step(std::move(e));
  }
  now_ = std::max(now_, quiet_end);
  finish();
  Result r = judge();
  r.faults = faults;
  return r;
}

// Stops every live process gracefully and lets the releases complete.
void World::finish() {
  for (auto& s : processes_) {
    if (s->alive()) {
      s->paused_until = TimePoint{};
      s->core().stop(now_);
    }
  }
  const TimePoint bound = now_ + 10 * Ms(config_.ttl_ms);
  while (!queue_.empty() && queue_.top().when < bound) {
    Event e = queue_.top();
    queue_.pop();
    step(std::move(e));
  }
}

Result World::judge() {
  Result r;
  r.seed = config_.seed;
  r.instances = config_.instances;
  r.events = events_;
  for (std::size_t i = 0; i < window_problems_.size() && i < 3; ++i) r.problems.push_back(window_problems_[i]);
  std::vector<chaos::RunLog> runs;
  auto add = [&](Process& p, std::size_t n) {
    if (config_.print_logs) fmt::print("== process {} ({}):\n{}", n, p.id(), p.log());
    runs.push_back(chaos::parse_run(p.log(), p.id(), fmt::format("process {}", n)));
    runs.back().dead_at = p.dead_at;
    for (const auto& problem : runs.back().problems) r.problems.push_back("ORDER " + problem);
    for (const auto& [group, claims] : runs.back().claims) r.claims += claims.size();
  };
  std::size_t n = 0;
  for (auto& p : retired_) add(*p, n++);
  for (auto& s : processes_) add(*s.process, n++);
  for (const auto& o : chaos::find_overlaps(runs)) {
    r.problems.push_back(fmt::format("OVERLAP group {}: {} and {} for {} ms from {} ms", o.group, o.first, o.second,
                                     chaos::format_ms(o.length), chaos::format_ms(o.start - ns(origin))));
  }
  std::vector<std::string> groups{"default"};
  for (const auto& g : options_.groups) groups.push_back(g);
  const auto from = ns(origin + 3 * Ms(config_.ttl_ms));
  const auto to = ns(origin + Ms(config_.duration_ms) + 4 * Ms(config_.ttl_ms));
  const auto gaps = chaos::leaderless_gaps(runs, groups, from, to);
  const auto tolerance = std::chrono::duration_cast<std::chrono::nanoseconds>(
      Ms(config_.retry_ms) + 4 * Ms(config_.max_delay_ms) + Ms(config_.ttl_ms)).count();
  const auto liveness = chaos::check_liveness(gaps, disruptions_, tolerance);
  for (const auto& rec : liveness.recoveries) {
    if (!rec.ok) {
      const auto& d = disruptions_[rec.disruption];
      r.problems.push_back(fmt::format("LATE {} at {} ms: group {} leaderless {} ms", d.kind,
                                       chaos::format_ms(d.start - ns(origin)), rec.worst_group,
                                       chaos::format_ms(rec.longest_gap)));
    }
  }
  for (const auto& [group, gap] : liveness.unexplained) {
    r.problems.push_back(fmt::format("GAP group {} leaderless {} ms from {} ms, outside every fault", group,
                                     chaos::format_ms(gap.length()), chaos::format_ms(gap.begin - ns(origin))));
  }
  return r;
}

}  // namespace

Result run(const Config& config) { return World(config).run(); }

}  // namespace leasehold::sim
