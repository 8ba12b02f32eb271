// Command-line parsing with CLI11, which also writes the usage and option
// lists of every help page; the prose of each page lives here beside the
// command it describes (docs/cli.md says the same at more length).
//
// Global options (--url, --prefix) are accepted anywhere: the subcommands
// fall through to them. A command's own options only after the command, so
// that a typo in a global position is not silently taken for something else.

#include "command_line.hpp"

#include "exit_code.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace leasehold::cli {
namespace {

constexpr std::string_view exit_codes = R"(Exit codes:
  0  done (released, removed, every group held)
  1  nothing held or nothing done
  2  usage error (bad option, URL or group name; refused without --force)
  3  Redis unreachable, refused the connection or answered with an error)";

constexpr auto status_text = R"(Shows, for each group, who holds its lease, the lease's remaining TTL and the
group's fencing token (the counter that each fresh acquisition increments).
Without GROUP, lists every group under the prefix: each lease key, and each
group that only has a fencing counter (a group with no leader right now).
Exits 0 when every listed group is held, 1 when some group is not held or no
group exists under the prefix.)";

constexpr auto watch_text = R"(Prints a timestamped line (UTC) each time a lease changes: acquired, renewed
by a new term, taken over, released (with the release notice's sender),
expired or deleted. Release notices arrive at once; everything else is seen by
polling. Without GROUP, watches every group under the prefix, including groups
that appear later. TIME is a number with a unit: 250ms, 10s, 5m (a bare number
means seconds).)";

constexpr auto step_down_text = R"(Releases GROUP's lease exactly as its holder would on step_down(): one script
deletes the lease key only if it holds ID, and publishes ID on the group's
release channel so that standbys take over at once.

The holder itself learns of the release at its next renewal (within its
heartbeat interval) and keeps believing it leads until then: use fencing
tokens downstream, or ask the holder process itself to step down.
Exits 0 when released, 1 when the lease is not held by ID.)";

constexpr auto evict_text = R"(Deletes GROUP's lease key whoever holds it: for a lease left by a holder that
is gone, or a foreign value. No release notice is sent; a live holder finds
out at its next renewal and stops leading, then the group is elected anew.
Exits 0 when the key was deleted, 1 when there was nothing to delete or the
confirmation was declined.)";

constexpr auto migrate_tokens_text = R"(Copies each group's fencing counter (and its once-per-tick record) from the
keys of --from to the keys of --to, for a fleet that moves to another
deployment (one server to a Redis Cluster) or key layout (plain to
hash-tagged): the new keys would otherwise start the tokens at 1 again, below
every token a fenced store has seen. A counter is never lowered: the target
keeps a value that is as high or higher (one script on the target decides).
The layout is each URL's: hash-tagged on redis-cluster:// or with the query
option key_layout=hash_tagged, plain otherwise. Without GROUP, copies every
group under the prefix on --from (SCAN, on every master of a cluster).
Stop the old fleet first, then copy, then start the new fleet
(docs/migration.md). Exits 0 when every group was copied or kept, 1 when a
group has no counter on --from or no group was found.)";

// The parser and the variables its options write to.
class Parser {
 public:
  explicit Parser(CommandLine& line) : line_(line) {
    app_.set_version_flag("--version", "leasehold " LEASEHOLD_CLI_VERSION, "print the version");
    app_.set_help_flag("-h,--help", "show help (also: leasehold help COMMAND)");
    app_.get_formatter()->label("SUBCOMMAND", "COMMAND");
    app_.add_option("--url", url_,
                    "Redis to talk to: redis://[user[:password]@]host[:port][/db],\n"
                    "rediss://... (TLS), unix:///path/to/redis.sock[?db=N],\n"
                    "redis-sentinel://... (Sentinel), redis-cluster://h:p[,h:p...] (Cluster).\n"
                    "Default: $LEASEHOLD_URL, else " + std::string(default_url))
        ->type_name("URL");
    app_.add_option("--prefix", line_.prefix,
                    "lease key prefix; a group's lease key is PREFIX + GROUP.\nDefault: leader:")
        ->type_name("PREFIX");
    // Subcommands made from here on inherit this: they hand the global
    // options above to the app.
    app_.fallthrough();
    // At most one command: after it, a command's name is a group name.
    app_.require_subcommand(0, 1);
    app_.footer([this] { return global_options_and_exit_codes(app_); });

    auto* status = command("status", "holder, remaining TTL and fencing token per group", status_text);
    groups(status);
    json(status);

    auto* watch = command("watch", "print one line per change until Ctrl-C or --duration", watch_text);
    groups(watch);
    watch->add_option("--duration", line_.duration, "stop after TIME (default: until SIGINT or SIGTERM)")
        ->type_name("TIME");
    watch->add_option("--interval", line_.interval, "polling period (default: 500ms)")->type_name("TIME");
    json(watch);

    auto* step_down = command("step-down", "release GROUP's lease if ID holds it (as the holder would)",
                              step_down_text);
    one_group(step_down);
    step_down->add_option("--as", line_.as, "the instance id the lease must hold (see leasehold status)")
        ->type_name("ID");

    auto* evict = command("evict", "delete GROUP's lease whoever holds it (needs --force)", evict_text);
    one_group(evict);
    evict->add_flag("--force", line_.force, "required: evict never runs without it");
    evict->add_flag("--yes", line_.yes, "do not ask for confirmation (needed when stdin is not a terminal)");

    auto* migrate = command("migrate-tokens", "copy fencing counters to a new topology or layout, never lowering them",
                            migrate_tokens_text);
    migrate->add_option("GROUP", line_.groups, "groups (default: every group under the prefix on --from)")
        ->type_name("");
    migrate->add_option("--from", line_.from, "the URL the fleet used (required)")->type_name("URL");
    migrate->add_option("--to", line_.to, "the URL the fleet will use (required)")->type_name("URL");
    migrate->add_flag("--dry-run", line_.dry_run, "say what would be copied; write nothing");

    help_ = app_.add_subcommand("help", "show help for a command");
    help_->add_option("COMMAND", help_topic_, "the command")->check(CLI::IsMember(command_names_));
  }

  void parse(const std::vector<std::string>& args) {
    // CLI11 takes the arguments last first.
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
      app_.parse(reversed);
    } catch (const CLI::CallForHelp&) {
      // app_.help() shows the page of the command that was given, if any.
      show(app_.help(), exit_ok);
      return;
    } catch (const CLI::CallForVersion& e) {
      show(std::string(e.what()) + "\n", exit_ok);
      return;
    } catch (const CLI::ParseError& e) {
      throw Failure(exit_usage, usage_error(e, args));
    }
    const auto given = app_.get_subcommands();
    if (given.empty()) {
      show(app_.help(), exit_usage);
      return;
    }
    if (given.front() == help_) {
      // `leasehold help step-down` is `leasehold step-down --help`.
      show(help_topic_.empty() ? app_.get_formatter()->make_help(&app_, app_.get_name(), CLI::AppFormatMode::Normal)
                               : app_.get_subcommand(help_topic_)->help(app_.get_name()),
           exit_ok);
      return;
    }
    line_.command = given.front()->get_name();
  }

  const std::optional<std::string>& url() const { return url_; }

 private:
  CLI::App* command(const std::string& name, const std::string& summary, std::string_view text) {
    command_names_.push_back(name);
    auto* sub = app_.add_subcommand(name, summary);
    sub->footer([this, sub, text] {
      return std::string(text) + "\n" + global_options_and_exit_codes(*sub);
    });
    return sub;
  }

  void groups(CLI::App* sub) {
    sub->add_option("GROUP", line_.groups, "groups (default: every group under the prefix)")->type_name("");
  }

  void one_group(CLI::App* sub) {
    sub->add_option("GROUP", line_.groups, "the group")->required()->expected(1)->type_name("");
  }

  void json(CLI::App* sub) {
    sub->add_flag("--json", line_.json, sub->get_name() == "status" ? "one JSON object instead of the table"
                                                                    : "one JSON object per line");
  }

  // The app's own page lists its options itself; a command's page repeats
  // the global ones, generated from the app's.
  std::string global_options_and_exit_codes(const CLI::App& page) const {
    std::string out;
    if (&page != &app_) {
      out = "\n" + CLI::Formatter{}.make_group("Global options (anywhere on the line)", false,
                                             app_.get_options([](const CLI::Option* o) {
                                               return o->get_group() == "Options";
                                             }));
    }
    return out + std::string(exit_codes);
  }

  void show(std::string text, int code) {
    line_.output = std::move(text);
    line_.output_exit_code = code;
  }

  // CLI11's message, made to name the argument as precisely as before when
  // it is a command's option given before the command, or not a command.
  std::string usage_error(const CLI::ParseError& e, const std::vector<std::string>& args) {
    const auto commands = app_.get_subcommands({});
    const auto is_command = [&](const std::string& arg) {
      return std::any_of(commands.begin(), commands.end(), [&](const CLI::App* c) { return c->get_name() == arg; });
    };
    for (const auto& arg : args) {
      if (is_command(arg)) break;
      const auto name = arg.substr(0, arg.find('='));
      if (!arg.starts_with('-') || app_.get_option_no_throw(name) != nullptr) continue;
      if (std::any_of(commands.begin(), commands.end(),
                      [&](const CLI::App* c) { return c->get_option_no_throw(name) != nullptr; })) {
        return fmt::format("option {} belongs after its command", name);
      }
    }
    const auto given = app_.get_subcommands();
    if (given.empty()) {
      for (const auto& extra : app_.remaining()) {
        if (!extra.starts_with('-')) return fmt::format("unknown command \"{}\" (see leasehold --help)", extra);
      }
      return fmt::format("{} (see leasehold --help)", e.what());
    }
    const auto& command = given.front()->get_name();
    return fmt::format("{}: {} (see leasehold {} --help)", command, e.what(), command);
  }

  CommandLine& line_;
  CLI::App app_{"leasehold - inspect and operate leasehold leader-election leases on Redis", "leasehold"};
  std::optional<std::string> url_;
  std::vector<std::string> command_names_;
  CLI::App* help_ = nullptr;
  std::string help_topic_;
};

}  // namespace

CommandLine parse_command_line(const std::vector<std::string>& args, const char* env_url) {
  CommandLine line;
  Parser parser(line);
  parser.parse(args);
  if (parser.url()) {
    line.url = *parser.url();
    line.url_source = "--url";
  } else if (env_url != nullptr && *env_url != '\0') {
    line.url = env_url;
    line.url_source = "LEASEHOLD_URL";
  } else {
    line.url = default_url;
    line.url_source = "the default URL";
  }
  return line;
}

}  // namespace leasehold::cli
