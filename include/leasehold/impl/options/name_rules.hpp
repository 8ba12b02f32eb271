#pragma once
// The rules a group name and a key prefix must follow under a key layout,
// beyond validate_group_name(): shared by the elector and the CLI.

#include <leasehold/key_layout.hpp>

#include <string_view>

namespace leasehold::detail {

/// validate_group_name(), and for a hash-tagged layout (Cluster, key_layout) no braces.
/// Throws std::invalid_argument naming the group.
void validate_group_name(std::string_view name, const KeyLayout& layout);

/// For a hash-tagged layout (Cluster): a key prefix whose first `{` is
/// followed at once by `}` ("{}") makes Redis hash every key whole, so a
/// group's keys would land in different slots. Throws std::invalid_argument
/// naming ElectorOptions.key_prefix then.
void validate_key_prefix(const KeyLayout& layout);

}  // namespace leasehold::detail
