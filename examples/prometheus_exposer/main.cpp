// prometheus_exposer: a service with one Elector whose metrics are served by
// prometheus-cpp's Exposer, for services that already expose a prometheus-cpp
// registry: register leasehold::prometheus::ElectorCollectable beside it.
//
// Usage:
//   prometheus_exposer [--url URL] [--listen HOST:PORT] [--id ID] [--prefix PREFIX]
// Defaults: $LEASEHOLD_URL or redis://127.0.0.1:6379, 127.0.0.1:9464,
// prefix "prometheus-exposer:leader:" (each service its own key_prefix, so
// that two services on one Redis never compete for one lease). Port 0 picks
// a free port. Prints "listening on HOST:PORT" once the exposer accepts, then
// "event elected group=G" / "event revoked group=G". SIGINT or SIGTERM stops
// the elector (releasing its leases) and exits 0.

#include <leasehold/leasehold.hpp>
#include <leasehold/prometheus/elector_collectable.hpp>

#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace lh = leasehold;

namespace {

struct Args {
  std::string url;
  std::string listen = "127.0.0.1:9464";
  lh::ElectorOptions options;
};

Args parse_args(int argc, char** argv) {
  Args args;
  const char* env = std::getenv("LEASEHOLD_URL");
  args.url = env != nullptr ? env : "redis://127.0.0.1:6379";
  args.options.key_prefix = "prometheus-exposer:leader:";
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("missing value after " + std::string(flag));
    const std::string value = argv[++i];
    if (flag == "--url") args.url = value;
    else if (flag == "--listen") args.listen = value;
    else if (flag == "--id") args.options.instance_id = value;
    else if (flag == "--prefix") args.options.key_prefix = value;
    else throw std::invalid_argument("unknown option " + std::string(flag));
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse_args(argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // event lines reach a log file as they happen
    boost::asio::io_context io{1};
    lh::Elector elector(io.get_executor(), lh::RedisOptions::from_url(args.url), args.options);
    elector.on_elected([](const lh::ElectedEvent& e) { std::printf("event elected group=%s\n", e.group.c_str()); });
    elector.on_revoked([](const lh::RevokedEvent& e) { std::printf("event revoked group=%s\n", e.group.c_str()); });

    // The service's own metrics live in its registry; leasehold's beside it.
    // Declared after the elector, so destroyed first: no scrape can reach a
    // destroyed elector.
    auto registry = std::make_shared<prometheus::Registry>();
    prometheus::BuildGauge()
        .Name("prometheus_exposer_start_time_seconds")
        .Help("Start time of the example service, in seconds since the epoch.")
        .Register(*registry)
        .Add({})
        .SetToCurrentTime();
    auto collectable = std::make_shared<lh::prometheus::ElectorCollectable>(elector);
    prometheus::Exposer exposer(args.listen, 1);
    exposer.RegisterCollectable(registry);
    exposer.RegisterCollectable(collectable);
    const auto host = args.listen.substr(0, args.listen.rfind(':'));
    std::printf("listening on %s:%d\n", host.c_str(), exposer.GetListeningPorts().at(0));

    elector.start();
    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      // Releases every lease so that a standby takes over at once.
      elector.stop([&io](lh::error_code) { io.stop(); });
    });
    io.run();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prometheus_exposer: %s\n", e.what());
    return 2;
  }
}
