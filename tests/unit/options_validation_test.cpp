// ElectorOptions::validate() and validate_group_name(): every invalid field
// and group name is rejected with a std::invalid_argument whose message names
// it. (URL parsing is covered in redis_options_test.cpp.)

#include <leasehold/elector_options.hpp>

#include "contains.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

namespace unit_options_validation_test {
namespace {

using leasehold::ElectorOptions;
using leasehold::validate_group_name;
using namespace std::chrono_literals;
using namespace std::string_literals;

// The message validate() throws, or "" (plus a failure) if it accepts.
std::string options_error(const ElectorOptions& options) {
  try {
    options.validate();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected ElectorOptions::validate() to throw";
  return {};
}

std::string group_error(std::string_view group) {
  try {
    validate_group_name(group);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected validate_group_name to reject a " << group.size() << "-byte name";
  return {};
}

using leasehold::test::contains;

// An error message must be printable on one log line whatever the input was.
bool printable(std::string_view text) {
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

ElectorOptions with(const std::function<void(ElectorOptions&)>& edit) {
  ElectorOptions o;
  edit(o);
  return o;
}

// ---------------------------------------------------------------------------
// Accepted values

TEST(ElectorOptionsValidation, DefaultsAreValid) { EXPECT_NO_THROW(ElectorOptions{}.validate()); }

TEST(ElectorOptionsValidation, BoundaryValuesAreAccepted) {
  EXPECT_NO_THROW(with([](auto& o) { o.ttl = 100ms; }).validate()) << "the smallest ttl, default heartbeat";
  EXPECT_NO_THROW(with([](auto& o) {
                    o.ttl = 1000ms;
                    o.drift_margin = 0ms;
                    o.heartbeat_interval = 999ms;
                  }).validate());
  EXPECT_NO_THROW(with([](auto& o) { o.retry_interval = 1ms; }).validate());
  EXPECT_NO_THROW(with([](auto& o) { o.step_down_hold_off = 0ms; }).validate());
  EXPECT_NO_THROW(with([](auto& o) { o.stop_timeout = 1ms; }).validate());
  EXPECT_NO_THROW(with([](auto& o) { o.key_prefix = std::string(100, 'p'); }).validate());
  EXPECT_NO_THROW(with([](auto& o) { o.instance_id = std::string(256, 'i'); }).validate());
  EXPECT_NO_THROW(with([](auto& o) { o.instance_id = "h\xc3\xa9te-1 (caf\xc3\xa9)"; }).validate())
      << "UTF-8 and spaces are not control characters";
  EXPECT_NO_THROW(with([](auto& o) { o.groups = {"reports", "{billing}", std::string(200, 'g')}; }).validate());
}

TEST(ElectorOptionsValidation, DefaultInstanceIdIsValidAndUnique) {
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    auto id = leasehold::default_instance_id();
    EXPECT_NO_THROW(with([&](auto& o) { o.instance_id = id; }).validate()) << id;
    seen.insert(std::move(id));
  }
  EXPECT_EQ(seen.size(), 50u);
}

// ---------------------------------------------------------------------------
// Timing fields

TEST(ElectorOptionsValidation, TtlTooSmallNamesTtl) {
  for (const auto ttl : {99ms, 1ms, 0ms, -5000ms}) {
    const auto message = options_error(with([&](auto& o) { o.ttl = ttl; }));
    EXPECT_TRUE(contains(message, "ElectorOptions.ttl")) << message;
    EXPECT_TRUE(contains(message, std::to_string(ttl.count()))) << "the message shows the value: " << message;
  }
}

TEST(ElectorOptionsValidation, HeartbeatThatLeavesNoRoomBeforeTheDeadlineNamesHeartbeat) {
  // ttl 1000 ms, drift 10 ms: the renewal must be sent before 990 ms.
  for (const auto heartbeat : {990ms, 991ms, 1000ms, 5000ms}) {
    const auto message = options_error(with([&](auto& o) {
      o.ttl = 1000ms;
      o.drift_margin = 10ms;
      o.heartbeat_interval = heartbeat;
    }));
    EXPECT_TRUE(contains(message, "ElectorOptions.heartbeat_interval")) << message;
    EXPECT_TRUE(contains(message, "990")) << "the message shows ttl - drift_margin: " << message;
  }
  EXPECT_NO_THROW(with([](auto& o) {
                    o.ttl = 1000ms;
                    o.drift_margin = 10ms;
                    o.heartbeat_interval = 989ms;
                  }).validate());
}

TEST(ElectorOptionsValidation, NonPositiveHeartbeatNamesHeartbeat) {
  for (const auto heartbeat : {0ms, -1ms}) {
    const auto message = options_error(with([&](auto& o) { o.heartbeat_interval = heartbeat; }));
    EXPECT_TRUE(contains(message, "ElectorOptions.heartbeat_interval")) << message;
  }
}

TEST(ElectorOptionsValidation, NonPositiveRetryNamesRetry) {
  for (const auto retry : {0ms, -1ms, -1000ms}) {
    const auto message = options_error(with([&](auto& o) { o.retry_interval = retry; }));
    EXPECT_TRUE(contains(message, "ElectorOptions.retry_interval")) << message;
  }
}

TEST(ElectorOptionsValidation, NegativeOrHugeDriftNamesDrift) {
  for (const auto drift : {-1ms, -100ms, 2500ms, 4000ms}) {
    const auto message = options_error(with([&](auto& o) { o.drift_margin = drift; }));
    EXPECT_TRUE(contains(message, "ElectorOptions.drift_margin")) << drift.count() << " ms: " << message;
  }
  EXPECT_NO_THROW(with([](auto& o) { o.drift_margin = 0ms; }).validate());
}

TEST(ElectorOptionsValidation, TheDeadlineMarginIsTheDriftMarginPlusTheClockSkew) {
  EXPECT_EQ(ElectorOptions{}.clock_skew, 0ms) << "off by default";
  EXPECT_EQ(ElectorOptions{}.effective_deadline_margin(), 52ms) << "1% of 5 s + 2 ms, no skew";
  EXPECT_EQ(with([](auto& o) { o.clock_skew = 1000ms; }).effective_deadline_margin(), 1052ms);
  EXPECT_EQ(with([](auto& o) {
              o.drift_margin = 0ms;
              o.clock_skew = 30ms;
            }).effective_deadline_margin(),
            30ms);
}

TEST(ElectorOptionsValidation, NegativeClockSkewNamesClockSkew) {
  for (const auto skew : {-1ms, -1000ms}) {
    const auto message = options_error(with([&](auto& o) { o.clock_skew = skew; }));
    EXPECT_TRUE(contains(message, "ElectorOptions.clock_skew must be >= 0")) << message;
    EXPECT_TRUE(contains(message, std::to_string(skew.count()))) << "the message shows the value: " << message;
  }
  EXPECT_NO_THROW(with([](auto& o) { o.clock_skew = 0ms; }).validate());
}

TEST(ElectorOptionsValidation, DriftPlusSkewOfHalfTheTtlOrMoreNamesClockSkew) {
  // ttl 5000 ms, drift 52 ms (default): the skew may be at most 2447 ms.
  for (const auto skew : {2448ms, 2500ms, 5000ms, std::chrono::milliseconds::max()}) {
    const auto message = options_error(with([&](auto& o) {
      o.clock_skew = skew;
      o.heartbeat_interval = 1000ms;  // so that only the margin is at fault
    }));
    EXPECT_TRUE(contains(message, "ElectorOptions.clock_skew")) << message;
    EXPECT_TRUE(contains(message, "drift_margin + clock_skew must be less than half the ttl")) << message;
    EXPECT_TRUE(contains(message, "52 + " + std::to_string(skew.count()) + " ms")) << message;
  }
  EXPECT_NO_THROW(with([](auto& o) {
    o.clock_skew = 2447ms;
    o.heartbeat_interval = 1000ms;
  }).validate());
  // A bad drift margin on its own is still reported as such.
  EXPECT_TRUE(contains(options_error(with([](auto& o) {
                         o.drift_margin = 2500ms;
                         o.clock_skew = 100ms;
                       })),
                       "ElectorOptions.drift_margin"));
}

TEST(ElectorOptionsValidation, TheHeartbeatAndConfirmBudgetsCountTheSkew) {
  // ttl 1000 ms, drift 10 ms, skew 100 ms: the renewal must be sent before 890 ms.
  auto message = options_error(with([](auto& o) {
    o.ttl = 1000ms;
    o.drift_margin = 10ms;
    o.clock_skew = 100ms;
    o.heartbeat_interval = 890ms;
  }));
  EXPECT_TRUE(contains(message, "ElectorOptions.heartbeat_interval (890 ms)")) << message;
  EXPECT_TRUE(contains(message, "ttl - drift_margin - clock_skew (890 ms)")) << message;
  EXPECT_NO_THROW(with([](auto& o) {
    o.ttl = 1000ms;
    o.drift_margin = 10ms;
    o.clock_skew = 100ms;
    o.heartbeat_interval = 889ms;
  }).validate());
  // ttl 5000, drift 52, skew 1000, heartbeat 1666: a confirmed renewal has 2282 ms.
  message = options_error(with([](auto& o) {
    o.clock_skew = 1000ms;
    o.confirm_replicas = 1;
    o.confirm_timeout = 2282ms;
  }));
  EXPECT_TRUE(contains(message, "ElectorOptions.confirm_timeout (2282 ms)")) << message;
  EXPECT_TRUE(contains(message, "ttl - drift_margin - clock_skew - heartbeat_interval (2282 ms)")) << message;
  EXPECT_NO_THROW(with([](auto& o) {
    o.clock_skew = 1000ms;
    o.confirm_replicas = 1;
    o.confirm_timeout = 2281ms;
  }).validate());
}

TEST(ElectorOptionsValidation, NegativeHoldOffAndNonPositiveStopTimeoutAreNamed) {
  auto message = options_error(with([](auto& o) { o.step_down_hold_off = -1ms; }));
  EXPECT_TRUE(contains(message, "ElectorOptions.step_down_hold_off")) << message;
  // The hold-off defaults to retry_interval, so a bad retry is reported as such first.
  message = options_error(with([](auto& o) { o.retry_interval = -1ms; }));
  EXPECT_TRUE(contains(message, "ElectorOptions.retry_interval")) << message;
  for (const auto timeout : {0ms, -1ms}) {
    message = options_error(with([&](auto& o) { o.stop_timeout = timeout; }));
    EXPECT_TRUE(contains(message, "ElectorOptions.stop_timeout")) << message;
  }
}

TEST(ElectorOptionsValidation, ConfirmModeNamesItsFieldAndTheRenewalBudget) {
  auto message = options_error(with([](auto& o) { o.confirm_replicas = -1; }));
  EXPECT_TRUE(contains(message, "ElectorOptions.confirm_replicas")) << message;
  message = options_error(with([](auto& o) {
    o.confirm_replicas = 2;
    o.confirm_timeout = 0ms;
  }));
  EXPECT_TRUE(contains(message, "ElectorOptions.confirm_timeout must be > 0")) << message;
  // ttl 5000, drift 52, heartbeat 1666: a renewal has 3282 ms to land.
  message = options_error(with([](auto& o) {
    o.confirm_replicas = 1;
    o.confirm_timeout = 3282ms;
  }));
  EXPECT_TRUE(contains(message, "ElectorOptions.confirm_timeout (3282 ms)")) << message;
  EXPECT_TRUE(contains(message, "(3282 ms)")) << message;
  EXPECT_NO_THROW(with([](auto& o) {
    o.confirm_replicas = 1;
    o.confirm_timeout = 3281ms;
  }).validate());
  // Off, the timeout is not looked at.
  EXPECT_NO_THROW(with([](auto& o) { o.confirm_timeout = 0ms; }).validate());
}

// ---------------------------------------------------------------------------
// Strings

TEST(ElectorOptionsValidation, EmptyKeyPrefixNamesKeyPrefix) {
  const auto message = options_error(with([](auto& o) { o.key_prefix.clear(); }));
  EXPECT_TRUE(contains(message, "ElectorOptions.key_prefix")) << message;
}

TEST(ElectorOptionsValidation, KeyPrefixWithControlCharactersOrTooLongNamesKeyPrefix) {
  for (const std::string& prefix : {"leader\n"s, "a\rb:"s, "\x1b[31m:"s, "del\x7f:"s, "nul\0:"s, "tab\t:"s,
                                   std::string(101, 'p')}) {
    const auto message = options_error(with([&](auto& o) { o.key_prefix = prefix; }));
    EXPECT_TRUE(contains(message, "ElectorOptions.key_prefix")) << message;
    EXPECT_TRUE(printable(message)) << "control characters are escaped in the message";
  }
}

TEST(ElectorOptionsValidation, BadInstanceIdNamesInstanceId) {
  for (const std::string& id : {"host\n1"s, "\0"s, "id\0tail"s, "bell\a"s, "x\x7f"s, std::string(257, 'i'),
                               std::string(1 << 20, 'i')}) {
    const auto message = options_error(with([&](auto& o) { o.instance_id = id; }));
    EXPECT_TRUE(contains(message, "ElectorOptions.instance_id")) << message;
    EXPECT_TRUE(printable(message));
    EXPECT_LT(message.size(), 400u) << "a huge id is not copied into the message whole";
  }
}

TEST(ElectorOptionsValidation, BadGroupInOptionsNamesGroupsAndTheGroup) {
  const auto message = options_error(with([](auto& o) { o.groups = {"fine", "jobs\nrm -rf"}; }));
  EXPECT_TRUE(contains(message, "ElectorOptions.groups")) << message;
  EXPECT_TRUE(contains(message, "jobs\\x0arm -rf")) << "the bad name, escaped: " << message;
  EXPECT_TRUE(contains(options_error(with([](auto& o) { o.groups = {""}; })), "ElectorOptions.groups"));
  EXPECT_TRUE(contains(options_error(with([](auto& o) { o.groups = {"x:token"}; })), "ElectorOptions.groups"));
}

// ---------------------------------------------------------------------------
// Group names

TEST(GroupNameValidation, AcceptsOrdinaryNames) {
  for (const std::string& name : {"default"s, "reports"s, "{reports}"s, "a"s, "with space"s, "caf\xc3\xa9"s,
                                 "token"s, "x:tokens"s, ":token:"s, "token:x"s, "x:TOKEN"s, std::string(200, 'g')}) {
    EXPECT_NO_THROW(validate_group_name(name)) << name;
  }
}

TEST(GroupNameValidation, EmptyIsRejected) {
  const auto message = group_error("");
  EXPECT_TRUE(contains(message, "invalid group name")) << message;
  EXPECT_TRUE(contains(message, "empty")) << message;
}

TEST(GroupNameValidation, TooLongIsRejectedWithABoundedMessage) {
  for (const std::size_t size : {201u, 1000u, 1u << 20}) {
    const auto message = group_error(std::string(size, 'g'));
    EXPECT_TRUE(contains(message, "invalid group name")) << message;
    EXPECT_TRUE(contains(message, std::to_string(size))) << "the message shows the length: " << message;
    EXPECT_LT(message.size(), 300u);
  }
}

TEST(GroupNameValidation, ControlCharactersAnywhereAreRejected) {
  for (const std::string& name : {"\nreports"s, "rep\0orts"s, "reports\r"s, "\x01"s, "a\x1f"s, "\x7f"s,
                                 "tab\tname"s, "\x1b[2J"s}) {
    const auto message = group_error(name);
    EXPECT_TRUE(contains(message, "control characters")) << message;
    EXPECT_TRUE(printable(message)) << message;
  }
}

TEST(GroupNameValidation, TheReservedTokenSuffixIsRejected) {
  // "<prefix><group>:token" is the fencing counter of <group>: a group named
  // "x:token" would put its lease on another group's counter key.
  for (const std::string& name : {":token"s, "reports:token"s, "{reports}:token"s}) {
    const auto message = group_error(name);
    EXPECT_TRUE(contains(message, ":token")) << message;
    EXPECT_TRUE(contains(message, "reserved")) << message;
  }
}

TEST(GroupNameValidation, TheSchedulersTickRecordSuffixIsRejected) {
  // "<prefix><group>:ticks" is the scheduler's once-per-tick record.
  for (const std::string& name : {"digest:ticks"s, ":ticks"s}) {
    const auto message = group_error(name);
    EXPECT_TRUE(contains(message, ":ticks")) << message;
    EXPECT_TRUE(contains(message, "reserved")) << message;
  }
  EXPECT_NO_THROW(validate_group_name("ticks"));  // only the suffix is reserved
}

}  // namespace
}  // namespace unit_options_validation_test
