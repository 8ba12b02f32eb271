#pragma once
// Driving an io_context from a test, or waiting for threads: run or poll
// until a condition holds or a bound passes, so that no test can hang.

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <thread>

namespace leasehold::test {

/// Runs `io` for a few milliseconds; sleeps instead when it has no work.
inline void step(boost::asio::io_context& io) {
  if (io.run_for(std::chrono::milliseconds(5)) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (io.stopped()) io.restart();
}

/// Runs `io` in short slices until `done()` is true or `timeout` passes.
/// Returns done().
template <typename Predicate>
bool run_until(boost::asio::io_context& io, Predicate done,
               std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done() && std::chrono::steady_clock::now() < deadline) step(io);
  return done();
}

/// Runs `io` for `duration` (for "nothing happens during ..." checks).
inline void run_for(boost::asio::io_context& io, std::chrono::milliseconds duration) {
  const auto deadline = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < deadline) step(io);
}

/// Polls `done()` every 10 ms from this thread (for electors and servers that
/// run on threads of their own) until it is true or `timeout` passes.
/// Returns done().
template <typename Predicate>
bool eventually(Predicate done, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

}  // namespace leasehold::test
