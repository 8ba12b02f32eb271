#pragma once
// Text from users or servers (group names, prefixes, URLs, error texts) in
// error and log messages: control bytes escaped and the length bounded, so a
// hostile value cannot garble or forge a log line. The one escaping helper of
// the library and the CLI.

#include <cstddef>
#include <string>
#include <string_view>

namespace leasehold::detail {

bool has_control_char(std::string_view s);
/// `s` with control bytes as \xNN; at most `max_bytes` of it (then ...).
std::string printable(std::string_view s, std::size_t max_bytes = std::string_view::npos);
/// "name", at most 64 bytes of it (then ...), control bytes as \xNN.
std::string quoted(std::string_view s);
/// Non-empty and only ASCII digits.
bool all_digits(std::string_view s);

}  // namespace leasehold::detail
