#include <leasehold/key_layout.hpp>
#include <leasehold/elector_options.hpp>

#include <leasehold/impl/base/quoted.hpp>
#include <leasehold/impl/options/name_rules.hpp>

#include <leasehold/impl/protocol/key_slot.hpp>
#include <leasehold/impl/protocol/slot_tags.hpp>

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

namespace leasehold {

KeyLayout::KeyLayout(std::string prefix, Form form) : prefix_(std::move(prefix)), form_(form) {}

std::string KeyLayout::lease_key(std::string_view group) const {
  std::string key;
  key.reserve(prefix_.size() + group.size() + 2);
  key += prefix_;
  if (form_ == Form::hash_tagged) key += '{';
  key += group;
  if (form_ == Form::hash_tagged) key += '}';
  return key;
}

std::string KeyLayout::token_key(std::string_view group) const { return lease_key(group).append(token_suffix); }

// Hash-tagged: `<prefix>slot:{<tag>}:released`, the tag naming the group's
// slot (the ACL rule's `&<prefix>*:released` still matches). A prefix with
// braces of its own can decide the slot instead; the group's own channel
// (its lease key's tag) then keeps the notice in the keys' slot.
std::string KeyLayout::release_channel(std::string_view group) const {
  std::string own = lease_key(group).append(release_suffix);
  if (form_ == Form::plain) return own;
  return slot_shared(std::move(own), release_suffix);
}

// `<prefix>slot:{<tag>}<suffix>` where it hashes to the slot of `own` (a
// name of the group's), else `own`.
std::string KeyLayout::slot_shared(std::string own, std::string_view suffix) const {
  const std::uint16_t slot = cluster::detail::key_slot(own);
  std::string shared = prefix_;
  shared.append("slot:{").append(cluster::detail::slot_tag(slot)).append("}").append(suffix);
  return cluster::detail::key_slot(shared) == slot ? shared : own;
}

// Lease keys start with the prefix and a non-empty name (hash-tagged: with
// `{` after the prefix), so neither form can be a group's key. Where a
// prefix with braces of its own moves the shared name to another slot, the
// group's own `<lease key>:released` (no group's key ends so) serves it alone.
std::string KeyLayout::data_marker_key(std::string_view group) const {
  if (form_ == Form::plain) return prefix_;
  return slot_shared(lease_key(group).append(release_suffix), {});
}

std::string KeyLayout::change_stamp_key() const { return holder_key({}); }

std::string KeyLayout::tick_record_key(std::string_view group) const {
  return lease_key(group).append(tick_suffix);
}

std::string KeyLayout::holder_key(std::string_view group) const { return lease_key(group).append(holder_suffix); }

std::string KeyLayout::bid_key(std::string_view group) const { return lease_key(group).append(bid_suffix); }

std::string KeyLayout::release_pattern() const {
  std::string pattern;
  for (const char c : prefix_) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') pattern += '\\';
    pattern += c;
  }
  return pattern + "*" + std::string(release_suffix);
}

std::optional<std::string_view> KeyLayout::group_between(std::string_view text, std::string_view suffix) const {
  const std::size_t open = form_ == Form::hash_tagged ? 1 : 0;
  if (text.size() < prefix_.size() + 2 * open + suffix.size() || !text.starts_with(prefix_) ||
      !text.ends_with(suffix)) {
    return std::nullopt;
  }
  std::string_view group = text.substr(prefix_.size(), text.size() - prefix_.size() - suffix.size());
  if (open != 0) {
    if (!group.starts_with('{') || !group.ends_with('}')) return std::nullopt;
    group = group.substr(1, group.size() - 2);
  }
  if (group.empty()) return std::nullopt;
  return group;
}

std::optional<KeyLayout::ReleaseNotice> KeyLayout::read_release_notice(std::string_view channel,
                                                                       std::string_view message) const {
  if (form_ == Form::plain) {
    const auto group = group_between(channel, release_suffix);
    if (!group) return std::nullopt;
    return ReleaseNotice{*group, message};
  }
  const std::size_t newline = message.find('\n');
  if (newline == std::string_view::npos) return std::nullopt;
  const auto group = group_of_key(message.substr(0, newline));
  if (!group) return std::nullopt;
  return ReleaseNotice{*group, message.substr(newline + 1)};
}

std::optional<std::string_view> KeyLayout::group_of_key(std::string_view key) const {
  auto group = group_between(key, {});
  // A plain layout's sibling keys look like lease keys of a longer name.
  if (group && form_ == Form::plain) {
    for (const std::string_view suffix : sibling_suffixes) {
      if (group->ends_with(suffix)) return std::nullopt;
    }
  }
  return group;
}

}  // namespace leasehold

namespace leasehold::detail {

void validate_group_name(std::string_view name, const KeyLayout& layout) {
  leasehold::validate_group_name(name);
  if (layout.form() == KeyLayout::Form::hash_tagged && name.find_first_of("{}") != std::string_view::npos) {
    throw std::invalid_argument(fmt::format("invalid group name {}: '{{' and '}}' are not allowed on a Redis "
                                            "Cluster or with key_layout=hash_tagged, where the group name is the "
                                            "keys' hash tag",
                                            quoted(name)));
  }
}

void validate_key_prefix(const KeyLayout& layout) {
  if (layout.form() != KeyLayout::Form::hash_tagged) return;
  const std::string& prefix = layout.prefix();
  const std::size_t open = prefix.find('{');
  if (open != std::string::npos && open + 1 < prefix.size() && prefix[open + 1] == '}') {
    throw std::invalid_argument(fmt::format(
        "ElectorOptions.key_prefix {}: on a Redis Cluster or with key_layout=hash_tagged the prefix may not hold "
        "an empty hash tag \"{{}}\" before any other '{{': Redis would hash each key whole and put a group's keys "
        "in different slots",
        quoted(prefix)));
  }
}

}  // namespace leasehold::detail
