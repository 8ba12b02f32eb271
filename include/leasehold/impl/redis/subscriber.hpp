#pragma once
// The pub/sub side of a subscriber connection, without I/O: the wanted
// channels, patterns and shard channels (Redis Cluster's sharded pub/sub),
// the (P|S)SUBSCRIBE commands that ask for them (again on every new
// connection), and pushes decoded into events.

#include <leasehold/error.hpp>
#include <leasehold/redis/reply.hpp>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::redis::detail {

class Subscriber {
 public:
  struct Event {
    enum class Kind : std::uint8_t {
      none,            ///< nothing to report (PONG, an unsubscribe confirmation)
      message,         ///< `channel` and `payload` (the channel it was published on, for a pattern too)
      subscribed,      ///< the server confirmed the wanted channel or pattern `channel`
      error_reply,     ///< the server refused a command (NOPERM, MOVED): `error`; the connection stays
      dropped,         ///< the server ended the wanted shard channel `channel` (its slot moved away); no longer wanted
      protocol_error,  ///< not a pub/sub push: `error`; the connection must be reset
    };
    Kind kind = Kind::none;
    std::string_view channel{};  ///< into the reply
    std::string_view payload{};  ///< into the reply
    Error error{};
  };

  /// Each appends to `out` the command for the names not wanted yet (or, for
  /// unsubscribe, no longer) and returns how many commands it appended (0 or
  /// 1). The names are wanted either way; send the command only while a
  /// connection is up.
  std::size_t subscribe(const std::vector<std::string>& channels, std::string& out);
  std::size_t psubscribe(const std::vector<std::string>& patterns, std::string& out);
  std::size_t unsubscribe(const std::vector<std::string>& channels, std::string& out);
  /// Shard channels (SSUBSCRIBE): one command per channel, since one
  /// SSUBSCRIBE may name channels of one slot only. Returns the count.
  std::size_t ssubscribe(const std::vector<std::string>& channels, std::string& out);
  std::size_t sunsubscribe(const std::vector<std::string>& channels, std::string& out);

  /// A new connection: appends SUBSCRIBE, PSUBSCRIBE and SSUBSCRIBE of
  /// everything wanted to `out`, returns how many commands it appended.
  std::size_t resubscribe(std::string& out);
  /// The connection ended: nothing is confirmed any more.
  void on_disconnect() noexcept {
    server_subscriptions_ = 0;
    server_shard_subscriptions_ = 0;
  }

  /// The server has confirmed every wanted channel, pattern and shard channel.
  bool confirmed() const noexcept {
    return server_subscriptions_ == channels_.size() + patterns_.size() &&
           server_shard_subscriptions_ == shard_channels_.size();
  }

  /// Decodes one push; the event's views point into `reply`.
  Event on_push(const Reply& reply);

 private:
  Event on_shard_push(const Reply& reply, bool subscribed);
  static std::size_t append(std::string_view verb, std::set<std::string>& wanted,
                            const std::vector<std::string>& names, std::string& out);

  std::set<std::string> channels_;
  std::set<std::string> patterns_;
  std::set<std::string> shard_channels_;
  // As the server last counted them; it counts shard channels apart.
  std::size_t server_subscriptions_ = 0;
  std::size_t server_shard_subscriptions_ = 0;
};

}  // namespace leasehold::redis::detail
