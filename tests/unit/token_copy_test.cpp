// The CLI's migrate-tokens rule (tools/cli/token_copy.hpp): a counter or a
// tick is copied only upward, never lowered; what the dry run reports.
// tests/integration/migration_test.cpp runs the scripts on real servers.

#include "token_copy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace unit_token_copy_test {
namespace {

using leasehold::cli::CopyOutcome;
using leasehold::cli::parse_counter;
using leasehold::cli::parse_ticks;
using leasehold::cli::plan_copy;
using leasehold::cli::plan_ticks;
using leasehold::redis::Reply;

TEST(TokenCopy, NeverLowersACounter) {
  EXPECT_EQ(plan_copy(7, std::nullopt), CopyOutcome::copied);
  EXPECT_EQ(plan_copy(7, 0), CopyOutcome::copied);  // the empty-restart guard's counter
  EXPECT_EQ(plan_copy(7, 6), CopyOutcome::copied);
  EXPECT_EQ(plan_copy(7, 7), CopyOutcome::kept);
  EXPECT_EQ(plan_copy(7, 8), CopyOutcome::kept);
  EXPECT_EQ(plan_copy(7, std::numeric_limits<std::int64_t>::max()), CopyOutcome::kept);
  EXPECT_EQ(plan_copy(std::nullopt, std::nullopt), CopyOutcome::missing);
  EXPECT_EQ(plan_copy(std::nullopt, 3), CopyOutcome::missing);
  // Exhaustively over a small range: the target only ever goes up.
  for (std::int64_t source = 0; source < 20; ++source) {
    for (std::int64_t target = 0; target < 20; ++target) {
      const std::int64_t after = plan_copy(source, target) == CopyOutcome::copied ? source : target;
      EXPECT_EQ(after, std::max(source, target)) << source << " onto " << target;
    }
  }
}

TEST(TokenCopy, ReadsCountersAsRedisKeepsThem) {
  EXPECT_EQ(parse_counter("0"), 0);
  EXPECT_EQ(parse_counter("42"), 42);
  EXPECT_EQ(parse_counter("-3"), -3);
  EXPECT_EQ(parse_counter("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
  for (const char* bad : {"", "x", "1.5", " 1", "1 ", "+1", "9223372036854775808", "0x10"}) {
    EXPECT_FALSE(parse_counter(bad)) << '"' << bad << '"';
  }
}

TEST(TokenCopy, TicksAreRaisedPerScheduleNeverLowered) {
  const auto ticks = parse_ticks(Reply::make_array({Reply::make_string("every 1000ms"), Reply::make_string("5000"),
                                                    Reply::make_string("nightly"), Reply::make_string("9000")}));
  ASSERT_TRUE(ticks);
  ASSERT_EQ(ticks->size(), 2u);
  EXPECT_EQ((*ticks)[0], (std::pair<std::string, std::int64_t>{"every 1000ms", 5000}));
  EXPECT_TRUE(parse_ticks(Reply::make_array({})));
  EXPECT_FALSE(parse_ticks(Reply::make_array({Reply::make_string("odd")})));
  EXPECT_FALSE(parse_ticks(Reply::make_array({Reply::make_string("s"), Reply::make_string("soon")})));
  EXPECT_FALSE(parse_ticks(Reply::make_string("5000")));

  // "every": the target is behind; "nightly": ahead; "hourly": missing there.
  const std::vector<std::pair<std::string, std::int64_t>> source{{"every", 5000}, {"nightly", 9000}, {"hourly", 7}};
  const std::vector<std::pair<std::string, std::int64_t>> target{{"every", 4000}, {"nightly", 9500}};
  EXPECT_EQ(plan_ticks(source, target), (std::pair<std::size_t, std::size_t>{2, 1}));
  EXPECT_EQ(plan_ticks(source, source), (std::pair<std::size_t, std::size_t>{0, 3}));
  EXPECT_EQ(plan_ticks({}, target), (std::pair<std::size_t, std::size_t>{0, 0}));
}

}  // namespace
}  // namespace unit_token_copy_test
