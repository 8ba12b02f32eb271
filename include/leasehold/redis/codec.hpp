#pragma once
// RESP encoding: the commands a Request carries. (Decoding is internal:
// impl/protocol/reply_decoder.hpp.)

#include <leasehold/error.hpp>
#include <leasehold/redis/reply.hpp>

#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace leasehold::redis {

/// Appends one command, encoded as a RESP array of bulk strings, to `out`.
void encode_command(std::string& out, std::span<const std::string_view> args);

/// One or more commands to be written together and answered in order.
class Request {
 public:
  /// An empty request (push commands into it before sending).
  Request() = default;
  /// A request of one command, such as `{"GET", key}`.
  Request(std::initializer_list<std::string_view> command) { push(command); }

  /// Appends one command (its name and arguments), encoded at once, so the
  /// strings need not outlive the call. Returns *this for chaining.
  Request& push(std::initializer_list<std::string_view> command) {
    return push(std::span<const std::string_view>(command.begin(), command.size()));
  }
  /// The same for a command held in a container.
  Request& push(std::span<const std::string_view> command) {
    encode_command(payload_, command);
    ++commands_;
    return *this;
  }

  /// Number of commands pushed: the number of replies to expect.
  std::size_t commands() const noexcept { return commands_; }
  /// The encoded bytes of every command, as written to the socket.
  const std::string& payload() const noexcept { return payload_; }
  /// True when no command was pushed.
  bool empty() const noexcept { return commands_ == 0; }

 private:
  std::string payload_;
  std::size_t commands_ = 0;
};

}  // namespace leasehold::redis
