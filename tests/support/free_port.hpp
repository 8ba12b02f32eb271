#pragma once
// A loopback TCP port that nobody is listening on right now.

#include <cstdint>

namespace leasehold::test {

/// Asks the kernel for an unused 127.0.0.1 TCP port (bind to port 0, read it
/// back, close). The port is only free at the instant of the call: another
/// process may take it before the caller binds it, so callers that start a
/// server on it must be ready to retry with a fresh port.
/// Throws std::system_error when no socket can be created or bound.
std::uint16_t free_port();

}  // namespace leasehold::test
