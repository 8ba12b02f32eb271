#pragma once
// Where a group lives in Redis: the one place that names a group's keys and
// channels. Every part of leasehold (elector, scheduler, CLI) asks it.
//
//   plain (one server, Sentinel):    leader:reports  leader:reports:token  ...:holder  ...:bid
//                                    release notices on leader:reports:released
//   hash_tagged (Cluster):           leader:{reports}  leader:{reports}:token  ...
//                                    release notices on leader:slot:{<tag>}:released, one per slot
//
// In the hash-tagged form every key and the channel of one group hash to the
// same Cluster slot, so a script never touches two slots; `{` and `}` are
// then not allowed in group names. Sharded pub/sub has no patterns, so the
// groups of one slot share a channel there: a standby subscribes once per
// slot (at most 16,384 channels), not once per group.

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace leasehold {

/// Names the Redis keys and channels of each group under one prefix. A value
/// type: copy it freely; every call is const and thread-safe.
class KeyLayout {
 public:
  /// `plain` names keys as prefix + group; `hash_tagged` wraps the group in
  /// braces (prefix + "{" + group + "}") so that all of a group's keys share
  /// one Cluster slot.
  enum class Form { plain, hash_tagged };

  /// The layout for keys under `prefix` (ElectorOptions::key_prefix) in the
  /// given form. Stores its arguments; validation is the elector's job.
  explicit KeyLayout(std::string prefix = "leader:", Form form = Form::plain);

  /// The key prefix, as given.
  const std::string& prefix() const noexcept { return prefix_; }
  /// The form, as given.
  Form form() const noexcept { return form_; }

  /// The lease key: its value is the holder's instance id, with a TTL.
  std::string lease_key(std::string_view group) const;
  /// The fencing counter beside the lease; it never expires.
  std::string token_key(std::string_view group) const;
  /// The channel a release notice is published on. Plain: the group's own,
  /// and the message is the releaser's id. Hash-tagged: the channel of the
  /// group's slot, shared by the slot's groups, and the message is the lease
  /// key, a newline and the releaser's id.
  std::string release_channel(std::string_view group) const;
  /// The hash holding each schedule's last tick (leader-only schedules).
  std::string tick_record_key(std::string_view group) const;
  /// The holder record: the incarnation (process) holding the lease and its
  /// priority. Outlives the lease, like the fencing counter.
  std::string holder_key(std::string_view group) const;
  /// A standby's bid for the lease (hand-over request), kept for one ttl.
  std::string bid_key(std::string_view group) const;
  /// The data marker the empty-restart guard reads (lease_scripts.hpp): one
  /// per server (plain: the bare prefix, which no group's key can be) or per
  /// Cluster slot (hash-tagged: `<prefix>slot:{<tag>}`, in the group's slot).
  std::string data_marker_key(std::string_view group) const;
  /// The change stamp of one endpoint with plain keys (the holder record of
  /// the empty group, which no group can be): replaced by every script that
  /// changes a holder record, so that batched renewals read a record only
  /// when something changed (lease_scripts.hpp). Not used on a Cluster.
  std::string change_stamp_key() const;

  /// The PSUBSCRIBE pattern that matches the release channel of every group
  /// under the prefix; glob characters of the prefix match only themselves.
  std::string release_pattern() const;
  /// What a release notice says: views into the channel or the message.
  struct ReleaseNotice {
    std::string_view group;     ///< the group whose lease was released
    std::string_view releaser;  ///< the instance id that released it
  };
  /// Reads `message`, received on `channel`, as a release notice of a group
  /// under this prefix; nullopt for anything else.
  std::optional<ReleaseNotice> read_release_notice(std::string_view channel, std::string_view message) const;
  /// The group whose lease key `key` is; nullopt for any other key
  /// (including the token and tick keys).
  std::optional<std::string_view> group_of_key(std::string_view key) const;

  /// Suffixes of the sibling keys: a group name ending in one of them could
  /// collide with another group's sibling key, so such names are refused.
  static constexpr std::string_view token_suffix = ":token";
  /// Suffix of the release channel (see token_suffix).
  static constexpr std::string_view release_suffix = ":released";
  /// Suffix of the tick record key (see token_suffix).
  static constexpr std::string_view tick_suffix = ":ticks";
  /// Suffix of the holder record key (see token_suffix).
  static constexpr std::string_view holder_suffix = ":holder";
  /// Suffix of the bid key (see token_suffix).
  static constexpr std::string_view bid_suffix = ":bid";
  /// Every suffix of a key kept beside a lease key.
  static constexpr std::array<std::string_view, 4> sibling_suffixes{token_suffix, tick_suffix, holder_suffix,
                                                                    bid_suffix};

 private:
  std::optional<std::string_view> group_between(std::string_view text, std::string_view suffix) const;
  std::string slot_shared(std::string own, std::string_view suffix) const;

  std::string prefix_;
  Form form_;
};

}  // namespace leasehold
