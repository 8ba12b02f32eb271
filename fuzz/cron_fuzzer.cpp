// CronExpression::parse on arbitrary text. It must either parse or throw
// CronError (a std::invalid_argument) with a printable message; an
// expression it accepts must fire: next_after() returns a whole minute
// strictly later than its argument, and asking again from just before that
// minute finds the same minute.

#include <leasehold/cron.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace {

using std::chrono::system_clock;
using namespace std::chrono_literals;

[[noreturn]] void fail(const char* what, std::string_view text, std::string_view detail = {}) {
  std::fprintf(stderr, "cron_fuzzer: %s\n  expression: \"%.*s\"\n  detail: %.*s\n", what,
               static_cast<int>(text.size()), text.data(), static_cast<int>(detail.size()), detail.data());
  std::abort();
}

bool printable(std::string_view text) {
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 512) return 0;  // a cron line is short; long inputs only slow the search down
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<leasehold::CronExpression> cron;
  try {
    cron = leasehold::CronExpression::parse(text);
  } catch (const leasehold::CronError& e) {
    if (!printable(e.what())) fail("control characters in the error message", text, e.what());
    return 0;
  } catch (const std::exception& e) {
    fail("threw something other than CronError", text, e.what());
  }
  if (cron->text() != text) fail("text() is not the expression as given", text);

  // A few instants around interesting dates (a leap day, a year end, now-ish).
  constexpr std::int64_t starts[] = {951'782'400, 1'704'067'199, 1'767'225'600, 4'107'542'400};
  for (const std::int64_t s : starts) {
    const system_clock::time_point t{std::chrono::seconds(s + (size % 60))};
    system_clock::time_point next;
    try {
      next = cron->next_after(t, leasehold::TimeZone::utc);
    } catch (const std::exception& e) {
      fail("an accepted expression found no next time", text, e.what());
    }
    if (next <= t) fail("next_after is not strictly later", text);
    if (next.time_since_epoch() % 1min != 0s) fail("next_after is not a whole minute", text);
    if (cron->next_after(next - 1min, leasehold::TimeZone::utc) != next) {
      fail("next_after(next - 1 min) is not next", text);
    }
  }
  return 0;
}
