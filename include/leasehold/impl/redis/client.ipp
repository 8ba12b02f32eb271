// Client's out-of-line members: each hands its call to the ClientImpl.

#include <leasehold/redis/client.hpp>

#include <leasehold/impl/redis/client_impl.hpp>

namespace leasehold::redis {

Client::Client(executor_type executor, RedisOptions options, Role role)
    : impl_(std::make_shared<detail::ClientImpl>(std::move(executor), std::move(options), role)) {}

Client::~Client() {
  impl_->clear_handlers();
  impl_->stop();
}

Client::executor_type Client::get_executor() const noexcept { return impl_->executor(); }
void Client::start() { impl_->start(); }
void Client::stop() { impl_->stop(); }
bool Client::connected() const noexcept { return impl_->connected(); }
const Error& Client::last_error() const noexcept { return impl_->last_error(); }
const ClientStats& Client::stats() const noexcept { return impl_->stats(); }
const RedisOptions& Client::options() const noexcept { return impl_->options(); }
std::optional<std::chrono::steady_clock::time_point> Client::last_reply_at() const noexcept {
  return impl_->last_reply_at();
}
void Client::on_state(StateHandler handler) { impl_->on_state(std::move(handler)); }
void Client::on_message(MessageHandler handler) { impl_->on_message(std::move(handler)); }
void Client::on_subscribed(SubscribedHandler handler) { impl_->on_subscribed(std::move(handler)); }
void Client::on_error_reply(ErrorReplyHandler handler) { impl_->on_error_reply(std::move(handler)); }
void Client::preload(const Script& script) { impl_->preload(script); }
void Client::subscribe(const std::vector<std::string>& channels) { impl_->subscribe(channels); }
void Client::psubscribe(const std::vector<std::string>& patterns) { impl_->psubscribe(patterns); }
void Client::unsubscribe(const std::vector<std::string>& channels) { impl_->unsubscribe(channels); }
void Client::ssubscribe(const std::vector<std::string>& channels) { impl_->ssubscribe(channels); }
void Client::sunsubscribe(const std::vector<std::string>& channels) { impl_->sunsubscribe(channels); }
void Client::on_dropped(SubscribedHandler handler) { impl_->on_dropped(std::move(handler)); }
bool Client::subscribed() const noexcept { return impl_->subscribed(); }

void Client::start_exec(Request request, ExecHandler handler, bool direct) {
  impl_->exec(std::move(request), std::move(handler), direct);
}

void Client::start_eval(const Script& script, std::vector<std::string> keys, std::vector<std::string> args,
                        EvalHandler handler, bool direct) {
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
