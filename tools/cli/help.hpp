#pragma once
// The --help texts: the overview and one page per command.

#include <string>
#include <string_view>

namespace leasehold::cli {

/// The overview for an empty `command`, else that command's page.
std::string help_text(std::string_view command);

}  // namespace leasehold::cli
