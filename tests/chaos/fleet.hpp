#pragma once
// A fleet of leasehold_member processes, one per slot: spawned, killed and
// respawned (with the same or a new instance id), frozen and thawed, told to
// step down through a command pipe on their stdin, and finally stopped with
// SIGTERM. It remembers every process it ever ran, so that the checker can
// read all their output files afterwards.

#include "chaos/checker.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace leasehold::test {
class AdminClient;
}

namespace leasehold::chaos {

/// steady_clock::now() in the checker's unit.
Nanos now_ns();

struct FleetOptions {
  std::string member_binary;        ///< path of leasehold_member
  std::string dir;                  ///< output files go here (must exist)
  std::vector<std::string> groups;  ///< besides "default", which every member also runs
  std::chrono::milliseconds ttl{1000};
  std::chrono::milliseconds retry{250};
  int confirm_replicas = 0;  ///< ElectorOptions::confirm_replicas (0: off)
  std::chrono::milliseconds confirm_timeout{100};
};

class MemberFleet {
 public:
  explicit MemberFleet(FleetOptions options);
  /// SIGKILLs whatever still runs.
  ~MemberFleet();

  MemberFleet(const MemberFleet&) = delete;
  MemberFleet& operator=(const MemberFleet&) = delete;

  /// Adds a slot whose processes connect to `url`, and starts its first one.
  std::size_t add(std::string url);
  std::size_t size() const noexcept { return slots_.size(); }
  const std::string& id(std::size_t slot) const;
  /// The slot whose current process runs with this instance id.
  std::optional<std::size_t> slot_of(const std::string& id) const;

  /// SIGKILL and reap; returns the instant the process was known dead.
  Nanos kill(std::size_t slot);
  /// Starts a new process in the slot (after kill()), with a new id or the old one.
  void respawn(std::size_t slot, bool new_id);
  void freeze(std::size_t slot);  ///< SIGSTOP
  void thaw(std::size_t slot);    ///< SIGCONT
  void step_down(std::size_t slot, const std::string& group);

  /// Sleeps for `duration` while watching for crashes (see crashes()).
  void wait(std::chrono::milliseconds duration);
  /// Waits (as wait()) until every group's lease has a holder, at most
  /// `bound`; then 100 ms more, so that every claim has begun.
  bool wait_until_led(test::AdminClient& admin, std::chrono::milliseconds bound);
  /// The same, with the holders read by `holders` (see holders() below).
  bool wait_until_led(const std::function<std::vector<std::string>(const std::vector<std::string>&)>& holders,
                      std::chrono::milliseconds bound);
  /// Processes that exited although nobody killed or stopped them
  /// ("m2-0 (p5-m2-0.out): killed by signal 11"), as seen by wait(); their
  /// slots were respawned with the same id, so the fleet keeps its size.
  const std::vector<std::string>& crashes() const noexcept { return crashes_; }

  /// SIGTERM to every process, then waits up to `bound` for each to exit.
  /// Returns one line per process that did not exit 0 in time (those are
  /// SIGKILLed).
  std::vector<std::string> stop_all(std::chrono::milliseconds bound);

  /// Every process's output, parsed, with dead_at set for the killed ones.
  std::vector<RunLog> load_runs() const;

  /// Every group a member campaigns for ("default" first).
  std::vector<std::string> all_groups() const;

 private:
  struct Member;
  struct Slot {
    std::string url;
    std::string id;
    unsigned generation = 0;
    std::shared_ptr<Member> current;
  };

  void spawn(std::size_t slot);
  void reap_crashed();

  FleetOptions options_;
  std::vector<Slot> slots_;
  std::vector<std::shared_ptr<Member>> history_;  // every process, in spawn order
  std::vector<std::string> crashes_;
};

/// A fresh directory under $TMPDIR (or /tmp) named <prefix>XXXXXX.
std::string make_temp_dir(const std::string& prefix);

/// The current holder's id of each group's lease ("" when free), read with
/// GET leader:<group>; empty if Redis does not answer.
std::vector<std::string> holders(test::AdminClient& admin, const std::vector<std::string>& groups);

}  // namespace leasehold::chaos
