// What the elector tells an operator about its connections, without I/O: a
// cluster node's outage is logged once with the node named and what it
// serves, its end once; failed slot map reads once per run and cause.

#include <leasehold/impl/observe/connection_reports.hpp>
#include "../support/log_capture.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace unit_connection_reports_test {
namespace {

namespace lh = leasehold;
using lh::detail::ConnectionReports;
using namespace std::chrono_literals;

const auto t0 = std::chrono::steady_clock::time_point{} + 1h;

lh::Error refused() { return {lh::make_error_code(lh::errc::connection_lost), "Connection refused"}; }

TEST(ConnectionReports, AClusterNodesOutageNamesTheNodeAndWhatItServesOnce) {
  lh::test::LogCapture log(lh::LogLevel::info);
  ConnectionReports reports("web-1", "redis-cluster://127.0.0.1:7000", 1000ms);
  const auto event = reports.node_down("127.0.0.1:7001", "master of slots 0-5460", t0, refused(), false);
  ASSERT_TRUE(event);
  EXPECT_EQ(event->code, lh::errc::connection_lost);
  EXPECT_EQ(event->detail, "cluster node 127.0.0.1:7001 (master of slots 0-5460): Connection refused");
  EXPECT_EQ(log.matching({"web-1", "lost the connection to", "127.0.0.1:7001 (master of slots 0-5460)",
                          "Connection refused"}).size(), 1u);

  reports.node_up("127.0.0.1:7001", "master of slots 0-5460", t0 + 1500ms);
  EXPECT_EQ(log.matching({"reconnected to cluster node 127.0.0.1:7001", "after 1500 ms"}).size(), 1u);
  reports.node_up("127.0.0.1:7001", "master of slots 0-5460", t0 + 2s);
  EXPECT_EQ(log.matching({"reconnected to cluster node"}).size(), 1u) << "an up without an outage is no news";
}

TEST(ConnectionReports, NothingIsReportedWhileStopping) {
  lh::test::LogCapture log(lh::LogLevel::info);
  ConnectionReports reports("web-1", "redis-cluster://127.0.0.1:7000", 1000ms);
  EXPECT_FALSE(reports.node_down("127.0.0.1:7001", "master of slots 0-5460", t0, refused(), true));
  EXPECT_TRUE(log.matching({"lost the connection"}).empty());
}

TEST(ConnectionReports, FailedSlotMapReadsAreNewsOncePerRunAndCause) {
  lh::test::LogCapture log(lh::LogLevel::info);
  ConnectionReports reports("web-1", "redis-cluster://127.0.0.1:7000", 1000ms);
  const lh::Error noperm{lh::make_error_code(lh::errc::no_permission), "CLUSTER SLOTS on 127.0.0.1:7000: NOPERM"};
  const lh::Error lost{lh::make_error_code(lh::errc::connection_lost), "CLUSTER SLOTS on 127.0.0.1:7000"};
  EXPECT_TRUE(reports.map_failed(noperm));
  EXPECT_FALSE(reports.map_failed(noperm)) << "the same cause again";
  EXPECT_TRUE(reports.map_failed(lost)) << "another cause";
  reports.map_read();
  EXPECT_TRUE(reports.map_failed(lost)) << "a new run after a read that worked";
  EXPECT_EQ(log.matching({"web-1", "reading the cluster's slot map failed", "127.0.0.1:7000"}).size(), 3u);
}

}  // namespace
}  // namespace unit_connection_reports_test
