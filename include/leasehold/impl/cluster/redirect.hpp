#pragma once
// What a Redis Cluster's error replies ask of a client, without I/O: reading
// MOVED, ASK, TRYAGAIN and CLUSTERDOWN replies, and the per-command budget
// that says what to do next (resend where, with ASKING or not, refresh the
// slot map or not, after which delay) and when to give up. The transport
// wires these to connections; time is passed in.
//
// The reply forms, as Redis 7 writes them (cluster.c, clusterRedirectClient):
//   MOVED <slot> <endpoint>:<port>     the slot is served by that node
//   ASK <slot> <endpoint>:<port>       this key is being imported there: send
//                                      ASKING and the command, once
//   TRYAGAIN Multiple keys request during rehashing of slot
//                                      a multi-key command whose keys are split
//                                      by a migration (also "Slot is being
//                                      trimmed" in later versions)
//   CLUSTERDOWN The cluster is down    no quorum, or a failed shard
//   CLUSTERDOWN Hash slot not served   the slot has no master
//   CLUSTERDOWN The cluster is down and only accepts read commands
// The endpoint is what cluster-preferred-endpoint-type selects: an IP
// address (an IPv6 one without brackets: "MOVED 3999 ::1:7000"), a host
// name, "?" (hostname preferred but the node announced none) or empty
// ("MOVED 3999 :7000", unknown-endpoint: the host of the node that answered).
// The port is the one for the asking connection's kind (TLS or not).

#include <leasehold/impl/cluster/slot_map.hpp>

#include <leasehold/error.hpp>
#include <leasehold/redis_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace leasehold::cluster::detail {

/// Where a MOVED or ASK reply points.
struct RedirectTarget {
  enum class Host : std::uint8_t {
    named,      ///< `host` names the node (an address or a host name)
    same_node,  ///< empty endpoint: the host of the node that answered, at `port`
    unknown,    ///< "?": the node has no endpoint the client can use; only the slot map can tell
  };
  Host kind = Host::named;
  std::string host;  ///< for named only; an IPv6 address without brackets
  std::uint16_t port = 0;

  /// The node to send to, given the host of the node that answered; nullopt
  /// for unknown (or same_node with an empty answering_host).
  std::optional<ClusterNode> resolve(std::string_view answering_host) const;
  /// "host:port" ("[::1]:7000"), ":port" for same_node, "?:port" for unknown.
  std::string to_string() const;
  friend bool operator==(const RedirectTarget&, const RedirectTarget&) = default;
};

/// An error reply as a cluster client reads it.
struct ClusterError {
  enum class Kind : std::uint8_t {
    moved,         ///< MOVED: `slot` is served by `target`
    ask,           ///< ASK: `slot` is being imported by `target`
    try_again,     ///< TRYAGAIN: resend later, to the same node
    cluster_down,  ///< CLUSTERDOWN: resend later; the slot map may be changing
    malformed,     ///< begins with MOVED or ASK but cannot be read (no slot, slot >= 16384, no port...)
    other,         ///< any other error: the command's answer, not the cluster's
  };
  Kind kind = Kind::other;
  std::uint16_t slot = 0;  ///< moved and ask
  RedirectTarget target;   ///< moved and ask

  friend bool operator==(const ClusterError&, const ClusterError&) = default;
};

/// Reads an error reply's text as Reply::str holds it (no leading '-'). The
/// first word decides (case-sensitive, as Redis writes it); MOVED and ASK
/// must be exactly "<word> <slot> <endpoint>:<port>", the port after the
/// last ':' (so an unbracketed IPv6 address reads right); a bracketed host
/// ("[::1]:7000") is accepted too.
ClusterError read_cluster_error(std::string_view text);

/// "moved", "ask", "try_again", "cluster_down", "malformed", "other".
std::string_view to_string(ClusterError::Kind kind) noexcept;

/// The bounds one command's redirections and retries stay within.
struct RedirectLimits {
  int max_redirects = 5;                     ///< MOVED and ASK replies followed; then give up
  std::chrono::milliseconds backoff_min{10};  ///< first TRYAGAIN/CLUSTERDOWN wait; doubles per retry
  std::chrono::milliseconds backoff_max{200};  ///< cap on that wait
  std::chrono::milliseconds retry_timeout{1000};  ///< from the first send: no retry past it

  /// ClusterOptions' max_redirects, retry_backoff_min/max and retry_timeout.
  static RedirectLimits from(const ClusterOptions& options);
};

/// What the caller does after an error reply to a command.
struct RedirectStep {
  enum class Action : std::uint8_t {
    deliver,  ///< not the cluster's business: the reply is the command's answer
    resend,   ///< send the command again as the other fields say
    give_up,  ///< fail the command with `error`
  };
  Action action = Action::deliver;
  ClusterError::Kind cause = ClusterError::Kind::other;  ///< the reply's kind, for counters and logs
  std::uint16_t slot = 0;  ///< moved and ask: the slot the reply named
  /// resend: ask the cluster for a new slot map (after MOVED, and after
  /// CLUSTERDOWN, when a failover may be changing it). A transport keeps
  /// one refresh in flight however many commands ask.
  bool refresh_map = false;
  /// resend: send ASKING first, on the same connection, right before the
  /// command (ASKING covers the next command only).
  bool asking = false;
  /// resend: the node to send to; nullopt: the slot's master per the slot
  /// map (the refreshed one when refresh_map), as for a first send.
  std::optional<ClusterNode> node;
  /// resend: wait this long first (0 for MOVED and ASK).
  std::chrono::milliseconds delay{0};
  /// give_up: why (the last reply's text in the detail).
  Error error;
};

/// One command's redirections and retries: feed it each error reply the
/// command gets (with the host of the node that sent it and the time); it
/// says what to do next.
///
/// - MOVED: resend to the named node and refresh the slot map; counts as a
///   redirection.
/// - ASK: resend ASKING plus the command to the named node, once, with no
///   map change; counts as a redirection. (An ASK naming "?" cannot be
///   followed: the step refreshes the map and resends where it says.)
/// - TRYAGAIN: resend to the same node as the last send (with ASKING again
///   when that send followed an ASK, so that a split multi-key command
///   during a migration does not bounce through the old master each time)
///   after a backoff that doubles from backoff_min up to backoff_max.
/// - CLUSTERDOWN: the same backoff, resend where the (refreshed) map says.
/// - Neither retry counts as a redirection, but none is scheduled past
///   retry_timeout from the command's first send: a retry's delay is cut to
///   end there, and a TRYAGAIN or CLUSTERDOWN at or after it gives up.
/// - A redirection beyond max_redirects gives up; a malformed MOVED or ASK
///   gives up at once (errc::unexpected_reply); any other error is delivered.
///
/// Giving up reports errc::server_error (the server's cluster errors have
/// no code of their own) with the last reply and the count in the detail.
class RedirectBudget {
 public:
  using Clock = std::chrono::steady_clock;

  /// A command first sent at `first_send`.
  RedirectBudget(const RedirectLimits& limits, Clock::time_point first_send);

  /// The command got the error reply `text` from a node whose host is
  /// `answering_host` (for MOVED/ASK with an empty endpoint) at `now`.
  RedirectStep on_error(std::string_view text, std::string_view answering_host, Clock::time_point now);

  /// MOVED and ASK replies followed so far.
  int redirects() const noexcept { return redirects_; }
  /// TRYAGAIN and CLUSTERDOWN retries scheduled so far.
  int retries() const noexcept { return retries_; }
  /// No retry is scheduled past this instant.
  Clock::time_point retry_deadline() const noexcept { return deadline_; }
  /// Keeps retrying until `until` when that is later than retry_timeout
  /// allows: a lease renewal may wait out a migration until its lease runs
  /// out, since only a success extends the lease.
  void retry_until(Clock::time_point until) noexcept { deadline_ = std::max(deadline_, until); }

 private:
  RedirectStep redirect(const ClusterError& reply, std::string_view text, std::string_view answering_host);
  RedirectStep retry(const ClusterError& reply, std::string_view text, Clock::time_point now);
  RedirectStep give_up(ClusterError::Kind cause, errc code, std::string detail) const;

  RedirectLimits limits_;
  Clock::time_point first_send_;
  Clock::time_point deadline_;
  int redirects_ = 0;
  int retries_ = 0;
  // Where the last resend went: a TRYAGAIN goes back there.
  std::optional<ClusterNode> last_node_;
  bool last_asking_ = false;
};

}  // namespace leasehold::cluster::detail
