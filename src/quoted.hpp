#pragma once
// User-supplied text (group names, prefixes) in error and log messages:
// quoted, bounded, control bytes escaped, so a hostile name cannot garble or
// forge a log line.

#include <string>
#include <string_view>

namespace leasehold::detail {

bool has_control_char(std::string_view s);
/// "name", at most 64 bytes of it (then ...), control bytes as \xNN.
std::string quoted(std::string_view s);

}  // namespace leasehold::detail
