// RedisOptions: URL parsing, validation and a log-safe rendering.
//
// The parser is deliberately strict: a connection URL usually comes from an
// environment variable or a config file, and a typo there should fail at
// start-up with a message that points at the mistake, not turn into a
// connection to the wrong place. Every message names the URL with any
// password replaced by "***"; nothing from inside the credentials is ever
// quoted back.
//
// Parsing has two stages. The first, here, splits off the scheme, the
// credentials and the authority (the host); Boost.URL cannot take those as
// they come: masking must work on URLs that do not parse, generated passwords
// hold raw '@', ':' and '/' (the last '@' ends them), and the Sentinel and
// Cluster forms carry a comma-separated host list, which no RFC 3986
// authority can. The second stage is Boost.URL's: it parses the rest (path,
// query, fragment) behind a placeholder host, percent-decodes every part and
// checks IPv6 addresses. Its errors say what is wrong but not where, so the
// checks below run on each part and name the part and the character.

#include <leasehold/redis_options.hpp>

#include <leasehold/impl/options/url_outline.hpp>

#include <chrono>

namespace leasehold {
namespace detail::url {

using namespace std::chrono_literals;

// ---------------------------------------------------------------------------
// The parser

// One "host[:port]" of an authority.
struct Endpoint {
  std::string host;
  std::optional<std::uint16_t> port;
};

class UrlParser {
 public:
  explicit UrlParser(std::string_view url) : url_(url) {}

  RedisOptions parse() {
    if (url_.empty()) fail("the URL is empty");
    check_characters();
    parts_ = split_url(url_);
    scheme_ = parse_scheme();
    options_.tls.enabled = is_tls(scheme_);
    if (parts_.userinfo) parse_userinfo(*parts_.userinfo);
    const auto tail = parse_tail();
    if (scheme_ == Scheme::unix_socket) {
      parse_socket_path(parts_.authority, tail.path);
    } else if (is_sentinel(scheme_)) {
      parse_sentinel_list(parts_.authority);
      parse_database_path(tail.path);
    } else if (is_cluster(scheme_)) {
      parse_seed_list(parts_.authority);
      parse_cluster_path(tail.path);
    } else {
      auto endpoint = parse_endpoint(parts_.authority);
      options_.host = std::move(endpoint.host);
      if (endpoint.port) options_.port = *endpoint.port;
      parse_database_path(tail.path);
    }
    if (tail.query) parse_query(*tail.query);
    if (!tail_valid_) fail(invalid_character_in_tail());
    if (is_cluster(scheme_)) options_.cluster = std::move(cluster_);
    if (is_sentinel(scheme_)) {
      parse_master_name(tail.fragment);
      finish_sentinel();
    } else if (tail.fragment) {
      // Only Sentinel URLs name something (the master) after '#'.
      fail("unexpected '#' after the " + std::string(tail.query ? "query" : "path") +
           " (percent-encode '#' as %23)");
    }
    try {
      options_.validate();
    } catch (const std::invalid_argument& error) {
      fail(error.what());
    }
    return options_;
  }

 private:
  [[noreturn]] void fail(std::string_view problem) const {
    throw std::invalid_argument("invalid Redis URL " + quote(mask_url(url_)) + ": " +
                                std::string(problem));
  }

  // Whitespace usually means a stray newline from a config file or an
  // unencoded character; either way the URL is not what was meant.
  void check_characters() const {
    for (std::size_t i = 0; i < url_.size(); ++i) {
      const char c = url_[i];
      const auto where = " at offset " + std::to_string(i);
      if (c == ' ') fail("contains a space" + where + " (percent-encode it as %20)");
      if (c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
        fail("contains whitespace (0x" + hex_byte(c) + ")" + where);
      }
      if (is_control(c)) fail("contains a control character (0x" + hex_byte(c) + ")" + where);
    }
  }

  Scheme parse_scheme() const {
    if (parts_.scheme.empty()) {
      for (auto known : {"redis:"sv, "rediss:"sv, "unix:"sv, "redis-sentinel:"sv, "rediss-sentinel:"sv,
                         "redis-cluster:"sv, "rediss-cluster:"sv}) {
        if (to_lower(url_.substr(0, known.size())) == known) {
          fail("expected \"//\" after \"" + std::string(known) + "\"");
        }
      }
      fail("missing scheme (expected redis://, rediss://, unix://, redis-sentinel:// or redis-cluster://)");
    }
    if (parts_.scheme == "redis") return Scheme::redis;
    if (parts_.scheme == "rediss") return Scheme::rediss;
    if (parts_.scheme == "unix") return Scheme::unix_socket;
    if (parts_.scheme == "redis-sentinel") return Scheme::sentinel;
    if (parts_.scheme == "rediss-sentinel") return Scheme::sentinel_tls;
    if (parts_.scheme == "redis-cluster") return Scheme::cluster;
    if (parts_.scheme == "rediss-cluster") return Scheme::cluster_tls;
    fail("unknown scheme " + quote(parts_.scheme) +
         " (expected redis, rediss, unix, redis-sentinel, rediss-sentinel, redis-cluster or rediss-cluster)");
  }

  // Boost.URL parses the tail behind a placeholder host (the authority was
  // parsed apart; see the top of the file). When it refuses, the tail is
  // split by hand so that the checks on each part can say what is wrong.
  Tail parse_tail() {
    tail_url_ = parts_.scheme + "://_" + std::string(parts_.tail);
    const auto parsed = urls::parse_uri(tail_url_);
    tail_valid_ = parsed.has_value();
    if (!tail_valid_) return split_tail(parts_.tail);
    Tail tail{parsed->encoded_path(), std::nullopt, std::nullopt};
    if (parsed->has_query()) tail.query = parsed->encoded_query();
    if (parsed->has_fragment()) tail.fragment = parsed->encoded_fragment();
    return tail;
  }

  // When Boost.URL refused the tail and every check passed, what is left is
  // a character that RFC 3986 wants percent-encoded. Nothing that may be
  // part of a password is named.
  std::string invalid_character_in_tail() const {
    const auto tail = split_tail(parts_.tail);
    const auto path_name = scheme_ == Scheme::unix_socket ? "socket path"sv : "path"sv;
    if (const auto c = first_to_encode(tail.path, path_chars)) return must_encode(path_name, *c);
    std::string found;
    if (tail.query) {
      for_each_segment(*tail.query, [&](std::string_view segment, bool secret) {
        const auto c = first_to_encode(segment, query_chars);
        if (!c || !found.empty()) return;
        const auto eq = segment.find('=');
        if (secret) {
          found = "the value of query option \"password\" holds a character that must be "
                  "percent-encoded";
        } else if (eq != npos && segment.find(*c) > eq) {
          found = must_encode("value of query option " + quote(segment.substr(0, eq)), *c);
        } else {
          found = must_encode("query", *c);
        }
      });
    }
    if (!found.empty()) return found;
    if (tail.fragment && first_to_encode(*tail.fragment, query_chars)) {
      return "the text after '#' holds a character that must be percent-encoded";
    }
    return "is not a valid URL after the host";
  }

  template <typename CharSet>
  static std::optional<char> first_to_encode(std::string_view text, const CharSet& allowed) {
    const auto c = std::find_if_not(text.begin(), text.end(),
                                    [&](char c) { return allowed(c) || c == '%'; });
    if (c == text.end()) return std::nullopt;
    return *c;
  }

  static std::string must_encode(std::string_view what, char c) {
    return "the " + std::string(what) + " contains " + describe_char(c) +
           ", which must be percent-encoded (as %" + hex_byte(c) + ")";
  }

  // Percent-decoding by Boost.URL; what: the part, for the message.
  std::string decode(std::string_view text, std::string_view what, bool secret) const {
    const auto checked = urls::make_pct_string_view(text);
    if (!checked) {
      // A password's escape is not quoted: it is part of the password.
      fail("invalid percent escape" + (secret ? std::string() : " " + quote(bad_escape(text))) +
           " in the " + std::string(what) + " (expected % and two hex digits)");
    }
    auto decoded = checked->decode();
    if (!secret && decoded.find('\0') != std::string::npos) {
      fail("the " + std::string(what) + " contains a NUL byte (%00)");
    }
    return decoded;
  }

  void parse_userinfo(std::string_view userinfo) {
    if (userinfo.find('?') != npos) {
      fail(
          "'?' before the '@' that ends the credentials: percent-encode '?' in a password "
          "as %3F, or '@' in a query value as %40");
    }
    if (userinfo.empty()) fail("nothing before '@' (drop the '@' or add credentials)");
    const auto colon = userinfo.find(':');
    if (colon == npos) {
      fail(
          "the credentials before '@' need a ':' (\":password@\" for a password alone, "
          "\"user:password@\" for an ACL user)");
    }
    options_.username = decode(userinfo.substr(0, colon), "user name", false);
    options_.password = decode(userinfo.substr(colon + 1), "password", true);
    if (options_.password.empty()) {
      if (options_.username.empty()) fail("empty credentials before '@'");
      fail("user " + quote(options_.username) + " has an empty password");
    }
  }

  Endpoint parse_endpoint(std::string_view authority) const {
    Endpoint endpoint;
    std::optional<std::string_view> port_text;
    if (authority.starts_with('[')) {
      const auto close = authority.find(']');
      if (close == npos) fail("missing ']' after the IPv6 address");
      endpoint.host = parse_ipv6(authority.substr(1, close - 1));
      const auto after = authority.substr(close + 1);
      if (!after.empty()) {
        if (after.front() != ':') {
          fail("unexpected " + quote(after) + " after the IPv6 address (expected ':port')");
        }
        port_text = after.substr(1);
      }
    } else {
      const auto colon = authority.find(':');
      if (colon != npos && authority.find(':', colon + 1) != npos) {
        fail("an IPv6 address must be enclosed in brackets, e.g. redis://[::1]:6379");
      }
      const auto host = authority.substr(0, colon);
      check_host_name(host);
      endpoint.host = host;
      if (colon != npos) port_text = authority.substr(colon + 1);
    }
    if (port_text) endpoint.port = parse_port(*port_text);
    return endpoint;
  }

  // "host[:port],host[:port],...": the sentinels or seed nodes (`what`), each
  // with `default_port` unless a port is given; `example` shows a good one.
  std::vector<Endpoint> parse_address_list(std::string_view authority, std::string_view what,
                                           std::string_view example, std::uint16_t default_port) const {
    if (authority.empty()) {
      fail("no " + std::string(what) + " address before the path (e.g. " + std::string(example) + ")");
    }
    std::vector<Endpoint> list;
    std::size_t pos = 0;
    for (;;) {
      const auto comma = authority.find(',', pos);
      const auto entry = authority.substr(pos, comma == npos ? npos : comma - pos);
      if (entry.empty()) fail("empty " + std::string(what) + " address in the list (a stray ',')");
      auto endpoint = parse_endpoint(entry);
      if (!endpoint.port) endpoint.port = default_port;
      list.push_back(std::move(endpoint));
      if (comma == npos) return list;
      pos = comma + 1;
    }
  }

  void parse_sentinel_list(std::string_view authority) {
    for (auto& e : parse_address_list(authority, "sentinel", "redis-sentinel://127.0.0.1:26379#mymaster", 26379)) {
      sentinel_.sentinels.push_back({std::move(e.host), *e.port});
    }
  }

  void parse_seed_list(std::string_view authority) {
    for (auto& e : parse_address_list(authority, "seed node", "redis-cluster://127.0.0.1:7000,127.0.0.1:7001", 6379)) {
      cluster_.seeds.push_back({std::move(e.host), *e.port});
    }
  }

  // Redis Cluster has only database 0: nothing, "/" or "/0".
  void parse_cluster_path(std::string_view path) {
    if (path.empty() || path == "/" || path == "/0") return;
    const auto text = path.substr(1);
    if (detail::all_digits(text) || (text.size() > 1 && text.front() == '-' && detail::all_digits(text.substr(1)))) {
      fail("database " + std::string(text) +
           ": Redis Cluster has only database 0 (drop \"/" + std::string(text) + "\" from the URL)");
    }
    fail("unexpected path " + quote(path) +
         " (a redis-cluster:// URL names no database: Redis Cluster has only database 0)");
  }

  void parse_master_name(const std::optional<std::string_view>& fragment) {
    const auto scheme = parts_.scheme + "://";
    if (!fragment || fragment->empty()) {
      fail("a " + scheme + " URL needs the master's name after '#', e.g. " + scheme +
           "127.0.0.1:26379#mymaster");
    }
    sentinel_.master_name = decode(*fragment, "master name", false);
  }

  // The sentinels' TLS starts as the data nodes' (rediss-sentinel://) or off
  // (redis-sentinel://); sentinel_* options override it piece by piece.
  void finish_sentinel() {
    TlsOptions tls = options_.tls;
    if (sentinel_tls_) tls.enabled = *sentinel_tls_;
    if (sentinel_tls_files_.ca_file) tls.ca_file = *sentinel_tls_files_.ca_file;
    if (sentinel_tls_files_.cert_file) tls.cert_file = *sentinel_tls_files_.cert_file;
    if (sentinel_tls_files_.key_file) tls.key_file = *sentinel_tls_files_.key_file;
    if (sentinel_tls_files_.server_name) tls.server_name = *sentinel_tls_files_.server_name;
    if (sentinel_tls_files_.verify) tls.verify_peer = *sentinel_tls_files_.verify;
    if (!tls.enabled && sentinel_tls_files_.any()) {
      fail("sentinel TLS options are given but the sentinels are not reached over TLS "
           "(use rediss-sentinel:// or sentinel_tls=true)");
    }
    if (!sentinel_user_.empty() && sentinel_.password.empty()) {
      fail("query option \"sentinel_user\" needs a \"sentinel_password\" as well");
    }
    sentinel_.username = sentinel_user_;
    sentinel_.tls = std::move(tls);
    options_.sentinel = std::move(sentinel_);
  }

  void check_host_name(std::string_view host) const {
    if (host.empty()) fail("host is empty");
    for (char c : host) {
      if (!is_alnum(c) && c != '-' && c != '.' && c != '_') {
        fail("host " + quote(host) + " contains an invalid character " + describe_char(c));
      }
    }
  }

  // Contents of [...]: an address Boost.URL accepts, then an optional zone
  // written "%25zone" as RFC 6874 asks (Boost.URL 1.81 knows no zones). The
  // host is kept as written, with a plain '%' zone.
  std::string parse_ipv6(std::string_view inside) const {
    if (inside.empty()) fail("empty IPv6 address in brackets");
    const auto percent = inside.find('%');
    const auto address = inside.substr(0, percent);
    if (!urls::parse_ipv6_address(address)) fail("invalid IPv6 address " + quote(inside));
    if (percent == npos) return std::string(address);
    const auto zone = inside.substr(percent);
    if (!zone.starts_with("%25") || zone.size() == 3 ||
        !std::all_of(zone.begin() + 3, zone.end(), urls::unreserved_chars)) {
      fail("invalid IPv6 zone in " + quote(inside) +
           " (write it as %25<zone>, e.g. [fe80::1%25eth0])");
    }
    return std::string(address) + '%' + std::string(zone.substr(3));
  }

  std::uint16_t parse_port(std::string_view text) const {
    if (text.empty()) fail("port is empty after ':'");
    // Not quoted: it may be a password that lacks its "@host" (see mask_port).
    if (!detail::all_digits(text)) fail("port is not a number");
    const auto value = parse_unsigned(text);
    if (!value || *value == 0 || *value > 65535) {
      fail("port " + std::string(text) + " is out of range (1-65535)");
    }
    return static_cast<std::uint16_t>(*value);
  }

  // The path of a redis:// URL: nothing, "/" or "/<db>".
  void parse_database_path(std::string_view path) {
    if (path.empty()) return;
    const auto text = path.substr(1);
    if (const auto slash = text.find('/'); slash != npos) {
      fail("unexpected " + quote(text.substr(slash)) + " after the database number");
    }
    if (!text.empty()) options_.database = parse_database(text);
  }

  int parse_database(std::string_view text) const {
    if (text.size() > 1 && text.front() == '-' && detail::all_digits(text.substr(1))) {
      fail("database " + std::string(text) + " is negative (it must be >= 0)");
    }
    if (!detail::all_digits(text)) fail("database " + quote(text) + " is not a number");
    const auto value = parse_unsigned(text);
    if (!value || *value > static_cast<std::uint64_t>(INT_MAX)) {
      fail("database " + std::string(text) + " is out of range");
    }
    return static_cast<int>(*value);
  }

  void parse_socket_path(std::string_view authority, std::string_view path) {
    if (!authority.empty()) {
      fail("a unix:// URL must not name a host (" + quote(mask_port(authority)) +
           "); write unix:///absolute/path/to/redis.sock");
    }
    if (path.empty()) {
      fail("a unix:// URL needs an absolute socket path, e.g. unix:///run/redis.sock");
    }
    auto socket = decode(path, "socket path", false);
    if (socket.ends_with('/')) {
      fail("socket path " + quote(socket) + " names a directory, not a socket");
    }
    options_.unix_socket = std::move(socket);
  }

  void parse_query(std::string_view query) {
    if (query.empty()) return;  // a lone trailing '?'
    std::vector<std::string_view> seen;  // option names met so far
    for_each_segment(query, [&](std::string_view segment, bool secret) {
      parse_query_option(segment, secret && !is_password_option(segment), seen);
    });
    if (parts_.userinfo && (!query_user_.empty() || !query_password_.empty())) {
      fail("credentials are given both before '@' and in the query");
    }
    if (!query_user_.empty() && query_password_.empty()) {
      fail("query option \"user\" needs a \"password\" as well");
    }
    if (!query_password_.empty()) {
      options_.username = query_user_;
      options_.password = query_password_;
    }
  }

  void parse_query_option(std::string_view segment, bool after_password,
                          std::vector<std::string_view>& seen) {
    if (segment.empty()) fail("empty query option (a stray '&'?)");
    const auto eq = segment.find('=');
    const auto* key = eq == npos ? nullptr : find_query_key(segment.substr(0, eq));
    if (key == nullptr && after_password) {
      // Most likely the rest of a password holding a raw '&': never quote it.
      fail("malformed query option after \"password\" (percent-encode '&' in a password as %26)");
    }
    if (eq == npos) fail("query option " + quote(segment) + " has no value (expected key=value)");
    const auto name = segment.substr(0, eq);
    if (name.empty()) fail("query option with an empty name");
    if (key == nullptr) {
      fail("unknown query option " + quote(name) + " (supported: " + supported_keys(scheme_) + ")");
    }
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
      fail("query option " + quote(name) + " is given more than once");
    }
    seen.push_back(name);
    check_scope(*key);
    const auto raw_value = segment.substr(eq + 1);
    if (raw_value.empty()) fail("query option " + quote(name) + " has an empty value");
    const bool secret = name == "password" || name == "sentinel_password";
    const auto what = "value of query option " + quote(name);
    apply_option(name, decode(raw_value, what, secret));
  }

  void check_scope(const QueryKey& key) const {
    if (in_scope(key.scope, scheme_)) return;
    const auto name = quote(key.name);
    if (key.scope == Scope::tls) {
      if (scheme_ == Scheme::unix_socket) {
        fail("query option " + name + " configures TLS, which unix:// URLs do not support");
      }
      if (scheme_ == Scheme::sentinel) {
        fail("query option " + name +
             " configures TLS to the data nodes and requires a rediss-sentinel:// URL "
             "(the sentinel_* variant configures TLS to the sentinels)");
      }
      if (scheme_ == Scheme::cluster) {
        fail("query option " + name + " configures TLS and requires a rediss-cluster:// URL");
      }
      fail("query option " + name + " configures TLS and requires a rediss:// URL");
    }
    if (key.scope == Scope::sentinel) {
      fail("query option " + name + " configures Sentinel and requires a redis-sentinel:// URL");
    }
    if (key.scope == Scope::cluster) {
      fail("query option " + name + " configures Redis Cluster and requires a redis-cluster:// URL");
    }
    if (key.name == "db") {
      fail("query option \"db\" is only for unix:// URLs; give the database as the path, "
           "e.g. redis://host:6379/2");
    }
    fail("query option " + name +
         " is only for unix:// URLs; give credentials before '@', e.g. redis://user:password@host");
  }

  void apply_option(std::string_view name, std::string value) {
    if (name == "connect_timeout") {
      options_.connect_timeout = parse_timeout(name, value);
    } else if (name == "command_timeout") {
      options_.command_timeout = parse_timeout(name, value);
    } else if (name == "client_name") {
      options_.client_name = std::move(value);
    } else if (name == "key_layout") {
      options_.key_layout = parse_key_layout(value);
    } else if (name == "ca_file") {
      options_.tls.ca_file = std::move(value);
    } else if (name == "cert_file") {
      options_.tls.cert_file = std::move(value);
    } else if (name == "key_file") {
      options_.tls.key_file = std::move(value);
    } else if (name == "server_name") {
      options_.tls.server_name = std::move(value);
    } else if (name == "verify") {
      options_.tls.verify_peer = parse_bool(name, value);
    } else if (name == "db") {
      options_.database = parse_database(value);
    } else if (name == "user") {
      query_user_ = std::move(value);
    } else if (name == "password") {
      query_password_ = std::move(value);
    } else if (name.starts_with("sentinel_")) {
      apply_sentinel_option(name, std::move(value));
    } else {
      apply_cluster_option(name, value);
    }
  }

  void apply_cluster_option(std::string_view name, std::string_view value) {
    if (name == "max_redirects") {
      cluster_.max_redirects = parse_count(name, value);
    } else if (name == "refresh_interval") {
      cluster_.refresh_interval = parse_duration(name, value, true);
    } else if (name == "retry_backoff_min") {
      cluster_.retry_backoff_min = parse_timeout(name, value);
    } else if (name == "retry_backoff_max") {
      cluster_.retry_backoff_max = parse_timeout(name, value);
    } else if (name == "retry_timeout") {
      cluster_.retry_timeout = parse_duration(name, value, true);
    } else if (name == "cross_slot_renewals") {
      cluster_.cross_slot_renewals = parse_bool(name, value);
    }
  }

  void apply_sentinel_option(std::string_view name, std::string value) {
    if (name == "sentinel_user") {
      sentinel_user_ = std::move(value);
    } else if (name == "sentinel_password") {
      sentinel_.password = std::move(value);
    } else if (name == "sentinel_timeout") {
      sentinel_.query_timeout = parse_timeout(name, value);
    } else if (name == "sentinel_follow") {
      sentinel_.follow_switch_master = parse_bool(name, value);
    } else if (name == "sentinel_tls") {
      sentinel_tls_ = parse_bool(name, value);
    } else if (name == "sentinel_ca_file") {
      sentinel_tls_files_.ca_file = std::move(value);
    } else if (name == "sentinel_cert_file") {
      sentinel_tls_files_.cert_file = std::move(value);
    } else if (name == "sentinel_key_file") {
      sentinel_tls_files_.key_file = std::move(value);
    } else if (name == "sentinel_server_name") {
      sentinel_tls_files_.server_name = std::move(value);
    } else if (name == "sentinel_verify") {
      sentinel_tls_files_.verify = parse_bool(name, value);
    }
  }

  std::chrono::milliseconds parse_timeout(std::string_view name, std::string_view text) const {
    return parse_duration(name, text, false);
  }

  // Milliseconds; zero_allowed: 0 is a value (it disables something).
  std::chrono::milliseconds parse_duration(std::string_view name, std::string_view text,
                                           bool zero_allowed) const {
    const auto label = std::string(name);
    if (!detail::all_digits(text)) {
      fail(label + " " + quote(text) + " is not a whole number of milliseconds");
    }
    const auto value = parse_unsigned(text);
    if (value && *value == 0 && !zero_allowed) fail(label + " must be greater than 0");
    if (!value || *value > max_timeout_ms) {
      fail(label + " " + std::string(text) + " is too large (at most " +
           std::to_string(max_timeout_ms) + " ms, one day)");
    }
    return std::chrono::milliseconds{static_cast<std::chrono::milliseconds::rep>(*value)};
  }

  // A count of at least 1, such as max_redirects.
  int parse_count(std::string_view name, std::string_view text) const {
    const auto label = std::string(name);
    if (!detail::all_digits(text)) fail(label + " " + quote(text) + " is not a whole number");
    const auto value = parse_unsigned(text);
    if (value && *value == 0) fail(label + " must be at least 1");
    if (!value || *value > static_cast<std::uint64_t>(INT_MAX)) {
      fail(label + " " + std::string(text) + " is out of range");
    }
    return static_cast<int>(*value);
  }

  KeyLayout::Form parse_key_layout(std::string_view text) const {
    if (text == "plain") return KeyLayout::Form::plain;
    if (text == "hash_tagged") return KeyLayout::Form::hash_tagged;
    fail("query option \"key_layout\" must be plain or hash_tagged, not " + quote(text));
  }

  bool parse_bool(std::string_view name, std::string_view text) const {
    if (text == "true") return true;
    if (text == "false") return false;
    fail("query option " + quote(name) + " must be true or false, not " + quote(text));
  }

  std::string_view url_;
  UrlParts parts_;
  std::string tail_url_;     ///< what Boost.URL parsed: scheme, placeholder host, tail
  bool tail_valid_ = false;  ///< whether it did
  Scheme scheme_ = Scheme::redis;
  RedisOptions options_;
  std::string query_user_;
  std::string query_password_;
  // Sentinel URLs: what the authority, fragment and sentinel_* options said.
  SentinelOptions sentinel_;
  std::string sentinel_user_;
  std::optional<bool> sentinel_tls_;
  struct {
    std::optional<std::string> ca_file, cert_file, key_file, server_name;
    std::optional<bool> verify;
    bool any() const { return ca_file || cert_file || key_file || server_name || verify; }
  } sentinel_tls_files_;
  // Cluster URLs: the seeds and the cluster options.
  ClusterOptions cluster_;
};

}  // namespace detail::url

RedisOptions RedisOptions::from_url(std::string_view url) { return detail::url::UrlParser{url}.parse(); }

}  // namespace leasehold
