// RedisOptions::from_url on arbitrary bytes. It must either parse or throw
// std::invalid_argument, never anything else and never crash; what it parses
// must pass validate() and survive a round trip through to_string(); and a
// password must never show in to_string() or in an error message.

#include <leasehold/redis_options.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

using leasehold::RedisOptions;

[[noreturn]] void fail(const char* what, std::string_view url, std::string_view detail = {}) {
  std::fprintf(stderr, "url_fuzzer: %s\n  url (%zu bytes): %.*s\n  detail: %.*s\n", what, url.size(),
               static_cast<int>(url.size()), url.data(), static_cast<int>(detail.size()), detail.data());
  std::abort();
}

bool printable(std::string_view text) {
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

// Parses `url`; on failure checks the message, on success the result.
// `secret`: a password known to be in the URL, which nothing may reveal.
void check(std::string_view url, std::string_view secret) {
  RedisOptions parsed;
  try {
    parsed = RedisOptions::from_url(url);
  } catch (const std::invalid_argument& e) {
    const std::string_view message = e.what();
    if (message.empty()) fail("empty error message", url);
    if (!printable(message)) fail("control characters in the error message", url, message);
    if (!secret.empty() && message.find(secret) != std::string_view::npos) {
      fail("the password shows in the error message", url, message);
    }
    return;
  } catch (const std::exception& e) {
    fail("threw something other than std::invalid_argument", url, e.what());
  }

  try {
    parsed.validate();
  } catch (const std::exception& e) {
    fail("from_url accepted options that validate() rejects", url, e.what());
  }

  const std::string shown = parsed.to_string();
  if (!printable(shown)) fail("control characters in to_string()", url, shown);
  if (!secret.empty() && shown.find(secret) != std::string::npos) fail("to_string() shows the password", url, shown);
  if (!parsed.password.empty() && shown.find(":***@") == std::string::npos) {
    fail("to_string() does not mask the password", url, shown);
  }

  // to_string() is a URL for the same endpoint (password masked as "***").
  RedisOptions again;
  try {
    again = RedisOptions::from_url(shown);
  } catch (const std::exception& e) {
    fail("to_string() of a parsed URL does not parse", url, std::string(shown) + " -> " + e.what());
  }
  const bool same = again.host == parsed.host && again.port == parsed.port &&
                    again.unix_socket == parsed.unix_socket && again.database == parsed.database &&
                    again.username == parsed.username && again.tls.enabled == parsed.tls.enabled &&
                    again.password == (parsed.password.empty() ? "" : "***");
  if (!same) fail("to_string() names a different endpoint", url, shown);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  check(input, {});
  // The same bytes after credentials with a known password.
  static constexpr std::string_view secret = "Pa55-s3cret-w0rd";
  if (input.find(secret) != std::string_view::npos) return 0;  // it may then show legitimately
  for (const std::string_view scheme : {"redis://", "rediss://", "unix://"}) {
    std::string url(scheme);
    url.append("user:").append(secret).append("@").append(input);
    check(url, secret);
  }
  return 0;
}
