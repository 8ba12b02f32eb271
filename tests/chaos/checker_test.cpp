// The checker on hand-made member logs: it must find what is there and
// nothing else.

#include "chaos/checker.hpp"

#include <gtest/gtest.h>

using namespace leasehold::chaos;

namespace {

RunLog run(const std::string& text, const std::string& instance, std::optional<Nanos> dead_at = {}) {
  RunLog r = parse_run(text, instance);
  r.dead_at = dead_at;
  return r;
}

}  // namespace

TEST(Checker, ClaimRunsFromBeganToTheEarlierOfEndedAndTheLastDeadline) {
  const auto a = run(
      "ready 1\n"
      "audit began g 1 100 90 400 \n"
      "audit extended g 1 200 190 500\n"
      "audit ended g 1 300 190 0\n"
      "audit began g 2 1000 990 1200\n"
      "audit ended g 2 1300 990 0\n"  // ended after its deadline: the deadline wins
      "stopped 2000\n",
      "a");
  EXPECT_TRUE(a.problems.empty()) << a.problems.front();
  ASSERT_EQ(a.claims.at("g").size(), 2u);
  EXPECT_EQ(a.claims.at("g")[0].begin, 100);
  EXPECT_EQ(a.claims.at("g")[0].end, 300);
  EXPECT_EQ(a.claims.at("g")[1].begin, 1000);
  EXPECT_EQ(a.claims.at("g")[1].end, 1200);
  EXPECT_EQ(a.stopped, 2000);
}

TEST(Checker, OverlapOfTwoInstancesIsReportedWithItsStartAndLength) {
  const std::vector<RunLog> runs{
      run("audit began g 1 100 90 400\naudit ended g 1 250 90 0\n", "a"),
      run("audit began g 2 200 150 600\naudit ended g 2 300 150 0\n", "b"),
      run("audit began other 1 100 90 600\n", "c"),
  };
  const auto overlaps = find_overlaps(runs);
  ASSERT_EQ(overlaps.size(), 1u);
  EXPECT_EQ(overlaps[0].group, "g");
  EXPECT_EQ(overlaps[0].first, "a (a)");
  EXPECT_EQ(overlaps[0].second, "b (b)");
  EXPECT_EQ(overlaps[0].start, 200);
  EXPECT_EQ(overlaps[0].length, 50);
}

TEST(Checker, ATermWhoseTokenIsNotGreaterThanAnEarlierTermsIsATokenRegression) {
  const std::vector<RunLog> runs{
      run("elected g 5 100\nrevoked g 5 deadline_passed 200\nelected g 6 300\n", "a"),
      run("elected g 6 400\nelected h 1 400\n", "b"),  // 6 again, by another instance
      run("elected g 4 500\n", "c"),                    // below the greatest (6)
  };
  const auto regressions = find_token_regressions(runs, {});
  ASSERT_EQ(regressions.size(), 2u);
  EXPECT_EQ(regressions[0].group, "g");
  EXPECT_EQ(regressions[0].earlier, "a (a)");
  EXPECT_EQ(regressions[0].later, "b (b)");
  EXPECT_EQ(regressions[0].earlier_token, 6);
  EXPECT_EQ(regressions[0].later_token, 6);
  EXPECT_EQ(regressions[0].at, 400);
  EXPECT_EQ(regressions[1].later_token, 4);
  EXPECT_EQ(regressions[1].at, 500);
}

TEST(Checker, TokensStartOverAfterADataLossAndAReclaimMayKeepItsOwnToken) {
  const std::vector<RunLog> runs{
      run("elected g 7 100\nrevoked g 7 deadline_passed 150\nelected g 7 200\n", "a"),  // re-claim under OOM
      run("elected g 1 400\nrevoked g 1 deadline_passed 450\nelected g 2 500\n", "b"),
  };
  EXPECT_TRUE(find_token_regressions(runs, {300}).empty());
  EXPECT_EQ(find_token_regressions(runs, {}).size(), 2u);
}

TEST(Checker, AdjacentClaimsDoNotOverlap) {
  const std::vector<RunLog> runs{
      run("audit began g 1 100 90 400\naudit ended g 1 200 90 0\n", "a"),
      run("audit began g 2 200 195 600\naudit ended g 2 300 195 0\n", "b"),
      run("audit began g 3 300 300 700\naudit ended g 3 350 300 0\n", "a"),
  };
  EXPECT_TRUE(find_overlaps(runs).empty());
}

TEST(Checker, AKilledProcessClaimsUntilItsLastDeadline) {
  // No ended record: the process was killed at 250, but its claim is only
  // bounded by its last deadline, 500.
  const auto killed = run("audit began g 1 100 90 400\naudit extended g 1 200 190 500\n", "a", 250);
  ASSERT_EQ(killed.claims.at("g").size(), 1u);
  EXPECT_EQ(killed.claims.at("g")[0].end, 500);
  EXPECT_TRUE(killed.claims.at("g")[0].open_at_exit);

  const auto early = run("audit began g 2 450 440 900\n", "b");
  const auto overlaps = find_overlaps({killed, early});
  ASSERT_EQ(overlaps.size(), 1u);
  EXPECT_EQ(overlaps[0].start, 450);
  EXPECT_EQ(overlaps[0].length, 50);

  const auto on_time = run("audit began g 2 500 495 900\n", "b");
  EXPECT_TRUE(find_overlaps({killed, on_time}).empty());
}

TEST(Checker, ARespawnedProcessOfTheSameIdOverlapsOnlyWhileBothLive) {
  const auto old_run = run("audit began g 1 100 90 500\n", "a", 150);
  // Re-claims its own lease after the old process died: one holder.
  EXPECT_TRUE(find_overlaps({old_run, run("audit began g 1 160 155 700\n", "a")}).empty());
  // Two live processes with one id both claiming: reported.
  const auto both = find_overlaps({old_run, run("audit began g 1 140 135 700\n", "a")});
  ASSERT_EQ(both.size(), 1u);
  EXPECT_EQ(both[0].length, 10);
}

TEST(Checker, RenewalConfirmedAfterTheDeadlineSplitsTheClaim) {
  const auto a = run("audit began g 1 100 90 400\naudit extended g 1 450 380 700\naudit ended g 1 600 380 0\n", "a");
  ASSERT_EQ(a.claims.at("g").size(), 2u);
  EXPECT_EQ(a.claims.at("g")[0].end, 400);
  EXPECT_EQ(a.claims.at("g")[1].begin, 450);
  EXPECT_EQ(a.claims.at("g")[1].end, 600);
  // Another instance in the hole between them is fine.
  EXPECT_TRUE(find_overlaps({a, run("audit began g 2 400 400 440\naudit ended g 2 440 400 0\n", "b")}).empty());
}

TEST(Checker, ElectedAndRevokedMustAlternateWithMatchingTokens) {
  EXPECT_TRUE(run("elected g 1 10\nrevoked g 1 stepped_down 20\nelected g 2 30\nelected h 2 30\n", "a")
                  .problems.empty());
  const auto twice = run("elected g 1 10\nelected g 2 20\n", "a");
  ASSERT_EQ(twice.problems.size(), 1u);
  EXPECT_NE(twice.problems[0].find("while term 1 is running"), std::string::npos) << twice.problems[0];
  const auto orphan = run("revoked g 1 timeout 20\n", "a");
  ASSERT_EQ(orphan.problems.size(), 1u);
  EXPECT_NE(orphan.problems[0].find("without elected"), std::string::npos);
  const auto mismatch = run("elected g 1 10\nrevoked g 2 timeout 20\n", "a");
  ASSERT_EQ(mismatch.problems.size(), 1u);
  EXPECT_NE(mismatch.problems[0].find("began with token 1"), std::string::npos);
}

TEST(Checker, MalformedAndOutOfOrderRecordsAreProblems) {
  const auto r = run("audit began g 1 100\nbogus\naudit ended g 1 100 90 0\nerror - 5 100 no reply from x\n", "a");
  ASSERT_EQ(r.problems.size(), 3u);
  EXPECT_EQ(r.problems[0], "a:1: malformed record \"audit began g 1 100\"");
  EXPECT_EQ(r.errors, 1u);
}

TEST(Checker, TheMembersCommandRecordsAreNoProblem) {
  EXPECT_TRUE(run("ready 5\nstep_down g 10\njoin h 20\nstopped 30\n", "a").problems.empty());
  const auto r = run("join h\njoin h x\n", "a");
  ASSERT_EQ(r.problems.size(), 2u);
  EXPECT_EQ(r.problems[0], "a:1: malformed record \"join h\"");
}

TEST(Checker, GapsAreTheTimesNobodyClaimsAndADeadLeaderLeadsNothing) {
  const std::vector<RunLog> runs{
      run("audit began g 1 100 90 400\naudit ended g 1 200 90 0\n", "a"),
      run("audit began g 2 150 150 600\n", "b", 300),  // killed: dead at 300
      run("audit began g 3 700 700 900\naudit ended g 3 800 700 0\n", "c"),
  };
  const auto gaps = leaderless_gaps(runs, {"g", "never"}, 0, 1000);
  ASSERT_EQ(gaps.at("g").size(), 3u);
  EXPECT_EQ(gaps.at("g")[0].begin, 0);
  EXPECT_EQ(gaps.at("g")[0].end, 100);
  EXPECT_EQ(gaps.at("g")[1].begin, 300);
  EXPECT_EQ(gaps.at("g")[1].end, 700);
  EXPECT_EQ(gaps.at("g")[2].begin, 800);
  EXPECT_EQ(gaps.at("g")[2].end, 1000);
  ASSERT_EQ(gaps.at("never").size(), 1u);
  EXPECT_EQ(gaps.at("never")[0].length(), 1000);

  EXPECT_TRUE(leaderless_gaps(runs, {"g"}, 120, 290).at("g").empty());
}

TEST(Checker, LivenessAttributesGapsToDisruptionsAndChecksTheirBounds) {
  const std::map<std::string, std::vector<Gap>> gaps{
      {"g", {{1000, 1500}, {5000, 5003}}},
      {"h", {{1100, 1400}, {3000, 3800}}},
  };
  // A kill at 900 bounded by 700 from the kill: both gaps end by 1600.
  const std::vector<Disruption> kill{{"kill", 900, 900, 700}};
  auto live = check_liveness(gaps, kill, 10);
  ASSERT_EQ(live.recoveries.size(), 1u);
  EXPECT_TRUE(live.recoveries[0].ok);
  EXPECT_EQ(live.recoveries[0].time_to_leader, 600);
  EXPECT_EQ(live.recoveries[0].longest_gap, 500);
  EXPECT_EQ(live.recoveries[0].worst_group, "g");
  // The gap at 3000 has no disruption and is longer than the tolerance; the
  // 3 ns blip at 5000 is tolerated.
  ASSERT_EQ(live.unexplained.size(), 1u);
  EXPECT_EQ(live.unexplained[0].first, "h");
  EXPECT_EQ(live.unexplained[0].second.begin, 3000);
  EXPECT_FALSE(live.ok());

  // A restart healed at 2900 with a bound of 800 explains it, but a bound of
  // 700 is missed.
  EXPECT_TRUE(check_liveness(gaps, {kill[0], {"restart", 2500, 2900, 900}}, 10).ok());
  auto late = check_liveness(gaps, {kill[0], {"restart", 2500, 2900, 800}}, 10);
  EXPECT_FALSE(late.recoveries[1].ok);
  EXPECT_EQ(late.recoveries[1].time_to_leader, 900);
  EXPECT_TRUE(late.unexplained.empty());
}
