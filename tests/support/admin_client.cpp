#include "support/admin_client.hpp"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>

#include <cerrno>
#include <stdexcept>
#include <utility>

namespace leasehold::test {

using leasehold::redis::Reply;

namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  if (ms.count() <= 0) ms = std::chrono::milliseconds(1);
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// hiredis writes with write(2): a peer that went away would raise SIGPIPE
// and kill the test binary. Block it on this thread for the duration of a
// call and swallow any SIGPIPE the call generated, rather than ignoring it
// process-wide (which would hide SIGPIPE bugs in the library under test).
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask_);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  }
  ~SigpipeGuard() {
    if (!was_pending_) {
      sigset_t pending;
      sigemptyset(&pending);
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        sigset_t pipe_set;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        const timespec zero{0, 0};
        int r;
        do {
          r = sigtimedwait(&pipe_set, nullptr, &zero);
        } while (r < 0 && errno == EINTR);
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t old_mask_{};
  bool was_pending_ = false;
};

Reply convert(const redisReply* r) {
  switch (r->type) {
    case REDIS_REPLY_STRING:
      return Reply::make_string(std::string(r->str, r->len));
    case REDIS_REPLY_STATUS:
      return Reply::make_status(std::string(r->str, r->len));
    case REDIS_REPLY_ERROR:
      return Reply::make_error(std::string(r->str, r->len));
    case REDIS_REPLY_INTEGER:
      return Reply::make_integer(r->integer);
    case REDIS_REPLY_NIL:
      return Reply{};
    case REDIS_REPLY_ARRAY: {
      std::vector<Reply> elements;
      elements.reserve(r->elements);
      for (std::size_t i = 0; i < r->elements; ++i) elements.push_back(convert(r->element[i]));
      return Reply::make_array(std::move(elements));
    }
    default:
      return Reply::make_error("ADMINCLIENT unsupported reply type " + std::to_string(r->type));
  }
}

std::string endpoint(const AdminClientOptions& o) {
  if (!o.unix_socket.empty()) return "unix:" + o.unix_socket;
  return o.host + ":" + std::to_string(o.port);
}

}  // namespace

AdminClient::AdminClient(AdminClientOptions options) : options_(std::move(options)) {
  connect();
}

AdminClient::AdminClient(std::string host, std::uint16_t port, std::string username,
                         std::string password, std::chrono::milliseconds timeout)
    : AdminClient(AdminClientOptions{std::move(host), port, {}, std::move(username),
                                     std::move(password), timeout}) {}

AdminClient::AdminClient(AdminClient&& other) noexcept
    : options_(std::move(other.options_)),
      ctx_(std::exchange(other.ctx_, nullptr)),
      broken_(std::exchange(other.broken_, "moved from")) {}

AdminClient& AdminClient::operator=(AdminClient&& other) noexcept {
  if (this != &other) {
    close();
    options_ = std::move(other.options_);
    ctx_ = std::exchange(other.ctx_, nullptr);
    broken_ = std::exchange(other.broken_, "moved from");
  }
  return *this;
}

AdminClient::~AdminClient() { close(); }

void AdminClient::close() noexcept {
  if (ctx_ != nullptr) {
    redisFree(ctx_);
    ctx_ = nullptr;
  }
}

void AdminClient::connect() {
  const timeval tv = to_timeval(options_.timeout);
  {
    SigpipeGuard guard;
    ctx_ = options_.unix_socket.empty()
               ? redisConnectWithTimeout(options_.host.c_str(), options_.port, tv)
               : redisConnectUnixWithTimeout(options_.unix_socket.c_str(), tv);
  }
  if (ctx_ == nullptr) {
    throw std::runtime_error("AdminClient: cannot allocate a context for " + endpoint(options_));
  }
  if (ctx_->err != 0) {
    std::string why = ctx_->errstr;
    close();
    throw std::runtime_error("AdminClient: cannot connect to " + endpoint(options_) + ": " + why);
  }
  if (redisSetTimeout(ctx_, tv) != REDIS_OK) {
    close();
    throw std::runtime_error("AdminClient: cannot set the timeout on " + endpoint(options_));
  }
  if (!options_.password.empty() || !options_.username.empty()) {
    std::vector<std::string> auth{"AUTH"};
    if (!options_.username.empty()) auth.push_back(options_.username);
    auth.push_back(options_.password);
    Reply reply;
    try {
      reply = call(std::move(auth));
    } catch (...) {
      close();
      throw;
    }
    if (reply.is_error()) {
      close();
      throw std::runtime_error("AdminClient: AUTH failed on " + endpoint(options_) + ": " +
                               reply.str);
    }
  }
}

Reply AdminClient::call(std::vector<std::string> args) {
  if (ctx_ == nullptr || !broken_.empty()) {
    throw std::runtime_error("AdminClient: connection to " + endpoint(options_) +
                             " is unusable: " + (broken_.empty() ? "not connected" : broken_));
  }
  if (args.empty()) throw std::invalid_argument("AdminClient::call: empty command");

  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  argv.reserve(args.size());
  lens.reserve(args.size());
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }

  void* raw = nullptr;
  int err = 0;
  {
    SigpipeGuard guard;
    errno = 0;
    raw = redisCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data());
    err = errno;
  }
  if (raw == nullptr) {
    broken_ = ctx_->errstr[0] != '\0' ? ctx_->errstr : "I/O error";
    if (ctx_->err == REDIS_ERR_IO && (err == EAGAIN || err == EWOULDBLOCK)) {
      broken_ = "timed out after " + std::to_string(options_.timeout.count()) + " ms";
    }
    throw std::runtime_error("AdminClient: " + args.front() + " on " + endpoint(options_) +
                             " failed: " + broken_);
  }
  auto* reply = static_cast<redisReply*>(raw);
  Reply out = convert(reply);
  freeReplyObject(reply);
  return out;
}

std::optional<std::string> AdminClient::get(std::string_view key) {
  Reply r = call({"GET", std::string(key)});
  if (r.is_nil()) return std::nullopt;
  if (!r.is_string()) {
    throw std::runtime_error("AdminClient: GET " + std::string(key) + ": " + describe_reply(r));
  }
  return std::move(r.str);
}

void AdminClient::set(std::string_view key, std::string_view value) {
  Reply r = call({"SET", std::string(key), std::string(value)});
  if (!r.is_status()) {
    throw std::runtime_error("AdminClient: SET " + std::string(key) + ": " + describe_reply(r));
  }
}

long long AdminClient::pttl(std::string_view key) {
  Reply r = call({"PTTL", std::string(key)});
  if (!r.is_integer()) {
    throw std::runtime_error("AdminClient: PTTL " + std::string(key) + ": " + describe_reply(r));
  }
  return static_cast<long long>(r.integer);
}

long long AdminClient::command_calls(std::string_view command) {
  const Reply info = call({"INFO", "commandstats"});
  const std::string field = "cmdstat_" + std::string(command) + ":calls=";
  const auto at = info.str.find(field);
  return at == std::string::npos ? 0LL : std::stoll(info.str.substr(at + field.size()));
}

std::string AdminClient::data_identity() {
  const auto field = [](const std::string& info, std::string_view name) {
    const std::string label = std::string(name) + ":";
    const auto at = info.find(label);
    if (at == std::string::npos) throw std::runtime_error("INFO names no " + std::string(name));
    const auto begin = at + label.size();
    return info.substr(begin, info.find_first_of("\r\n", begin) - begin);
  };
  return field(call({"INFO", "server"}).str, "run_id") + ":" +
         field(call({"INFO", "replication"}).str, "master_replid");
}

void AdminClient::set_timeout(std::chrono::milliseconds timeout) {
  options_.timeout = timeout;
  if (ctx_ != nullptr) redisSetTimeout(ctx_, to_timeval(timeout));
}

bool AdminClient::ok() const noexcept { return ctx_ != nullptr && broken_.empty(); }

std::string describe_reply(const Reply& reply) {
  constexpr std::size_t max_len = 200;
  std::string out;
  switch (reply.type) {
    case Reply::Type::nil:
      out = "(nil)";
      break;
    case Reply::Type::status:
      out = "+" + reply.str;
      break;
    case Reply::Type::error:
      out = "-" + reply.str;
      break;
    case Reply::Type::integer:
      out = ":" + std::to_string(reply.integer);
      break;
    case Reply::Type::string:
      out = "\"" + reply.str + "\"";
      break;
    case Reply::Type::array:
      out = "[";
      for (std::size_t i = 0; i < reply.elements.size() && out.size() < max_len; ++i) {
        if (i > 0) out += ", ";
        out += describe_reply(reply.elements[i]);
      }
      out += "]";
      break;
  }
  if (out.size() > max_len) out = out.substr(0, max_len) + "...";
  return out;
}

}  // namespace leasehold::test
