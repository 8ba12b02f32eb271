#pragma once
// One term of leadership of one group: what acquire() hands to leader work.

#include <leasehold/detail/internal.hpp>
#include <leasehold/events.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace leasehold {

namespace detail {
struct TermState;
using TermEndHandler = boost::asio::any_completion_handler<void(error_code, RevokeReason)>;
void async_wait_term_end(const std::shared_ptr<TermState>& state, TermEndHandler handler);
}  // namespace detail

class Term;
namespace detail {
/// The shared state behind a Term (the library's guards count their work in it).
const std::shared_ptr<TermState>& state_of(const Term& term) noexcept;
}  // namespace detail

/// One term of leadership of one group, as Elector::acquire() hands it out.
/// Copyable and cheap (copies share one state); a copy stays valid after the
/// term ended and after the Elector is gone (then never active). A
/// default-constructed Term holds no term: it is false and never active.
class Term {
 public:
  /// An empty Term: no group, not active, false.
  Term() = default;
  /// Made by the elector around its state of one term; user code has no
  /// use for it (it cannot make a detail::TermState).
  Term(detail::Internal, std::shared_ptr<detail::TermState> state) : state_(std::move(state)) {}

  /// The group this term leads; empty for an empty Term.
  const std::string& group() const noexcept;
  /// The fencing token: strictly greater than every earlier term's token of
  /// this group (as long as Redis keeps its data), a re-claim of this
  /// instance's own lease included. One exception: a re-claim during a
  /// maxmemory OOM episode (Redis refuses the increment) keeps the token of
  /// the same instance's previous term. Pass it to downstream writes so that
  /// they can reject a stale leader.
  std::int64_t token() const noexcept;
  /// Send instant of the acquire that began the term.
  std::chrono::steady_clock::time_point acquired_at() const noexcept;
  /// True while this term lasts: not revoked and before its local deadline.
  /// Lock-free; callable from any thread.
  bool active() const noexcept;
  /// True for a Term that came from the elector, whether or not it still
  /// lasts (see active()); false for an empty one.
  explicit operator bool() const noexcept { return static_cast<bool>(state_); }

  /// Completes when the term ends, with the reason.
  /// Handler: void(error_code, RevokeReason). Runs on the handler's associated
  /// executor (default: the elector's). Cancellation (any type) completes it
  /// with operation_aborted. Safe to call after the term ended: completes at once.
  template <typename CompletionToken = boost::asio::deferred_t>
  auto async_wait_end(CompletionToken&& token = {}) const {
    return boost::asio::async_initiate<CompletionToken, void(error_code, RevokeReason)>(
        [](auto handler, std::shared_ptr<detail::TermState> s) {
          detail::async_wait_term_end(s, detail::TermEndHandler(std::move(handler)));
        },
        token, state_);
  }

 private:
  friend const std::shared_ptr<detail::TermState>& detail::state_of(const Term& term) noexcept;
  std::shared_ptr<detail::TermState> state_;
};

}  // namespace leasehold
