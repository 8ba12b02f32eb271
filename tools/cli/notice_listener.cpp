#include "notice_listener.hpp"

#include <leasehold/impl/cluster/cluster_notices.hpp>

namespace leasehold::cli {

NoticeListener::NoticeListener(Connection& redis) {
  if (auto* cluster = redis.commands().cluster()) {
    shards_ = std::make_unique<cluster::detail::ClusterNotices>(*cluster, redis.options());
  } else {
    subscriber_.emplace(redis.commands().server()->get_executor(), redis.options(), redis::Role::subscriber);
  }
}

NoticeListener::~NoticeListener() {
  if (shards_) shards_->stop();
  if (subscriber_) subscriber_->stop();
}

void NoticeListener::on_message(redis::Client::MessageHandler handler) {
  if (shards_) return shards_->on_message(std::move(handler));
  subscriber_->on_message(std::move(handler));
}

void NoticeListener::start() {
  if (shards_) return shards_->start();
  subscriber_->start();
}

void NoticeListener::listen(const std::vector<std::string>& channels) {
  if (channels.empty()) return;
  if (shards_) {
    for (const auto& channel : channels) shards_->watch(channel);
    return;
  }
  subscriber_->subscribe(channels);
}

}  // namespace leasehold::cli
