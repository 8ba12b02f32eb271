#pragma once
// Helpers for the examples' ctests: run an example as a child process against
// a harness redis-server and read the lines it prints.

#include "support/process.hpp"
#include "support/redis_server.hpp"

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace example_test {

/// Every line the process has written so far.
inline std::vector<std::string> lines_of(const leasehold::test::Process& p) {
  std::ifstream in(p.log_file());
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

/// Lines that start with `event ` (the examples print `event key=value...`).
inline std::vector<std::string> events(const leasehold::test::Process& p, const std::string& event) {
  std::vector<std::string> out;
  for (auto& l : lines_of(p)) {
    if (l.rfind(event + " ", 0) == 0) out.push_back(l);
  }
  return out;
}

/// The value of `key=` in a line ("" when absent).
inline std::string field(const std::string& line, const std::string& key) {
  std::istringstream in(line);
  for (std::string word; in >> word;) {
    if (word.rfind(key + "=", 0) == 0) return word.substr(key.size() + 1);
  }
  return {};
}

/// Polls `done` every 20 ms until it holds or `timeout` passes.
inline bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

/// The port of the process's "listening on 127.0.0.1:PORT" line (the
/// examples that serve HTTP print it once they accept); throws with the
/// process's output if it does not appear within `timeout`.
inline std::uint16_t listening_port(const leasehold::test::Process& p,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const std::string prefix = "listening on 127.0.0.1:";
  std::string port;
  wait_for([&] {
    for (const auto& l : lines_of(p)) {
      if (l.rfind(prefix, 0) == 0) port = l.substr(prefix.size());
    }
    return !port.empty();
  }, timeout);
  if (port.empty()) {
    std::string out;
    for (const auto& l : lines_of(p)) out += "  | " + l + "\n";
    throw std::runtime_error("no \"" + prefix + "PORT\" line:\n" + out);
  }
  return static_cast<std::uint16_t>(std::stoi(port));
}

/// Starts the example binary with `args`, its output in <server dir>/<name>.log.
inline leasehold::test::Process start(const leasehold::test::RedisServer& server, const std::string& name,
                                      std::vector<std::string> args) {
  args.insert(args.begin(), EXAMPLE_BINARY);
  return leasehold::test::Process(std::move(args), server.dir() + "/" + name + ".log");
}

/// Everything a process printed, for failure messages.
inline std::string dump(const leasehold::test::Process& p) {
  std::string out;
  for (auto& l : lines_of(p)) out += "  | " + l + "\n";
  return out;
}

}  // namespace example_test
