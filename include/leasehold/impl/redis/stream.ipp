#include <leasehold/impl/redis/stream.hpp>

#include <leasehold/config.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/use_awaitable.hpp>
#if LEASEHOLD_HAS_TLS
#include <boost/asio/ssl/host_name_verification.hpp>
#endif

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace leasehold::redis::detail {

namespace {


Error connect_error(const RedisOptions& options, const error_code& ec) {
  return {make_error_code(errc::connection_lost), fmt::format("connect to {}: {}", options.to_string(), ec.message())};
}

#if LEASEHOLD_HAS_TLS
asio::awaitable<Error> tls_handshake(Stream::tcp_socket socket, const RedisOptions& options, TlsContext& context,
                                     std::optional<Stream>& stream) {
  stream.emplace(Stream::tls_stream(std::move(socket), context));
  auto& tls = stream->get<Stream::tls_stream>();
  const std::string& name = options.tls.server_name.empty() ? options.host : options.tls.server_name;
  // SNI; harmless for IP addresses.
  SSL_set_tlsext_host_name(tls.native_handle(), name.c_str());
  if (options.tls.verify_peer) tls.set_verify_callback(asio::ssl::host_name_verification(name));
  auto [ec] = co_await tls.async_handshake(asio::ssl::stream_base::client, nothrow);
  if (ec) {
    co_return Error{make_error_code(errc::tls_failed),
                    fmt::format("TLS handshake with {}: {}", options.to_string(), ec.message())};
  }
  co_return Error{};
}
#endif

}  // namespace

#if LEASEHOLD_HAS_TLS
asio::ssl::context make_tls_context(const TlsOptions& tls) {
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  ctx.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                  asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
  const auto fail = [](std::string_view field, const std::string& file, const error_code& ec) {
    return std::invalid_argument(fmt::format("RedisOptions.tls.{} \"{}\": {}", field, file, ec.message()));
  };
  error_code ec;
  if (!tls.ca_file.empty()) {
    ctx.load_verify_file(tls.ca_file, ec);
    if (ec) throw fail("ca_file", tls.ca_file, ec);
  } else {
    ctx.set_default_verify_paths(ec);
  }
  if (!tls.cert_file.empty()) {
    ctx.use_certificate_chain_file(tls.cert_file, ec);
    if (ec) throw fail("cert_file", tls.cert_file, ec);
    ctx.use_private_key_file(tls.key_file, asio::ssl::context::pem, ec);
    if (ec) throw fail("key_file", tls.key_file, ec);
  }
  ctx.set_verify_mode(tls.verify_peer ? asio::ssl::verify_peer : asio::ssl::verify_none);
  return ctx;
}
#endif

asio::awaitable<Error> open_stream(const asio::any_io_executor& ex, const RedisOptions& options,
                                   [[maybe_unused]] TlsContext* tls, std::optional<Stream>& stream) {
  if (!options.unix_socket.empty()) {
    Stream::unix_socket socket(ex);
    auto [ec] = co_await socket.async_connect(asio::local::stream_protocol::endpoint(options.unix_socket), nothrow);
    stream.emplace(std::move(socket));
    co_return ec ? connect_error(options, ec) : Error{};
  }
  asio::ip::tcp::resolver resolver(ex);
  auto [rec, endpoints] = co_await resolver.async_resolve(options.host, std::to_string(options.port), nothrow);
  if (rec) {
    co_return Error{make_error_code(errc::resolve_failed),
                    fmt::format("cannot resolve host \"{}\": {}", options.host, rec.message())};
  }
  Stream::tcp_socket socket(ex);
  auto [cec, endpoint] = co_await asio::async_connect(socket, endpoints, nothrow);
  if (cec) co_return connect_error(options, cec);
  socket.set_option(asio::ip::tcp::no_delay(true));
#if LEASEHOLD_HAS_TLS
  if (tls) co_return co_await tls_handshake(std::move(socket), options, *tls, stream);
#endif
  stream.emplace(std::move(socket));
  co_return Error{};
}

}  // namespace leasehold::redis::detail
