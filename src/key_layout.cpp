#include <leasehold/key_layout.hpp>

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

std::string KeyLayout::release_channel(std::string_view group) const {
  return lease_key(group).append(release_suffix);
}

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

std::optional<std::string_view> KeyLayout::group_of_channel(std::string_view channel) const {
  return group_between(channel, release_suffix);
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
