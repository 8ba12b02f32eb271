#pragma once
// A minimal HTTP/1.1 GET against a loopback port, for tests that scrape
// metrics or probe health endpoints.

#include <cstdint>
#include <string>

namespace leasehold::test {

struct HttpReply {
  unsigned status = 0;  ///< 0: no answer (refused, timed out, malformed)
  std::string content_type;
  std::string body;
};

/// GET http://127.0.0.1:<port><target>, connection: close. Every step is
/// bounded by 5 s in all; never throws.
HttpReply http_get(std::uint16_t port, const std::string& target);

}  // namespace leasehold::test
