#pragma once
// run_while_leader: leader-scoped work as a coroutine, started at each term
// and cancelled when the term ends.
//
//   auto consume = [&](lh::Term term) -> asio::awaitable<void> {
//     for (;;) co_await handle(co_await next_job(), term.token());
//   };
//   lh::run_while_leader(elector, "consumer", consume, asio::detached);
//   // in a coroutine: auto ec = co_await lh::run_while_leader(elector, "consumer", consume, asio::use_awaitable);
//
// Each time this instance becomes leader of `group`, `task` is called (with
// the Term when it takes one) and its awaitable is run. When the term ends
// (step-down, a failed renewal, lost connection, stop) the task receives
// terminal cancellation at once: the elector ends a term locally before its
// lease can pass to another instance. The next term starts only after the
// task has finished, so two runs never overlap in one process. A task that
// returns while its term lasts is not restarted until the next term.
//
// Completion: void(std::exception_ptr, error_code). error_code is
// errc::stopped once the elector stops, asio::error::operation_aborted when
// the operation is cancelled (terminal cancellation through the token's slot,
// or `co_await (run_while_leader(...) || ...)`), errc::invalid_argument for a
// bad group name. An exception thrown by the task (other than because it was
// cancelled) ends the operation and is delivered as the exception_ptr.
//
// The task runs on a strand of `executor` (default: the executor the elector
// was built on, never its internal strand). The elector must outlive the
// operation.

#include <leasehold/detail/leader_work.hpp>
#include <leasehold/elector.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/strand.hpp>

#include <concepts>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace leasehold {

/// A function returning asio::awaitable<void>, called with the Term or with nothing.
template <typename Task>
concept LeaderTask = std::same_as<std::invoke_result_t<Task&, Term>, boost::asio::awaitable<void>> ||
                     std::same_as<std::invoke_result_t<Task&>, boost::asio::awaitable<void>>;

/// Runs `task` during every term of `group` on a strand of `executor`, until
/// the elector stops or the operation is cancelled (see the top of this
/// header). Handler: void(std::exception_ptr, error_code). Cancellation:
/// terminal, through the token's slot; the running task is cancelled and
/// waited for.
template <LeaderTask Task, typename CompletionToken = boost::asio::deferred_t>
auto run_while_leader(boost::asio::any_io_executor executor, Elector& elector, std::string_view group, Task task,
                      CompletionToken&& token = {}) {
  // Shared, so that a move-only task fits in a std::function.
  auto shared = std::make_shared<Task>(std::move(task));
  auto call = [shared](Term term) -> boost::asio::awaitable<void> {
    if constexpr (std::invocable<Task&, Term>) {
      return (*shared)(std::move(term));
    } else {
      return (*shared)();
    }
  };
  // A strand: the loop and the task stay sequential on a multi-threaded executor.
  return boost::asio::co_spawn(boost::asio::make_strand(std::move(executor)),
                               detail::run_while_leader_loop(elector, std::string(group), std::move(call)),
                               std::forward<CompletionToken>(token));
}

/// The same on the executor the elector was built on (in standalone mode, its
/// I/O thread), never the elector's own strand.
template <LeaderTask Task, typename CompletionToken = boost::asio::deferred_t>
auto run_while_leader(Elector& elector, std::string_view group, Task task, CompletionToken&& token = {}) {
  return run_while_leader(detail::work_executor(elector), elector, group, std::move(task),
                          std::forward<CompletionToken>(token));
}

}  // namespace leasehold
