#pragma once
// The command line: global options, one subcommand, its flags and operands.
// Parsing only; nothing here touches the network.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::cli {

/// One flag a command accepts.
struct FlagSpec {
  std::string_view name;    ///< with the dashes: "--json"
  bool takes_value = false;
};

/// What a subcommand accepts; the table lives in command_line.cpp.
struct CommandSpec {
  std::string_view name;
  std::vector<FlagSpec> flags;
  std::size_t min_operands = 0;
  std::size_t max_operands = 0;  ///< SIZE_MAX: any number
};

/// The subcommands, in the order the help lists them.
const std::vector<CommandSpec>& command_specs();
const CommandSpec* find_command(std::string_view name);

struct CommandLine {
  std::string url;          ///< --url, else $LEASEHOLD_URL, else the default
  std::string url_source;   ///< where url came from, for error messages
  std::string prefix = "leader:";
  std::string command;      ///< empty: none given
  std::vector<std::string> operands;
  std::map<std::string, std::string, std::less<>> values;  ///< flags with a value, by name
  std::vector<std::string> switches;                       ///< flags without one
  bool help = false;        ///< --help, -h or `help [COMMAND]`
  bool version = false;

  bool has(std::string_view flag) const;
  std::optional<std::string> value(std::string_view flag) const;
};

inline constexpr std::string_view default_url = "redis://127.0.0.1:6379";

/// Parses argv (without argv[0]). `env_url` is $LEASEHOLD_URL, if set.
/// Throws Failure(exit_usage) naming the offending argument.
CommandLine parse_command_line(const std::vector<std::string>& args, const char* env_url);

}  // namespace leasehold::cli
