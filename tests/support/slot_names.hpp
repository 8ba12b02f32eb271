#pragma once
// Group names whose keys share one Redis Cluster slot, for tests that need
// several groups in a slot (batched renewals, a slot's shared channel), or
// one renewal phase (groups elected together then renew in one turn).

#include <leasehold/impl/core/group_state.hpp>
#include <leasehold/impl/protocol/key_slot.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::test {

/// The first `count` names "s0", "s1", ... whose `key_of(name)` land in one
/// slot (the first slot that many names reach).
template <typename KeyOf>
std::vector<std::string> names_in_one_slot(std::size_t count, KeyOf key_of) {
  std::map<std::uint16_t, std::vector<std::string>> by_slot;
  for (std::size_t i = 0;; ++i) {
    std::string name = "s" + std::to_string(i);
    auto& same = by_slot[cluster::detail::key_slot(key_of(name))];
    same.push_back(std::move(name));
    if (same.size() == count) return same;
  }
}

/// The first name "<stem>", "<stem>1", "<stem>2", ... whose key_of(name) has
/// the renewal phase of `key` (detail::renewal_phase_share: one of 64).
template <typename KeyOf>
std::string name_in_phase_of(std::string_view key, std::string_view stem, KeyOf key_of) {
  const std::uint16_t phase = detail::renewal_phase_share(key);
  for (std::size_t i = 0;; ++i) {
    std::string name = i == 0 ? std::string(stem) : std::string(stem) + std::to_string(i);
    if (detail::renewal_phase_share(key_of(name)) == phase) return name;
  }
}

}  // namespace leasehold::test
