#include <leasehold/impl/redis/sentinel_resolver.hpp>

#include <leasehold/impl/redis/reconnect.hpp>

#include <leasehold/config.hpp>
#include <leasehold/redis/codec.hpp>
#include <leasehold/impl/protocol/reply_decoder.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <array>

namespace leasehold::redis::detail {

namespace {

using namespace asio::experimental::awaitable_operators;

SentinelAnswer failed(Error error) {
  SentinelAnswer answer;
  answer.error = std::move(error);
  return answer;
}

}  // namespace

SentinelResolver::SentinelResolver(const RedisOptions& options)
    : options_(options), roster_(options.sentinel->sentinels) {
#if LEASEHOLD_HAS_TLS
  if (options.sentinel->tls.enabled) tls_context_.emplace(make_tls_context(options.sentinel->tls));
#else
  if (options.sentinel->tls.enabled) {
    throw std::invalid_argument("TLS to the sentinels requested but leasehold was built without TLS support");
  }
#endif
}

asio::awaitable<SentinelResolver::Resolution> SentinelResolver::resolve(const asio::any_io_executor& ex) {
  ResolveRound round(options_.sentinel->master_name);
  for (std::size_t k = 0; k < roster_.size(); ++k) {
    const SentinelAddress sentinel = roster_.at(k);
    const SentinelAnswer answer = co_await ask(ex, sentinel);
    if (answer.kind == SentinelAnswer::Kind::address) {
      roster_.answered(k);
      co_return Resolution{{}, answer.address, MasterAddress{sentinel.host, sentinel.port}.to_string()};
    }
    round.add(sentinel, answer);
  }
  co_return Resolution{round.outcome(), {}, {}};
}

asio::awaitable<SentinelAnswer> SentinelResolver::ask(const asio::any_io_executor& ex,
                                                      const SentinelAddress& sentinel) {
  const RedisOptions node = sentinel_node_options(options_, sentinel);
  std::optional<Stream> stream;
  asio::steady_timer timer(ex, options_.sentinel->query_timeout);
  auto result = co_await (exchange(ex, node, stream) || timer.async_wait(nothrow));
  if (stream) stream->close();
  if (result.index() == 0) co_return std::get<0>(std::move(result));
  co_return failed({make_error_code(errc::timeout),
                    fmt::format("no answer within {} ms", options_.sentinel->query_timeout.count())});
}

// GCC 12 sees a mismatched operator delete for this coroutine's frame (a
// false positive: Asio's frame allocator pairs them); nothing here differs
// from the client's handshake, which escapes it by luck of inlining.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
asio::awaitable<SentinelAnswer> SentinelResolver::exchange(const asio::any_io_executor& ex, const RedisOptions& node,
                                                           std::optional<Stream>& stream) {
  TlsContext* tls = nullptr;
#if LEASEHOLD_HAS_TLS
  if (tls_context_) tls = &*tls_context_;
#endif
  if (Error e = co_await open_stream(ex, node, tls, stream)) co_return failed(std::move(e));
  // The same handshake as any connection (AUTH, CLIENT SETNAME), then the question.
  Reconnect handshake(node);
  Request request = handshake.begin_handshake({});
  request.push({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", options_.sentinel->master_name});
  auto [wec, written] = co_await stream->async_write(asio::buffer(request.payload()), nothrow);
  if (wec) co_return failed({make_error_code(errc::connection_lost), wec.message()});
  ReplyDecoder decoder;
  std::array<char, 4096> buffer;
  for (;;) {
    Error error;
    if (auto reply = decoder.next(error)) {
      if (handshake.handshake_remaining() == 0) co_return read_master_reply(*reply);
      if (Error e = handshake.on_handshake_reply(*reply)) co_return failed(std::move(e));
      continue;
    }
    if (error) co_return failed(std::move(error));
    auto [ec, n] = co_await stream->async_read_some(asio::buffer(buffer), nothrow);
    if (ec) {
      co_return failed({make_error_code(errc::connection_lost),
                        ec == asio::error::eof ? std::string("the sentinel closed the connection") : ec.message()});
    }
    if (Error e = decoder.feed(buffer.data(), n)) co_return failed(std::move(e));
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace leasehold::redis::detail
