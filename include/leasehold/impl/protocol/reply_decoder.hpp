#pragma once
// RESP decoding. hiredis is used as a codec only: redisFormatCommandArgv
// encodes (codec.ipp), the redisReader API decodes. Its types stay out of
// this header.

#include <leasehold/error.hpp>
#include <leasehold/redis/reply.hpp>

#include <cstddef>
#include <memory>
#include <optional>

namespace leasehold::redis::detail {

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

}  // namespace leasehold::redis::detail
