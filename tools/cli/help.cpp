// The --help texts. Kept next to each other so that they read consistently;
// docs/cli.md says the same at more length.

#include "help.hpp"

#include <fmt/format.h>

namespace leasehold::cli {
namespace {

constexpr std::string_view global_options = R"(Global options (anywhere on the line):
  --url URL        Redis to talk to: redis://[user[:password]@]host[:port][/db],
                   rediss://... (TLS), unix:///path/to/redis.sock[?db=N].
                   Default: $LEASEHOLD_URL, else redis://127.0.0.1:6379
  --prefix PREFIX  lease key prefix; a group's lease key is PREFIX + GROUP.
                   Default: leader:
  -h, --help       show help (also: leasehold help COMMAND)
  --version        print the version
)";

constexpr std::string_view exit_codes = R"(Exit codes:
  0  done (released, removed, every group held)
  1  nothing held or nothing done
  2  usage error (bad option, URL or group name; refused without --force)
  3  Redis unreachable, refused the connection or answered with an error
)";

constexpr std::string_view overview = R"(leasehold - inspect and operate leasehold leader-election leases on Redis

Usage: leasehold [--url URL] [--prefix PREFIX] COMMAND [ARGS...]

Commands:
  status [GROUP...]          holder, remaining TTL and fencing token per group
  watch [GROUP...]           print one line per change until Ctrl-C or --duration
  step-down GROUP --as ID    release GROUP's lease if ID holds it (as the holder would)
  evict GROUP --force        delete GROUP's lease whoever holds it
  help [COMMAND]             show help for a command
)";

constexpr std::string_view status_page = R"(Usage: leasehold status [GROUP...] [--json]

Shows, for each group, who holds its lease, the lease's remaining TTL and the
group's fencing token (the counter that each fresh acquisition increments).
Without GROUP, lists every group under the prefix: each lease key, and each
group that only has a fencing counter (a group with no leader right now).

Options:
  --json   one JSON object instead of the table

Exits 0 when every listed group is held, 1 when some group is not held or no
group exists under the prefix.
)";

constexpr std::string_view watch_page = R"(Usage: leasehold watch [GROUP...] [--duration TIME] [--interval TIME] [--json]

Prints a timestamped line (UTC) each time a lease changes: acquired, renewed
by a new term, taken over, released (with the release notice's sender),
expired or deleted. Release notices arrive at once; everything else is seen by
polling. Without GROUP, watches every group under the prefix, including groups
that appear later.

Options:
  --duration TIME  stop after TIME (default: until SIGINT or SIGTERM)
  --interval TIME  polling period (default: 500ms)
  --json           one JSON object per line
TIME is a number with a unit: 250ms, 10s, 5m (a bare number means seconds).
)";

constexpr std::string_view step_down_page = R"(Usage: leasehold step-down GROUP --as ID

Releases GROUP's lease exactly as its holder would on step_down(): one script
deletes the lease key only if it holds ID, and publishes ID on the group's
release channel so that standbys take over at once.

The holder itself learns of the release at its next renewal (within its
heartbeat interval) and keeps believing it leads until then: use fencing
tokens downstream, or ask the holder process itself to step down.

Options:
  --as ID  the instance id the lease must hold (see leasehold status)

Exits 0 when released, 1 when the lease is not held by ID.
)";

constexpr std::string_view evict_page = R"(Usage: leasehold evict GROUP --force [--yes]

Deletes GROUP's lease key whoever holds it: for a lease left by a holder that
is gone, or a foreign value. No release notice is sent; a live holder finds
out at its next renewal and stops leading, then the group is elected anew.

Options:
  --force  required: evict never runs without it
  --yes    do not ask for confirmation (needed when stdin is not a terminal)

Exits 0 when the key was deleted, 1 when there was nothing to delete or the
confirmation was declined.
)";

}  // namespace

std::string help_text(std::string_view command) {
  std::string_view page = overview;
  if (command == "status") page = status_page;
  else if (command == "watch") page = watch_page;
  else if (command == "step-down") page = step_down_page;
  else if (command == "evict") page = evict_page;
  return fmt::format("{}\n{}\n{}", page, global_options, exit_codes);
}

}  // namespace leasehold::cli
