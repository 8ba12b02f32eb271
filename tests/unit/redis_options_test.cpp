// RedisOptions: URL parsing, validation and to_string().

#include <leasehold/redis_options.hpp>

#include "contains.hpp"
#include "url_error.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace unit_redis_options_test {
namespace {

using leasehold::RedisOptions;
using namespace std::chrono_literals;
using namespace std::string_literals;

// The message from_url() throws for url, or "" (plus a failure) if it parses.
using leasehold::test::url_error;

std::string validate_error(const RedisOptions& options) {
  try {
    options.validate();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected validate() to throw";
  return {};
}

using leasehold::test::contains;

// ---------------------------------------------------------------------------
// Valid URLs

TEST(RedisOptionsUrl, HostPortAndDatabase) {
  const auto options = RedisOptions::from_url("redis://127.0.0.1:6379/0");
  EXPECT_EQ(options.host, "127.0.0.1");
  EXPECT_EQ(options.port, 6379);
  EXPECT_EQ(options.database, 0);
  EXPECT_TRUE(options.unix_socket.empty());
  EXPECT_FALSE(options.tls.enabled);
  EXPECT_TRUE(options.username.empty());
  EXPECT_TRUE(options.password.empty());
}

TEST(RedisOptionsUrl, DefaultsWhenOnlyTheHostIsGiven) {
  const auto options = RedisOptions::from_url("redis://cache.internal");
  const RedisOptions defaults;
  EXPECT_EQ(options.host, "cache.internal");
  EXPECT_EQ(options.port, 6379);
  EXPECT_EQ(options.database, 0);
  EXPECT_EQ(options.client_name, defaults.client_name);
  EXPECT_EQ(options.connect_timeout, defaults.connect_timeout);
  EXPECT_EQ(options.command_timeout, defaults.command_timeout);
}

TEST(RedisOptionsUrl, TrailingSlashAndEmptyQuery) {
  EXPECT_EQ(RedisOptions::from_url("redis://h/").database, 0);
  EXPECT_EQ(RedisOptions::from_url("redis://h:7000/?").port, 7000);
}

TEST(RedisOptionsUrl, NonDefaultPortAndDatabase) {
  const auto options = RedisOptions::from_url("redis://redis-1.example.com:6380/15");
  EXPECT_EQ(options.host, "redis-1.example.com");
  EXPECT_EQ(options.port, 6380);
  EXPECT_EQ(options.database, 15);
}

TEST(RedisOptionsUrl, SchemeIsCaseInsensitive) {
  const auto options = RedisOptions::from_url("REDISS://Host_A:1");
  EXPECT_TRUE(options.tls.enabled);
  EXPECT_EQ(options.host, "Host_A");
  EXPECT_EQ(options.port, 1);
}

TEST(RedisOptionsUrl, Ipv6InBrackets) {
  const auto options = RedisOptions::from_url("redis://[::1]:6380/0");
  EXPECT_EQ(options.host, "::1");
  EXPECT_EQ(options.port, 6380);
  EXPECT_EQ(options.database, 0);

  const auto no_port = RedisOptions::from_url("redis://[2001:db8::7]/3");
  EXPECT_EQ(no_port.host, "2001:db8::7");
  EXPECT_EQ(no_port.port, 6379);
  EXPECT_EQ(no_port.database, 3);
}

TEST(RedisOptionsUrl, Ipv6WithZone) {
  const auto options = RedisOptions::from_url("redis://[fe80::1%25eth0]:6379");
  EXPECT_EQ(options.host, "fe80::1%eth0");
}

TEST(RedisOptionsUrl, UserAndPassword) {
  const auto options = RedisOptions::from_url("redis://alice:s3cr3t@db.local:6390/2");
  EXPECT_EQ(options.username, "alice");
  EXPECT_EQ(options.password, "s3cr3t");
  EXPECT_EQ(options.host, "db.local");
  EXPECT_EQ(options.port, 6390);
  EXPECT_EQ(options.database, 2);
}

TEST(RedisOptionsUrl, PasswordOnly) {
  const auto options = RedisOptions::from_url("redis://:hunter2@localhost");
  EXPECT_TRUE(options.username.empty());
  EXPECT_EQ(options.password, "hunter2");
  EXPECT_EQ(options.host, "localhost");
}

TEST(RedisOptionsUrl, PercentDecodedCredentials) {
  const auto options = RedisOptions::from_url("redis://us%65r:p%40ss%3Aw%2Frd%25@h");
  EXPECT_EQ(options.username, "user");
  EXPECT_EQ(options.password, "p@ss:w/rd%");
}

TEST(RedisOptionsUrl, RawSpecialCharactersInPassword) {
  // Generated passwords often hold '@', ':' or '/'; the last '@' ends them.
  const auto options = RedisOptions::from_url("redis://bob:a@b:c/d@h:7000/1");
  EXPECT_EQ(options.username, "bob");
  EXPECT_EQ(options.password, "a@b:c/d");
  EXPECT_EQ(options.host, "h");
  EXPECT_EQ(options.port, 7000);
  EXPECT_EQ(options.database, 1);
}

TEST(RedisOptionsUrl, TlsWithQueryOptions) {
  const auto options = RedisOptions::from_url(
      "rediss://svc:pw@redis.example.com:6390/4?ca_file=/etc/ssl/ca%20bundle.pem"
      "&cert_file=/etc/c.pem&key_file=/etc/k.pem&server_name=redis.internal&verify=false"
      "&connect_timeout=500&command_timeout=250&client_name=billing-worker");
  EXPECT_TRUE(options.tls.enabled);
  EXPECT_EQ(options.port, 6390);
  EXPECT_EQ(options.database, 4);
  EXPECT_EQ(options.tls.ca_file, "/etc/ssl/ca bundle.pem");
  EXPECT_EQ(options.tls.cert_file, "/etc/c.pem");
  EXPECT_EQ(options.tls.key_file, "/etc/k.pem");
  EXPECT_EQ(options.tls.server_name, "redis.internal");
  EXPECT_FALSE(options.tls.verify_peer);
  EXPECT_EQ(options.connect_timeout, 500ms);
  EXPECT_EQ(options.command_timeout, 250ms);
  EXPECT_EQ(options.client_name, "billing-worker");
}

TEST(RedisOptionsUrl, TlsDefaults) {
  const auto options = RedisOptions::from_url("rediss://h?verify=true");
  EXPECT_TRUE(options.tls.enabled);
  EXPECT_TRUE(options.tls.verify_peer);
  EXPECT_EQ(options.port, 6379);
  EXPECT_TRUE(options.tls.ca_file.empty());
}

TEST(RedisOptionsUrl, UnixSocket) {
  const auto options = RedisOptions::from_url("unix:///var/run/redis/redis.sock");
  EXPECT_EQ(options.unix_socket, "/var/run/redis/redis.sock");
  EXPECT_EQ(options.database, 0);
  EXPECT_FALSE(options.tls.enabled);
}

TEST(RedisOptionsUrl, UnixSocketWithQuery) {
  const auto options = RedisOptions::from_url(
      "unix:///tmp/my%20redis@1.sock?db=4&user=bob&password=p%26w&client_name=x"
      "&command_timeout=10");
  EXPECT_EQ(options.unix_socket, "/tmp/my redis@1.sock");
  EXPECT_EQ(options.database, 4);
  EXPECT_EQ(options.username, "bob");
  EXPECT_EQ(options.password, "p&w");
  EXPECT_EQ(options.client_name, "x");
  EXPECT_EQ(options.command_timeout, 10ms);
}

TEST(RedisOptionsUrl, UnixSocketWithUserinfo) {
  const auto options = RedisOptions::from_url("unix://bob:p@ss@/tmp/r.sock?db=1");
  EXPECT_EQ(options.username, "bob");
  EXPECT_EQ(options.password, "p@ss");
  EXPECT_EQ(options.unix_socket, "/tmp/r.sock");
  EXPECT_EQ(options.database, 1);

  const auto password_only = RedisOptions::from_url("unix://:pw@/tmp/r.sock");
  EXPECT_TRUE(password_only.username.empty());
  EXPECT_EQ(password_only.password, "pw");
}

TEST(RedisOptionsUrl, UnixSocketPasswordOnlyInQuery) {
  const auto options = RedisOptions::from_url("unix:///tmp/r.sock?password=pw");
  EXPECT_TRUE(options.username.empty());
  EXPECT_EQ(options.password, "pw");
}

TEST(RedisOptionsUrl, LeadingZerosAndLargeValues) {
  const auto options =
      RedisOptions::from_url("redis://h:065535/0002147483647?connect_timeout=86400000");
  EXPECT_EQ(options.port, 65535);
  EXPECT_EQ(options.database, 2147483647);
  EXPECT_EQ(options.connect_timeout, 86400000ms);
}

// ---------------------------------------------------------------------------
// Malformed URLs

struct BadUrl {
  std::string url;
  std::string expected;  ///< must appear in the message
};

TEST(RedisOptionsUrl, RejectsMalformedUrls) {
  const std::vector<BadUrl> cases = {
      // Shape and scheme.
      {"", "the URL is empty"},
      {"localhost:6379", "missing scheme"},
      {"//localhost", "missing scheme"},
      {"http://localhost", "unknown scheme \"http\""},
      {"redis:localhost", "expected \"//\" after \"redis:\""},
      {"unix:/tmp/redis.sock", "expected \"//\" after \"unix:\""},
      // Characters.
      {"redis://local host", "contains a space at offset 13"},
      {"redis://localhost\n", "whitespace (0x0A) at offset 17"},
      {"redis://h\t:1", "whitespace (0x09)"},
      {"redis://h\x01", "control character (0x01)"},
      {"redis://h\x7f", "control character (0x7F)"},
      // Host.
      {"redis://", "host is empty"},
      {"redis://:6379", "host is empty"},
      {"redis:///0", "host is empty"},
      {"redis://h!x", "host \"h!x\" contains an invalid character '!'"},
      {"redis://::1:6379", "must be enclosed in brackets"},
      {"redis://[::1", "missing ']'"},
      {"redis://[]:1", "empty IPv6 address"},
      {"redis://[zz::1]", "invalid IPv6 address \"zz::1\""},
      {"redis://[127.0.0.1]", "invalid IPv6 address"},
      {"redis://[::1]x", "unexpected \"x\" after the IPv6 address"},
      {"redis://[fe80::1%eth0]", "invalid IPv6 zone"},
      {"redis://[1::2::3]", "invalid IPv6 address \"1::2::3\""},
      // Port.
      {"redis://h:", "port is empty"},
      {"redis://h:abc", "port is not a number"},
      {"redis://h:-1", "port is not a number"},
      {"redis://[::1]:x", "port is not a number"},
      {"redis://h:0", "port 0 is out of range (1-65535)"},
      {"redis://h:65536", "port 65536 is out of range (1-65535)"},
      {"redis://h:123456789012345678901234", "out of range"},
      // Database.
      {"redis://h/abc", "database \"abc\" is not a number"},
      {"redis://h/-1", "database -1 is negative"},
      {"redis://h/0/1", "unexpected \"/1\" after the database number"},
      {"redis://h//", "unexpected \"/\" after the database number"},
      {"redis://h/2147483648", "database 2147483648 is out of range"},
      // Credentials.
      {"redis://@h", "nothing before '@'"},
      {"redis://:@h", "empty credentials"},
      {"redis://bob:@h", "user \"bob\" has an empty password"},
      {"redis://bob@h", "need a ':'"},
      {"redis://u%4:pw@h", "invalid percent escape \"%4\" in the user name"},
      {"redis://u:p%zzw@h", "invalid percent escape in the password"},
      {"redis://u:pw%@h", "invalid percent escape in the password"},
      {"redis://u%00:pw@h", "user name contains a NUL byte"},
      {"redis://h/0?client_name=me@x", "'?' before the '@'"},
      // unix://
      {"unix://", "needs an absolute socket path"},
      {"unix://relative.sock", "must not name a host (\"relative.sock\")"},
      {"unix://host/tmp/redis.sock", "must not name a host"},
      {"unix:///tmp/", "names a directory"},
      {"unix:///tmp/a%G0.sock", "invalid percent escape \"%G0\" in the socket path"},
      {"unix:///tmp/r.sock?db=-1", "database -1 is negative"},
      {"unix:///tmp/r.sock?db=x", "database \"x\" is not a number"},
      {"unix:///tmp/r.sock?user=bob", "needs a \"password\""},
      {"unix://u:pw@/tmp/r.sock?password=x", "both before '@' and in the query"},
      {"unix:///tmp/r.sock?ca_file=/ca.pem", "unix:// URLs do not support"},
      // Query syntax.
      {"redis://h?foo", "query option \"foo\" has no value"},
      {"redis://h?foo=1", "unknown query option \"foo\""},
      {"redis://h?=1", "empty name"},
      {"redis://h?&client_name=a", "empty query option"},
      {"redis://h?client_name=a&", "empty query option"},
      {"redis://h?client_name=", "query option \"client_name\" has an empty value"},
      {"redis://h?client_name=a&client_name=b", "\"client_name\" is given more than once"},
      {"redis://h?client_name=%2", "invalid percent escape \"%2\" in the value of query option"},
      // What RFC 3986 wants percent-encoded (Boost.URL refuses it).
      {"redis://h/0#x", "unexpected '#' after the path (percent-encode '#' as %23)"},
      {"redis://h?client_name=a#b", "unexpected '#' after the query"},
      {"redis://h?client_name=a{b",
       "the value of query option \"client_name\" contains '{', which must be percent-encoded (as %7B)"},
      {"redis://h?connect_timeout=1&client_name=a|b", "option \"client_name\" contains '|'"},
      {"unix:///tmp/a|b.sock", "the socket path contains '|', which must be percent-encoded (as %7C)"},
      // Query values.
      {"redis://h?connect_timeout=abc", "connect_timeout \"abc\" is not a whole number"},
      {"redis://h?connect_timeout=-5", "connect_timeout \"-5\" is not a whole number"},
      {"redis://h?connect_timeout=1.5", "connect_timeout \"1.5\" is not a whole number"},
      {"redis://h?command_timeout=0", "command_timeout must be greater than 0"},
      {"redis://h?command_timeout=86400001", "too large"},
      {"redis://h?command_timeout=99999999999999999999999", "too large"},
      {"rediss://h?verify=maybe", "\"verify\" must be true or false, not \"maybe\""},
      {"rediss://h?verify=", "empty value"},
      // Options that do not fit the scheme.
      {"redis://h?ca_file=/ca.pem", "requires a rediss:// URL"},
      {"redis://h?verify=false", "requires a rediss:// URL"},
      {"redis://h?server_name=x", "requires a rediss:// URL"},
      {"redis://h?db=1", "\"db\" is only for unix:// URLs"},
      {"redis://h?password=x", "\"password\" is only for unix:// URLs"},
      {"redis://h?user=x", "\"user\" is only for unix:// URLs"},
      // Caught by validate() on the parsed result.
      {"redis://h?client_name=a%20b", "client_name"},
      {"rediss://h?cert_file=/c.pem", "tls.cert_file is set but tls.key_file is empty"},
      {"rediss://h?key_file=/k.pem", "tls.key_file is set but tls.cert_file is empty"},
  };
  ASSERT_GE(cases.size(), 25u);
  for (const auto& bad : cases) {
    SCOPED_TRACE("URL: " + bad.url);
    const auto message = url_error(bad.url);
    EXPECT_TRUE(message.starts_with("invalid Redis URL \"")) << message;
    EXPECT_TRUE(contains(message, bad.expected))
        << "message: " << message << "\nexpected to contain: " << bad.expected;
  }
}

TEST(RedisOptionsUrl, MessageNamesTheMaskedUrl) {
  EXPECT_EQ(url_error("redis://u:pw@h:99999"),
            R"(invalid Redis URL "redis://u:***@h:99999": port 99999 is out of range (1-65535))");
  EXPECT_EQ(url_error("http://x"), R"(invalid Redis URL "http://x": unknown scheme "http" )"
                                   R"((expected redis, rediss, unix, redis-sentinel, rediss-sentinel, )"
                                   R"(redis-cluster or rediss-cluster))");
}

TEST(RedisOptionsUrl, ControlCharactersAreEscapedInMessages) {
  const auto message = url_error("redis://h\r\n");
  EXPECT_TRUE(contains(message, R"("redis://h\x0d\x0a")")) << message;
  EXPECT_FALSE(contains(message, "\r")) << message;
}

TEST(RedisOptionsUrl, UnknownOptionListsTheSupportedOnes) {
  const auto plain = url_error("redis://h?timeout=1");
  EXPECT_TRUE(contains(plain, "connect_timeout, command_timeout, client_name, key_layout)")) << plain;
  const auto tls = url_error("rediss://h?timeout=1");
  EXPECT_TRUE(contains(tls, "ca_file")) << tls;
  const auto unix_socket = url_error("unix:///s?timeout=1");
  EXPECT_TRUE(contains(unix_socket, "db, user, password")) << unix_socket;
}

// ---------------------------------------------------------------------------
// The password never leaks

TEST(RedisOptionsUrl, PasswordNeverAppearsInErrors) {
  // Every URL carries a password containing "S3cret" somewhere in a failing
  // position; no part of it may come back.
  const std::vector<std::string> urls = {
      "redis://u:S3cretPw@h:99999",
      "redis://u:S3cretPw@h:abc",
      "redis://u:S3cretPw@h/x",
      "redis://u:S3cretPw@",
      "rediss://u:S3cretPw@h?verify=maybe",
      "redis://:S3cretPw@h?foo=1",
      "redis://S3cretPw@h",                      // bare password, no ':'
      "redis://u:S3cret%zzPw@h",                 // bad escape inside the password
      "redis://u:S3cret%4",                      // no host at all
      "redis://u:S3cretPw/0",                    // no host: the password reads as a port
      "redis://[::1]:S3cretPw",
      "redis://u:S3cret?Pw@h",                   // raw '?' in the password
      "redis://u:S3cret Pw@h",                   // space in the password
      "redis://u:S3cretPw@h\n",                  // trailing newline
      "redis://u:S3cret\x01Pw@h",                // control character
      "http://u:S3cretPw@h",                     // unknown scheme
      "u:S3cretPw@h:6379",                       // no scheme
      "redis:u:S3cretPw@h",                      // no "//"
      "unix://u:S3cretPw@relative",              // unix with a host
      "unix://u:S3cretPw@/tmp/",                 // unix directory
      "unix:///tmp/s?password=S3cretPw&db=x",    // later option invalid
      "unix:///tmp/s?password=S3cret&S3cretB",   // raw '&' in the password
      "unix:///tmp/s?password=S3cret&Pw=S3cret", // raw '&' and '=' in the password
      "unix:///tmp/s?password=S3cret%G&db=1",    // bad escape in the query password
      "unix:///tmp/s?password=S3cretPw&password=S3cretPw",  // duplicate
      "unix:///tmp/s?password=S3cret{Pw",        // a character to encode in the password
      "unix:///tmp/s?password=S3cret#Pw",        // a raw '#' in the password
      "unix:///tmp/s?password=S3cret&x#S3cret|", // ... and after it
      "unix:///tmp/s?password=S3cretPw&user=bob&db=-1",
      "redis://h?password=S3cretPw",             // option for the wrong scheme
      "redis://u:S3cretPw@h?client_name=a%20b",  // caught by validate()
  };
  for (const auto& url : urls) {
    SCOPED_TRACE("URL: " + url);
    const auto message = url_error(url);
    EXPECT_FALSE(message.empty());
    EXPECT_FALSE(contains(message, "S3cret")) << message;
  }
}

TEST(RedisOptionsUrl, PasswordNeverAppearsInToString) {
  for (const auto* url : {"redis://u:S3cretPw@h/1", "rediss://:S3cretPw@h",
                          "unix://u:S3cretPw@/tmp/s.sock", "unix:///tmp/s?password=S3cretPw"}) {
    SCOPED_TRACE(url);
    const auto text = RedisOptions::from_url(url).to_string();
    EXPECT_FALSE(contains(text, "S3cret")) << text;
    EXPECT_TRUE(contains(text, ":***@")) << text;
  }
}

// ---------------------------------------------------------------------------
// to_string()

TEST(RedisOptionsToString, Defaults) {
  EXPECT_EQ(RedisOptions{}.to_string(), "redis://127.0.0.1:6379/0");
}

TEST(RedisOptionsToString, RendersEachShape) {
  EXPECT_EQ(RedisOptions::from_url("rediss://alice:pw@h:7000/3?ca_file=/x").to_string(),
            "rediss://alice:***@h:7000/3");
  EXPECT_EQ(RedisOptions::from_url("redis://:pw@h").to_string(), "redis://:***@h:6379/0");
  EXPECT_EQ(RedisOptions::from_url("redis://[::1]:6380/2").to_string(), "redis://[::1]:6380/2");
  EXPECT_EQ(RedisOptions::from_url("redis://[fe80::1%25eth0]").to_string(),
            "redis://[fe80::1%25eth0]:6379/0");
  EXPECT_EQ(RedisOptions::from_url("unix:///tmp/r.sock").to_string(), "unix:///tmp/r.sock");
  EXPECT_EQ(RedisOptions::from_url("unix:///tmp/my%20r.sock?db=5").to_string(),
            "unix:///tmp/my%20r.sock?db=5");
}

TEST(RedisOptionsToString, OmitsAnEmptyPassword) {
  RedisOptions options;
  options.username = "bob";
  EXPECT_EQ(options.to_string(), "redis://bob@127.0.0.1:6379/0");
  options.username = "a@b c";
  options.password = "x";
  EXPECT_EQ(options.to_string(), "redis://a%40b%20c:***@127.0.0.1:6379/0");
}

TEST(RedisOptionsToString, RoundTripsWithoutPasswords) {
  for (const auto* url : {"redis://h:1/0", "rediss://[2001:db8::1]:6390/7",
                          "unix:///run/redis%40main.sock?db=3"}) {
    SCOPED_TRACE(url);
    const auto first = RedisOptions::from_url(url);
    const auto again = RedisOptions::from_url(first.to_string());
    EXPECT_EQ(again.host, first.host);
    EXPECT_EQ(again.port, first.port);
    EXPECT_EQ(again.unix_socket, first.unix_socket);
    EXPECT_EQ(again.database, first.database);
    EXPECT_EQ(again.tls.enabled, first.tls.enabled);
    EXPECT_EQ(again.to_string(), first.to_string());
  }
}

// ---------------------------------------------------------------------------
// validate()

TEST(RedisOptionsValidate, DefaultsAreValid) { EXPECT_NO_THROW(RedisOptions{}.validate()); }

TEST(RedisOptionsValidate, HostOrSocket) {
  RedisOptions options;
  options.host.clear();
  EXPECT_TRUE(contains(validate_error(options), "RedisOptions.host is empty"));
  options.unix_socket = "/tmp/redis.sock";
  EXPECT_NO_THROW(options.validate());
}

TEST(RedisOptionsValidate, Port) {
  RedisOptions options;
  options.port = 0;
  EXPECT_TRUE(contains(validate_error(options), "RedisOptions.port must be in 1-65535"));
  options.unix_socket = "/tmp/redis.sock";  // the port is ignored then
  EXPECT_NO_THROW(options.validate());
}

TEST(RedisOptionsValidate, Database) {
  RedisOptions options;
  options.database = -1;
  EXPECT_TRUE(contains(validate_error(options), "RedisOptions.database must be >= 0"));
}

TEST(RedisOptionsValidate, Timeouts) {
  {
    RedisOptions options;
    options.connect_timeout = 0ms;
    EXPECT_TRUE(contains(validate_error(options), "RedisOptions.connect_timeout must be > 0"));
  }
  {
    RedisOptions options;
    options.command_timeout = -1ms;
    EXPECT_TRUE(contains(validate_error(options), "RedisOptions.command_timeout must be > 0"));
  }
  {
    RedisOptions options;
    options.health_check_interval = -1ms;
    EXPECT_TRUE(
        contains(validate_error(options), "RedisOptions.health_check_interval must be >= 0"));
    options.health_check_interval = 0ms;  // disables the check
    EXPECT_NO_THROW(options.validate());
  }
}

TEST(RedisOptionsValidate, ReconnectBackoff) {
  RedisOptions options;
  options.reconnect_min = 0ms;
  EXPECT_TRUE(contains(validate_error(options), "RedisOptions.reconnect_min must be > 0"));
  options.reconnect_min = 100ms;
  options.reconnect_max = 99ms;
  EXPECT_TRUE(contains(validate_error(options), "RedisOptions.reconnect_max"));
  options.reconnect_max = 100ms;
  EXPECT_NO_THROW(options.validate());
}

TEST(RedisOptionsValidate, ClientName) {
  RedisOptions options;
  for (const auto& bad : {"my app"s, "tab\tname"s, "new\nline"s, "caf\xc3\xa9"s}) {
    SCOPED_TRACE(bad);
    options.client_name = bad;
    EXPECT_TRUE(contains(validate_error(options), "RedisOptions.client_name"));
  }
  options.client_name = "";  // skips CLIENT SETNAME
  EXPECT_NO_THROW(options.validate());
  options.client_name = "svc-a:worker@1";
  EXPECT_NO_THROW(options.validate());
}

TEST(RedisOptionsValidate, ClientCertificateNeedsItsKey) {
  RedisOptions options;
  options.tls.enabled = true;
  options.tls.cert_file = "/c.pem";
  EXPECT_TRUE(contains(validate_error(options), "RedisOptions.tls.cert_file"));
  options.tls.cert_file.clear();
  options.tls.key_file = "/k.pem";
  EXPECT_TRUE(contains(validate_error(options), "RedisOptions.tls.key_file"));
  options.tls.cert_file = "/c.pem";
  EXPECT_NO_THROW(options.validate());
}

TEST(RedisOptionsValidate, NoTlsOverUnixSockets) {
  RedisOptions options;
  options.unix_socket = "/tmp/redis.sock";
  options.tls.enabled = true;
  EXPECT_TRUE(contains(validate_error(options), "RedisOptions.tls"));
}

TEST(RedisOptionsValidate, NeverPrintsThePassword) {
  RedisOptions options;
  options.password = "S3cretPw";
  options.database = -3;
  EXPECT_FALSE(contains(validate_error(options), "S3cret"));
}

}  // namespace
}  // namespace unit_redis_options_test
