#pragma once
// Counts calls of the global operator new in a benchmark program that links
// common/allocation_counter.cpp (which replaces operator new and delete).
// Allocations made with malloc directly (hiredis's) are not counted.

#include <cstdint>

namespace leasehold::bench {

std::uint64_t allocations();

}  // namespace leasehold::bench
