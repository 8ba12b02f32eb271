#pragma once
// A short hash tag for every Cluster slot: a name that lands in a chosen
// slot, so that one channel per slot can be named (the release notices of
// every group of that slot share it). Pure: no I/O.

#include <cstdint>
#include <string_view>

namespace leasehold::cluster::detail {

/// A string of one to four characters from [0-9A-Za-z] whose key_slot() is
/// `slot` (slot < slot_count). The table is computed once, on first use
/// (about 2 ms), and lives as long as the program.
std::string_view slot_tag(std::uint16_t slot);

}  // namespace leasehold::cluster::detail
