#include "support/http_get.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/beast/http/write.hpp>

#include <chrono>
#include <exception>

namespace leasehold::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

HttpReply http_get(std::uint16_t port, const std::string& target) {
  asio::io_context io;
  HttpReply out;
  auto fetch = [&]() -> asio::awaitable<void> {
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(5));  // bounds every step below
    co_await stream.async_connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port),
                                  asio::use_awaitable);
    http::request<http::empty_body> request{http::verb::get, target, 11};
    request.set(http::field::host, "127.0.0.1");
    request.keep_alive(false);
    co_await http::async_write(stream, request, asio::use_awaitable);
    beast::flat_buffer buffer;
    http::response<http::string_body> response;
    co_await http::async_read(stream, buffer, response, asio::use_awaitable);
    out.status = response.result_int();
    out.content_type = std::string(response[http::field::content_type]);
    out.body = response.body();
  };
  asio::co_spawn(io, fetch(), [](const std::exception_ptr&) {});
  io.run();
  return out;
}

}  // namespace leasehold::test
