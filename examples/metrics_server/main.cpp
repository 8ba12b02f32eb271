// metrics_server: one Elector and a small HTTP server beside it on
// the same io_context, serving
//
//   GET /metrics        Prometheus text format 0.0.4 (Elector::async_metrics)
//   GET /health/live    200 "live", or 503 with the reason (liveness probe)
//   GET /health/ready   200 "ready", or 503 with the reason (readiness probe)
//
// Usage:
//   metrics_server [--url URL] [--listen HOST:PORT] [--id ID] [--prefix PREFIX]
//                  [--priority N] [--ttl MS] [--group NAME]... | --help
// Defaults: $LEASEHOLD_URL or redis://127.0.0.1:6379, 127.0.0.1:9464, and
// ElectorOptions' own (prefix leader:, priority 0, ttl 5000).
// Port 0 picks a free port. Prints "listening on HOST:PORT" once it accepts.
// SIGINT or SIGTERM stops the elector (releasing its leases) and exits 0.

#include <leasehold/leasehold.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/beast/http/write.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace lh = leasehold;
using asio::ip::tcp;

namespace {

constexpr const char* usage =
    "usage: metrics_server [--url URL] [--listen HOST:PORT] [--id ID] [--prefix PREFIX]\n"
    "                      [--priority N] [--ttl MS] [--group NAME]... | --help\n"
    "  --url URL          Redis URL (default: $LEASEHOLD_URL, else redis://127.0.0.1:6379)\n"
    "  --listen HOST:PORT HTTP address for /metrics, /health/live, /health/ready\n"
    "                     (default 127.0.0.1:9464; port 0 picks a free one)\n"
    "  --id ID            instance id (default: generated, unique per process)\n"
    "  --prefix PREFIX    key prefix, one per service (default leader:)\n"
    "  --priority N       preferred-holder priority, higher leads (default 0)\n"
    "  --ttl MS           lease ttl in milliseconds (default 5000)\n"
    "  --group NAME       a group to campaign for besides \"default\" (repeatable)\n";

struct Args {
  std::string url;
  std::string listen = "127.0.0.1:9464";
  lh::ElectorOptions options;
  bool help = false;
};

Args parse_args(int argc, char** argv) {
  Args args;
  const char* env = std::getenv("LEASEHOLD_URL");
  args.url = env != nullptr ? env : "redis://127.0.0.1:6379";
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help") {
      args.help = true;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(fmt::format("{} needs a value", flag));
    const std::string value = argv[++i];
    if (flag == "--url") {
      args.url = value;
    } else if (flag == "--listen") {
      args.listen = value;
    } else if (flag == "--id") {
      args.options.instance_id = value;
    } else if (flag == "--prefix") {
      args.options.key_prefix = value;
    } else if (flag == "--priority") {
      args.options.priority = std::stoi(value);
    } else if (flag == "--ttl") {
      args.options.ttl = std::chrono::milliseconds(std::stoll(value));
    } else if (flag == "--group") {
      args.options.groups.push_back(value);
    } else {
      throw std::invalid_argument(fmt::format("unknown option {} (--help lists them)", flag));
    }
  }
  return args;
}

tcp::endpoint parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument("--listen needs HOST:PORT");
  return {asio::ip::make_address(text.substr(0, colon)),
          static_cast<unsigned short>(std::stoul(text.substr(colon + 1)))};
}

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

Response reply(const Request& request, http::status status, std::string body,
               std::string_view content_type = "text/plain; charset=utf-8") {
  Response response{status, request.version()};
  response.set(http::field::content_type, content_type);
  response.keep_alive(request.keep_alive());
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

Response probe(const Request& request, bool ok, std::string_view what, const std::string& reason) {
  return ok ? reply(request, http::status::ok, fmt::format("{}\n", what))
            : reply(request, http::status::service_unavailable, fmt::format("not {}: {}\n", what, reason));
}

asio::awaitable<Response> handle(lh::Elector& elector, const Request& request) {
  if (request.method() != http::verb::get) {
    co_return reply(request, http::status::method_not_allowed, "GET only\n");
  }
  const std::string_view target = request.target();
  if (target == "/metrics") {
    // Computed on the elector's strand; this coroutine never blocks the loop.
    const lh::Metrics metrics = co_await elector.async_metrics(asio::use_awaitable);
    co_return reply(request, http::status::ok, lh::to_prometheus(metrics), "text/plain; version=0.0.4; charset=utf-8");
  }
  if (target == "/health/live" || target == "/health/ready") {
    const lh::Health health = elector.health();
    co_return target == "/health/live" ? probe(request, health.live, "live", health.reason)
                                       : probe(request, health.ready, "ready", health.reason);
  }
  co_return reply(request, http::status::not_found, "not found\n");
}

asio::awaitable<void> session(lh::Elector& elector, beast::tcp_stream stream) {
  beast::flat_buffer buffer;
  try {
    for (;;) {
      stream.expires_after(std::chrono::seconds(30));  // no idle or slow client holds a socket for long
      Request request;
      co_await http::async_read(stream, buffer, request, asio::use_awaitable);
      Response response = co_await handle(elector, request);
      const bool keep_alive = response.keep_alive();
      co_await http::async_write(stream, response, asio::use_awaitable);
      if (!keep_alive) break;
    }
  } catch (const std::exception&) {
    // A client that went away or timed out: nothing to report.
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

asio::awaitable<void> listen(lh::Elector& elector, tcp::acceptor& acceptor) {
  for (;;) {
    tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
    asio::co_spawn(acceptor.get_executor(), session(elector, beast::tcp_stream(std::move(socket))), asio::detached);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse_args(argc, argv);
    if (args.help) {
      std::fputs(usage, stdout);
      return 0;
    }
    asio::io_context io{1};
    lh::Elector elector(io.get_executor(), lh::RedisOptions::from_url(args.url), args.options);
    elector.start();

    tcp::acceptor acceptor(io, parse_endpoint(args.listen));
    const auto bound = acceptor.local_endpoint();
    std::printf("listening on %s:%u\n", bound.address().to_string().c_str(), static_cast<unsigned>(bound.port()));
    std::fflush(stdout);
    asio::co_spawn(io, listen(elector, acceptor), asio::detached);

    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      acceptor.close();
      // Releases every lease so that a standby takes over at once.
      elector.stop([&io](lh::error_code) { io.stop(); });
    });
    io.run();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "metrics_server: %s\n", e.what());
    return 2;
  }
}
