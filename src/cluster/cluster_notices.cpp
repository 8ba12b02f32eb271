#include "cluster_notices.hpp"

#include "key_slot.hpp"
#include "redirect.hpp"

#include <utility>
#include <vector>

namespace leasehold::cluster::detail {

namespace {

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
  if (home_.count(channel) != 0 || !homeless_.insert(channel).second) return;
  if (started_ && !stopped_) place(channel);
}

// On the master of the channel's slot, once the map names one.
void ClusterNotices::place(const std::string& channel) {
  const ClusterNode* master = cluster_.slot_map().master_of(key_slot(channel));
  if (master == nullptr) return;
  homeless_.erase(channel);
  home_[channel] = master->to_string();
  subscriber_for(*master).ssubscribe({channel});
}

void ClusterNotices::map_changed() {
  if (!started_ || stopped_) return;
  std::vector<std::string> moved;
  for (const auto& [channel, address] : home_) {
    const ClusterNode* master = cluster_.slot_map().master_of(key_slot(channel));
    if (master == nullptr || master->to_string() != address) moved.push_back(channel);
  }
  for (const std::string& channel : moved) {
    if (auto node = nodes_.find(home_[channel]); node != nodes_.end()) node->second->sunsubscribe({channel});
    home_.erase(channel);
    homeless_.insert(channel);
    lost(channel);
  }
  for (const std::string& channel : std::vector<std::string>(homeless_.begin(), homeless_.end())) place(channel);
}

void ClusterNotices::lost(const std::string& channel) {
  if (confirmed_.erase(channel) != 0 && on_availability_) on_availability_(channel, false);
}

void ClusterNotices::node_down(const std::string& address) {
  for (const auto& [channel, home] : home_) {
    if (home == address) lost(channel);
  }
}

// The node would not subscribe a channel: MOVED or ASK (its slot is not, or
// no longer, served there) sends the slot's channels back to wait for a
// newer map. Other refusals (NOPERM) leave the channel unconfirmed: its
// group polls.
void ClusterNotices::refused(const std::string& address, const Error& error) {
  const ClusterError reply = read_cluster_error(error.detail);
  if (reply.kind != ClusterError::Kind::moved && reply.kind != ClusterError::Kind::ask) return;
  std::vector<std::string> sent_back;
  for (const auto& [channel, home] : home_) {
    if (home == address && key_slot(channel) == reply.slot) sent_back.push_back(channel);
  }
  auto node = nodes_.find(address);
  for (const std::string& channel : sent_back) {
    if (node != nodes_.end()) node->second->sunsubscribe({channel});
    home_.erase(channel);
    homeless_.insert(channel);
    lost(channel);
  }
  cluster_.request_refresh();
}

redis::Client& ClusterNotices::subscriber_for(const ClusterNode& node) {
  const std::string address = node.to_string();
  auto it = nodes_.find(address);
  if (it != nodes_.end()) return *it->second;
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
    const auto home = me.home_.find(std::string(channel));
    if (home == me.home_.end() || home->second != address) return;
    if (me.confirmed_.insert(home->first).second && me.on_availability_) me.on_availability_(channel, true);
  });
  client->on_dropped([self = self_, address](std::string_view channel) {
    if (*self == nullptr) return;
    ClusterNotices& me = **self;
    const auto home = me.home_.find(std::string(channel));
    if (home == me.home_.end() || home->second != address) return;  // already moved by a newer map
    const std::string name = home->first;
    me.home_.erase(home);
    me.homeless_.insert(name);
    me.lost(name);
    me.cluster_.request_refresh();
  });
  client->on_state([self = self_, address](bool up, const Error&) {
    if (*self != nullptr && !up) (*self)->node_down(address);
  });
  client->on_error_reply([self = self_, address](const Error& error) {
    if (*self != nullptr) (*self)->refused(address, error);
  });
  it = nodes_.emplace(address, std::move(client)).first;
  it->second->start();
  return *it->second;
}

}  // namespace leasehold::cluster::detail
