#pragma once
// Parsing of Redis INFO text: "key:value" lines, and the commandstats section
// ("cmdstat_evalsha:calls=12,usec=40,...") that the load benchmarks diff.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace leasehold::bench {

using InfoFields = std::map<std::string, std::string, std::less<>>;

/// Every "key:value" line of an INFO reply (section headers skipped).
InfoFields parse_info(std::string_view text);

/// A numeric INFO field, 0 when absent.
double info_number(const InfoFields& fields, std::string_view key);

/// Calls per command name ("evalsha", "ping", "client|setname", ...), from
/// the commandstats section. Commands run inside scripts count too.
std::map<std::string, std::uint64_t> parse_commandstats(std::string_view text);

/// b - a per command (commands absent from `a` count from 0).
std::map<std::string, std::uint64_t> diff(const std::map<std::string, std::uint64_t>& a,
                                          const std::map<std::string, std::uint64_t>& b);

/// The count for `name`, 0 when absent.
std::uint64_t calls(const std::map<std::string, std::uint64_t>& stats, std::string_view name);

}  // namespace leasehold::bench
