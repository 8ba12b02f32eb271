// Operands are checked with the library's own rules, so that the CLI accepts
// exactly the groups and prefixes an Elector can use.

#include "commands.hpp"
#include "exit_code.hpp"

#include <leasehold/elector_options.hpp>

#include <stdexcept>

namespace leasehold::cli {

void require_valid_groups(const std::vector<std::string>& groups) {
  for (const auto& group : groups) {
    try {
      validate_group_name(group);
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
