#pragma once
// Asking the operator before a destructive action.

#include <string_view>

namespace leasehold::cli {

/// True when stdin is a terminal, so that a question can be answered.
bool can_ask();

/// Prints `question` and " [y/N] " on stderr and reads one line from stdin;
/// true for "y" or "yes" in any case.
bool ask(std::string_view question);

}  // namespace leasehold::cli
