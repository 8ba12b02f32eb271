#include <leasehold/redis/client.hpp>

#include "../complete.hpp"
#include "stream.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#if LEASEHOLD_HAS_TLS
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#endif

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <optional>
#include <random>
#include <set>
#include <variant>

namespace leasehold::redis::detail {

using leasehold::detail::complete_later;
using leasehold::detail::complete_now;
using namespace asio::experimental::awaitable_operators;
using clock = std::chrono::steady_clock;
constexpr auto nothrow = asio::as_tuple(asio::use_awaitable);
// Output buffers larger than this are freed once written, not reused.
constexpr std::size_t kept_buffer_capacity = 64 * 1024;
// Completion batches beyond this many entries are freed once run.
constexpr std::size_t kept_done_capacity = 1024;

namespace {

Error make_error(errc code, std::string detail = {}) {
  return {make_error_code(code), std::move(detail)};
}

bool cancelled(const asio::cancellation_state& state) {
  return state.cancelled() != asio::cancellation_type::none;
}

}  // namespace

// One EVALSHA (or, after NOSCRIPT, EVAL) on its way.
struct ScriptCall {
  EvalHandler handler;
  const Script* script = nullptr;
  const ScriptArguments* arguments = nullptr;
  std::shared_ptr<const ScriptArguments> owned;  // when the caller passed vectors
  bool by_body = false;                          // EVAL: the retry after NOSCRIPT
  bool direct = false;                           // see completes_on_client_executor
};

class ClientImpl : public std::enable_shared_from_this<ClientImpl> {
 public:
  ClientImpl(asio::any_io_executor ex, RedisOptions options, Role role)
      : ex_(std::move(ex)),
        options_(std::move(options)),
        role_(role),
        write_signal_(ex_),
        watchdog_timer_(ex_),
        backoff_timer_(ex_),
        rng_(std::random_device{}()) {
    options_.validate();
#if LEASEHOLD_HAS_TLS
    if (options_.tls.enabled) tls_context_.emplace(make_tls_context());
#else
    if (options_.tls.enabled) {
      throw std::invalid_argument("rediss:// requested but leasehold was built without TLS support");
    }
#endif
  }

  // ---- control ------------------------------------------------------------

  void start() {
    if (running_) return;
    running_ = true;
    stopped_ = false;
    asio::co_spawn(ex_, run(shared_from_this()), asio::detached);
  }

  void stop() {
    if (stopped_) return;
    stopped_ = true;
    if (stream_) stream_->close();
    write_signal_.cancel();
    watchdog_timer_.cancel();
    backoff_timer_.cancel();
    fail_pending(make_error(errc::stopped));
  }

  // ---- requests -----------------------------------------------------------

  void exec(Request request, ExecHandler handler, bool direct) {
    if (const error_code ec = refusal()) return complete_later(ex_, std::move(handler), ec, std::vector<Reply>{});
    if (request.empty()) {
      return complete_later(ex_, std::move(handler), error_code{}, std::vector<Reply>{});
    }
    const std::uint64_t id = next_id_++;
    watch_cancellation(handler, id);
    const auto now = clock::now();
    track(Pending{id, request.commands(), {}, std::move(handler), now + options_.command_timeout, false, now, {},
                  direct});
    append_output(request.payload(), request.commands());
  }

  void eval(ScriptCall call) {
    if (const error_code ec = refusal()) return complete_later(ex_, std::move(call.handler), ec, Reply{});
    const std::uint64_t id = next_id_++;
    watch_cancellation(call.handler, id);
    const auto now = clock::now();
    // Encoded straight into the output buffer: no Request, no copies.
    call.arguments->encode_call(outbuf_, *call.script, call.by_body);
    ++stats_.commands_sent;
    write_signal_.cancel();
    track(Pending{id, 1, {}, {}, now + options_.command_timeout, false, now, std::move(call)});
  }

  // ---- pub/sub ------------------------------------------------------------

  void subscribe(const std::vector<std::string>& channels) { subscribe("SUBSCRIBE", wanted_channels_, channels); }
  void psubscribe(const std::vector<std::string>& patterns) { subscribe("PSUBSCRIBE", wanted_patterns_, patterns); }

  // SUBSCRIBE (channels) or PSUBSCRIBE (patterns) to what is not wanted yet.
  void subscribe(std::string_view verb, std::set<std::string>& wanted, const std::vector<std::string>& names) {
    std::vector<std::string_view> fresh{verb};
    for (const auto& c : names) {
      if (wanted.insert(c).second) fresh.push_back(c);
    }
    if (fresh.size() > 1 && up_) send_raw(fresh);
  }

  void unsubscribe(const std::vector<std::string>& channels) {
    std::vector<std::string_view> gone{"UNSUBSCRIBE"};
    for (const auto& c : channels) {
      if (wanted_channels_.erase(c) != 0) gone.push_back(c);
    }
    if (gone.size() > 1 && up_) send_raw(gone);
  }

  bool subscribed() const noexcept {
    return up_ && server_subscriptions_ == wanted_channels_.size() + wanted_patterns_.size();
  }

  // ---- state --------------------------------------------------------------

  asio::any_io_executor ex_;
  RedisOptions options_;
  Role role_;
  Error last_error_;
  ClientStats stats_;
  Client::StateHandler state_handler_;
  Client::MessageHandler message_handler_;
  std::vector<const Script*> preloaded_;
  bool up_ = false;

 private:
  struct Pending {
    std::uint64_t id;
    std::size_t expected;
    std::vector<Reply> replies;
    ExecHandler handler;  // empty for internal health checks and script calls
    clock::time_point deadline;
    bool cancelled;
    clock::time_point enqueued;  // for the round-trip histogram
    ScriptCall call{};           // a script call: completes with its one reply
    bool direct = false;         // `handler`: see completes_on_client_executor
  };

  // A completed request waiting for run_done(): the reply of a script call
  // or the replies of a request.
  template <typename Handler, typename Result>
  struct Completed {
    Handler handler;
    error_code ec;
    Result result;
    bool direct;  // see completes_on_client_executor
  };
  using Done = std::variant<Completed<EvalHandler, Reply>, Completed<ExecHandler, std::vector<Reply>>>;

  // Every reply read in one turn of the reader completes in one posted turn,
  // in the order of the replies: a handler that completes on this executor
  // anyway is called there directly, the others are dispatched to theirs.
  void complete(Done done) {
    if (done_.empty()) {
      asio::post(ex_, [self = shared_from_this()] { self->run_done(); });
    }
    done_.push_back(std::move(done));
  }

  void run_done() {
    std::swap(done_, batch_);
    std::size_t next = 0;
    try {
      for (; next < batch_.size(); ++next) {
        std::visit([this](auto& d) { run_one(d); }, batch_[next]);
      }
    } catch (...) {
      // A handler threw: the ones after it still complete, in a later turn.
      for (std::size_t i = next + 1; i < batch_.size(); ++i) complete(std::move(batch_[i]));
      batch_.clear();
      throw;
    }
    batch_.clear();
    if (batch_.capacity() > kept_done_capacity) std::vector<Done>().swap(batch_);
  }

  template <typename D>
  void run_one(D& d) {
    if (d.direct) return std::move(d.handler)(d.ec, std::move(d.result));
    complete_now(ex_, std::move(d.handler), d.ec, std::move(d.result));
  }

  error_code refusal() const {
    if (role_ == Role::subscriber) return make_error_code(errc::invalid_argument);
    if (stopped_) return make_error_code(errc::stopped);
    if (!up_) return make_error_code(errc::not_connected);
    return {};
  }

  template <typename Handler>
  void watch_cancellation(const Handler& handler, std::uint64_t id) {
    auto slot = asio::get_associated_cancellation_slot(handler);
    if (!slot.is_connected()) return;
    // The command may already be on the wire: its outcome is unknown, so
    // the only safe way to cancel is to drop the connection.
    slot.assign([weak = weak_from_this(), id](asio::cancellation_type) {
      if (auto self = weak.lock()) self->cancel_request(id);
    });
  }

  void finish_call(ScriptCall call, Reply reply) {
    error_code ec;
    if (reply.is_error()) {
      ec = make_error_code(classify_server_error(reply.str));
      if (ec == errc::no_script && !call.by_body) {
        // EVAL runs the body and loads it into the script cache again.
        call.by_body = true;
        return eval(std::move(call));
      }
    }
    complete(Completed<EvalHandler, Reply>{std::move(call.handler), ec, std::move(reply), call.direct});
  }

  void track(Pending pending) {
    const bool was_idle = pending_.empty();
    pending_.push_back(std::move(pending));
    // The watchdog sleeps until the idle health check; it must now watch the
    // new command's deadline instead.
    if (was_idle) watchdog_timer_.cancel();
  }

  void send_raw(std::span<const std::string_view> command) {
    std::string payload;
    encode_command(payload, command);
    append_output(payload, 1);
  }

  void append_output(const std::string& payload, std::size_t commands) {
    outbuf_ += payload;
    stats_.commands_sent += commands;
    write_signal_.cancel();
  }

  void cancel_request(std::uint64_t id) {
    auto it = std::find_if(pending_.begin(), pending_.end(),
                           [id](const Pending& p) { return p.id == id; });
    if (it == pending_.end()) return;
    it->cancelled = true;
    abort_connection(make_error(errc::connection_lost, "a pending command was cancelled"));
  }

  void abort_connection(Error why) {
    if (!abort_reason_) abort_reason_ = std::move(why);
    if (stream_) stream_->close();
  }

  void fail_pending(const Error& why) {
    auto pending = std::move(pending_);
    pending_.clear();
    for (auto& p : pending) {
      const error_code ec = p.cancelled ? error_code(asio::error::operation_aborted) : why.code;
      if (p.call.handler) complete_later(ex_, std::move(p.call.handler), ec, Reply{});
      if (p.handler) complete_later(ex_, std::move(p.handler), ec, std::vector<Reply>{});
    }
    outbuf_.clear();
  }

  // ---- connection loop ----------------------------------------------------

  asio::awaitable<void> run(std::shared_ptr<ClientImpl> self) {
    unsigned attempt = 0;
    while (!stopped_) {
      decoder_ = ReplyDecoder{};
      abort_reason_.reset();
      Error error = co_await connect_within_deadline();
      if (!error && !stopped_) {
        served_ = false;
        error = co_await serve();
        // Only a connection that answered something after its handshake
        // resets the backoff: one that fails at once (a server sending
        // garbage after the handshake) must not be retried at full speed.
        if (served_ || !error) attempt = 0;
      }
      const bool was_up = up_;
      up_ = false;
      server_subscriptions_ = 0;
      if (stream_) stream_->close();
      stream_.reset();
      if (stopped_) break;
      if (abort_reason_) error = *abort_reason_;
      last_error_ = error;
      fail_pending(error);
      if (was_up) {
        ++stats_.disconnects;
        if (state_handler_) state_handler_(false, error);
      } else if (state_handler_ && attempt == 0) {
        state_handler_(false, error);  // the first failed attempt in a row is news
      }
      backoff_timer_.expires_after(backoff(attempt++));
      co_await backoff_timer_.async_wait(nothrow);
    }
    fail_pending(make_error(errc::stopped));
    running_ = false;
    (void)self;
  }

  std::chrono::milliseconds backoff(unsigned attempt) {
    // Exponential backoff with "equal jitter": half fixed, half random, so
    // that a fleet restarted together does not reconnect in lockstep.
    const auto cap = options_.reconnect_max.count();
    long long base = options_.reconnect_min.count();
    for (unsigned i = 0; i < attempt && base < cap; ++i) base *= 2;
    base = std::min<long long>(base, cap);
    std::uniform_int_distribution<long long> jitter(0, base / 2);
    return std::chrono::milliseconds(base - base / 2 + jitter(rng_));
  }

  asio::awaitable<Error> connect_within_deadline() {
    asio::steady_timer deadline(ex_, options_.connect_timeout);
    auto result = co_await (connect() || deadline.async_wait(nothrow));
    if (result.index() == 1) {
      if (stream_) stream_->close();
      co_return make_error(errc::timeout,
                           fmt::format("connecting to {} took longer than {} ms",
                                       options_.to_string(), options_.connect_timeout.count()));
    }
    co_return std::get<0>(std::move(result));
  }

  asio::awaitable<Error> connect() {
    if (Error e = co_await open_stream()) co_return e;
    if (Error e = co_await handshake()) co_return e;
    up_ = true;
    ++stats_.connects;
    last_error_ = {};
    last_activity_ = clock::now();
    for (auto [verb, wanted] : {std::pair{"SUBSCRIBE", &wanted_channels_}, std::pair{"PSUBSCRIBE", &wanted_patterns_}}) {
      if (role_ != Role::subscriber || wanted->empty()) continue;
      std::vector<std::string_view> argv{verb};
      argv.insert(argv.end(), wanted->begin(), wanted->end());
      send_raw(argv);
    }
    if (state_handler_) state_handler_(true, {});
    co_return Error{};
  }

  asio::awaitable<Error> open_stream() {
    const std::string where = options_.to_string();
    if (!options_.unix_socket.empty()) {
      Stream::unix_socket socket(ex_);
      auto [ec] = co_await socket.async_connect(
          asio::local::stream_protocol::endpoint(options_.unix_socket), nothrow);
      stream_.emplace(std::move(socket));
      if (ec) co_return make_error(errc::connection_lost, fmt::format("connect to {}: {}", where, ec.message()));
      co_return Error{};
    }
    asio::ip::tcp::resolver resolver(ex_);
    auto [rec, endpoints] =
        co_await resolver.async_resolve(options_.host, std::to_string(options_.port), nothrow);
    if (rec) {
      co_return make_error(errc::resolve_failed,
                           fmt::format("cannot resolve host \"{}\": {}", options_.host, rec.message()));
    }
    Stream::tcp_socket socket(ex_);
    auto [cec, endpoint] = co_await asio::async_connect(socket, endpoints, nothrow);
    if (cec) {
      co_return make_error(errc::connection_lost,
                           fmt::format("connect to {}: {}", where, cec.message()));
    }
    socket.set_option(asio::ip::tcp::no_delay(true));
#if LEASEHOLD_HAS_TLS
    if (tls_context_) {
      stream_.emplace(Stream::tls_stream(std::move(socket), *tls_context_));
      auto& tls = stream_->get<Stream::tls_stream>();
      const std::string& name =
          options_.tls.server_name.empty() ? options_.host : options_.tls.server_name;
      // SNI; harmless for IP addresses.
      SSL_set_tlsext_host_name(tls.native_handle(), name.c_str());
      if (options_.tls.verify_peer) tls.set_verify_callback(asio::ssl::host_name_verification(name));
      auto [hec] = co_await tls.async_handshake(asio::ssl::stream_base::client, nothrow);
      if (hec) {
        co_return make_error(errc::tls_failed,
                             fmt::format("TLS handshake with {}: {}", where, hec.message()));
      }
      co_return Error{};
    }
#endif
    stream_.emplace(std::move(socket));
    co_return Error{};
  }

  // AUTH, SELECT, CLIENT SETNAME and SCRIPT LOAD, pipelined in one write.
  asio::awaitable<Error> handshake() {
    enum class Step { auth, select, setname, script };
    std::vector<Step> steps;
    Request request;
    if (!options_.password.empty()) {
      if (options_.username.empty()) {
        request.push({"AUTH", options_.password});
      } else {
        request.push({"AUTH", options_.username, options_.password});
      }
      steps.push_back(Step::auth);
    }
    const std::string db = std::to_string(options_.database);
    if (options_.database != 0) {
      request.push({"SELECT", db});
      steps.push_back(Step::select);
    }
    if (!options_.client_name.empty()) {
      request.push({"CLIENT", "SETNAME", options_.client_name});
      steps.push_back(Step::setname);
    }
    for (const Script* s : preloaded_) {
      request.push({"SCRIPT", "LOAD", s->body()});
      steps.push_back(Step::script);
    }
    if (request.empty()) co_return Error{};

    auto [wec, written] = co_await stream_->async_write(asio::buffer(request.payload()), nothrow);
    if (wec) co_return make_error(errc::connection_lost, fmt::format("handshake write: {}", wec.message()));
    std::vector<Reply> replies;
    if (Error e = co_await read_replies(steps.size(), replies)) co_return e;

    for (std::size_t i = 0; i < steps.size(); ++i) {
      const Reply& r = replies[i];
      if (!r.is_error()) continue;
      switch (steps[i]) {
        case Step::auth:
          co_return make_error(errc::auth_failed,
                               fmt::format("user \"{}\": {}",
                                           options_.username.empty() ? "default" : options_.username,
                                           r.str));
        case Step::select:
          co_return make_error(errc::handshake_failed, fmt::format("SELECT {}: {}", db, r.str));
        case Step::setname:
          co_return make_error(errc::handshake_failed, fmt::format("CLIENT SETNAME: {}", r.str));
        case Step::script:
          break;  // not fatal: EVALSHA falls back to EVAL, and reports any real error then
      }
    }
    co_return Error{};
  }

  asio::awaitable<Error> read_replies(std::size_t count, std::vector<Reply>& out) {
    std::array<char, 4096> buffer;
    while (out.size() < count) {
      Error error;
      if (auto reply = decoder_.next(error)) {
        out.push_back(std::move(*reply));
        continue;
      }
      if (error) co_return error;
      auto [ec, n] = co_await stream_->async_read_some(asio::buffer(buffer), nothrow);
      if (ec) co_return io_error(ec);
      if (Error e = decoder_.feed(buffer.data(), n)) co_return e;
    }
    co_return Error{};
  }

  Error io_error(const error_code& ec) const {
    if (ec == asio::error::eof) return make_error(errc::connection_lost, "server closed the connection");
    return make_error(errc::connection_lost, ec.message());
  }

  asio::awaitable<Error> serve() {
    auto result = co_await (reader() || writer() || watchdog());
    co_return std::visit([](Error e) { return e; }, std::move(result));
  }

  Error finish(Error e) {
    if (stream_) stream_->close();
    return e;
  }

  asio::awaitable<Error> reader() {
    std::array<char, 16 * 1024> buffer;
    for (;;) {
      // First what is already buffered: bytes that arrived with the last
      // handshake reply are served now, not when the next bytes come.
      for (;;) {
        Error error;
        auto reply = decoder_.next(error);
        if (error) {
          ++stats_.protocol_errors;
          co_return finish(std::move(error));
        }
        if (!reply) break;
        if (Error e = dispatch(std::move(*reply))) {
          ++stats_.protocol_errors;
          co_return finish(std::move(e));
        }
      }
      auto [ec, n] = co_await stream_->async_read_some(asio::buffer(buffer), nothrow);
      if (ec) co_return finish(io_error(ec));
      last_activity_ = last_read_ = clock::now();
      ping_sent_.reset();
      if (Error e = decoder_.feed(buffer.data(), n)) {
        ++stats_.protocol_errors;
        co_return finish(std::move(e));
      }
    }
  }

  Error dispatch(Reply reply) {
    if (role_ == Role::subscriber) return on_push(reply);
    if (pending_.empty()) {
      return make_error(errc::protocol_error,
                        fmt::format("reply with no pending command: {}", reply.debug_string()));
    }
    Pending& front = pending_.front();
    if (!reply.is_error()) note_reply();
    if (front.call.script != nullptr) {
      ScriptCall call = std::move(front.call);
      stats_.round_trip.record(clock::now() - front.enqueued);
      pending_.pop_front();
      finish_call(std::move(call), std::move(reply));
      return {};
    }
    front.replies.push_back(std::move(reply));
    if (front.replies.size() == front.expected) {
      Pending done = std::move(front);
      pending_.pop_front();
      stats_.round_trip.record(clock::now() - done.enqueued);
      if (done.handler) {
        complete(Completed<ExecHandler, std::vector<Reply>>{std::move(done.handler), error_code{},
                                                            std::move(done.replies), done.direct});
      }
    }
    return {};
  }

  Error on_push(const Reply& reply) {
    if (reply.is_error()) {
      // For example NOPERM on SUBSCRIBE: keep the connection, report the cause.
      last_error_ = make_error(classify_server_error(reply.str), reply.str);
      if (error_reply_handler_) error_reply_handler_(last_error_);
      return {};
    }
    note_reply();
    if (!reply.is_array() || reply.elements.empty() || !reply.elements[0].is_string()) {
      return make_error(errc::protocol_error,
                        fmt::format("unexpected pub/sub reply: {}", reply.debug_string()));
    }
    const std::string& kind = reply.elements[0].str;
    const auto arg = [&](std::size_t i) -> std::string_view {
      return i < reply.elements.size() ? std::string_view(reply.elements[i].str) : std::string_view{};
    };
    if (kind == "message" && reply.elements.size() == 3) {
      if (message_handler_) message_handler_(arg(1), arg(2));
    } else if (kind == "pmessage" && reply.elements.size() == 4) {
      if (message_handler_) message_handler_(arg(2), arg(3));  // [pmessage, pattern, channel, payload]
    } else if (kind == "subscribe" || kind == "unsubscribe" || kind == "psubscribe" || kind == "punsubscribe") {
      // The server counts this connection's subscriptions in every reply:
      // enough to tell when all wanted channels are confirmed, without a
      // second set of names.
      if (reply.elements.size() == 3 && reply.elements[2].is_integer()) {
        server_subscriptions_ = static_cast<std::size_t>(std::max<std::int64_t>(0, reply.elements[2].integer));
      }
      const auto& wanted = kind == "subscribe" ? wanted_channels_ : wanted_patterns_;
      const bool confirms = kind == "subscribe" || kind == "psubscribe";
      if (confirms && subscribed_handler_ && wanted.count(std::string(arg(1))) != 0) subscribed_handler_(arg(1));
    }
    // "pong" needs nothing beyond the activity it proves.
    return {};
  }

  asio::awaitable<Error> writer() {
    for (;;) {
      if (outbuf_.empty()) {
        write_signal_.expires_at(clock::time_point::max());
        co_await write_signal_.async_wait(nothrow);
        if (cancelled(co_await asio::this_coro::cancellation_state)) co_return Error{};
        if (!stream_ || !stream_->is_open()) co_return make_error(errc::connection_lost);
        continue;
      }
      writing_.swap(outbuf_);
      outbuf_.clear();
      write_started_ = clock::now();
      auto [ec, n] = co_await stream_->async_write(asio::buffer(writing_), nothrow);
      writing_.clear();
      // A burst (thousands of renewals at once) must not pin its buffer.
      if (writing_.capacity() > kept_buffer_capacity) std::string().swap(writing_);
      write_started_.reset();
      if (ec) co_return finish(io_error(ec));
      last_activity_ = clock::now();
    }
  }

  asio::awaitable<Error> watchdog() {
    const auto timeout = options_.command_timeout;
    const auto health = options_.health_check_interval;
    for (;;) {
      const auto now = clock::now();
      if (!pending_.empty() && reply_due() <= now) {
        ++stats_.timeouts;
        co_return finish(make_error(errc::timeout, fmt::format("no reply from {} within {} ms",
                                                               options_.to_string(), timeout.count())));
      }
      if (write_started_ && *write_started_ + timeout <= now) {
        ++stats_.timeouts;
        co_return finish(make_error(errc::timeout, fmt::format("write to {} blocked for {} ms",
                                                               options_.to_string(), timeout.count())));
      }
      if (ping_sent_ && *ping_sent_ + timeout <= now) {
        ++stats_.timeouts;
        co_return finish(make_error(errc::timeout, fmt::format("{} did not answer a health check within {} ms",
                                                               options_.to_string(), timeout.count())));
      }
      auto wake = clock::time_point::max();
      if (health.count() > 0 && pending_.empty() && !ping_sent_) {
        if (now - last_activity_ >= health) {
          send_health_check(now);
          continue;
        }
        wake = last_activity_ + health;
      }
      if (!pending_.empty()) wake = std::min(wake, reply_due());
      if (write_started_) wake = std::min(wake, *write_started_ + timeout);
      if (ping_sent_) wake = std::min(wake, *ping_sent_ + timeout);
      watchdog_timer_.expires_at(wake);
      co_await watchdog_timer_.async_wait(nothrow);
      if (cancelled(co_await asio::this_coro::cancellation_state)) co_return Error{};
      if (!stream_ || !stream_->is_open()) co_return make_error(errc::connection_lost);
    }
  }

  // The oldest pending command fails once the connection has stayed silent
  // for command_timeout since it was sent: a burst of thousands of commands
  // that the server is steadily answering is not a dead connection.
  clock::time_point reply_due() const {
    return std::max(pending_.front().deadline, last_read_ + options_.command_timeout);
  }

  void send_health_check(clock::time_point now) {
    if (role_ == Role::subscriber) {
      const std::array<std::string_view, 1> ping{"PING"};
      send_raw(ping);
      ping_sent_ = now;
    } else {
      Request ping{"PING"};
      pending_.push_back(Pending{next_id_++, 1, {}, {}, now + options_.command_timeout, false, now});
      append_output(ping.payload(), 1);
    }
  }

#if LEASEHOLD_HAS_TLS
  asio::ssl::context make_tls_context() const {
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    ctx.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                    asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                    asio::ssl::context::no_tlsv1_1);
    const auto& tls = options_.tls;
    error_code ec;
    if (!tls.ca_file.empty()) {
      ctx.load_verify_file(tls.ca_file, ec);
      if (ec) throw std::invalid_argument(fmt::format("RedisOptions.tls.ca_file \"{}\": {}", tls.ca_file, ec.message()));
    } else {
      ctx.set_default_verify_paths(ec);
    }
    if (!tls.cert_file.empty()) {
      ctx.use_certificate_chain_file(tls.cert_file, ec);
      if (ec) throw std::invalid_argument(fmt::format("RedisOptions.tls.cert_file \"{}\": {}", tls.cert_file, ec.message()));
      ctx.use_private_key_file(tls.key_file, asio::ssl::context::pem, ec);
      if (ec) throw std::invalid_argument(fmt::format("RedisOptions.tls.key_file \"{}\": {}", tls.key_file, ec.message()));
    }
    ctx.set_verify_mode(tls.verify_peer ? asio::ssl::verify_peer : asio::ssl::verify_none);
    return ctx;
  }
  std::optional<asio::ssl::context> tls_context_;
#endif

 public:
  std::function<void(std::string_view)> subscribed_handler_;
  Client::ErrorReplyHandler error_reply_handler_;
  // Nanoseconds since the steady_clock epoch; 0: no reply yet. Atomic because
  // health probes read it from any thread.
  std::atomic<std::int64_t> last_reply_ns_{0};

  void note_reply() noexcept {
    served_ = true;
    last_reply_ns_.store(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count(),
                         std::memory_order_relaxed);
  }

 private:
  std::optional<Stream> stream_;
  ReplyDecoder decoder_;
  std::deque<Pending> pending_;
  std::vector<Done> done_;   // completed, waiting for the posted run_done()
  std::vector<Done> batch_;  // the batch run_done() is running
  std::string outbuf_;
  std::string writing_;
  std::optional<clock::time_point> write_started_;
  std::optional<clock::time_point> ping_sent_;
  clock::time_point last_activity_{};
  clock::time_point last_read_{};
  asio::steady_timer write_signal_;
  asio::steady_timer watchdog_timer_;
  asio::steady_timer backoff_timer_;
  std::optional<Error> abort_reason_;
  std::set<std::string> wanted_channels_;
  std::set<std::string> wanted_patterns_;
  std::size_t server_subscriptions_ = 0;  // as the server last counted them
  bool served_ = false;                   // the current connection answered after its handshake
  std::mt19937_64 rng_;
  std::uint64_t next_id_ = 1;
  bool running_ = false;
  bool stopped_ = true;
};

}  // namespace leasehold::redis::detail

namespace leasehold::redis {

Client::Client(executor_type executor, RedisOptions options, Role role)
    : impl_(std::make_shared<detail::ClientImpl>(std::move(executor), std::move(options), role)) {}

Client::~Client() {
  impl_->state_handler_ = nullptr;
  impl_->message_handler_ = nullptr;
  impl_->subscribed_handler_ = nullptr;
  impl_->error_reply_handler_ = nullptr;
  impl_->stop();
}

Client::executor_type Client::get_executor() const noexcept { return impl_->ex_; }
void Client::start() { impl_->start(); }
void Client::stop() { impl_->stop(); }
bool Client::connected() const noexcept { return impl_->up_; }
const Error& Client::last_error() const noexcept { return impl_->last_error_; }
const ClientStats& Client::stats() const noexcept { return impl_->stats_; }
const RedisOptions& Client::options() const noexcept { return impl_->options_; }
void Client::on_state(StateHandler handler) { impl_->state_handler_ = std::move(handler); }
void Client::on_message(MessageHandler handler) { impl_->message_handler_ = std::move(handler); }
void Client::on_subscribed(SubscribedHandler handler) { impl_->subscribed_handler_ = std::move(handler); }
void Client::on_error_reply(ErrorReplyHandler handler) { impl_->error_reply_handler_ = std::move(handler); }

std::optional<std::chrono::steady_clock::time_point> Client::last_reply_at() const noexcept {
  const std::int64_t ns = impl_->last_reply_ns_.load(std::memory_order_relaxed);
  if (ns == 0) return std::nullopt;
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::nanoseconds(ns)));
}
void Client::preload(const Script& script) { impl_->preloaded_.push_back(&script); }
void Client::subscribe(const std::vector<std::string>& channels) { impl_->subscribe(channels); }
void Client::psubscribe(const std::vector<std::string>& patterns) { impl_->psubscribe(patterns); }
void Client::unsubscribe(const std::vector<std::string>& channels) { impl_->unsubscribe(channels); }
bool Client::subscribed() const noexcept { return impl_->subscribed(); }

void Client::start_exec(Request request, ExecHandler handler, bool direct) {
  impl_->exec(std::move(request), std::move(handler), direct);
}

void Client::start_eval(const Script& script, std::vector<std::string> keys,
                        std::vector<std::string> args, EvalHandler handler, bool direct) {
  const std::vector<std::string_view> key_views(keys.begin(), keys.end());
  const std::vector<std::string_view> arg_views(args.begin(), args.end());
  auto owned = std::make_shared<const ScriptArguments>(key_views, arg_views);
  const ScriptArguments* arguments = owned.get();
  impl_->eval(detail::ScriptCall{std::move(handler), &script, arguments, std::move(owned), false, direct});
}

void Client::start_eval(const Script& script, const ScriptArguments& arguments, EvalHandler handler,
                        bool direct) {
  impl_->eval(detail::ScriptCall{std::move(handler), &script, &arguments, nullptr, false, direct});
}

}  // namespace leasehold::redis
