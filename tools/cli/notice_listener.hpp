#pragma once
// Release notices for `watch`: SUBSCRIBE to each group's channel on one
// server, or SSUBSCRIBE on the master of each channel's slot on a cluster
// (the library's ClusterNotices, which follows slot moves). A notice only
// hurries the next poll, so a channel that is not subscribed yet costs
// nothing but speed.

#include "connection.hpp"

#include <leasehold/redis/client.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace leasehold::cluster::detail {
class ClusterNotices;
}

namespace leasehold::cli {

class NoticeListener {
 public:
  /// Listens beside `redis` (a second connection per server or master).
  explicit NoticeListener(Connection& redis);
  ~NoticeListener();
  NoticeListener(const NoticeListener&) = delete;
  NoticeListener& operator=(const NoticeListener&) = delete;

  /// handler(channel, payload); nullptr to stop hearing them.
  void on_message(redis::Client::MessageHandler handler);
  void start();
  /// Subscribes `channels` (again is harmless) until destruction.
  void listen(const std::vector<std::string>& channels);

 private:
  std::optional<redis::Client> subscriber_;
  std::unique_ptr<cluster::detail::ClusterNotices> shards_;
};

}  // namespace leasehold::cli
