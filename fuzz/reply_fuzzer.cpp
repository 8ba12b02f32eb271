// Server bytes -> RESP decoder -> replies to the lease commands -> the lease
// state machine, through the same reply parsing as the elector
// (impl/lease/lease_replies.hpp), interleaved with timer ticks, connection loss,
// release notices, step-down and stop.
//
// Input: a sequence of records, each an op byte and its operands:
//   0 feed     <n> <n bytes>  server bytes; each decoded reply answers the
//                             oldest unanswered command (pipelining)
//   1 advance  <lo> <hi>      the clock moves (lo + 256 hi) ms, modulo 3 ttl;
//                             the machine's timer fires if due
//   2 wake                    the clock jumps to the requested wake-up
//   3 drop / 4 time out       the connection is lost (plainly / by a timeout)
//   5 connect
//   6 notice   <r>            a release notice from nobody named, this
//                             instance or another one (r modulo 3)
//   7 notices on, 8 notices off, 9 step_down, 10 stop, 11 start
// The first byte picks the timing preset. Op bytes are taken modulo 12.
//
// Checked after every input: no leadership begins except on an acquire reply
// that is an array {1, <this id>, <integer>, <integer>} answering the acquire
// in flight; while leading, the deadline is exactly the send instant of the
// last confirming command + ttl - drift, and lies in the future; elected and
// revoked flags match the transitions; no crash, leak or UB (ASan, UBSan).

#include <leasehold/impl/lease/lease_machine.hpp>
#include <leasehold/redis/codec.hpp>
#include <leasehold/impl/protocol/reply_decoder.hpp>
#include <leasehold/redis/reply.hpp>

#include <leasehold/impl/lease/lease_replies.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <optional>
#include <string_view>

namespace {

using namespace std::chrono_literals;
using leasehold::detail::AcquireReply;
using leasehold::detail::Command;
using leasehold::detail::Failure;
using leasehold::detail::LeaseMachine;
using leasehold::detail::LeaseTiming;
using leasehold::detail::Output;
using leasehold::detail::TimePoint;
using leasehold::redis::Reply;
using leasehold::redis::detail::ReplyDecoder;

constexpr std::string_view kId = "me";

constexpr std::array<LeaseTiming, 3> kPresets{{
    {1000ms, 333ms, 200ms, 12ms, 200ms},
    {100ms, 33ms, 50ms, 3ms, 0ms},
    {5000ms, 1666ms, 1000ms, 52ms, 1000ms},
}};

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "reply_fuzzer: invariant broken: %s\n", what);
  std::abort();
}

void require(bool ok, const char* what) {
  if (!ok) fail(what);
}

// The oracle's own reading of a grant, independent of lease_replies.cpp.
bool grants_us(const Reply& r) {
  return r.is_array() && r.elements.size() == 4 && r.elements[0].is_integer() && r.elements[0].integer == 1 &&
         r.elements[1].is_string() && r.elements[1].str == kId && r.elements[2].is_integer() &&
         r.elements[3].is_integer();
}

class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  std::uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::string_view bytes(std::size_t n) {
    n = std::min(n, size_ - pos_);
    const std::string_view out(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return out;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

class Harness {
 public:
  explicit Harness(const LeaseTiming& timing) : timing_(timing), machine_(timing_, kId) {}

  void run(Input& in) {
    step([&] { return machine_.start(now_); });
    for (int ops = 0; ops < 4096 && !in.empty(); ++ops) {
      switch (in.byte() % 13) {
        case 0: feed(in.bytes(in.byte())); break;
        case 1: {
          const auto lo = in.byte();
          const auto ms = std::chrono::milliseconds(lo + 256 * in.byte());
          now_ += ms % (3 * timing_.ttl);
          if (wake_ && now_ >= *wake_) step([&] { return machine_.on_timer(now_); });
          break;
        }
        case 2:
          if (wake_) {
            now_ = std::max(now_, *wake_);
            step([&] { return machine_.on_timer(now_); });
          }
          break;
        case 3: disconnect(false); break;
        case 4: disconnect(true); break;
        case 5:
          if (!connected_) {
            connected_ = true;
            decoder_ = leasehold::redis::detail::ReplyDecoder{};
            step([&] { return machine_.on_connected(now_); });
          }
          break;
        case 6: {
          // Who the notice says released the lease: nobody named, this
          // instance (an operator acting in its name), or another one.
          constexpr std::array<std::string_view, 3> releasers{"", kId, "other"};
          const std::string_view releaser = releasers[in.byte() % releasers.size()];
          step([&] { return machine_.on_release_notice(now_, releaser); });
          break;
        }
        case 7: step([&] { return machine_.on_notices_available(now_, true); }); break;
        case 8: step([&] { return machine_.on_notices_available(now_, false); }); break;
        case 9: step([&] { return machine_.step_down(now_); }); break;
        case 10: step([&] { return machine_.stop(now_); }); break;
        case 11:
          step([&] { return machine_.start(now_); });
          if (connected_) step([&] { return machine_.on_connected(now_); });
          break;
        case 12: disconnect(false, /*switching=*/true); break;
      }
    }
  }

 private:
  struct Sent {
    Command command;
    std::uint64_t seq;
    TimePoint at;
  };

  // Runs one machine input and checks every invariant on its output.
  // `granted`: the input is a well-formed grant for the acquire in flight,
  // sent at `sent_at`. `renewed`: a confirmed renewal of the current term.
  void step(const std::function<Output()>& input, bool granted = false, bool renewed = false,
            TimePoint sent_at = {}) {
    const bool was_leader = machine_.is_leader();
    const Output out = input();
    const bool is_leader = machine_.is_leader();

    if (!was_leader && is_leader) {
      require(granted, "leadership without a valid acquire reply for the acquire in flight");
      confirmed_ = sent_at;
    }
    if (was_leader && is_leader && renewed) confirmed_ = sent_at;
    require(out.elected == (!was_leader && is_leader), "elected flag does not match the transition");
    require(out.revoked.has_value() == (was_leader && !is_leader), "revoked flag does not match the transition");
    if (is_leader) {
      const auto deadline = machine_.deadline();
      require(deadline.has_value(), "leader without a deadline");
      require(*deadline == confirmed_ + timing_.ttl - timing_.deadline_margin,
              "deadline not measured from the confirming command's send instant");
      require(now_ < *deadline, "leader at or past its deadline");
    } else {
      require(!machine_.deadline().has_value(), "a deadline while not leader");
    }

    wake_ = out.wake;
    if (out.send != Command::none) {
      require(machine_.in_flight() == out.send, "sent command is not the one in flight");
      in_flight_seq_ = out.seq;
      if (connected_) {
        wire_.push_back(Sent{out.send, out.seq, now_});
      } else {
        // The elector's client fails a command at once when not connected.
        const auto seq = out.seq;
        step([&] { return machine_.on_failure(now_, seq, Failure::error); });
      }
    }
  }

  void feed(std::string_view bytes) {
    if (!connected_) return;
    leasehold::Error error = decoder_.feed(bytes.data(), bytes.size());
    while (!error && connected_) {
      auto reply = decoder_.next(error);
      if (!reply) break;
      answer(*reply);
    }
    if (error && connected_) disconnect(false);  // invalid RESP: the client drops the connection
  }

  // One reply for the oldest command on the wire, handled as the elector does.
  void answer(const Reply& r) {
    if (wire_.empty()) return disconnect(false);  // a reply nobody asked for: protocol error
    const Sent sent = wire_.front();
    wire_.pop_front();
    const bool current = sent.seq == in_flight_seq_ && machine_.in_flight() == sent.command;
    const auto seq = sent.seq;

    if (r.is_error()) return step([&] { return machine_.on_failure(now_, seq, Failure::error); });
    switch (sent.command) {
      case Command::acquire: {
        const auto parsed = leasehold::detail::parse_acquire_reply(r, kId);
        if (!parsed) return step([&] { return machine_.on_failure(now_, seq, Failure::error); });
        const bool granted = current && grants_us(r);
        return step([&] { return machine_.on_acquire_reply(now_, seq, *parsed); }, granted, false, sent.at);
      }
      case Command::renew: {
        const auto renewed = leasehold::detail::parse_renew_reply(r);
        if (!renewed) return step([&] { return machine_.on_failure(now_, seq, Failure::error); });
        const bool confirms = current && renewed->renewed;
        return step([&] { return machine_.on_renew_reply(now_, seq, *renewed); }, false, confirms, sent.at);
      }
      case Command::release:
        if (!leasehold::detail::is_release_reply(r)) {
          return step([&] { return machine_.on_failure(now_, seq, Failure::error); });
        }
        return step([&] { return machine_.on_release_reply(now_, seq); });
      case Command::none: fail("a command none on the wire");
    }
  }

  // As the elector: the machine hears of the loss first; the failures of the
  // commands that were pending arrive afterwards (and are stale by then).
  // `switching`: a planned move to a new master (Sentinel's +switch-master).
  void disconnect(bool timed_out, bool switching = false) {
    if (!connected_) return;
    connected_ = false;
    step([&] { return switching ? machine_.on_switching(now_) : machine_.on_disconnected(now_, timed_out); });
    const auto pending = std::move(wire_);
    wire_.clear();
    for (const Sent& s : pending) {
      step([&] { return machine_.on_failure(now_, s.seq, timed_out ? Failure::timeout : Failure::error); });
    }
  }

  LeaseTiming timing_;
  LeaseMachine machine_;
  leasehold::redis::detail::ReplyDecoder decoder_;
  TimePoint now_{std::chrono::hours(1)};
  std::optional<TimePoint> wake_;
  bool connected_ = false;
  std::deque<Sent> wire_;
  std::uint64_t in_flight_seq_ = 0;
  TimePoint confirmed_{};
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  Harness harness(kPresets[in.byte() % kPresets.size()]);
  harness.run(in);
  return 0;
}
