// The RESP decoder: replies split anywhere decode whole, and a malformed or
// hostile stream is a sticky protocol error that names the problem, never a
// huge allocation.

#include <leasehold/redis/codec.hpp>
#include <leasehold/impl/protocol/reply_decoder.hpp>

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <optional>
#include <string>
#include <string_view>

namespace unit_reply_decoder_test {
namespace {

namespace redis = leasehold::redis;

// Feeds `bytes`, then returns the error the next reply attempt reports.
leasehold::Error error_after(std::string_view bytes) {
  redis::detail::ReplyDecoder decoder;
  leasehold::Error error = decoder.feed(bytes.data(), bytes.size());
  if (error) return error;
  while (decoder.next(error)) {
  }
  return error;
}

// Feeds `bytes` and decodes the first reply; nullopt (and a test failure)
// on an error.
std::optional<redis::Reply> first_reply(std::string_view bytes) {
  redis::detail::ReplyDecoder decoder;
  leasehold::Error error = decoder.feed(bytes.data(), bytes.size());
  std::optional<redis::Reply> reply;
  if (!error) reply = decoder.next(error);
  EXPECT_FALSE(error) << error.message();
  return reply;
}

TEST(ReplyDecoder, RepliesSplitAtEveryByteDecodeWhole) {
  const std::string stream = "*3\r\n$5\r\nhello\r\n:42\r\n*1\r\n+OK\r\n-ERR no\r\n$-1\r\n";
  redis::detail::ReplyDecoder decoder;
  leasehold::Error error;
  int replies = 0;
  for (const char c : stream) {
    ASSERT_FALSE(decoder.feed(&c, 1));
    while (auto reply = decoder.next(error)) {
      ++replies;
      if (replies == 1) {
        ASSERT_TRUE(reply->is_array());
        ASSERT_EQ(reply->elements.size(), 3u);
        EXPECT_EQ(reply->elements[0].str, "hello");
        EXPECT_EQ(reply->elements[1].integer, 42);
        EXPECT_EQ(reply->elements[2].elements[0].str, "OK");
      }
      if (replies == 2) {
        EXPECT_TRUE(reply->is_error());
      }
      if (replies == 3) {
        EXPECT_TRUE(reply->is_nil());
      }
    }
    ASSERT_FALSE(error) << error.message();
  }
  EXPECT_EQ(replies, 3);
}

// The reader builds the tree in place (each element in its parent's table):
// every type keeps its place, however deep.
TEST(ReplyDecoder, NestedRepliesKeepEveryTypeAndPlace) {
  using namespace std::string_literals;  // the stream holds a NUL byte
  const auto reply = first_reply(
      "*5\r\n*0\r\n*-1\r\n*3\r\n:-7\r\n*2\r\n$0\r\n\r\n-MOVED 5 h:1\r\n$-1\r\n+QUEUED\r\n$3\r\na\0b\r\n"s);
  ASSERT_TRUE(reply && reply->is_array());
  ASSERT_EQ(reply->elements.size(), 5u);
  EXPECT_TRUE(reply->elements[0].is_array());
  EXPECT_TRUE(reply->elements[0].elements.empty());
  EXPECT_TRUE(reply->elements[1].is_nil());
  const auto& inner = reply->elements[2];
  ASSERT_TRUE(inner.is_array());
  ASSERT_EQ(inner.elements.size(), 3u);
  EXPECT_TRUE(inner.elements[0].is_integer());
  EXPECT_EQ(inner.elements[0].integer, -7);
  ASSERT_EQ(inner.elements[1].elements.size(), 2u);
  EXPECT_TRUE(inner.elements[1].elements[0].is_string());
  EXPECT_EQ(inner.elements[1].elements[0].str, "");
  EXPECT_TRUE(inner.elements[1].elements[1].is_error());
  EXPECT_EQ(inner.elements[1].elements[1].str, "MOVED 5 h:1");
  EXPECT_TRUE(inner.elements[2].is_nil());
  EXPECT_TRUE(reply->elements[3].is_status());
  EXPECT_EQ(reply->elements[3].str, "QUEUED");
  EXPECT_EQ(reply->elements[4].str, std::string("a\0b", 3));
}

// A tree cut off by a protocol error, or by the decoder's end, is freed
// (the sanitizer build checks for leaks).
TEST(ReplyDecoder, APartialTreeIsFreedOnErrorAndWithTheDecoder) {
  EXPECT_TRUE(error_after("*3\r\n*2\r\n$5\r\nhello\r\n?bad\r\n"));
  redis::detail::ReplyDecoder decoder;
  const std::string_view half = "*2\r\n*2\r\n:1\r\n";
  ASSERT_FALSE(decoder.feed(half.data(), half.size()));
  leasehold::Error error;
  EXPECT_FALSE(decoder.next(error));
  EXPECT_FALSE(error);
}

#if HIREDIS_MAJOR >= 1
// hiredis 1.x reads RESP3 types even on a RESP2 connection: a server that
// sends them unasked still gets a reply of the nearest RESP2 shape.
TEST(ReplyDecoder, Resp3TypesDecodeToTheNearestRespTwoShape) {
  const auto reply = first_reply("*5\r\n,3.5\r\n#t\r\n_\r\n%1\r\n+k\r\n:2\r\n~1\r\n:9\r\n");
  ASSERT_TRUE(reply && reply->is_array());
  ASSERT_EQ(reply->elements.size(), 5u);
  EXPECT_EQ(reply->elements[0].str, "3.5");
  EXPECT_EQ(reply->elements[1].integer, 1);
  EXPECT_TRUE(reply->elements[2].is_nil());
  ASSERT_EQ(reply->elements[3].elements.size(), 2u);  // a map: key, value
  EXPECT_EQ(reply->elements[3].elements[0].str, "k");
  EXPECT_EQ(reply->elements[3].elements[1].integer, 2);
  ASSERT_EQ(reply->elements[4].elements.size(), 1u);
  EXPECT_EQ(reply->elements[4].elements[0].integer, 9);
}
#endif

TEST(ReplyDecoder, AnArrayAtTheElementLimitIsAccepted) {
  std::string stream = "*" + std::to_string(redis::detail::ReplyDecoder::max_array_elements) + "\r\n";
  for (int i = 0; i < redis::detail::ReplyDecoder::max_array_elements; ++i) stream += ":1\r\n";
  const auto reply = first_reply(stream);
  ASSERT_TRUE(reply && reply->is_array());
  EXPECT_EQ(reply->elements.size(), static_cast<std::size_t>(redis::detail::ReplyDecoder::max_array_elements));
}

// What hiredis itself rejects ("Multi-bulk length out of range"), named.
constexpr std::string_view count_out_of_range =
    "invalid RESP from server: an array header announces an element count below -1 or above "
    "the limit of 1048576";

// hiredis 0.14 has no bound of its own: leasehold's createArray rejects the
// header and names its count. hiredis 1.x rejects it itself (maxelements) and
// drops the header, so only the limit can be named.
std::string too_many_elements([[maybe_unused]] std::string_view count) {
#if HIREDIS_MAJOR >= 1
  return std::string(count_out_of_range);
#else
  return "invalid RESP from server: an array header announces " + std::string(count) +
         " elements, more than the limit of 1048576";
#endif
}

TEST(ReplyDecoder, AHugeArrayHeaderIsAProtocolErrorNamingTheLimit) {
  // Found by the reply fuzzer: hiredis would calloc 4.4 GB for this header.
  const auto error = error_after("*555555554\r\n:1\r\n");
  ASSERT_TRUE(error);
  EXPECT_EQ(error.code, leasehold::make_error_code(leasehold::errc::protocol_error));
  EXPECT_EQ(error.detail, too_many_elements("555555554"));
}

TEST(ReplyDecoder, OneElementAboveTheLimitIsRejected) {
  const auto error = error_after("*1048577\r\n");
  ASSERT_TRUE(error);
  EXPECT_EQ(error.detail, too_many_elements("1048577"));
}

TEST(ReplyDecoder, AHugeNestedArrayHeaderIsRejectedToo) {
  const auto error = error_after("*2\r\n:1\r\n*2000000000\r\n");
  ASSERT_TRUE(error);
  EXPECT_EQ(error.detail, too_many_elements("2000000000"));
}

TEST(ReplyDecoder, ArrayCountsBeyondIntAreRejectedNotTruncated) {
  // 2^32 + 1 must not wrap around to a one-element array. hiredis rejects it
  // before leasehold's own check on both versions.
  const auto error = error_after("*4294967297\r\n:1\r\n");
  ASSERT_TRUE(error) << "accepted an out-of-range array count";
  EXPECT_EQ(error.code, leasehold::make_error_code(leasehold::errc::protocol_error));
  EXPECT_EQ(error.detail, count_out_of_range);
}

TEST(ReplyDecoder, ANegativeCountOtherThanNilIsRejected) {
  const auto error = error_after("*-2\r\n");
  ASSERT_TRUE(error);
  EXPECT_EQ(error.detail, count_out_of_range);
}

TEST(ReplyDecoder, OtherReaderErrorsKeepHiredisText) {
  const auto error = error_after("*x\r\n");
  ASSERT_TRUE(error);
  EXPECT_EQ(error.detail, "invalid RESP from server: Bad multi-bulk length");
}

TEST(ReplyDecoder, ErrorsAreSticky) {
  redis::detail::ReplyDecoder decoder;
  const std::string_view bad = "?what\r\n";
  ASSERT_FALSE(decoder.feed(bad.data(), bad.size()));
  leasehold::Error error;
  EXPECT_FALSE(decoder.next(error));
  ASSERT_TRUE(error);
  EXPECT_NE(error.message().find("invalid RESP from server"), std::string::npos);
  const std::string_view good = "+OK\r\n";
  EXPECT_TRUE(decoder.feed(good.data(), good.size()));
  leasehold::Error again;
  EXPECT_FALSE(decoder.next(again));
  EXPECT_TRUE(again);
}

}  // namespace
}  // namespace unit_reply_decoder_test
