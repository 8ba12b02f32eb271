#include <leasehold/error.hpp>

#include <array>
#include <utility>

namespace leasehold {
namespace {

class Category final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "leasehold"; }

  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::timeout: return "operation timed out";
      case errc::connection_lost: return "connection to Redis lost";
      case errc::not_connected: return "not connected to Redis";
      case errc::protocol_error: return "Redis protocol error";
      case errc::auth_failed: return "Redis authentication failed";
      case errc::handshake_failed: return "Redis connection handshake failed";
      case errc::resolve_failed: return "host name resolution failed";
      case errc::tls_failed: return "TLS handshake failed";
      case errc::server_error: return "Redis returned an error";
      case errc::wrong_type: return "WRONGTYPE: lease key holds a value of the wrong type";
      case errc::no_permission: return "NOPERM: the Redis user lacks a permission";
      case errc::read_only: return "READONLY: connected to a read-only replica";
      case errc::loading: return "LOADING: Redis is loading its dataset";
      case errc::out_of_memory: return "OOM: Redis reached maxmemory";
      case errc::no_script: return "NOSCRIPT: script not in the server's cache";
      case errc::busy: return "BUSY: Redis is running a long script";
      case errc::unexpected_reply: return "unexpected reply from Redis";
      case errc::stopped: return "elector stopped";
      case errc::not_started: return "elector not started";
      case errc::invalid_argument: return "invalid argument";
      case errc::not_confirmed: return "too few replicas acknowledged the lease";
      case errc::sentinel_unreachable: return "no sentinel could be reached";
      case errc::master_unknown: return "the sentinels know no master by that name";
      case errc::not_master: return "the server is not a master (ROLE, or a READONLY reply)";
      case errc::master_changed: return "the sentinels announced a new master";
      case errc::drain_timeout: return "guarded work still ran when drain_timeout passed";
      case errc::duplicate_instance_id: return "another live process uses this instance id";
      case errc::cross_slot:
        return "CROSSSLOT: the server needs all keys of a script in one slot (a sharded server behind one "
               "endpoint); set key_layout=hash_tagged (the URL's query option, or RedisOptions::key_layout)";
    }
    return "unknown leasehold error";
  }
};

}  // namespace

const boost::system::error_category& category() noexcept {
  static const Category instance;
  return instance;
}

errc classify_server_error(std::string_view text) noexcept {
  static constexpr std::array<std::pair<std::string_view, errc>, 9> prefixes{{
      {"WRONGTYPE", errc::wrong_type},
      {"NOPERM", errc::no_permission},
      {"READONLY", errc::read_only},
      {"LOADING", errc::loading},
      {"OOM", errc::out_of_memory},
      {"NOSCRIPT", errc::no_script},
      {"BUSY", errc::busy},
      {"NOAUTH", errc::auth_failed},
      {"CROSSSLOT", errc::cross_slot},
  }};
  for (const auto& [prefix, code] : prefixes) {
    if (text.size() >= prefix.size() && text.substr(0, prefix.size()) == prefix &&
        (text.size() == prefix.size() || text[prefix.size()] == ' ')) {
      return code;
    }
  }
  // Scripts report errors of the commands they call as "ERR ... <PREFIX> ..."
  // on some Redis versions; look for the classified words after the prefix.
  for (const auto& [prefix, code] : prefixes) {
    std::string needle;
    needle.reserve(prefix.size() + 2);
    needle.append(" ").append(prefix).append(" ");
    if (text.find(needle) != std::string_view::npos) return code;
  }
  // Redis 7.0 reports an ACL refusal inside a script without the NOPERM
  // word: "ERR The user executing the script can't run this command ...".
  if (text.find("The user executing the script can't") != std::string_view::npos) return errc::no_permission;
  return errc::server_error;
}

std::string Error::message() const {
  if (!code) return "success";
  std::string out = code.message();
  if (!detail.empty()) out.append(": ").append(detail);
  return out;
}

}  // namespace leasehold
