// Operands are checked with the library's own rules, so that the CLI accepts
// exactly the groups and prefixes an Elector can use.

#include "subcommands.hpp"
#include "exit_code.hpp"

#include "connection.hpp"

#include <leasehold/impl/options/name_rules.hpp>

#include <leasehold/elector_options.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace leasehold::cli {

void require_valid_groups(const Context& ctx, const std::vector<std::string>& groups) {
  require_valid_groups(ctx.redis, ctx.line.prefix, groups);
}

void require_valid_groups(const RedisOptions& redis, const std::string& prefix,
                          const std::vector<std::string>& groups) {
  const KeyLayout layout = layout_for(redis, prefix);
  try {
    detail::validate_key_prefix(layout);  // on a cluster only
  } catch (const std::invalid_argument& e) {
    throw Failure(exit_usage, std::string("bad --prefix: ") + e.what());
  }
  for (const auto& group : groups) {
    try {
      detail::validate_group_name(group, layout);
    } catch (const std::invalid_argument& e) {
      throw Failure(exit_usage, e.what());
    }
  }
}

// The library's default client name says "a service": say "an operator".
RedisOptions parse_redis_url(const std::string& url, std::string_view source) {
  try {
    auto options = RedisOptions::from_url(url);
    if (options.client_name == "leasehold") options.client_name = "leasehold-cli";
    return options;
  } catch (const std::invalid_argument& e) {
    // from_url's message names the URL with the password masked.
    throw Failure(exit_usage, fmt::format("bad Redis URL from {}: {}", source, e.what()));
  }
}

void require_valid_prefix(std::string_view prefix) {
  ElectorOptions options;
  options.key_prefix = prefix;
  try {
    options.validate();
  } catch (const std::invalid_argument& e) {
    throw Failure(exit_usage, std::string("bad --prefix: ") + e.what());
  }
}

}  // namespace leasehold::cli
