#include <leasehold/impl/redis/multiplexer.hpp>

#include <leasehold/impl/base/complete.hpp>

#include <leasehold/redis/script_arguments.hpp>

#include <boost/asio/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace leasehold::redis::detail {

using leasehold::detail::complete_later;
using leasehold::detail::complete_now;

namespace {

// Output buffers larger than this are freed once written, not reused.
constexpr std::size_t kept_buffer_capacity = 64 * 1024;
// Completion batches beyond this many entries are freed once run.
constexpr std::size_t kept_done_capacity = 1024;

}  // namespace

Multiplexer::Multiplexer(std::chrono::milliseconds command_timeout, ClientStats& stats)
    : command_timeout_(command_timeout), stats_(stats) {}

Multiplexer::RequestId Multiplexer::exec(const Request& request, ExecHandler handler, bool direct,
                                         clock::time_point now) {
  const RequestId id = next_id_++;
  pending_.push_back(Pending{id, request.commands(), {}, std::move(handler), now + command_timeout_, now, {},
                             direct});
  output_ += request.payload();
  stats_.commands_sent += request.commands();
  return id;
}

Multiplexer::RequestId Multiplexer::eval(ScriptCall call, clock::time_point now) {
  const RequestId id = next_id_++;
  // Encoded straight into the output buffer: no Request, no copies.
  call.arguments->encode_call(output_, *call.script, call.by_body);
  ++stats_.commands_sent;
  pending_.push_back(Pending{id, 1, {}, {}, now + command_timeout_, now, std::move(call), false, true});
  return id;
}

void Multiplexer::health_check(clock::time_point now) {
  const Request ping{"PING"};
  pending_.push_back(Pending{next_id_++, 1, {}, {}, now + command_timeout_, now});
  output_ += ping.payload();
  ++stats_.commands_sent;
}

void Multiplexer::send_untracked(std::string_view payload, std::size_t commands) {
  output_ += payload;
  stats_.commands_sent += commands;
}

Error Multiplexer::on_reply(Reply reply, clock::time_point now) {
  if (pending_.empty()) {
    return {make_error_code(errc::protocol_error),
            fmt::format("reply with no pending command: {}", reply.debug_string())};
  }
  Pending& front = pending_.front();
  if (front.script) {
    Pending done = std::move(front);
    pending_.pop_front();
    finish_call(done, std::move(reply), now);
    return {};
  }
  if (!front.detached) front.replies.push_back(std::move(reply));
  if (--front.remaining != 0) return {};
  Pending done = std::move(front);
  pending_.pop_front();
  if (done.detached) return {};
  stats_.round_trip.record(now - done.enqueued);
  if (done.handler) {
    done_.push_back(Completed<ExecHandler, std::vector<Reply>>{std::move(done.handler), error_code{},
                                                               std::move(done.replies), done.direct});
  }
  return {};
}

void Multiplexer::finish_call(Pending& done, Reply reply, clock::time_point now) {
  if (done.detached) return;  // not even retried after NOSCRIPT: nobody waits
  stats_.round_trip.record(now - done.enqueued);
  ScriptCall& call = done.call;
  error_code ec;
  if (reply.is_error()) {
    ec = make_error_code(classify_server_error(reply.str));
    if (ec == errc::no_script && !call.by_body) {
      // EVAL runs the body and loads it into the script cache again.
      call.by_body = true;
      eval(std::move(call), now);
      return;
    }
  }
  done_.push_back(Completed<EvalHandler, Reply>{std::move(call.handler), ec, std::move(reply), call.direct});
}

bool Multiplexer::detach(RequestId id, const asio::any_io_executor& ex) {
  auto it = std::find_if(pending_.begin(), pending_.end(), [id](const Pending& p) { return p.id == id; });
  if (it == pending_.end() || it->detached) return false;
  it->detached = true;
  const error_code aborted = asio::error::operation_aborted;
  if (it->script) {
    complete_later(ex, std::move(it->call.handler), aborted, Reply{});
    it->call.owned.reset();  // already encoded
  } else {
    if (it->handler) complete_later(ex, std::move(it->handler), aborted, std::vector<Reply>{});
    it->replies.clear();
  }
  return true;
}

void Multiplexer::fail_all(error_code ec, const asio::any_io_executor& ex) {
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& p : pending) {
    if (p.detached) continue;
    if (p.script) complete_later(ex, std::move(p.call.handler), ec, Reply{});
    if (p.handler) complete_later(ex, std::move(p.handler), ec, std::vector<Reply>{});
  }
  output_.clear();
}

std::optional<Multiplexer::clock::time_point> Multiplexer::oldest_deadline() const noexcept {
  if (pending_.empty()) return std::nullopt;
  return pending_.front().deadline;
}

void Multiplexer::take_output(std::string& out) {
  out.swap(output_);
  output_.clear();
}

void Multiplexer::recycle(std::string& written) {
  written.clear();
  // A burst (thousands of renewals at once) must not pin its buffer.
  if (written.capacity() > kept_buffer_capacity) std::string().swap(written);
}

void Multiplexer::run_completions(const asio::any_io_executor& current) {
  std::swap(done_, batch_);
  std::size_t next = 0;
  try {
    for (; next < batch_.size(); ++next) {
      std::visit([&](auto& d) { run_one(d, current); }, batch_[next]);
    }
  } catch (...) {
    // A handler threw: the ones after it stay collected, ahead of any newer.
    // Moved by construction only: Boost 1.81's any_completion_handler
    // recurses without end when move-assigned.
    std::vector<Done> rest(std::make_move_iterator(batch_.begin() + static_cast<std::ptrdiff_t>(next + 1)),
                           std::make_move_iterator(batch_.end()));
    for (Done& d : done_) rest.push_back(std::move(d));
    done_.swap(rest);
    batch_.clear();
    throw;
  }
  batch_.clear();
  if (batch_.capacity() > kept_done_capacity) std::vector<Done>().swap(batch_);
}

template <typename D>
void Multiplexer::run_one(D& d, const asio::any_io_executor& current) {
  if (d.direct) return std::move(d.handler)(d.ec, std::move(d.result));
  complete_now(current, std::move(d.handler), d.ec, std::move(d.result));
}

}  // namespace leasehold::redis::detail
