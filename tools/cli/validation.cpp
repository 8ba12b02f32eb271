// Operands are checked with the library's own rules, so that the CLI accepts
// exactly the groups and prefixes an Elector can use.

#include "subcommands.hpp"
#include "exit_code.hpp"

#include "connection.hpp"

#include "elector_core.hpp"  // detail::validate_group_name, validate_key_prefix (src/)

#include <leasehold/elector_options.hpp>

#include <stdexcept>

namespace leasehold::cli {

void require_valid_groups(const Context& ctx, const std::vector<std::string>& groups) {
  const KeyLayout layout = layout_for(ctx.redis, ctx.line.prefix);
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
