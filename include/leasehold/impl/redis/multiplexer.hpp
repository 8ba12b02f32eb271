#pragma once
// The request side of a Redis connection, without I/O: requests are encoded
// into one output buffer, their replies matched in order (a request may expect
// several), and completed handlers collected into batches that the driver runs
// in one posted turn. Time is passed in.

#include <leasehold/error.hpp>
#include <leasehold/redis/client.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace leasehold::redis::detail {

namespace asio = boost::asio;

// One EVALSHA (or, after NOSCRIPT, EVAL) on its way.
struct ScriptCall {
  EvalHandler handler;
  const Script* script = nullptr;
  const ScriptArguments* arguments = nullptr;
  std::shared_ptr<const ScriptArguments> owned;  // when the caller passed vectors
  bool by_body = false;                          // EVAL: the retry after NOSCRIPT
  bool direct = false;                           // see completes_on_client_executor
};

class Multiplexer {
 public:
  using clock = std::chrono::steady_clock;
  using RequestId = std::uint64_t;

  /// `stats` (commands_sent, round_trip) must outlive the multiplexer.
  Multiplexer(std::chrono::milliseconds command_timeout, ClientStats& stats);

  /// Queues every command of `request` (not empty) for one reply each.
  RequestId exec(const Request& request, ExecHandler handler, bool direct, clock::time_point now);
  /// Queues a script call, encoded straight into the output buffer.
  RequestId eval(ScriptCall call, clock::time_point now);
  /// A PING whose reply only proves the connection alive.
  void health_check(clock::time_point now);
  /// Output with no reply to match (pub/sub commands: their confirmations
  /// arrive as pushes).
  void send_untracked(std::string_view payload, std::size_t commands);

  /// Matches a reply to the oldest request. A reply with nothing pending is a
  /// protocol error. May queue output (the EVAL retry after NOSCRIPT) and
  /// completions.
  Error on_reply(Reply reply, clock::time_point now);

  /// The caller gave up on request `id`: its handler completes on `ex` with
  /// operation_aborted (posted, never inline) and its replies, still
  /// awaited in their place in the reply order, are dropped. Every request
  /// keeps that place until the connection ends, so its reply can always be
  /// told from the next request's; a request not written yet is still sent
  /// (the output buffer is append-only). Returns false when the request
  /// already completed or was detached.
  bool detach(RequestId id, const asio::any_io_executor& ex);

  /// Fails every pending request with `ec` (each posted on `ex`; a detached
  /// one with nobody to tell is dropped) and drops unsent output.
  void fail_all(error_code ec, const asio::any_io_executor& ex);

  bool idle() const noexcept { return pending_.empty(); }
  std::size_t pending() const noexcept { return pending_.size(); }
  /// The deadline of the oldest request; nullopt when idle.
  std::optional<clock::time_point> oldest_deadline() const noexcept;

  bool has_output() const noexcept { return !output_.empty(); }
  /// Moves the output into `out`, an empty buffer that recycle() had.
  void take_output(std::string& out);
  /// Empties a written buffer for the next take_output(); frees it when a
  /// burst made it large.
  static void recycle(std::string& written);

  /// Completions collected since the last run_completions().
  bool has_completions() const noexcept { return !done_.empty(); }
  /// Runs the collected completions in reply order: a handler with no
  /// executor of its own is called directly, the others are dispatched to
  /// theirs from `current`. When a handler throws, the ones after it stay
  /// collected (has_completions() says so) and the exception propagates.
  void run_completions(const asio::any_io_executor& current);

 private:
  struct Pending {
    RequestId id;
    std::size_t remaining;  // replies still to come
    std::vector<Reply> replies;
    ExecHandler handler;  // empty for health checks, script calls and detached requests
    clock::time_point deadline;
    clock::time_point enqueued;  // for the round-trip histogram
    ScriptCall call{};           // a script call: completes with its one reply
    bool direct = false;         // `handler`: see completes_on_client_executor
    bool script = false;         // `call` is in use (its handler may be detached)
    bool detached = false;       // nobody waits: replies are dropped
  };

  // A completed request waiting for run_completions().
  template <typename Handler, typename Result>
  struct Completed {
    Handler handler;
    error_code ec;
    Result result;
    bool direct;  // see completes_on_client_executor
  };
  using Done = std::variant<Completed<EvalHandler, Reply>, Completed<ExecHandler, std::vector<Reply>>>;

  void finish_call(Pending& done, Reply reply, clock::time_point now);
  template <typename D>
  void run_one(D& d, const asio::any_io_executor& current);

  std::chrono::milliseconds command_timeout_;
  ClientStats& stats_;
  std::deque<Pending> pending_;
  std::string output_;
  std::vector<Done> done_;   // completed, waiting for run_completions()
  std::vector<Done> batch_;  // the batch run_completions() is running
  RequestId next_id_ = 1;
};

}  // namespace leasehold::redis::detail
