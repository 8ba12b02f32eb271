#pragma once
// leader_only: a function that runs only on the instance leading a group.
//
//   auto digest = lh::leader_only(elector, "cleanup", [] { send_digest(); });
//   bool ran = digest();                                  // void f: bool
//   auto sum = lh::leader_only(elector, "billing", add);  // int add(int, int)
//   std::optional<int> s = sum(2, 3);                     // nullopt: not leader
//
// The guard registers its group with the elector when it is constructed (the
// election starts at start(), or at once if already started). Each call checks
// the local view (Group::is_leader: one atomic load, no Redis round trip) and
// runs f only if this instance leads the group at that instant. Calls are
// thread-safe as far as the guard goes (f must be too, if called from several
// threads), and a call never throws because of leadership; exceptions from f
// propagate.
//
// Coroutines: for an f returning asio::awaitable<T>, a call returns
// asio::awaitable<std::optional<T>> (asio::awaitable<bool> for T = void):
//
//   auto rebuild = lh::leader_only(elector, "index", rebuild_index);
//   if (auto n = co_await rebuild(shard)) { ... }  // *n: rebuild_index's result
//
// Leadership is checked when the awaitable starts; f is called only then, and
// runs under that term: if the term ends first, f receives terminal
// cancellation at once and the call completes with nullopt (false) after f
// has finished. The arguments are copied into the call; the guard must
// outlive the awaitables it returns, and the elector must outlive the guard.

#include <leasehold/detail/leader_work.hpp>
#include <leasehold/elector.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <concepts>
#include <functional>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

namespace leasehold {

namespace detail {

template <typename T>
struct awaited {};
template <typename T>
struct awaited<boost::asio::awaitable<T>> {
  using type = T;
};
template <typename R>
concept Awaitable = requires { typename awaited<R>::type; };

template <typename T>
using guarded_result_t = std::conditional_t<std::is_void_v<T>, bool, std::optional<T>>;

template <typename T>
boost::asio::awaitable<void> store_result(boost::asio::awaitable<T> work, std::optional<T>& out) {
  out.emplace(co_await std::move(work));
}

}  // namespace detail

/// A callable that runs `F` only while this instance leads its group; made
/// by leader_only(), which describes the result types. Copyable and movable
/// when F is.
template <typename F>
class LeaderOnly {
 public:
  /// Guards `f` with `group` (a handle from `elector`). leader_only() is the
  /// usual way to make one.
  LeaderOnly(Elector& elector, Group group, F f) : elector_(&elector), group_(std::move(group)), f_(std::move(f)) {}

  /// The guarded group.
  const Group& group() const noexcept { return group_; }

  /// Calls f with `args` if this instance leads the group now: bool for a
  /// void f (whether it ran), std::optional of f's result otherwise (nullopt:
  /// not leader); for a coroutine f, an awaitable of either (see above).
  template <typename... Args>
    requires std::invocable<F&, Args...>
  auto operator()(Args&&... args) {
    return call(f_, std::forward<Args>(args)...);
  }

  /// The same through a const guard (for an f callable as const).
  template <typename... Args>
    requires std::invocable<const F&, Args...>
  auto operator()(Args&&... args) const {
    return call(f_, std::forward<Args>(args)...);
  }

 private:
  template <typename Fn, typename... Args>
  auto call(Fn& f, Args&&... args) const {
    using R = std::invoke_result_t<Fn&, Args...>;
    if constexpr (detail::Awaitable<R>) {
      return guarded<typename detail::awaited<R>::type>(elector_, group_, &f, std::decay_t<Args>(args)...);
    } else if constexpr (std::is_void_v<R>) {
      if (!group_.is_leader()) return false;
      std::invoke(f, std::forward<Args>(args)...);
      return true;
    } else {
      static_assert(!std::is_reference_v<R>, "leader_only: f must return by value");
      if (!group_.is_leader()) return std::optional<R>();
      return std::optional<R>(std::invoke(f, std::forward<Args>(args)...));
    }
  }

  // The coroutine form. Parameters are copies, so they live in this frame.
  template <typename T, typename Fn, typename... Args>
  static boost::asio::awaitable<detail::guarded_result_t<T>> guarded(Elector* elector, Group group, Fn* f,
                                                                      Args... args) {
    const auto checked_at = std::chrono::steady_clock::now();
    if (!group.is_leader()) co_return detail::guarded_result_t<T>();
    Term term = co_await detail::current_term(*elector, group, checked_at);
    if (!term) co_return detail::guarded_result_t<T>();
    if constexpr (std::is_void_v<T>) {
      co_return co_await detail::run_until_term_ends(std::invoke(*f, args...), std::move(term));
    } else {
      std::optional<T> result;
      co_await detail::run_until_term_ends(detail::store_result(std::invoke(*f, args...), result), std::move(term));
      co_return result;
    }
  }

  Elector* elector_;
  Group group_;
  F f_;
};

/// Guards `f` with the leadership of `group` (see above). Throws
/// std::invalid_argument for a bad group name.
template <typename F>
LeaderOnly<std::decay_t<F>> leader_only(Elector& elector, std::string_view group, F&& f) {
  return LeaderOnly<std::decay_t<F>>(elector, elector.group(group), std::forward<F>(f));
}

}  // namespace leasehold
