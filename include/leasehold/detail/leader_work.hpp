#pragma once
// The non-template core of the guards: running work inside one term of
// leadership and cancelling it when the term ends. Compiled once, in
// impl/work/leader_work.ipp.

#include <leasehold/elector.hpp>
#include <leasehold/term.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <string>

namespace leasehold::detail {

/// Where leader work runs by default: the executor the elector was built on,
/// not the elector's own strand, so that user work is never serialised with
/// renewals (in standalone mode, the elector's I/O thread).
boost::asio::any_io_executor work_executor(const Elector& elector);

/// The term this instance holds on `group` now, without a Redis round trip;
/// an empty Term if it does not lead, or if the term it led at `checked_at`
/// has ended by the time the elector answers (never a later term).
boost::asio::awaitable<Term> current_term(Elector& elector, Group group,
                                          std::chrono::steady_clock::time_point checked_at);

/// Runs `work` until it finishes (true) or `term` ends (false). When the term
/// ends first, `work` receives terminal cancellation and is waited for; its
/// exception, if any, is then dropped. An exception `work` throws while the
/// term lasts is rethrown. The work counts in the term until it has finished,
/// so a draining step-down or stop releases only after it (drain_timeout);
/// a term that has already ended runs no work (false).
boost::asio::awaitable<bool> run_until_term_ends(boost::asio::awaitable<void> work, Term term);

/// True once this coroutine was asked to stop. Loops check it before each
/// wait: a cancellation emitted before an operation starts does not reach it.
boost::asio::awaitable<bool> cancellation_requested();

/// run_while_leader's loop (see run_while_leader.hpp).
boost::asio::awaitable<error_code> run_while_leader_loop(Elector& elector, std::string group,
                                                         std::function<boost::asio::awaitable<void>(Term)> task);

}  // namespace leasehold::detail
