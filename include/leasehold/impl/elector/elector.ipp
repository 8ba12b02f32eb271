// Elector's out-of-line members: each hands its call to the ElectorImpl.

#include <leasehold/elector.hpp>

#include <leasehold/impl/elector/elector_impl.hpp>

namespace leasehold {

namespace asio = boost::asio;

Elector::Elector(executor_type executor, RedisOptions redis, ElectorOptions options)
    : impl_(std::make_shared<detail::ElectorImpl>(executor, executor, std::move(redis), std::move(options))) {}

Elector::Elector(RedisOptions redis, ElectorOptions options)
    : standalone_(std::make_unique<detail::Standalone>()),
      impl_(std::make_shared<detail::ElectorImpl>(standalone_->io.get_executor(),
                                                  standalone_->callbacks.get_executor(), std::move(redis),
                                                  std::move(options))) {
  standalone_->run();
}

Elector::~Elector() {
  if (!standalone_) {
    impl_->abandon();
    return;
  }
  if (standalone_->owns_this_thread()) {
    // Destroyed from its own callback: its threads cannot be joined from
    // here. Stop in the background and leave the threads' state alive.
    log(LogLevel::error, "leasehold: a standalone Elector was destroyed from one of its own callbacks");
    impl_->abandon();
    (void)standalone_.release();
    return;
  }
  stop_and_wait();
  impl_->abandon();
  standalone_->join();
  impl_.reset();  // the last reference: destroyed here, while the io_contexts live
}

Elector::executor_type Elector::get_executor() const noexcept { return impl_->executor(); }
const std::string& Elector::instance_id() const noexcept { return impl_->id(); }
const ElectorOptions& Elector::options() const noexcept { return impl_->options(); }
const KeyLayout& Elector::key_layout() const noexcept { return impl_->layout(); }
void Elector::start() { impl_->start(); }
bool Elector::is_leader(std::string_view group) const noexcept { return impl_->is_leader(group); }

Group Elector::group(std::string_view name) {
  auto& g = impl_->register_group(name);
  return Group(detail::Internal{}, std::string(g.name), g.flag);
}

void Elector::on_elected(ElectedHandler h) {
  impl_->set_callbacks([&](detail::Callbacks& c) { c.elected = std::move(h); });
}
void Elector::on_revoked(RevokedHandler h) {
  impl_->set_callbacks([&](detail::Callbacks& c) { c.revoked = std::move(h); });
}
void Elector::on_leader_changed(LeaderChangedHandler h) {
  impl_->set_callbacks([&](detail::Callbacks& c) { c.leader_changed = std::move(h); });
}
void Elector::on_error(ErrorHandler h) {
  impl_->set_callbacks([&](detail::Callbacks& c) { c.error = std::move(h); });
}

void Elector::on_lease_audit(AuditHandler h) { impl_->set_audit(std::move(h)); }

void Elector::start_eval(const redis::Script& script, std::vector<std::string> keys, std::vector<std::string> args,
                         EvalHandler handler) {
  impl_->eval(script, std::move(keys), std::move(args), std::move(handler));
}

void Elector::start_eval_confirmed(const redis::Script& script, std::vector<std::string> keys,
                                   std::vector<std::string> args,
                                   asio::any_completion_handler<void(error_code, redis::Reply, bool)> handler) {
  impl_->eval_confirmed(script, std::move(keys), std::move(args), std::move(handler));
}

void Elector::start_acquire(std::string group, TermHandler handler) {
  impl_->acquire(std::move(group), std::move(handler));
}
void Elector::start_step_down(std::string group, VoidHandler handler) {
  impl_->step_down(std::move(group), std::move(handler));
}
void Elector::start_stop(VoidHandler handler) { impl_->stop(std::move(handler)); }
void Elector::start_leader_of(std::string group, LeaderInfoHandler handler) {
  impl_->leader_of(std::move(group), std::move(handler));
}

bool Elector::on_own_executor() const noexcept { return impl_->running_in_strand(); }

void Elector::start_metrics(MetricsHandler handler) { impl_->metrics(std::move(handler)); }

Metrics Elector::metrics() {
  if (on_own_executor()) return impl_->snapshot();
  auto promise = std::make_shared<std::promise<Metrics>>();
  auto result = promise->get_future();
  impl_->metrics(MetricsHandler([promise](Metrics m) { promise->set_value(std::move(m)); }));
  if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    throw std::runtime_error(
        "leasehold: Elector::metrics() waited 5 s for the elector's executor; is it running, or is this thread "
        "the one that should run it? (use async_metrics there)");
  }
  return result.get();
}

Health Elector::health() const { return impl_->health(); }

void Elector::stop_and_wait() {
  if (on_own_executor()) {
    throw std::logic_error("Elector::stop_and_wait() called on the elector's own executor: it would deadlock");
  }
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  impl_->stop(VoidHandler([done](error_code) { done->set_value(); }));
  // stop() itself is bounded by stop_timeout; the extra second covers an
  // executor that nobody runs (executor mode), so this never hangs.
  const auto bound = options().drain_timeout + options().stop_timeout + std::chrono::seconds(1);
  if (finished.wait_for(bound) != std::future_status::ready) {
    log(LogLevel::warning, "leasehold: stop did not finish in time; is the elector's executor running?");
  }
}

StopOperation::~StopOperation() {
  // Discarded: start the stop, never wait for it (the thread may be the one
  // that must run the elector, e.g. a signal handler on its io_context).
  if (elector_ != nullptr) elector_->stop([](error_code) {});
}

}  // namespace leasehold
