#pragma once
// The first stage of parsing a connection URL (see url_parser.ipp): its
// outline (scheme, credentials, authority, tail) found by hand, because
// Boost.URL cannot take generated passwords with raw '@', ':' and '/', nor
// the host lists of the Sentinel and Cluster forms; the query options each
// scheme takes; the masking of passwords for messages, which must work on
// URLs that do not parse. Only the URL parser and RedisOptions include it.

#include <leasehold/impl/base/quoted.hpp>

#include <boost/url/encode.hpp>
#include <boost/url/grammar/charset.hpp>
#include <boost/url/grammar/hexdig_chars.hpp>
#include <boost/url/ipv6_address.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/pct_string_view.hpp>
#include <boost/url/rfc/pchars.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <boost/url/url_view.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <climits>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace leasehold::detail::url {

namespace urls = boost::urls;
using namespace std::string_view_literals;

inline constexpr auto npos = std::string_view::npos;

// A sanity bound for timeouts given in a URL; far above any useful value and
// far below the point where clock arithmetic could overflow.
inline constexpr std::uint64_t max_timeout_ms = 86'400'000;  // one day

// What RFC 3986 allows unencoded in a path and in a query or fragment.
inline constexpr auto path_chars = urls::pchars + '/';
inline constexpr auto query_chars = urls::pchars + '/' + '?';

// ---------------------------------------------------------------------------
// Characters

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool is_alnum(char c) { return is_alpha(c) || is_digit(c); }

inline bool is_control(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7f;
}

inline std::string hex_byte(char c) {
  constexpr auto digits = "0123456789ABCDEF"sv;
  const auto byte = static_cast<unsigned char>(c);
  return {digits[byte >> 4], digits[byte & 0x0f]};
}

inline std::string quote(std::string_view text) { return '"' + detail::printable(text) + '"'; }

inline std::string describe_char(char c) {
  if (static_cast<unsigned char>(c) >= 0x80 || is_control(c)) return "byte 0x" + hex_byte(c);
  return std::string{'\''} + c + '\'';
}

inline std::string to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Digits only (the caller checks); nullopt when the value does not fit.
inline std::optional<std::uint64_t> parse_unsigned(std::string_view digits) {
  std::uint64_t value = 0;
  const auto* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, value);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

// The first malformed "%.." in text, for the message when Boost.URL refuses
// to decode it.
inline std::string_view bad_escape(std::string_view text) {
  for (auto i = text.find('%'); i != npos; i = text.find('%', i + 1)) {
    if (i + 2 >= text.size() || !urls::grammar::hexdig_chars(text[i + 1]) ||
        !urls::grammar::hexdig_chars(text[i + 2])) {
      return text.substr(i, 3);
    }
  }
  return {};
}

// ---------------------------------------------------------------------------
// Query options

enum class Scheme {  // not "unix": a GNU macro
  redis, rediss, unix_socket, sentinel, sentinel_tls, cluster, cluster_tls
};

inline bool is_sentinel(Scheme scheme) { return scheme == Scheme::sentinel || scheme == Scheme::sentinel_tls; }
inline bool is_cluster(Scheme scheme) { return scheme == Scheme::cluster || scheme == Scheme::cluster_tls; }
inline bool is_tls(Scheme scheme) {
  return scheme == Scheme::rediss || scheme == Scheme::sentinel_tls || scheme == Scheme::cluster_tls;
}

enum class Scope { any, tls, unix_socket, sentinel, cluster };

struct QueryKey {
  std::string_view name;
  Scope scope;
};

inline constexpr std::array query_keys{
    QueryKey{"connect_timeout", Scope::any}, QueryKey{"command_timeout", Scope::any},
    QueryKey{"client_name", Scope::any},     QueryKey{"key_layout", Scope::any},
    QueryKey{"ca_file", Scope::tls},         QueryKey{"cert_file", Scope::tls},
    QueryKey{"key_file", Scope::tls},        QueryKey{"server_name", Scope::tls},
    QueryKey{"verify", Scope::tls},          QueryKey{"db", Scope::unix_socket},
    QueryKey{"user", Scope::unix_socket},    QueryKey{"password", Scope::unix_socket},
    QueryKey{"sentinel_user", Scope::sentinel},        QueryKey{"sentinel_password", Scope::sentinel},
    QueryKey{"sentinel_timeout", Scope::sentinel},     QueryKey{"sentinel_follow", Scope::sentinel},
    QueryKey{"sentinel_tls", Scope::sentinel},         QueryKey{"sentinel_ca_file", Scope::sentinel},
    QueryKey{"sentinel_cert_file", Scope::sentinel},   QueryKey{"sentinel_key_file", Scope::sentinel},
    QueryKey{"sentinel_server_name", Scope::sentinel}, QueryKey{"sentinel_verify", Scope::sentinel},
    QueryKey{"max_redirects", Scope::cluster},         QueryKey{"refresh_interval", Scope::cluster},
    QueryKey{"retry_backoff_min", Scope::cluster},     QueryKey{"retry_backoff_max", Scope::cluster},
    QueryKey{"retry_timeout", Scope::cluster},         QueryKey{"cross_slot_renewals", Scope::cluster},
};

inline const QueryKey* find_query_key(std::string_view name) {
  for (const auto& key : query_keys) {
    if (key.name == name) return &key;
  }
  return nullptr;
}

inline bool in_scope(Scope scope, Scheme scheme) {
  switch (scope) {
    case Scope::any: return true;
    case Scope::tls: return is_tls(scheme);
    case Scope::unix_socket: return scheme == Scheme::unix_socket;
    case Scope::sentinel: return is_sentinel(scheme);
    case Scope::cluster: return is_cluster(scheme);
  }
  return false;
}

inline std::string supported_keys(Scheme scheme) {
  std::string out;
  for (const auto& key : query_keys) {
    if (!in_scope(key.scope, scheme)) continue;
    if (!out.empty()) out += ", ";
    out += key.name;
  }
  return out;
}

// "key=..." for a key the parser knows. After "password=", a raw '&' in the
// password splits it; the pieces up to the next such segment are treated as
// part of the password, both when masking and when wording errors.
inline bool starts_known_option(std::string_view segment) {
  const auto eq = segment.find('=');
  return eq != npos && find_query_key(segment.substr(0, eq)) != nullptr;
}

inline bool is_password_option(std::string_view segment) {
  return segment.starts_with("password=") || segment.starts_with("sentinel_password=");
}

// Calls visit(segment, secret) for each '&'-separated piece, empty ones
// included; secret: the piece is, or may be part of, a query password.
template <typename Visit>
inline void for_each_segment(std::string_view query, Visit visit) {
  bool in_password = false;
  std::size_t pos = 0;
  while (true) {
    const auto amp = query.find('&', pos);
    const auto segment = query.substr(pos, amp == npos ? npos : amp - pos);
    in_password = is_password_option(segment) || (in_password && !starts_known_option(segment));
    visit(segment, in_password);
    if (amp == npos) return;
    pos = amp + 1;
  }
}

// ---------------------------------------------------------------------------
// The first stage: the URL's outline, shared by the parser and the masking so
// both agree exactly on where the credentials are.

struct UrlParts {
  std::string scheme;           ///< lower-cased; empty when there is no "scheme://"
  std::size_t rest_offset = 0;  ///< where the text after "://" starts
  std::optional<std::string_view> userinfo;
  std::string_view authority;  ///< host[:port]; Sentinel and Cluster: a list
  std::string_view tail;       ///< path, query and fragment: empty or from '/', '?' or '#'
};

inline bool is_scheme_token(std::string_view text) {
  if (text.empty() || !is_alpha(text.front())) return false;
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return is_alnum(c) || c == '+' || c == '-' || c == '.'; });
}

// Position of the '@' that ends the credentials, or npos. Passwords often
// hold a raw '@' or '/', so the last '@' counts. In unix:// URLs only an '@'
// right before the absolute path counts, so socket paths may contain '@'.
inline std::size_t find_userinfo_end(std::string_view scheme, std::string_view rest) {
  if (scheme == "unix") {
    if (rest.starts_with('/')) return npos;
    const auto at = rest.rfind("@/");
    return at != npos ? at : rest.rfind('@');
  }
  return rest.rfind('@');
}

// Never throws: it also serves the masking of URLs that fail to parse.
inline UrlParts split_url(std::string_view url) {
  UrlParts parts;
  const auto separator = url.find("://");
  if (separator != npos && is_scheme_token(url.substr(0, separator))) {
    parts.scheme = to_lower(url.substr(0, separator));
    parts.rest_offset = separator + 3;
  }
  auto rest = url.substr(parts.rest_offset);
  if (const auto at = find_userinfo_end(parts.scheme, rest); at != npos) {
    parts.userinfo = rest.substr(0, at);
    rest.remove_prefix(at + 1);
  }
  const auto end = std::min(rest.find_first_of("/?#"), rest.size());
  parts.authority = rest.substr(0, end);
  parts.tail = rest.substr(end);
  return parts;
}

// The tail's pieces as written, for the checks that name a part.
struct Tail {
  std::string_view path;
  std::optional<std::string_view> query;
  std::optional<std::string_view> fragment;
};

inline Tail split_tail(std::string_view tail) {
  Tail pieces;
  if (const auto hash = tail.find('#'); hash != npos) {
    pieces.fragment = tail.substr(hash + 1);
    tail = tail.substr(0, hash);
  }
  if (const auto question = tail.find('?'); question != npos) {
    pieces.query = tail.substr(question + 1);
    tail = tail.substr(0, question);
  }
  pieces.path = tail;
  return pieces;
}

inline std::string mask_userinfo(std::string_view userinfo) {
  const auto colon = userinfo.find(':');
  // Without ':' it may well be a bare password ("redis://secret@host").
  if (colon == npos) return userinfo.empty() ? "" : "***";
  if (colon + 1 == userinfo.size()) return std::string(userinfo);
  return std::string(userinfo.substr(0, colon + 1)) + "***";
}

// The tail with query passwords masked. A '#' may be part of a password
// that was not encoded, so the query runs to the end here.
inline std::string mask_tail(std::string_view tail) {
  const auto question = tail.find('?');
  if (question == npos) return std::string(tail);
  std::string out(tail.substr(0, question + 1));
  bool first = true;
  for_each_segment(tail.substr(question + 1), [&](std::string_view segment, bool secret) {
    if (secret && !is_password_option(segment)) return;  // still password text
    if (!first) out += '&';
    first = false;
    const auto name_end = segment.find('=') + 1;
    if (secret && segment.size() > name_end) {
      out += std::string(segment.substr(0, name_end)) + "***";
    } else {
      out += segment;
    }
  });
  return out;
}

// Without an '@', "redis://user:secret" reads as host "user", port
// "secret": a port that is not a number may be a password, so it is hidden.
inline std::string mask_endpoint_port(std::string_view authority) {
  const auto bracket = authority.starts_with('[') ? authority.find(']') : 0;
  const auto colon = authority.find(':', bracket == npos ? authority.size() : bracket);
  if (colon == npos) return std::string(authority);
  const auto port = authority.substr(colon + 1);
  if (port.empty() || std::all_of(port.begin(), port.end(), is_digit)) {
    return std::string(authority);
  }
  return std::string(authority.substr(0, colon + 1)) + "***";
}

// The same for each entry of a comma-separated list (Sentinel, Cluster).
inline std::string mask_port(std::string_view authority) {
  std::string out;
  std::size_t pos = 0;
  for (;;) {
    const auto comma = authority.find(',', pos);
    out += mask_endpoint_port(authority.substr(pos, comma == npos ? npos : comma - pos));
    if (comma == npos) return out;
    out += ',';
    pos = comma + 1;
  }
}

inline std::string mask_url(std::string_view url) {
  const auto parts = split_url(url);
  std::string out(url.substr(0, parts.rest_offset));
  if (parts.userinfo) out += mask_userinfo(*parts.userinfo) + '@';
  out += mask_port(parts.authority);
  out += mask_tail(parts.tail);
  return out;
}

}  // namespace leasehold::detail::url
