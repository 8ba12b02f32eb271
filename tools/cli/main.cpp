// leasehold: the operations CLI. See docs/cli.md or `leasehold --help`.
//
// Parses the command line, builds the Redis options, and runs the command as
// a coroutine on a single-threaded io_context. Every failure ends up here as
// a Failure carrying its exit code.

#include "command_line.hpp"
#include "subcommands.hpp"
#include "exit_code.hpp"

#include <leasehold/redis_options.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace cli = leasehold::cli;

namespace {

asio::awaitable<int> dispatch(const cli::Context& ctx) {
  const std::string& command = ctx.line.command;
  if (command == "status") co_return co_await cli::run_status(ctx);
  if (command == "watch") co_return co_await cli::run_watch(ctx);
  if (command == "step-down") co_return co_await cli::run_step_down(ctx);
  if (command == "evict") co_return co_await cli::run_evict(ctx);
  if (command == "migrate-tokens") co_return co_await cli::run_migrate_tokens(ctx);
  throw std::logic_error("no runner for command " + command);
}

int run(const std::vector<std::string>& args) {
  const cli::CommandLine line = cli::parse_command_line(args, std::getenv("LEASEHOLD_URL"));
  if (line.output) {
    // Help and version on stdout; the overview after a missing command is
    // a usage error and goes to stderr.
    std::fputs(line.output->c_str(), line.output_exit_code == cli::exit_ok ? stdout : stderr);
    return line.output_exit_code;
  }
  // migrate-tokens has two URLs of its own (--from, --to) and no use for this one.
  const cli::Context ctx{line, line.command == "migrate-tokens" ? leasehold::RedisOptions{}
                                                                 : cli::parse_redis_url(line.url, line.url_source)};

  asio::io_context io(1);
  int code = cli::exit_ok;
  std::exception_ptr failure;
  asio::co_spawn(io, dispatch(ctx), [&](std::exception_ptr e, int result) {
    failure = e;
    code = result;
  });
  io.run();
  if (failure) std::rethrow_exception(failure);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const cli::Failure& f) {
    std::fprintf(stderr, "leasehold: %s\n", f.what());
    return f.code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "leasehold: unexpected error: %s\n", e.what());
    return cli::exit_unavailable;
  }
}
