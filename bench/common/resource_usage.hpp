#pragma once
// What this process costs: CPU time of all its threads and resident memory.

#include <cstddef>

namespace leasehold::bench {

/// User + system CPU seconds of every thread of this process (getrusage).
double process_cpu_seconds();

/// Resident set size of this process in bytes (/proc/self/statm).
std::size_t resident_bytes();

}  // namespace leasehold::bench

namespace leasehold::bench {

/// Bytes malloc has handed out and not yet got back, over every arena
/// (glibc mallinfo2: in-use chunks plus mmapped blocks).
std::size_t heap_in_use_bytes();

}  // namespace leasehold::bench
