#pragma once
// Completing an Asio handler later, through its associated executor.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <utility>

namespace leasehold::detail {

// Never runs the handler inline (the caller may be inside the I/O loop or a
// cancellation handler). The handler's cancellation slot is cleared just
// before it runs, not here: clearing it from within its own cancellation
// handler would destroy that handler while it runs.
template <typename Handler, typename... Args>
void complete_later(const boost::asio::any_io_executor& fallback, Handler handler, Args... args) {
  auto ex = boost::asio::get_associated_executor(handler, fallback);
  boost::asio::post(fallback, boost::asio::bind_executor(
                                  ex, [h = std::move(handler), ... a = std::move(args)]() mutable {
                                    auto slot = boost::asio::get_associated_cancellation_slot(h);
                                    if (slot.is_connected()) slot.clear();
                                    std::move(h)(std::move(a)...);
                                  }));
}

// Completes a handler from a function that already runs as a posted handler
// on `current`: dispatches to the handler's executor (inline when it is
// `current`), saving a second post. Never use it inside a cancellation handler.
template <typename Handler, typename... Args>
void complete_now(const boost::asio::any_io_executor& current, Handler handler, Args... args) {
  auto slot = boost::asio::get_associated_cancellation_slot(handler);
  if (slot.is_connected()) slot.clear();
  auto ex = boost::asio::get_associated_executor(handler, current);
  boost::asio::dispatch(ex, [h = std::move(handler), ... a = std::move(args)]() mutable {
    std::move(h)(std::move(a)...);
  });
}

}  // namespace leasehold::detail
