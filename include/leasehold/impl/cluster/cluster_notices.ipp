#include <leasehold/impl/cluster/cluster_notices.hpp>

#include <leasehold/impl/protocol/key_slot.hpp>
#include <leasehold/impl/cluster/redirect.hpp>

#include <leasehold/log.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>

#include <utility>
#include <vector>

namespace leasehold::cluster::detail {

namespace {

// "ERR unknown command 'SSUBSCRIBE', ..." (Redis 6), or KeyDB's words.
bool unknown_shard_command(std::string_view reply) {
  std::string lower(reply);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("unknown command") != std::string::npos &&
         (lower.find("ssubscribe") != std::string::npos || lower.find("sunsubscribe") != std::string::npos);
}

RedisOptions subscriber_options(RedisOptions o) {
  o.cluster.reset();
  if (!o.client_name.empty()) o.client_name += "-sub";
  return o;
}

}  // namespace

ClusterNotices::ClusterNotices(ClusterClient& map_source, RedisOptions options)
    : cluster_(map_source), options_(subscriber_options(std::move(options))) {
  cluster_.on_map_change([self = self_] {
    if (*self != nullptr) (*self)->map_changed();
  });
}

ClusterNotices::~ClusterNotices() {
  *self_ = nullptr;
  stop();
}

void ClusterNotices::start() {
  if (started_ || stopped_) return;
  started_ = true;
  map_changed();
}

void ClusterNotices::stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& [address, client] : nodes_) client->stop();
}

void ClusterNotices::watch(const std::string& channel) {
  const auto [it, added] = watched_.try_emplace(channel);
  if (added && started_ && !stopped_) place(it->first, it->second);
}

// On the master of the channel's slot, once the map names one.
void ClusterNotices::place(const std::string& channel, Watched& w) {
  const ClusterNode* master = cluster_.slot_map().master_of(key_slot(channel));
  if (master == nullptr) return;
  redis::Client& subscriber = subscriber_for(*master, w.home);
  if (unsharded_) return subscriber.subscribe({channel});
  subscriber.ssubscribe({channel});
}

// Off its node, waiting for a map that places it again.
void ClusterNotices::unplace(const std::string& channel, Watched& w) {
  if (w.home == nullptr) return;
  if (auto node = nodes_.find(*w.home); node != nodes_.end()) {
    if (unsharded_) {
      node->second->unsubscribe({channel});
    } else {
      node->second->sunsubscribe({channel});
    }
  }
  w.home = nullptr;
  lost(channel, w);
}

void ClusterNotices::map_changed() {
  if (!started_ || stopped_) return;
  for (auto& [channel, w] : watched_) {
    if (w.home != nullptr) {
      const ClusterNode* master = cluster_.slot_map().master_of(key_slot(channel));
      if (master != nullptr && master->to_string() == *w.home) continue;
      unplace(channel, w);
    }
    place(channel, w);
  }
}

void ClusterNotices::lost(std::string_view channel, Watched& w) {
  if (!w.confirmed) return;
  w.confirmed = false;
  --confirmed_;
  if (on_availability_) on_availability_(channel, false);
}

void ClusterNotices::node_down(const std::string& address) {
  for (auto& [channel, w] : watched_) {
    if (w.home != nullptr && *w.home == address) lost(channel, w);
  }
}

// The node would not subscribe a channel: MOVED or ASK (its slot is not, or
// no longer, served there) sends the slot's channels back to wait for a
// newer map. Other refusals (NOPERM) leave the channel unconfirmed: its
// group polls.
void ClusterNotices::refused(const std::string& address, const Error& error) {
  const ClusterError reply = read_cluster_error(error.detail);
  if (unknown_shard_command(error.detail)) {
    if (!unsharded_) {
      unsharded_ = true;
      log(LogLevel::warning, fmt::format("cluster node {} has no sharded pub/sub ({}): release notices go through "
                                         "SUBSCRIBE and PUBLISH",
                                         address, error.detail));
      for (auto& [channel, w] : watched_) {
        if (w.home == nullptr) continue;
        w.home = nullptr;  // its SSUBSCRIBE was refused, or will be: SUBSCRIBE it
        place(channel, w);
      }
    }
    return;
  }
  if (reply.kind != ClusterError::Kind::moved && reply.kind != ClusterError::Kind::ask) {
    if (on_refusal_) on_refusal_(address, error);
    return;
  }
  for (auto& [channel, w] : watched_) {
    if (w.home != nullptr && *w.home == address && key_slot(channel) == reply.slot) unplace(channel, w);
  }
  cluster_.request_refresh();
}

redis::Client& ClusterNotices::subscriber_for(const ClusterNode& node, const std::string*& address_out) {
  const std::string address = node.to_string();
  auto it = nodes_.find(address);
  if (it != nodes_.end()) {
    address_out = &it->first;
    return *it->second;
  }
  RedisOptions o = options_;
  o.host = node.host;
  o.port = node.port;
  auto client = std::make_unique<redis::Client>(cluster_.get_executor(), std::move(o), redis::Role::subscriber);
  client->on_message([self = self_](std::string_view channel, std::string_view payload) {
    if (*self != nullptr && (*self)->on_message_) (*self)->on_message_(channel, payload);
  });
  client->on_subscribed([self = self_, address](std::string_view channel) {
    if (*self == nullptr) return;
    ClusterNotices& me = **self;
    const auto it = me.watched_.find(channel);
    if (it == me.watched_.end() || it->second.home == nullptr || *it->second.home != address) return;
    if (it->second.confirmed) return;
    it->second.confirmed = true;
    ++me.confirmed_;
    if (me.on_availability_) me.on_availability_(channel, true);
  });
  client->on_dropped([self = self_, address](std::string_view channel) {
    if (*self == nullptr) return;
    ClusterNotices& me = **self;
    const auto it = me.watched_.find(channel);
    // Not there any more (moved by a newer map already): nothing to do.
    if (it == me.watched_.end() || it->second.home == nullptr || *it->second.home != address) return;
    it->second.home = nullptr;
    me.lost(it->first, it->second);
    me.cluster_.request_refresh();
  });
  client->on_state([self = self_, address](bool up, const Error&) {
    if (*self != nullptr && !up) (*self)->node_down(address);
  });
  client->on_error_reply([self = self_, address](const Error& error) {
    if (*self != nullptr) (*self)->refused(address, error);
  });
  it = nodes_.emplace(address, std::move(client)).first;
  address_out = &it->first;
  it->second->start();
  return *it->second;
}

}  // namespace leasehold::cluster::detail
