// The part of the guest service that still uses Asio's deprecated names.
#pragma once

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>

namespace guest {

// Runs io until done() returns true or bound has passed, holding an
// io_service::work so that run_one_for() never returns for lack of work.
// Returns done().
bool run_with_work(boost::asio::io_context& io, std::chrono::milliseconds bound,
                   const std::function<bool()>& done);

}  // namespace guest
