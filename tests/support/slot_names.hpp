#pragma once
// Group names whose keys share one Redis Cluster slot, for tests that need
// several groups in a slot (batched renewals, a slot's shared channel).

#include <leasehold/impl/protocol/key_slot.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
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

}  // namespace leasehold::test
