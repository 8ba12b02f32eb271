#pragma once
// What this process costs, and how busy the shared machine is around it.

#include <cstddef>
#include <string>

namespace leasehold::bench {

/// User + system CPU seconds of every thread of this process (getrusage).
double process_cpu_seconds();

/// Resident set size of this process in bytes (/proc/self/statm).
std::size_t resident_bytes();

/// Bytes malloc has handed out and not yet got back, over every arena
/// (glibc mallinfo2: in-use chunks plus mmapped blocks).
std::size_t heap_in_use_bytes();

/// The first three fields of /proc/loadavg ("1.02 0.80 0.75"), printed beside
/// results so that a reader can judge the noise of a shared machine.
std::string load_average();

}  // namespace leasehold::bench
