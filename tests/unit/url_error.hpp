#pragma once
// The message RedisOptions::from_url() throws for a URL, for the URL tests.

#include <leasehold/redis_options.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace leasehold::test {

/// The message from_url() throws for `url`, or "" (plus a test failure) if it parses.
inline std::string url_error(std::string_view url) {
  try {
    RedisOptions::from_url(url);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected from_url to reject \"" << url << "\"";
  return {};
}

}  // namespace leasehold::test
