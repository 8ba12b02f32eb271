#pragma once
// Where and how to reach Redis. Build one by hand or with from_url().
// validate() runs when a Client or Elector is constructed; a bad value throws
// std::invalid_argument naming the field. docs/configuration.md gives the
// tuning advice.

#include <leasehold/key_layout.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold {

/// TLS for the connection (rediss://). Needs a build with LEASEHOLD_TLS.
struct TlsOptions {
  bool enabled = false;         ///< not together with RedisOptions::unix_socket
  std::string ca_file{};        ///< PEM bundle to verify the server with; empty: system default paths
  std::string cert_file{};      ///< client certificate (PEM), for mutual TLS; needs key_file
  std::string key_file{};       ///< client private key (PEM); needs cert_file
  std::string server_name{};    ///< SNI and verification name; empty: the host
  bool verify_peer = true;      ///< never turn off in production
};

/// One sentinel's address.
struct SentinelAddress {
  std::string host{};          ///< name or address; not empty
  std::uint16_t port = 26379;  ///< 1-65535
};

/// A master found through Redis Sentinel instead of a fixed address
/// (redis-sentinel:// URLs). Before every connection the client asks the
/// sentinels in turn for the master's address (the one that answered moves
/// to the front), connects, and checks with ROLE that the server is a master;
/// a READONLY reply or a +switch-master announcement makes it resolve again.
/// RedisOptions' credentials, database and TLS apply to the data nodes; the
/// sentinels have their own here.
struct SentinelOptions {
  std::string master_name{};              ///< the name the sentinels monitor; printable ASCII, no spaces
  std::vector<SentinelAddress> sentinels{};  ///< at least one
  std::string username{};                 ///< the sentinels' ACL user; empty: the default user
  std::string password{};                 ///< the sentinels' password; empty: no AUTH
  TlsOptions tls{};                       ///< TLS to the sentinels (rediss-sentinel:// enables it)
  /// Bound on asking one sentinel (connect, AUTH, the query), so that a dead
  /// sentinel costs this much before the next one is asked. > 0.
  std::chrono::milliseconds query_timeout{500};
  /// Subscribe to +switch-master on every sentinel and reconnect at the
  /// first announcement that the master changed, instead of when the old
  /// master fails. The announced
  /// address is resolved and checked like any other.
  bool follow_switch_master = true;
};

/// One seed node of a Redis Cluster: any node, master or replica, that the
/// client may ask for the slot map.
struct ClusterNodeAddress {
  std::string host{};         ///< name or address; not empty
  std::uint16_t port = 6379;  ///< 1-65535
};

/// A Redis Cluster (redis-cluster:// URLs): the seed nodes to read the slot
/// map from, and the bounds on following the cluster's redirections.
/// RedisOptions' credentials, TLS, client name and timeouts apply to every
/// node; its host, port, unix_socket and database are not used (Redis
/// Cluster has only database 0).
///
/// An Elector given them campaigns on the cluster (docs/cluster.md); a
/// redis::Client talks to one server and refuses them.
struct ClusterOptions {
  /// Where to ask for the slot map (CLUSTER SHARDS); at least one. Two or
  /// three from different shards survive a seed that is down.
  std::vector<ClusterNodeAddress> seeds{};
  /// MOVED and ASK redirections followed for one command before it fails;
  /// at least 1. A slot migration costs a command one or two.
  int max_redirects = 5;
  /// Period of the slot map refresh that runs even when no MOVED asks for
  /// one (it finds new nodes and failovers early); 0 disables it. At least 0.
  std::chrono::milliseconds refresh_interval{10000};
  /// First wait before resending a command that got TRYAGAIN (a multi-key
  /// command during a slot migration) or CLUSTERDOWN (a shard without a
  /// master, as during a failover); it doubles with each retry. > 0.
  std::chrono::milliseconds retry_backoff_min{10};
  /// Cap on that wait; >= retry_backoff_min.
  std::chrono::milliseconds retry_backoff_max{200};
  /// How long one command keeps retrying through TRYAGAIN and CLUSTERDOWN,
  /// counted from its first send; then it fails with the last reply. 0: it
  /// fails at the first one. At least 0; keep retry_timeout +
  /// command_timeout below ttl - drift_margin - clock_skew -
  /// heartbeat_interval, as for command_timeout alone.
  std::chrono::milliseconds retry_timeout{1000};
  /// Renew the groups of all the slots a node serves in one script (Redis
  /// 7.0 and later: its allow-cross-slot-keys flag). A node that refuses the
  /// script is sent one script per slot from then on, without this; set it
  /// false for a proxy or service that mishandles such scripts.
  bool cross_slot_renewals = true;
};

/// Where Redis is (TCP host and port, or a unix socket), how to log in, TLS,
/// and the connection's timeouts and reconnect backoff. Aggregate: set
/// fields directly or parse a URL with from_url().
struct RedisOptions {
  std::string host = "127.0.0.1";  ///< name or address; must not be empty without unix_socket
  std::uint16_t port = 6379;       ///< 1-65535
  std::string unix_socket{};    ///< when set, host and port are ignored
  int database = 0;             ///< SELECTed on connect when not 0; at least 0
  std::string username{};       ///< ACL user; empty: the default user
  std::string password{};       ///< never printed by to_string(), logs or errors
  TlsOptions tls{};             ///< TLS settings; off unless tls.enabled (or a rediss:// URL)
  /// When set, the master is found through these sentinels and host, port
  /// and unix_socket are not used (unix_socket must stay empty).
  std::optional<SentinelOptions> sentinel{};
  /// When set, Redis is a Redis Cluster reached through these seed nodes;
  /// host, port and unix_socket are not used (unix_socket must stay empty,
  /// database 0, sentinel unset). See ClusterOptions.
  std::optional<ClusterOptions> cluster{};
  /// How a group's keys are named (KeyLayout::Form). Unset: hash_tagged on
  /// a Redis Cluster, plain elsewhere. Set hash_tagged on one endpoint that
  /// shards the keyspace behind it (Azure Managed Redis, ElastiCache
  /// Serverless, a Redis Enterprise proxy), which answers CROSSSLOT to the
  /// plain layout; group names may then not contain '{' or '}'. plain is
  /// refused with cluster. The two layouts name different keys: every
  /// instance of a fleet and the CLI must use the same one, and a fleet
  /// that changes layout moves its fencing counters first
  /// (`leasehold migrate-tokens`, docs/migration.md).
  std::optional<KeyLayout::Form> key_layout{};
  /// CLIENT SETNAME (the subscriber connection appends "-sub"); printable
  /// ASCII without spaces; empty: skip.
  std::string client_name = "leasehold";
  /// A request/response connection to one server (not a sentinel's, whose
  /// rule is stricter, nor a cluster node's) asks ROLE after connecting and
  /// leaves a server that says it is a replica, to connect again and resolve
  /// the host name anew: a managed endpoint whose name moves to the promoted
  /// replica on failover is followed. A server that refuses ROLE (NOPERM,
  /// unknown command) is used unchecked. false: use whichever server the
  /// address names, a replica included (READONLY replies still reconnect).
  bool require_primary = true;

  /// Bound on one connection attempt (resolve, connect, TLS, handshake). > 0.
  std::chrono::milliseconds connect_timeout{2000};
  /// Bound on each reply; on expiry the connection is reset, since the
  /// command's outcome is unknown. > 0; keep it below
  /// ttl - drift_margin - clock_skew - heartbeat_interval.
  std::chrono::milliseconds command_timeout{1000};
  std::chrono::milliseconds reconnect_min{50};      ///< first reconnect delay; > 0
  std::chrono::milliseconds reconnect_max{2000};    ///< backoff cap; >= reconnect_min
  std::chrono::milliseconds health_check_interval{1000};  ///< idle PING period; 0 disables

  /// Parses redis://[user[:password]@]host[:port][/db][?options],
  /// rediss://... (TLS), unix:///path[?db=N&options] and
  /// redis-sentinel://[user:password@]host1[:port1][,host2[:port2]...][/db][?options]\#master
  /// (rediss-sentinel:// for TLS; sentinel ports default to 26379) and
  /// redis-cluster://[user:password@]host1[:port1][,host2[:port2]...][?options]
  /// (rediss-cluster:// for TLS; seed ports default to 6379; no database
  /// but "/0": Redis Cluster has only database 0).
  /// Query options: connect_timeout, command_timeout (milliseconds),
  /// client_name, and for rediss: ca_file, cert_file, key_file, server_name,
  /// verify (true|false); for unix: db, user, password (or
  /// unix://user:password@/path); for Sentinel: sentinel_user,
  /// sentinel_password, sentinel_timeout (ms), sentinel_follow (true|false)
  /// and sentinel_tls, sentinel_ca_file, sentinel_cert_file, sentinel_key_file,
  /// sentinel_server_name, sentinel_verify (default: as the data nodes');
  /// for Cluster: max_redirects, refresh_interval, retry_backoff_min,
  /// retry_backoff_max, retry_timeout (milliseconds), cross_slot_renewals
  /// (true|false; ClusterOptions' fields); for every scheme: key_layout
  /// (plain|hash_tagged).
  /// IPv6 hosts go in brackets ([::1]).
  /// Credentials end at the last '@' and are percent-decoded, as are the
  /// socket path and option values; ":password@" gives a password alone.
  /// Throws std::invalid_argument naming the URL (with any password masked)
  /// and what is wrong with it.
  static RedisOptions from_url(std::string_view url);

  /// Throws std::invalid_argument naming the first bad field.
  void validate() const;

  /// The layout in effect: key_layout, or the topology's default.
  KeyLayout::Form effective_key_layout() const noexcept {
    if (key_layout) return *key_layout;
    return cluster ? KeyLayout::Form::hash_tagged : KeyLayout::Form::plain;
  }

  /// The endpoint in URL form, password masked as "***". Safe to log.
  std::string to_string() const;
};

}  // namespace leasehold
