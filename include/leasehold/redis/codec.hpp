#pragma once
// RESP encoding and decoding. hiredis is used as a codec only:
// redisFormatCommandArgv encodes, the redisReader API decodes. Its types stay
// out of this header.

#include <leasehold/error.hpp>
#include <leasehold/redis/reply.hpp>

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <optional>
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

/// Incremental RESP2 decoder over hiredis's redisReader, which builds each
/// Reply through leasehold's own functions.
///
/// An array's element table grows as its elements arrive, so a bad or
/// hostile "*<huge>" header costs no more memory than a small one until
/// its elements come. Headers above max_array_elements are a protocol error.
class ReplyDecoder {
 public:
  /// Far above any reply leasehold asks for (SCAN pages of ~1000 keys).
  static constexpr int max_array_elements = 1 << 20;

  ReplyDecoder();
  ~ReplyDecoder();
  /// Takes over the other decoder's buffered bytes and state.
  ReplyDecoder(ReplyDecoder&&) noexcept;
  /// Takes over the other decoder's buffered bytes and state.
  ReplyDecoder& operator=(ReplyDecoder&&) noexcept;
  ReplyDecoder(const ReplyDecoder&) = delete;
  ReplyDecoder& operator=(const ReplyDecoder&) = delete;

  /// Buffers received bytes. Fails with protocol_error once the stream is bad.
  Error feed(const char* data, std::size_t size);

  /// The next complete reply, std::nullopt when more bytes are needed.
  /// A protocol error is sticky: the connection must be closed.
  std::optional<Reply> next(Error& error);

 private:
  Error reader_error() const;

  // Heap-allocated so that hiredis's callbacks can point at it across moves.
  struct State;
  struct Deleter {
    void operator()(State* state) const noexcept;
  };
  std::unique_ptr<State, Deleter> state_;
};

}  // namespace leasehold::redis
