#pragma once
// The byte stream under a Redis connection: TCP, a unix socket, or TLS over
// TCP. One small variant instead of a virtual interface, so that each read and
// write is a direct Asio call.

#include <leasehold/config.hpp>
#include <leasehold/error.hpp>
#include <leasehold/redis_options.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#if LEASEHOLD_HAS_TLS
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#endif

#include <optional>
#include <utility>
#include <variant>

namespace leasehold::redis::detail {

namespace asio = boost::asio;

// An awaitable completion that yields the error code instead of throwing it.
inline constexpr auto nothrow = asio::as_tuple(asio::use_awaitable);

class Stream {
 public:
  using tcp_socket = asio::ip::tcp::socket;
  using unix_socket = asio::local::stream_protocol::socket;
#if LEASEHOLD_HAS_TLS
  using tls_stream = asio::ssl::stream<tcp_socket>;
  using variant = std::variant<tcp_socket, unix_socket, tls_stream>;
#else
  using variant = std::variant<tcp_socket, unix_socket>;
#endif

  template <typename S>
  explicit Stream(S&& s) : stream_(std::forward<S>(s)) {}

  template <typename S>
  S& get() { return std::get<S>(stream_); }

  template <typename Buffers, typename Token>
  auto async_read_some(const Buffers& buffers, Token&& token) {
    return std::visit([&](auto& s) { return s.async_read_some(buffers, std::forward<Token>(token)); },
                      stream_);
  }

  template <typename Buffers, typename Token>
  auto async_write(const Buffers& buffers, Token&& token) {
    return std::visit([&](auto& s) { return asio::async_write(s, buffers, std::forward<Token>(token)); },
                      stream_);
  }

  /// Closes the socket under any layer; outstanding operations complete with
  /// operation_aborted. TLS gets no close_notify: the peer may be gone.
  void close() noexcept {
    boost::system::error_code ignored;
    std::visit([&](auto& s) { s.lowest_layer().close(ignored); }, stream_);
  }

  bool is_open() const noexcept {
    return std::visit([](const auto& s) { return s.lowest_layer().is_open(); }, stream_);
  }

 private:
  variant stream_;
};

#if LEASEHOLD_HAS_TLS
/// The client side of `tls`; throws std::invalid_argument naming a file
/// that cannot be loaded.
asio::ssl::context make_tls_context(const TlsOptions& tls);
using TlsContext = asio::ssl::context;
#else
struct TlsContext {};
#endif

/// Resolves, connects and (with `tls`) completes the TLS handshake to the
/// server `options` names, on `ex`. `stream` holds the stream as soon as there
/// is one to close (a stop or a deadline may close it mid-handshake). Every
/// argument must outlive the operation (`ex` by reference: by value, GCC 12
/// warns of a mismatched operator delete for the coroutine frame).
asio::awaitable<Error> open_stream(const asio::any_io_executor& ex, const RedisOptions& options, TlsContext* tls,
                                   std::optional<Stream>& stream);

}  // namespace leasehold::redis::detail
