// Issue #3 item 8: leasehold's redis::Client next to redis-benchmark, against
// the same private redis-server in the same run.
//
//   client_vs_redis_benchmark [--runs 5] [--requests 20000]
//                             [--pipelined-requests 200000] [--csv FILE]
//
// Both sides use one connection. Round trips: one command at a time, latency
// from the call to its reply (redis-benchmark -c 1 -P 1). Pipelined: batches
// of D commands written together, the next batch once every reply of the
// previous one arrived (redis-benchmark -c 1 -P D). The leasehold side does a
// batch two ways: D separate async_exec calls (what the elector does: one
// call per group) and one Request of D commands. The two tools alternate run
// by run so that a noisy neighbour hits both alike; the table shows medians.

#include "common/resource_usage.hpp"
#include "common/summary.hpp"
#include "common/table.hpp"
#include "support/redis_server.hpp"

#include <leasehold/redis/client.hpp>

#include <boost/asio/io_context.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace lh = leasehold;
namespace bench = leasehold::bench;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

struct Options {
  int runs = 5;
  int requests = 20000;             // round trips per measurement
  int pipelined_requests = 200000;  // commands per pipelined measurement
  std::string csv = "client_vs_redis_benchmark.csv";
};

constexpr auto measurement_bound = 30s;  // no single measurement runs longer
const std::string echo_payload(32, 'x');

// One measurement of one tool: latencies in microseconds (round trips) and
// the command rate.
struct Result {
  double p50_us = 0, p99_us = 0, ops_per_s = 0;
};

// ---- redis-benchmark --------------------------------------------------------

Result run_redis_benchmark(const lh::test::RedisServer& server, const std::vector<std::string>& command,
                           int requests, int depth) {
  const std::string log = server.dir() + "/redis-benchmark.csv";
  std::remove(log.c_str());
  std::vector<std::string> argv{"redis-benchmark", "-h", "127.0.0.1", "-p", std::to_string(server.port()),
                                "-c", "1", "-n", std::to_string(requests), "-P", std::to_string(depth),
                                "--csv", "--precision", "3"};
  argv.insert(argv.end(), command.begin(), command.end());
  lh::test::Process p(argv, log);
  const auto status = p.wait_exit(measurement_bound);
  if (!status) throw std::runtime_error("redis-benchmark did not finish in time");
  // CSV: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95...","p99...","max..."
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty() && line.front() == '"' && line.rfind("\"test\"", 0) != 0) last = line;
  }
  std::vector<double> fields;
  for (std::size_t at = last.find("\",\""); at != std::string::npos; at = last.find("\",\"", at + 1)) {
    fields.push_back(std::stod(last.substr(at + 3)));
  }
  if (fields.size() < 7) throw std::runtime_error("cannot parse redis-benchmark output: " + last);
  return Result{fields[3] * 1000, fields[5] * 1000, fields[0]};
}

// ---- leasehold's redis::Client ------------------------------------------------

lh::redis::Request make_request(const std::vector<std::string>& command) {
  lh::redis::Request r;
  std::vector<std::string_view> argv(command.begin(), command.end());
  r.push(argv);
  return r;
}

class ClientBench {
 public:
  explicit ClientBench(const lh::test::RedisServer& server) : client_(io_.get_executor(), server.options()) {
    client_.start();
    const auto deadline = Clock::now() + 5s;
    while (!client_.connected() && Clock::now() < deadline) io_.run_for(10ms);
    if (!client_.connected()) throw std::runtime_error("redis::Client did not connect");
  }

  // One command at a time; each latency is measured from the call (which
  // builds the Request, as a user would) to the handler.
  Result round_trips(const std::vector<std::string>& command, int count) {
    std::vector<double> latencies;
    latencies.reserve(static_cast<std::size_t>(count));
    const auto bound = Clock::now() + measurement_bound;
    const auto start = Clock::now();
    bool failed = false, finished = false;
    std::function<void()> next = [&] {
      const auto t0 = Clock::now();
      client_.async_exec(make_request(command), [&, t0](lh::error_code ec, std::vector<lh::redis::Reply>) {
        latencies.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        if (ec) failed = true;
        if (!failed && static_cast<int>(latencies.size()) < count && Clock::now() < bound) return next();
        finished = true;
      });
    };
    next();
    run_until(finished, bound);
    if (failed) throw std::runtime_error("a round trip failed");
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const auto s = bench::Summary::of(latencies);
    return Result{s.p50, s.p99, static_cast<double>(latencies.size()) / seconds};
  }

  // Batches of `depth` commands; `one_request`: one Request holding the
  // batch, else `depth` separate calls that the client coalesces into one write.
  Result pipelined(const std::vector<std::string>& command, int total, int depth, bool one_request) {
    int done = 0, outstanding = 0;
    bool failed = false, finished = false;
    const auto bound = Clock::now() + measurement_bound;
    const auto start = Clock::now();
    std::function<void()> batch = [&] {
      if (one_request) {
        lh::redis::Request r;
        std::vector<std::string_view> argv(command.begin(), command.end());
        for (int i = 0; i < depth; ++i) r.push(argv);
        outstanding = 1;
        client_.async_exec(std::move(r), [&](lh::error_code ec, std::vector<lh::redis::Reply> replies) {
          failed |= static_cast<bool>(ec);
          done += static_cast<int>(replies.size());
          if (!failed && done < total && Clock::now() < bound) return batch();
          finished = true;
        });
        return;
      }
      outstanding = depth;
      for (int i = 0; i < depth; ++i) {
        client_.async_exec(make_request(command), [&](lh::error_code ec, std::vector<lh::redis::Reply>) {
          failed |= static_cast<bool>(ec);
          ++done;
          if (--outstanding != 0) return;
          if (!failed && done < total && Clock::now() < bound) return batch();
          finished = true;
        });
      }
    };
    batch();
    run_until(finished, bound);
    if (failed) throw std::runtime_error("a pipelined command failed");
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return Result{0, 0, done / seconds};
  }

 private:
  // Runs handlers until the measurement says it is finished (or, should a
  // reply never come, a little past its time bound).
  void run_until(const bool& finished, Clock::time_point bound) {
    while (!finished && Clock::now() < bound + 2s) io_.run_one_for(100ms);
  }

  boost::asio::io_context io_{1};
  lh::redis::Client client_;
};

// ---- the comparison -------------------------------------------------------------

struct Row {
  std::string name;
  std::string unit;
  bool latency;  // lower is better
  std::vector<double> tool, client;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--runs") o.runs = std::stoi(value);
    else if (flag == "--requests") o.requests = std::stoi(value);
    else if (flag == "--pipelined-requests") o.pipelined_requests = std::stoi(value);
    else if (flag == "--csv") o.csv = value;
    else throw std::invalid_argument("unknown flag " + flag);
  }
  if (argc % 2 == 0) throw std::invalid_argument(std::string("missing value after ") + argv[argc - 1]);
  o.runs = std::clamp(o.runs, 1, 50);
  o.requests = std::clamp(o.requests, 100, 1'000'000);
  o.pipelined_requests = std::clamp(o.pipelined_requests, 1000, 10'000'000);
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options opt = parse(argc, argv);
  lh::test::RedisServer server;
  ClientBench client(server);
  const std::vector<std::string> ping{"PING"}, echo{"ECHO", echo_payload};

  std::map<std::string, Row> rows;
  std::vector<std::string> order;
  auto row = [&](const std::string& name, const std::string& unit, bool latency) -> Row& {
    if (!rows.count(name)) {
      rows.emplace(name, Row{name, unit, latency, {}, {}});
      order.push_back(name);
    }
    return rows.at(name);
  };
  bench::Table raw({"run", "measurement", "redis-benchmark", "leasehold"});

  client.round_trips(ping, 1000);  // warm-up: connection, allocator, caches
  for (int run = 1; run <= opt.runs; ++run) {
    for (const auto& [label, command] : {std::pair{"PING", ping}, std::pair{"ECHO 32B", echo}}) {
      const Result t = run_redis_benchmark(server, command, opt.requests, 1);
      const Result c = client.round_trips(command, opt.requests);
      auto& p50 = row(fmt::format("{} round trip p50", label), "µs", true);
      auto& p99 = row(fmt::format("{} round trip p99", label), "µs", true);
      p50.tool.push_back(t.p50_us);
      p50.client.push_back(c.p50_us);
      p99.tool.push_back(t.p99_us);
      p99.client.push_back(c.p99_us);
      raw.add({std::to_string(run), p50.name + " µs", bench::fixed(t.p50_us, 1), bench::fixed(c.p50_us, 1)});
      raw.add({std::to_string(run), p99.name + " µs", bench::fixed(t.p99_us, 1), bench::fixed(c.p99_us, 1)});
      for (const int depth : {16, 100}) {
        const Result tp = run_redis_benchmark(server, command, opt.pipelined_requests, depth);
        const Result calls = client.pipelined(command, opt.pipelined_requests, depth, false);
        const Result one = client.pipelined(command, opt.pipelined_requests, depth, true);
        auto& a = row(fmt::format("{} pipelined -P {} ({} async_exec calls)", label, depth, depth), "kcmd/s", false);
        auto& b = row(fmt::format("{} pipelined -P {} (one Request)", label, depth), "kcmd/s", false);
        a.tool.push_back(tp.ops_per_s / 1000);
        a.client.push_back(calls.ops_per_s / 1000);
        b.tool.push_back(tp.ops_per_s / 1000);
        b.client.push_back(one.ops_per_s / 1000);
        raw.add({std::to_string(run), a.name + " kcmd/s", bench::fixed(tp.ops_per_s / 1000, 1),
                 bench::fixed(calls.ops_per_s / 1000, 1)});
        raw.add({std::to_string(run), b.name + " kcmd/s", "", bench::fixed(one.ops_per_s / 1000, 1)});
      }
    }
    std::fprintf(stderr, "run %d/%d done\n", run, opt.runs);
  }

  bench::Table table({"measurement (median of runs)", "unit", "redis-benchmark", "leasehold redis::Client",
                      "leasehold / redis-benchmark"});
  for (const auto& name : order) {
    const Row& r = rows.at(name);
    const double t = bench::median(r.tool), c = bench::median(r.client);
    table.add({r.name, r.unit, bench::fixed(t, 1), bench::fixed(c, 1), bench::fixed(c / t, 2)});
  }
  std::printf("redis::Client vs redis-benchmark, one connection, %d runs (medians), %d round trips and "
              "%d pipelined commands per measurement\n"
              "ratio: latency rows < 1 and throughput rows > 1 favour leasehold\n\n%s\n%s",
              opt.runs, opt.requests, opt.pipelined_requests, table.text().c_str(), table.markdown().c_str());
  raw.write_csv(opt.csv);
  std::printf("\nper-run values: %s\nload average at end: %s\n", opt.csv.c_str(), bench::load_average().c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "client_vs_redis_benchmark: %s\n", e.what());
  return 1;
}
