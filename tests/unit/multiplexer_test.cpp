// The client's request side on plain calls: replies matched in order to
// requests of one or several commands, completions run in one batch in reply
// order, the EVAL retry after NOSCRIPT, detached (cancelled) requests whose
// replies are dropped, and failing everything on a reset.

#include <leasehold/impl/redis/multiplexer.hpp>

#include <leasehold/redis/script.hpp>
#include <leasehold/redis/script_arguments.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace unit_multiplexer_test {
namespace {

namespace lh = leasehold;
namespace redis = leasehold::redis;
using redis::Reply;
using redis::Request;
using redis::detail::Multiplexer;
using redis::detail::ScriptCall;
using namespace std::chrono_literals;

using time_point = std::chrono::steady_clock::time_point;
const time_point t0 = time_point{} + 1h;

// What one handler saw; `calls` counts how often it ran.
struct Seen {
  int calls = 0;
  lh::error_code ec;
  std::vector<Reply> replies;
};

class MultiplexerTest : public ::testing::Test {
 protected:
  redis::ExecHandler recorder(Seen& seen) {
    return [&seen](lh::error_code ec, std::vector<Reply> replies) {
      ++seen.calls;
      seen.ec = ec;
      seen.replies = std::move(replies);
    };
  }

  // Built in place: Boost 1.81's any_completion_handler cannot be assigned.
  ScriptCall call(Seen& seen, const redis::Script& script) {
    redis::EvalHandler handler([&seen](lh::error_code ec, Reply reply) {
      ++seen.calls;
      seen.ec = ec;
      seen.replies = {std::move(reply)};
    });
    return ScriptCall{std::move(handler), &script, &arguments, nullptr, false, true};
  }

  std::string encoded_call(const redis::Script& script, bool by_body) const {
    std::string out;
    arguments.encode_call(out, script, by_body);
    return out;
  }

  // The handler ran once, successfully, with the integer `value`.
  static void expect_integer(const Seen& seen, std::int64_t value) {
    ASSERT_EQ(seen.calls, 1);
    EXPECT_FALSE(seen.ec) << seen.ec.message();
    EXPECT_EQ(seen.replies.at(0).integer, value);
  }

  std::string output() {
    std::string out;
    mux.take_output(out);
    return out;
  }

  lh::Error reply(Reply r, time_point now = t0) { return mux.on_reply(std::move(r), now); }

  // Runs the collected completions as the client does: in one turn of its
  // executor.
  void complete() {
    boost::asio::post(io, [this] { mux.run_completions(io.get_executor()); });
    io.poll();
    io.restart();
  }

  boost::asio::io_context io;
  redis::ClientStats stats;
  Multiplexer mux{1000ms, stats};
  const std::array<std::string_view, 1> keys{"k"};
  const redis::ScriptArguments arguments{keys, {}};
};

TEST_F(MultiplexerTest, RepliesAreMatchedInOrderToRequestsOfOneOrSeveralCommands) {
  Seen pair, single;
  Request two;
  two.push({"SET", "a", "1"}).push({"GET", "a"});
  mux.exec(two, recorder(pair), true, t0);
  mux.exec(Request{"PING"}, recorder(single), true, t0);
  EXPECT_EQ(output(), two.payload() + Request{"PING"}.payload()) << "requests go out in order, in one buffer";
  EXPECT_EQ(stats.commands_sent, 3u);
  EXPECT_EQ(mux.pending(), 2u);

  EXPECT_FALSE(reply(Reply::make_status("OK")));
  EXPECT_FALSE(mux.has_completions()) << "the first request expects two replies";
  EXPECT_FALSE(reply(Reply::make_string("1"), t0 + 3ms));
  EXPECT_FALSE(reply(Reply::make_status("PONG"), t0 + 4ms));
  EXPECT_TRUE(mux.idle());
  EXPECT_EQ(pair.calls, 0) << "completions wait for their batch";

  complete();
  ASSERT_EQ(pair.calls, 1);
  EXPECT_FALSE(pair.ec);
  ASSERT_EQ(pair.replies.size(), 2u);
  EXPECT_EQ(pair.replies[0].str, "OK");
  EXPECT_EQ(pair.replies[1].str, "1");
  ASSERT_EQ(single.calls, 1);
  EXPECT_EQ(single.replies.at(0).str, "PONG");
  EXPECT_EQ(stats.round_trip.count(), 2u) << "one sample per request, not per command";
  EXPECT_EQ(stats.round_trip.sum(), 7ms);
  EXPECT_FALSE(mux.has_completions());
}

TEST_F(MultiplexerTest, ServerErrorRepliesAreRepliesNotErrors) {
  Seen seen;
  mux.exec(Request{"INCR", "h"}, recorder(seen), true, t0);
  EXPECT_FALSE(reply(Reply::make_error("WRONGTYPE Operation against a key")));
  complete();
  EXPECT_FALSE(seen.ec);
  EXPECT_TRUE(seen.replies.at(0).is_error());
}

TEST_F(MultiplexerTest, AReplyWithNothingPendingIsAProtocolError) {
  const lh::Error error = reply(Reply::make_status("OK"));
  EXPECT_EQ(error.code, lh::errc::protocol_error);
  EXPECT_NE(error.detail.find("no pending command"), std::string::npos) << error.detail;
}

TEST_F(MultiplexerTest, HandlersWithTheirOwnExecutorCompleteInReplyOrderToo) {
  boost::asio::io_context other;
  std::vector<int> order;
  for (int i = 0; i < 6; ++i) {
    auto record = [&order, i](lh::error_code, std::vector<Reply>) { order.push_back(i); };
    if (i % 2 == 0) {
      mux.exec(Request{"PING"}, record, true, t0);
    } else {
      // Bound to this io_context's executor: dispatched inline from the batch.
      mux.exec(Request{"PING"}, boost::asio::bind_executor(io.get_executor(), record), false, t0);
    }
  }
  for (int i = 0; i < 6; ++i) ASSERT_FALSE(reply(Reply::make_status("PONG")));
  complete();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

TEST_F(MultiplexerTest, AThrowingHandlerLeavesTheRestForTheNextRun) {
  std::vector<int> order;
  mux.exec(Request{"PING"}, [&](lh::error_code, std::vector<Reply>) {
    order.push_back(0);
    throw std::runtime_error("handler failed");
  }, true, t0);
  for (int i = 1; i < 3; ++i) {
    mux.exec(Request{"PING"}, [&order, i](lh::error_code, std::vector<Reply>) { order.push_back(i); }, true, t0);
  }
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(reply(Reply::make_status("PONG")));
  EXPECT_THROW(mux.run_completions(io.get_executor()), std::runtime_error);
  EXPECT_EQ(order, (std::vector<int>{0}));
  ASSERT_TRUE(mux.has_completions());
  mux.run_completions(io.get_executor());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

TEST_F(MultiplexerTest, EvalIsSentBySha) {
  const redis::Script script("return 1");
  Seen seen;
  mux.eval(call(seen, script), t0);
  EXPECT_EQ(output(), encoded_call(script, false));
  EXPECT_FALSE(reply(Reply::make_integer(1)));
  complete();
  expect_integer(seen, 1);
}

TEST_F(MultiplexerTest, NoscriptIsRetriedOnceByBodyAtTheBackOfTheQueue) {
  const redis::Script script("return 1");
  Seen seen, ping;
  mux.eval(call(seen, script), t0);
  mux.exec(Request{"PING"}, recorder(ping), true, t0);
  (void)output();

  EXPECT_FALSE(reply(Reply::make_error("NOSCRIPT No matching script")));
  EXPECT_FALSE(mux.has_completions()) << "the caller does not see the NOSCRIPT";
  EXPECT_EQ(output(), encoded_call(script, true));
  EXPECT_EQ(mux.pending(), 2u);
  EXPECT_EQ(stats.commands_sent, 3u);

  EXPECT_FALSE(reply(Reply::make_status("PONG")));
  EXPECT_FALSE(reply(Reply::make_integer(1)));
  complete();
  EXPECT_EQ(ping.calls, 1);
  expect_integer(seen, 1);
}

TEST_F(MultiplexerTest, NoscriptAfterTheRetryAndOtherErrorsAreClassified) {
  const redis::Script script("return 1");
  Seen seen, wrong;
  mux.eval(call(seen, script), t0);
  EXPECT_FALSE(reply(Reply::make_error("NOSCRIPT No matching script")));
  EXPECT_FALSE(reply(Reply::make_error("NOSCRIPT still none")));
  mux.eval(call(wrong, script), t0);
  EXPECT_FALSE(reply(Reply::make_error("WRONGTYPE Operation against a key")));
  complete();
  EXPECT_EQ(seen.ec, lh::errc::no_script);
  EXPECT_EQ(wrong.ec, lh::errc::wrong_type);
  EXPECT_EQ(wrong.replies.at(0).str, "WRONGTYPE Operation against a key") << "the error reply comes along";
}

TEST_F(MultiplexerTest, ADetachedRequestCompletesAtOnceAndItsReplyIsDropped) {
  Seen before, cancelled, after;
  mux.exec(Request{"ECHO", "before"}, recorder(before), true, t0);
  const auto id = mux.exec(Request{"BLPOP", "q", "1"}, recorder(cancelled), true, t0);
  mux.exec(Request{"ECHO", "after"}, recorder(after), true, t0);

  EXPECT_TRUE(mux.detach(id, io.get_executor()));
  EXPECT_EQ(cancelled.calls, 0) << "never inside the cancellation handler";
  EXPECT_FALSE(mux.detach(id, io.get_executor())) << "detached once";
  io.poll();
  io.restart();
  ASSERT_EQ(cancelled.calls, 1);
  EXPECT_EQ(cancelled.ec, boost::asio::error::operation_aborted);
  EXPECT_EQ(mux.pending(), 3u) << "its reply keeps its place";

  EXPECT_FALSE(reply(Reply::make_string("before")));
  EXPECT_FALSE(reply(Reply{}));  // BLPOP's nil
  EXPECT_FALSE(reply(Reply::make_string("after")));
  complete();
  EXPECT_EQ(cancelled.calls, 1);
  EXPECT_EQ(before.replies.at(0).str, "before");
  EXPECT_EQ(after.replies.at(0).str, "after");
  EXPECT_EQ(stats.round_trip.count(), 2u) << "no sample for the detached request";
}

TEST_F(MultiplexerTest, ARequestDetachedBetweenItsRepliesDropsTheRest) {
  Seen pair, next;
  Request two;
  two.push({"GET", "a"}).push({"GET", "b"});
  const auto id = mux.exec(two, recorder(pair), true, t0);
  mux.exec(Request{"GET", "c"}, recorder(next), true, t0);
  EXPECT_FALSE(reply(Reply::make_string("a")));
  EXPECT_TRUE(mux.detach(id, io.get_executor()));
  EXPECT_FALSE(reply(Reply::make_string("b")));
  EXPECT_FALSE(reply(Reply::make_string("c")));
  complete();
  EXPECT_EQ(pair.calls, 1);
  EXPECT_EQ(pair.ec, boost::asio::error::operation_aborted);
  EXPECT_TRUE(pair.replies.empty());
  EXPECT_EQ(next.replies.at(0).str, "c");
}

TEST_F(MultiplexerTest, ADetachedScriptCallIsNotRetriedAfterNoscript) {
  const redis::Script script("return 1");
  Seen seen;
  const auto id = mux.eval(call(seen, script), t0);
  (void)output();
  EXPECT_TRUE(mux.detach(id, io.get_executor()));
  EXPECT_FALSE(reply(Reply::make_error("NOSCRIPT No matching script")));
  EXPECT_FALSE(mux.has_output());
  EXPECT_TRUE(mux.idle());
  complete();
  EXPECT_EQ(seen.calls, 1);
  EXPECT_EQ(seen.ec, boost::asio::error::operation_aborted);
}

TEST_F(MultiplexerTest, ACompletedOrUnknownRequestCannotBeDetached) {
  Seen seen;
  const auto id = mux.exec(Request{"PING"}, recorder(seen), true, t0);
  EXPECT_FALSE(reply(Reply::make_status("PONG")));
  EXPECT_FALSE(mux.detach(id, io.get_executor())) << "the reply won the race: it completes the request";
  EXPECT_FALSE(mux.detach(id + 100, io.get_executor()));
  complete();
  EXPECT_EQ(seen.calls, 1);
  EXPECT_FALSE(seen.ec);
}

TEST_F(MultiplexerTest, FailAllFailsEveryWaitingRequestOnceAndDropsTheOutput) {
  const redis::Script script("return 1");
  Seen exec, eval, detached;
  mux.exec(Request{"PING"}, recorder(exec), true, t0);
  mux.eval(call(eval, script), t0);
  const auto id = mux.exec(Request{"PING"}, recorder(detached), true, t0);
  mux.health_check(t0);
  ASSERT_TRUE(mux.detach(id, io.get_executor()));
  mux.fail_all(lh::make_error_code(lh::errc::connection_lost), io.get_executor());
  EXPECT_TRUE(mux.idle());
  EXPECT_FALSE(mux.has_output());
  EXPECT_EQ(exec.calls, 0) << "posted, not inline";
  io.poll();
  EXPECT_EQ(exec.ec, lh::errc::connection_lost);
  EXPECT_EQ(eval.ec, lh::errc::connection_lost);
  EXPECT_EQ(detached.calls, 1);
  EXPECT_EQ(detached.ec, boost::asio::error::operation_aborted);
  EXPECT_EQ(reply(Reply::make_status("PONG")).code, lh::errc::protocol_error)
      << "a late reply from the old connection matches nothing";
}

TEST_F(MultiplexerTest, HealthChecksAndUntrackedCommandsCompleteNothing) {
  mux.health_check(t0);
  EXPECT_EQ(mux.oldest_deadline(), t0 + 1000ms);
  mux.send_untracked("*1\r\n$4\r\nPING\r\n", 1);
  EXPECT_EQ(mux.pending(), 1u) << "an untracked command expects no reply";
  EXPECT_EQ(stats.commands_sent, 2u);
  EXPECT_EQ(output(), "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n");
  EXPECT_FALSE(reply(Reply::make_status("PONG")));
  EXPECT_TRUE(mux.idle());
  EXPECT_FALSE(mux.has_completions());
  EXPECT_EQ(mux.oldest_deadline(), std::nullopt);
}

TEST_F(MultiplexerTest, TheOldestRequestSetsTheDeadline) {
  mux.exec(Request{"PING"}, [](lh::error_code, std::vector<Reply>) {}, true, t0);
  mux.exec(Request{"PING"}, [](lh::error_code, std::vector<Reply>) {}, true, t0 + 500ms);
  EXPECT_EQ(mux.oldest_deadline(), t0 + 1000ms);
  EXPECT_FALSE(reply(Reply::make_status("PONG")));
  EXPECT_EQ(mux.oldest_deadline(), t0 + 1500ms);
}

TEST_F(MultiplexerTest, OutputIsTakenWholeAndALargeWrittenBufferIsFreed) {
  std::string written;
  mux.send_untracked(std::string(100 * 1024, 'x'), 1);
  mux.take_output(written);
  EXPECT_EQ(written.size(), 100u * 1024);
  EXPECT_FALSE(mux.has_output());
  Multiplexer::recycle(written);
  EXPECT_TRUE(written.empty());
  EXPECT_LT(written.capacity(), 64u * 1024) << "a burst must not pin its buffer";
}

}  // namespace
}  // namespace unit_multiplexer_test
