// Command-line parsing. Global options (--url, --prefix, --help) are accepted
// anywhere; a command's own flags only after the command, so that a typo in a
// global position is not silently taken for something else.

#include "command_line.hpp"

#include "exit_code.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace leasehold::cli {
namespace {

constexpr std::size_t any = SIZE_MAX;

const std::vector<FlagSpec> global_flags = {
    {"--url", true}, {"--prefix", true}, {"--help", false}, {"--version", false}};

const FlagSpec* find_flag(const std::vector<FlagSpec>& flags, std::string_view name) {
  auto it = std::find_if(flags.begin(), flags.end(), [&](const FlagSpec& f) { return f.name == name; });
  return it == flags.end() ? nullptr : &*it;
}

[[noreturn]] void usage_error(const std::string& message) { throw Failure(exit_usage, message); }

}  // namespace

const std::vector<CommandSpec>& command_specs() {
  static const std::vector<CommandSpec> specs = {
      {"status", {{"--json", false}}, 0, any},
      {"watch", {{"--json", false}, {"--duration", true}, {"--interval", true}}, 0, any},
      {"step-down", {{"--as", true}}, 1, 1},
      {"evict", {{"--force", false}, {"--yes", false}}, 1, 1},
      {"help", {}, 0, 1},
  };
  return specs;
}

const CommandSpec* find_command(std::string_view name) {
  const auto& specs = command_specs();
  auto it = std::find_if(specs.begin(), specs.end(), [&](const CommandSpec& c) { return c.name == name; });
  return it == specs.end() ? nullptr : &*it;
}

bool CommandLine::has(std::string_view flag) const {
  return std::find(switches.begin(), switches.end(), flag) != switches.end();
}

std::optional<std::string> CommandLine::value(std::string_view flag) const {
  auto it = values.find(flag);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

CommandLine parse_command_line(const std::vector<std::string>& args, const char* env_url) {
  CommandLine cl;
  const CommandSpec* spec = nullptr;
  bool only_operands = false;

  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool is_flag = !only_operands && arg.size() > 1 && arg[0] == '-';
    if (!is_flag) {
      if (spec == nullptr) {
        spec = find_command(arg);
        if (spec == nullptr) usage_error(fmt::format("unknown command \"{}\" (see leasehold --help)", arg));
        cl.command = arg;
      } else {
        cl.operands.push_back(arg);
      }
      continue;
    }
    if (arg == "--") {
      only_operands = true;
      continue;
    }
    if (arg == "-h") {
      cl.help = true;
      continue;
    }
    const auto eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const FlagSpec* flag = find_flag(global_flags, name);
    if (flag == nullptr && spec != nullptr) flag = find_flag(spec->flags, name);
    if (flag == nullptr) {
      if (spec == nullptr && std::any_of(command_specs().begin(), command_specs().end(),
                                         [&](const CommandSpec& c) { return find_flag(c.flags, name); })) {
        usage_error(fmt::format("option {} belongs after its command", name));
      }
      usage_error(spec ? fmt::format("unknown option {} for {}", name, spec->name)
                       : fmt::format("unknown option {}", name));
    }
    if (!flag->takes_value) {
      if (eq != std::string::npos) usage_error(fmt::format("option {} takes no value", name));
      if (name == "--help") cl.help = true;
      else if (name == "--version") cl.version = true;
      else if (!cl.has(name)) cl.switches.push_back(name);
      continue;
    }
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      usage_error(fmt::format("option {} needs a value", name));
    }
    if (name == "--url") {
      cl.url = value;
      cl.url_source = "--url";
    } else if (name == "--prefix") {
      cl.prefix = value;
    } else {
      cl.values[name] = value;
    }
  }

  if (cl.url_source.empty()) {
    if (env_url != nullptr && *env_url != '\0') {
      cl.url = env_url;
      cl.url_source = "LEASEHOLD_URL";
    } else {
      cl.url = default_url;
      cl.url_source = "the default URL";
    }
  }
  if (cl.command == "help") {
    // `leasehold help step-down` is `leasehold step-down --help`.
    cl.help = true;
    cl.command = cl.operands.empty() ? "" : cl.operands.front();
    if (!cl.command.empty() && find_command(cl.command) == nullptr) {
      usage_error(fmt::format("unknown command \"{}\" (see leasehold --help)", cl.command));
    }
    cl.operands.clear();
    return cl;
  }
  if (cl.help || cl.version || spec == nullptr) return cl;
  if (cl.operands.size() < spec->min_operands) {
    usage_error(fmt::format("{} needs {} (see leasehold {} --help)", spec->name,
                            spec->min_operands == 1 ? "a GROUP" : "more operands", spec->name));
  }
  if (cl.operands.size() > spec->max_operands) {
    usage_error(fmt::format("{} takes at most {} operand{}, got \"{}\"", spec->name, spec->max_operands,
                            spec->max_operands == 1 ? "" : "s", cl.operands[spec->max_operands]));
  }
  return cl;
}

}  // namespace leasehold::cli
