#pragma once
// The command line: global options, one subcommand, its options and groups.
// Parsing only (with CLI11); nothing here touches the network.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::cli {

struct CommandLine {
  std::string url;          ///< --url, else $LEASEHOLD_URL, else the default
  std::string url_source;   ///< where url came from, for error messages
  std::string prefix = "leader:";
  std::string command;      ///< empty: none given
  std::vector<std::string> groups;
  bool json = false;        ///< status, watch
  std::optional<std::string> duration;  ///< watch
  std::optional<std::string> interval;  ///< watch
  std::optional<std::string> as;        ///< step-down
  bool force = false;       ///< evict
  bool yes = false;         ///< evict
  std::optional<std::string> from;  ///< migrate-tokens: the URL to copy from
  std::optional<std::string> to;    ///< migrate-tokens: the URL to copy to
  bool dry_run = false;             ///< migrate-tokens
  /// What to print instead of running a command (help, version, or the
  /// overview when no command was given), and the exit code after it.
  std::optional<std::string> output;
  int output_exit_code = 0;
};

inline constexpr std::string_view default_url = "redis://127.0.0.1:6379";

/// Parses argv (without argv[0]). `env_url` is $LEASEHOLD_URL, if set.
/// Throws Failure(exit_usage) naming the offending argument.
CommandLine parse_command_line(const std::vector<std::string>& args, const char* env_url);

}  // namespace leasehold::cli
