#pragma once
// Several Electors on one io_context against one harness-started Redis, with
// a record of every event each one emitted.

#include <leasehold/elector.hpp>

#include "support/io_helpers.hpp"
#include "support/redis_server.hpp"

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace leasehold::test {

/// Short timings so that expiry-based tests take a second or two.
inline ElectorOptions fast_options(std::string instance_id = {}) {
  ElectorOptions o;
  o.ttl = std::chrono::milliseconds(1500);
  o.retry_interval = std::chrono::milliseconds(300);
  o.instance_id = std::move(instance_id);
  return o;
}

struct RecordedEvents {
  std::vector<ElectedEvent> elected;
  std::vector<RevokedEvent> revoked;
  std::vector<LeaderChangedEvent> leader_changed;
  std::vector<ErrorEvent> errors;
  std::vector<std::string> sequence;  ///< "elected <group>" / "revoked <group>", in order

  /// The first error event with `code`, or nullptr.
  const ErrorEvent* first_error(errc code) const {
    for (const auto& e : errors) {
      if (e.error.code == code) return &e;
    }
    return nullptr;
  }
  bool has_error(errc code) const { return first_error(code) != nullptr; }
};

class Fleet {
 public:
  explicit Fleet(const RedisServer& server) : redis_(server.options()) {}
  explicit Fleet(RedisOptions redis) : redis_(std::move(redis)) {}

  boost::asio::io_context io;

  /// Adds and starts an elector; its events go to events(index).
  Elector& add(ElectorOptions options = fast_options(), std::optional<RedisOptions> redis = {}) {
    auto& e = electors_.emplace_back(
        std::make_unique<Elector>(io.get_executor(), redis.value_or(redis_), std::move(options)));
    auto& rec = *events_.emplace_back(std::make_unique<RecordedEvents>());
    e->on_elected([&rec](const ElectedEvent& ev) {
      rec.elected.push_back(ev);
      rec.sequence.push_back("elected " + ev.group);
    });
    e->on_revoked([&rec](const RevokedEvent& ev) {
      rec.revoked.push_back(ev);
      rec.sequence.push_back("revoked " + ev.group);
    });
    e->on_leader_changed([&rec](const LeaderChangedEvent& ev) { rec.leader_changed.push_back(ev); });
    e->on_error([&rec](const ErrorEvent& ev) { rec.errors.push_back(ev); });
    e->start();
    return *e;
  }

  Elector& at(std::size_t i) { return *electors_.at(i); }

  /// Elector i's metrics, gathered on `io` (the blocking metrics() would wait
  /// for the thread that runs `io`: this one).
  Metrics metrics(std::size_t i) {
    std::optional<Metrics> out;
    at(i).async_metrics([&](Metrics m) { out = std::move(m); });
    EXPECT_TRUE(run_until(io, [&] { return out.has_value(); }, std::chrono::seconds(2)));
    return out.value_or(Metrics{});
  }
  RecordedEvents& events(std::size_t i) { return *events_.at(i); }
  std::size_t size() const { return electors_.size(); }
  /// Every error event so far, a line each ("<elector> [<group>]: <message>"),
  /// for failure messages.
  std::string errors() {
    std::string out;
    for (std::size_t i = 0; i < size(); ++i) {
      for (const auto& e : events(i).errors) {
        out += std::to_string(i) + " [" + e.group + "]: " + e.error.message() + "\n";
      }
    }
    return out;
  }

  /// Destroys elector i without a graceful stop: its leases stay in Redis
  /// until they expire, as after a crash.
  void crash(std::size_t i) { electors_.at(i).reset(); }

  /// Indices of the electors that consider themselves leader of `group` now.
  std::vector<std::size_t> leaders(std::string_view group = "default") const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < electors_.size(); ++i) {
      if (electors_[i] && electors_[i]->is_leader(group)) out.push_back(i);
    }
    return out;
  }

  /// True while elector i leads every group of `groups`.
  bool leads_every(std::size_t i, const std::vector<std::string>& groups) const {
    for (const auto& g : groups) {
      if (!electors_.at(i) || !electors_[i]->is_leader(g)) return false;
    }
    return true;
  }

  /// True once elector i leads `group` and its elected event was delivered
  /// (events are posted, so is_leader() can turn true before the callback).
  bool leading_with_event(std::size_t i, std::string_view group = "default") {
    if (!electors_.at(i) || !electors_[i]->is_leader(group)) return false;
    // The last event of this group (events of other groups may follow it).
    const auto& seq = events_.at(i)->sequence;
    const std::string elected = "elected " + std::string(group);
    const std::string revoked = "revoked " + std::string(group);
    for (auto it = seq.rbegin(); it != seq.rend(); ++it) {
      if (*it == elected) return true;
      if (*it == revoked) return false;
    }
    return false;
  }

  /// Runs until elector i leads `group` with its elected event delivered.
  bool wait_leading(std::size_t i, std::string_view group = "default",
                    std::chrono::milliseconds bound = std::chrono::seconds(10)) {
    return run_until(io, [&] { return leading_with_event(i, group); }, bound);
  }

  /// Runs until exactly one elector leads `group` (with its elected event
  /// delivered); returns its index.
  std::optional<std::size_t> wait_single_leader(std::string_view group = "default",
                                                std::chrono::milliseconds bound = std::chrono::seconds(10)) {
    const bool found = run_until(io, [&] {
      const auto l = leaders(group);
      return l.size() == 1 && leading_with_event(l.front(), group);
    }, bound);
    if (!found) return std::nullopt;
    return leaders(group).front();
  }

  /// Runs for `duration`, failing (returning false) if two electors ever
  /// lead `group` at the same sampled instant.
  bool run_checking_single_leader(std::chrono::milliseconds duration, std::string_view group = "default") {
    bool ok = true;
    const auto deadline = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < deadline) {
      step(io);
      if (leaders(group).size() > 1) ok = false;
    }
    return ok;
  }

  /// Stops every elector that is still alive (bounded) and drains callbacks.
  void stop_all() {
    std::size_t pending = 0;
    for (auto& e : electors_) {
      if (!e) continue;
      ++pending;
      e->stop([&pending](error_code) { --pending; });
    }
    run_until(io, [&] { return pending == 0; }, std::chrono::seconds(10));
    run_for(io, std::chrono::milliseconds(20));
  }

  ~Fleet() {
    stop_all();
    electors_.clear();
  }

 private:
  RedisOptions redis_;
  std::vector<std::unique_ptr<Elector>> electors_;
  std::vector<std::unique_ptr<RecordedEvents>> events_;
};

/// Every term any elector of `fleet` won had a token of its own.
inline void expect_distinct_tokens(Fleet& fleet) {
  std::set<std::int64_t> tokens;
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    for (const auto& elected : fleet.events(i).elected) {
      EXPECT_TRUE(tokens.insert(elected.token).second) << "token " << elected.token << " handed out twice";
    }
  }
}

/// Runs a fleet through a failover staged by the test: until `done` (polled
/// at most every 100 ms, since it may ask Redis) or `bound`, recording
/// whether two electors ever led `group` at the same step of the loop.
class OverlapWatch {
 public:
  explicit OverlapWatch(Fleet& fleet, std::string group = "default") : fleet_(fleet), group_(std::move(group)) {}

  bool until(const std::function<bool()>& done, std::chrono::milliseconds bound) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    auto next_poll = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() < deadline) {
      fleet_.io.run_for(std::chrono::milliseconds(5));
      if (fleet_.leaders(group_).size() > 1) overlap = true;
      if (std::chrono::steady_clock::now() >= next_poll) {
        if (done()) return true;
        next_poll = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
      }
    }
    return false;
  }

  bool overlap = false;  ///< two electors led at once at some step

 private:
  Fleet& fleet_;
  std::string group_;
};

}  // namespace leasehold::test
