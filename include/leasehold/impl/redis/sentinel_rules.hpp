#pragma once
// What the Sentinel client spec asks of a client, without I/O: which sentinel
// to ask next, what a sentinel's answer means, what a round of answers adds up
// to, what a +switch-master announcement says and whether ROLE names a master.
// The resolver and the client wire these to sockets.

#include <leasehold/error.hpp>
#include <leasehold/redis/reply.hpp>
#include <leasehold/redis_options.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::redis::detail {

/// A master's address as a sentinel gives it.
struct MasterAddress {
  std::string host;
  std::uint16_t port = 0;

  std::string to_string() const;
  friend bool operator==(const MasterAddress&, const MasterAddress&) = default;
};

/// What one sentinel said when asked for the master.
struct SentinelAnswer {
  enum class Kind : std::uint8_t {
    address,  ///< it named the master
    null,     ///< it knows no master by that name
    failed,   ///< it could not be asked (error says why)
  };
  Kind kind = Kind::failed;
  MasterAddress address;
  Error error;
};

/// The reply to SENTINEL GET-MASTER-ADDR-BY-NAME: [host, port], or nil.
SentinelAnswer read_master_reply(const Reply& reply);

/// The order in which the sentinels are asked: the configured one, except
/// that the last sentinel to answer moves to the front (the spec's rule, so
/// that a dead sentinel is not asked first every time).
class SentinelRoster {
 public:
  explicit SentinelRoster(const std::vector<SentinelAddress>& sentinels);
  std::size_t size() const noexcept { return order_.size(); }
  /// The k-th sentinel to ask this round.
  const SentinelAddress& at(std::size_t k) const { return order_[k]; }
  /// The k-th sentinel answered: it goes first from now on.
  void answered(std::size_t k);
  /// The first sentinel named a server that is not a master (stale, or
  /// lying): it goes last, so that the next round asks the others first.
  void distrust_first();

 private:
  std::vector<SentinelAddress> order_;
};

/// The answers of one round, for the error when no sentinel named a master:
/// master_unknown when every sentinel that answered said nil; otherwise the
/// code all the failures share (auth_failed for a wrong sentinel password
/// everywhere) or sentinel_unreachable. The detail names each sentinel.
class ResolveRound {
 public:
  explicit ResolveRound(std::string master_name) : master_name_(std::move(master_name)) {}
  void add(const SentinelAddress& sentinel, const SentinelAnswer& answer);
  Error outcome() const;

 private:
  std::string master_name_;
  std::vector<std::string> nulls_;     // sentinels that answered nil
  std::vector<std::string> failures_;  // "host:port: reason"
  std::optional<error_code> shared_failure_;
  bool mixed_failures_ = false;
};

/// The new address in a +switch-master message
/// ("<name> <old-ip> <old-port> <new-ip> <new-port>") when it is about
/// `master_name`; nullopt for another master or a malformed message.
std::optional<MasterAddress> parse_switch_master(std::string_view payload, std::string_view master_name);

/// Judges the reply to ROLE: empty when it names a master, else not_master
/// (or unexpected_reply) saying what the server is.
Error check_role(const Reply& reply);

/// Options for talking to one sentinel: its address, the sentinels'
/// credentials and TLS, `base`'s timeouts (the connect timeout bounded by the
/// query timeout), database 0, no sentinel section.
RedisOptions sentinel_node_options(const RedisOptions& base, const SentinelAddress& sentinel);

}  // namespace leasehold::redis::detail
