#pragma once
// Safety and liveness verdicts from the output files of leasehold_member
// processes (format: tests/fleet/member.cpp).
//
// A process's CLAIM on a group is an interval in which is_leader(group) could
// be true there: from `at` of an `audit began` record to the earlier of the
// last deadline and `at` of the `audit ended` record; a process that was
// killed claims until its last deadline. Safety: claims of different
// instances on one group never overlap. Liveness: every leaderless gap of a
// group is explained by a disruption and ends within that disruption's bound.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::chaos {

/// steady_clock (CLOCK_MONOTONIC) nanoseconds, shared by every process on
/// the machine.
using Nanos = std::int64_t;

inline constexpr Nanos kNanosPerMs = 1'000'000;

struct Claim {
  Nanos begin = 0;
  Nanos end = 0;
  std::int64_t token = 0;
  /// No `ended` record: the process died (or its output stopped) while claiming.
  bool open_at_exit = false;
};

/// A term as an `elected` record announced it.
struct Term {
  std::int64_t token = 0;
  Nanos at = 0;
};

/// What one member process wrote, digested.
struct RunLog {
  std::string source;    ///< file name (or a label), for reports
  std::string instance;  ///< the instance id the process ran with
  /// Once the process is known to be dead (reaped after a SIGKILL). Only used
  /// to compare it with a later process of the same id (which may re-claim
  /// the same lease at once) and to measure liveness; claims against other
  /// instances always count until their deadline.
  std::optional<Nanos> dead_at;
  std::optional<Nanos> ready;
  std::optional<Nanos> stopped;
  std::map<std::string, std::vector<Claim>> claims;  ///< per group, in time order
  std::map<std::string, std::vector<Term>> terms;    ///< per group, in time order
  std::size_t elected = 0;
  std::size_t revoked = 0;
  std::size_t errors = 0;
  /// Malformed lines, audit records out of order, elected/revoked that do not
  /// alternate or whose tokens do not pair up.
  std::vector<std::string> problems;
};

/// Parses a member's output. `source` names it in problem reports.
RunLog parse_run(std::string_view text, std::string instance, std::string source = {});
/// Reads and parses a member's output file; throws std::runtime_error if it
/// cannot be read.
RunLog load_run(const std::string& path, std::string instance);

struct Overlap {
  std::string group;
  std::string first;   ///< "<instance> (<source>)" of the claim that began first
  std::string second;
  Nanos start = 0;     ///< when the second claim began
  Nanos length = 0;
};

/// Every pair of overlapping claims of different instances on one group, and
/// of two processes of the same instance while both were alive.
std::vector<Overlap> find_overlaps(const std::vector<RunLog>& runs);

/// A term whose fencing token is not greater than an earlier term's in the
/// same group: downstream fencing would let the earlier leader's writes in.
struct TokenRegression {
  std::string group;
  std::string earlier;  ///< who began the earlier term with the greatest token so far
  std::string later;
  std::int64_t earlier_token = 0;
  std::int64_t later_token = 0;
  Nanos at = 0;         ///< when the later term began
};

/// Every term, in the order they began, against the greatest token of a
/// term that began earlier in its group. An equal token of the same
/// instance is its re-claim of its own lease (under OOM the counter cannot
/// move), not a regression. Counters start over after a data loss: terms are
/// only compared with terms since the last of `data_losses` before them.
std::vector<TokenRegression> find_token_regressions(const std::vector<RunLog>& runs,
                                                    std::vector<Nanos> data_losses);

struct Gap {
  Nanos begin = 0;
  Nanos end = 0;
  Nanos length() const { return end - begin; }
};

/// For each group, the times within [from, to) when no process claims it. A
/// killed process's claim counts only until dead_at here: a dead leader leads
/// nothing, whatever its deadline said.
std::map<std::string, std::vector<Gap>> leaderless_gaps(const std::vector<RunLog>& runs,
                                                        const std::vector<std::string>& groups, Nanos from,
                                                        Nanos to);

/// Something that may leave groups leaderless for a while: one fault, or a
/// batch of faults injected together.
struct Disruption {
  std::string kind;   ///< label for reports ("kill", "redis-restart", "combined", ...)
  Nanos start = 0;    ///< just before the first fault was injected
  Nanos reference = 0;  ///< the instant the bound counts from (the heal, or the start)
  Nanos bound = 0;    ///< every group is claimed again by reference + bound
  Nanos deadline() const { return reference + bound; }
};

struct Recovery {
  std::size_t disruption = 0;  ///< index into the disruptions given
  /// Latest end of a gap attributed to it, minus its reference (0: none ended later).
  Nanos time_to_leader = 0;
  Nanos longest_gap = 0;
  std::string worst_group;
  bool ok = true;              ///< every attributed gap ended by the deadline
};

struct Liveness {
  std::vector<Recovery> recoveries;  ///< one per disruption, in the order given
  /// Gaps longer than the tolerance that began outside every disruption's
  /// window [start, deadline].
  std::vector<std::pair<std::string, Gap>> unexplained;
  bool ok() const;
};

/// Attributes each gap to the disruption whose window [start, deadline]
/// contains its beginning; such a gap must end by that deadline. A gap that
/// begins in no window must not be longer than `tolerance`.
Liveness check_liveness(const std::map<std::string, std::vector<Gap>>& gaps,
                        const std::vector<Disruption>& disruptions, Nanos tolerance);

/// Milliseconds with one decimal, for reports.
std::string format_ms(Nanos ns);

}  // namespace leasehold::chaos
