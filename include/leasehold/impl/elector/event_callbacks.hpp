#pragma once
// The user's event callbacks (elected, revoked, leader changed, error): set
// from any thread, each event posted to the callback executor so that a slow
// or throwing callback never delays a renewal.

#include <leasehold/elector.hpp>
#include <leasehold/log.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <fmt/format.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace leasehold::detail {

struct Callbacks {
  Elector::ElectedHandler elected;
  Elector::RevokedHandler revoked;
  Elector::LeaderChangedHandler leader_changed;
  Elector::ErrorHandler error;
};

class EventCallbacks {
 public:
  EventCallbacks(boost::asio::any_io_executor executor, std::string elector_id)
      : strand_(boost::asio::make_strand(std::move(executor))), elector_id_(std::move(elector_id)) {}

  /// Any thread: `edit` changes a copy, which then replaces the current set.
  void edit(const std::function<void(Callbacks&)>& edit) {
    std::lock_guard lock(mutex_);
    auto next = std::make_shared<Callbacks>(current_ ? *current_ : Callbacks{});
    edit(*next);
    current_ = std::move(next);
  }

  /// Posts `event` to the callback in `slot`, if one is registered: an
  /// elector winning 10,000 groups at once queues no event nobody listens to.
  template <typename Event>
  void emit(std::function<void(const Event&)> Callbacks::*slot, Event event) {
    std::shared_ptr<const Callbacks> callbacks;
    {
      std::lock_guard lock(mutex_);
      callbacks = current_;
    }
    if (!callbacks || !((*callbacks).*slot)) return;
    boost::asio::post(strand_, [callbacks, slot, id = elector_id_, event = std::move(event)] {
      try {
        ((*callbacks).*slot)(event);
      } catch (const std::exception& e) {
        log(LogLevel::error, fmt::format("elector {}: an event callback threw: {}", id, e.what()));
      }
    });
  }

 private:
  boost::asio::strand<boost::asio::any_io_executor> strand_;
  const std::string elector_id_;
  std::mutex mutex_;
  std::shared_ptr<const Callbacks> current_;
};

}  // namespace leasehold::detail
