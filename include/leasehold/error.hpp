#pragma once
// leasehold's error codes. Async operations complete with an error_code from
// this category (or an Asio/system code for socket-level failures); the
// server's own error text, when there is one, travels beside it.

#include <boost/system/error_code.hpp>

#include <string>
#include <string_view>
#include <system_error>

namespace leasehold {

using boost::system::error_code;

/// leasehold's error conditions, in category(). An errc converts to an
/// error_code implicitly, so `ec == errc::stopped` works.
enum class errc {
  // Connection conditions.
  timeout = 1,          ///< a command or connect attempt outlived its deadline
  connection_lost,      ///< the connection closed or was reset with commands pending
  not_connected,        ///< no connection to Redis at the moment
  protocol_error,       ///< the server sent bytes that are not valid RESP, or an unexpected reply
  auth_failed,          ///< AUTH was refused (wrong user or password)
  handshake_failed,     ///< SELECT or CLIENT SETNAME was refused
  resolve_failed,       ///< the host name did not resolve
  tls_failed,           ///< the TLS handshake or certificate verification failed
  // Replies the server sent (the text is kept beside the code).
  server_error,         ///< an error reply not classified below
  wrong_type,           ///< WRONGTYPE: a lease key holds a non-string value
  no_permission,        ///< NOPERM: the ACL user lacks a command, key or channel
  read_only,            ///< READONLY: connected to a replica
  loading,              ///< LOADING: the server is loading its dataset
  out_of_memory,        ///< OOM: maxmemory reached with a non-evicting policy
  no_script,            ///< NOSCRIPT: the script cache lacks the script
  busy,                 ///< BUSY: another script is running too long
  unexpected_reply,     ///< a reply of a type or shape the caller cannot use
  // Elector conditions.
  stopped,              ///< the elector was stopped
  not_started,          ///< the elector has not been started
  invalid_argument,     ///< bad input to an operation (for example a bad group name)
  /// Confirm mode: fewer than ElectorOptions::confirm_replicas replicas
  /// acknowledged a lease command within confirm_timeout; it does not count.
  not_confirmed,
  // Sentinel conditions (redis-sentinel:// URLs).
  sentinel_unreachable,  ///< no sentinel answered (each one's reason is in the detail)
  master_unknown,        ///< every sentinel that answered knows no master by that name
  not_master,            ///< the server reached (named by the sentinels, or by a host name) is not a master (ROLE), or it turned read-only
  master_changed,        ///< the sentinels announced a new master: the connection moves there
  /// Guarded work of an ended term still ran when ElectorOptions::drain_timeout
  /// passed; the lease was released anyway.
  drain_timeout,
  /// Another live process campaigns with this instance id (a copied
  /// config): the lease scripts tell processes apart by incarnation, so at
  /// most one of them leads; fix the configuration.
  duplicate_instance_id,
  /// CROSSSLOT: the server keeps a script's keys in different slots (one
  /// endpoint in front of several shards); the plain key layout cannot work
  /// there: set RedisOptions::key_layout to hash_tagged.
  cross_slot,
};

/// The category of errc codes; its name is "leasehold" and its messages
/// describe each value.
const boost::system::error_category& category() noexcept;

/// An error_code for `e` in category(); found by argument-dependent lookup,
/// which is what makes errc convert to error_code.
inline error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), category()};
}

/// Classifies a server error reply by its prefix ("NOPERM ...", "OOM ...").
errc classify_server_error(std::string_view text) noexcept;

/// An error_code with the human-readable detail that explains it (the server's
/// reply text, the failing field). Never contains a password.
struct Error {
  error_code code;     ///< what went wrong; empty (false) for success
  std::string detail;  ///< more about it, often the server's reply text; may be empty

  /// True when there is an error (code is set).
  explicit operator bool() const noexcept { return static_cast<bool>(code); }
  /// "<code message>: <detail>" or the code message alone.
  std::string message() const;
};

}  // namespace leasehold

// Makes errc an error code enum for Boost.System (see make_error_code).
// Hidden from Doxygen, which cannot place a specialisation in a namespace it
// does not document.
/// \cond
template <>
struct boost::system::is_error_code_enum<leasehold::errc> : std::true_type {};
/// \endcond
