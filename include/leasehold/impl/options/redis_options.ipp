// RedisOptions: validation and a log-safe rendering (the URL parser is
// url_parser.ipp).

#include <leasehold/redis_options.hpp>

#include <leasehold/impl/options/url_outline.hpp>

#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>

namespace leasehold {
namespace {

namespace urls = boost::urls;
using namespace std::chrono_literals;
using detail::url::npos;
using detail::url::quote;

// ---------------------------------------------------------------------------
// Validation and rendering helpers

[[noreturn]] void invalid_field(const std::string& problem) {
  throw std::invalid_argument("RedisOptions." + problem);
}

std::string millis(std::chrono::milliseconds value) {
  return std::to_string(value.count()) + " ms";
}

// Redis's CLIENT SETNAME accepts only '!'..'~': no spaces, no control
// characters, nothing outside ASCII.
bool is_valid_client_name(std::string_view name) {
  return std::all_of(name.begin(), name.end(), [](char c) { return c >= '!' && c <= '~'; });
}

std::string host_for_url(std::string_view host) {
  if (host.find(':') == npos) return std::string(host);
  // IPv6: bracketed, with the zone's '%' encoded as RFC 6874 asks.
  std::string out = "[";
  for (char c : host) {
    if (c == '%') {
      out += "%25";
    } else {
      out += c;
    }
  }
  return out + ']';
}

}  // namespace

namespace {

void validate_tls_files(const TlsOptions& tls, std::string_view field) {
  if (!tls.cert_file.empty() && tls.key_file.empty()) {
    invalid_field(std::string(field) + ".cert_file is set but " + std::string(field) + ".key_file is empty");
  }
  if (tls.cert_file.empty() && !tls.key_file.empty()) {
    invalid_field(std::string(field) + ".key_file is set but " + std::string(field) + ".cert_file is empty");
  }
}

void validate_sentinel(const SentinelOptions& sentinel) {
  if (sentinel.master_name.empty()) invalid_field("sentinel.master_name is empty");
  if (!is_valid_client_name(sentinel.master_name)) {
    invalid_field("sentinel.master_name " + quote(sentinel.master_name) +
                  " may contain only printable ASCII characters other than space");
  }
  if (sentinel.sentinels.empty()) invalid_field("sentinel.sentinels is empty (give at least one sentinel)");
  for (std::size_t i = 0; i < sentinel.sentinels.size(); ++i) {
    const auto& address = sentinel.sentinels[i];
    const auto field = "sentinel.sentinels[" + std::to_string(i) + "]";
    if (address.host.empty()) invalid_field(field + ".host is empty");
    if (address.port == 0) invalid_field(field + ".port must be in 1-65535, got 0");
  }
  if (sentinel.query_timeout <= 0ms) {
    invalid_field("sentinel.query_timeout must be > 0, got " + millis(sentinel.query_timeout));
  }
  if (!sentinel.username.empty() && sentinel.password.empty()) {
    invalid_field("sentinel.username is set but sentinel.password is empty");
  }
  validate_tls_files(sentinel.tls, "sentinel.tls");
}

void validate_cluster(const ClusterOptions& cluster) {
  if (cluster.seeds.empty()) invalid_field("cluster.seeds is empty (give at least one seed node)");
  for (std::size_t i = 0; i < cluster.seeds.size(); ++i) {
    const auto& address = cluster.seeds[i];
    const auto field = "cluster.seeds[" + std::to_string(i) + "]";
    if (address.host.empty()) invalid_field(field + ".host is empty");
    if (address.port == 0) invalid_field(field + ".port must be in 1-65535, got 0");
  }
  if (cluster.max_redirects < 1) {
    invalid_field("cluster.max_redirects must be >= 1, got " + std::to_string(cluster.max_redirects));
  }
  if (cluster.refresh_interval < 0ms) {
    invalid_field("cluster.refresh_interval must be >= 0 (0 disables it), got " +
                  millis(cluster.refresh_interval));
  }
  if (cluster.retry_backoff_min <= 0ms) {
    invalid_field("cluster.retry_backoff_min must be > 0, got " + millis(cluster.retry_backoff_min));
  }
  if (cluster.retry_backoff_max < cluster.retry_backoff_min) {
    invalid_field("cluster.retry_backoff_max (" + millis(cluster.retry_backoff_max) +
                  ") must be >= cluster.retry_backoff_min (" + millis(cluster.retry_backoff_min) + ")");
  }
  if (cluster.retry_timeout < 0ms) {
    invalid_field("cluster.retry_timeout must be >= 0, got " + millis(cluster.retry_timeout));
  }
}

}  // namespace

void RedisOptions::validate() const {
  if (sentinel && cluster) invalid_field("sentinel and cluster cannot both be set");
  if (cluster) {
    if (!unix_socket.empty()) invalid_field("unix_socket cannot be combined with cluster");
    if (database != 0) {
      invalid_field("database must be 0 with cluster (Redis Cluster has only database 0), got " +
                    std::to_string(database));
    }
    validate_cluster(*cluster);
    if (key_layout == KeyLayout::Form::plain) {
      invalid_field("key_layout plain cannot be used with cluster: a Redis Cluster needs the hash_tagged layout, "
                    "which keeps each group's keys in one slot");
    }
  } else if (sentinel) {
    if (!unix_socket.empty()) invalid_field("unix_socket cannot be combined with sentinel");
    validate_sentinel(*sentinel);
  } else if (unix_socket.empty()) {
    if (host.empty()) invalid_field("host is empty and no unix_socket is set");
    if (port == 0) invalid_field("port must be in 1-65535, got 0");
  }
  if (database < 0) invalid_field("database must be >= 0, got " + std::to_string(database));
  if (connect_timeout <= 0ms) {
    invalid_field("connect_timeout must be > 0, got " + millis(connect_timeout));
  }
  if (command_timeout <= 0ms) {
    invalid_field("command_timeout must be > 0, got " + millis(command_timeout));
  }
  if (reconnect_min <= 0ms) {
    invalid_field("reconnect_min must be > 0, got " + millis(reconnect_min));
  }
  if (reconnect_max < reconnect_min) {
    invalid_field("reconnect_max (" + millis(reconnect_max) + ") must be >= reconnect_min (" +
                  millis(reconnect_min) + ")");
  }
  if (health_check_interval < 0ms) {
    invalid_field("health_check_interval must be >= 0 (0 disables it), got " +
                  millis(health_check_interval));
  }
  if (!is_valid_client_name(client_name)) {
    invalid_field(
        "client_name may contain only printable ASCII characters other than space "
        "(CLIENT SETNAME rejects the rest)");
  }
  if (tls.enabled && !unix_socket.empty()) {
    invalid_field("tls cannot be enabled together with unix_socket");
  }
  validate_tls_files(tls, "tls");
}

std::string RedisOptions::to_string() const {
  std::string out;
  if (cluster) {
    out = tls.enabled ? "rediss-cluster://" : "redis-cluster://";
  } else if (sentinel) {
    out = tls.enabled ? "rediss-sentinel://" : "redis-sentinel://";
  } else if (!unix_socket.empty()) {
    out = "unix://";
  } else {
    out = tls.enabled ? "rediss://" : "redis://";
  }
  if (!password.empty()) {
    out += urls::encode(username, urls::unreserved_chars) + ":***@";
  } else if (!username.empty()) {
    out += urls::encode(username, urls::unreserved_chars) + '@';
  }
  if (!unix_socket.empty()) {
    out += urls::encode(unix_socket, urls::unreserved_chars + '/');
    if (database != 0) out += "?db=" + std::to_string(database);
    return out;
  }
  if (cluster) {
    // No database: Redis Cluster has only database 0.
    for (const auto& seed : cluster->seeds) {
      if (&seed != &cluster->seeds.front()) out += ',';
      out += host_for_url(seed.host) + ':' + std::to_string(seed.port);
    }
    return out;
  }
  if (sentinel) {
    for (const auto& address : sentinel->sentinels) {
      if (&address != &sentinel->sentinels.front()) out += ',';
      out += host_for_url(address.host) + ':' + std::to_string(address.port);
    }
    out += '/' + std::to_string(database) + '#' + urls::encode(sentinel->master_name, urls::unreserved_chars);
    return out;
  }
  out += host_for_url(host) + ':' + std::to_string(port) + '/' + std::to_string(database);
  return out;
}

}  // namespace leasehold
